"""The one label per kernel: short names told apart by template arguments where the
words of the signatures can't tell them, and the diff carrying the labels its rules use."""

from __future__ import annotations

from fpspec import fingerprint, kernel

from nsysdiff.compare.diff import compare
from nsysdiff.compare.labels import short_labels, template_arguments


def test_template_arguments_without_namespaces_and_casts() -> None:
    key = "void at::native::<unnamed>::CatArrayBatchedCopy<at::native::<unnamed>::OpaqueType<(unsigned int)4>, unsigned int, (int)3>(char *)"  # noqa: E501
    assert template_arguments(key, "CatArrayBatchedCopy") == ["OpaqueType<4>", "unsigned int", "3"]
    assert template_arguments("void k(int)", "k") is None


def test_words_first_then_arguments_then_an_index() -> None:
    a, b = "k<A, B>(int)", "k<B, A>(int)"
    assert short_labels([(a, "k"), (b, "k")]) == {a: "k ⟨A⟩", b: "k ⟨B⟩"}
    c, d = "k<X>(int)", "k<Y>(int)"
    assert short_labels([(c, "k"), (d, "k")]) == {c: "k ⟨X⟩", d: "k ⟨Y⟩"}
    e, f = "k<A>(int, int)", "k<A>(int,int)"
    assert short_labels([(e, "k"), (f, "k")]) == {e: "k ⟨#1⟩", f: "k ⟨#2⟩"}


def test_the_diff_labels_its_kernels() -> None:
    add = "void elementwise_kernel<4, CUDAFunctor_add<float>>(int)"
    mul = "void elementwise_kernel<4, MulFunctor<float>>(int)"
    base = fingerprint(
        [
            kernel("elementwise_kernel", 10, 1_000_000, demangled=add),
            kernel("elementwise_kernel", 10, 2_000_000, demangled=mul),
        ]
    )
    d = compare(base, base)
    assert dict(d.labels) == {add: "elementwise_kernel ⟨CUDAFunctor_add⟩", mul: "elementwise_kernel ⟨MulFunctor⟩"}
    row = next(r for r in d.kernels if r.key == add)
    assert d.kernel_label(row) == "elementwise_kernel ⟨CUDAFunctor_add⟩"
