"""Kernel labels: colliding short names are told apart by words of the signature."""

from __future__ import annotations

import pytest
from conftest import traces_dir
from fpspec import fingerprint

from nsysdiff import api
from nsysdiff.compare.diff import compare
from nsysdiff.render.names import Names, arity, labels, labels_of, mangled_of, unmangled

ADD = "void at::native::elementwise_kernel<128, 4, at::native::CUDAFunctor_add<float>>(int, T3)"
MUL = "void at::native::elementwise_kernel<128, 4, at::native::MulFunctor<float>>(int, T3)"
MUL_HALF = "void at::native::elementwise_kernel<128, 4, at::native::MulFunctor<c10::Half>>(int, T3)"


def test_unique_short_names_stay_short() -> None:
    assert labels_of([("void flash_fwd<1>(Params)", "flash_fwd"), (ADD, "elementwise_kernel")]) == {
        "void flash_fwd<1>(Params)": "flash_fwd",
        ADD: "elementwise_kernel",
    }


def test_colliding_names_get_the_fewest_distinguishing_words() -> None:
    got = labels_of([(k, "elementwise_kernel") for k in (ADD, MUL, MUL_HALF)])
    assert got == {
        ADD: "elementwise_kernel ⟨CUDAFunctor_add⟩",
        MUL: "elementwise_kernel ⟨MulFunctor float⟩",
        MUL_HALF: "elementwise_kernel ⟨Half⟩",
    }
    assert len(set(got.values())) == 3


def test_same_words_other_arity() -> None:
    five = "ns::k(ns::T<1>, ns::T<1>, ns::M, ns::M, ns::T<2>)"
    six = "ns::k(ns::T<1>, ns::T<1>, ns::M, ns::M, ns::M, ns::T<2>)"
    assert (arity(five, "k"), arity(six, "k"), arity("k()", "k")) == (5, 6, 0)
    assert labels_of([(five, "k"), (six, "k")]) == {five: "k ⟨5 args⟩", six: "k ⟨6 args⟩"}


def test_same_words_elsewhere_are_told_by_template_arguments() -> None:
    a, b = "k<A, B>(int)", "k<B, A>(int)"
    assert labels_of([(a, "k"), (b, "k")]) == {a: "k ⟨A⟩", b: "k ⟨B⟩"}
    # Real PyTorch kernels (H100 captures): every word of the first is in the second.
    on_long = (
        "void at::native::vectorized_elementwise_kernel<(int)2, at::native::CUDAFunctorOnSelf_add<long>, "
        "std::array<char *, (unsigned long)2>>(int, T2, T3)"
    )
    on_float = (
        "void at::native::vectorized_elementwise_kernel<(int)4, at::native::CUDAFunctorOnSelf_add<float>, "
        "std::array<char *, (unsigned long)2>>(int, T2, T3)"
    )
    got = labels_of([(on_long, "vectorized_elementwise_kernel"), (on_float, "vectorized_elementwise_kernel")])
    assert got[on_long] == "vectorized_elementwise_kernel ⟨CUDAFunctorOnSelf_add<long>⟩"
    cat = "void at::native::<unnamed>::CatArrayBatchedCopy_vectorized<at::native::<unnamed>::OpaqueType<(unsigned int){}>, unsigned int, (int)3, (int)128, (int)1, (int)16, (int){}>(char *)"  # noqa: E501
    two, four = cat.format(2, 8), cat.format(4, 4)
    got = labels_of([(two, "CatArrayBatchedCopy_vectorized"), (four, "CatArrayBatchedCopy_vectorized")])
    assert got[four] == "CatArrayBatchedCopy_vectorized ⟨OpaqueType<4>⟩"
    assert "#" not in got[two]


def test_nothing_to_tell_falls_back_to_an_index() -> None:
    a, b = "k<A>(int, int)", "k<A>(int,int)"
    assert labels_of([(a, "k"), (b, "k")]) == {a: "k ⟨#1⟩", b: "k ⟨#2⟩"}


def test_demangled_names_are_the_keys() -> None:
    assert labels_of([(ADD, "elementwise_kernel")], Names.demangled) == {ADD: ADD}


@pytest.mark.skipif(not (traces_dir() / "fuser_h100_report1.sqlite").exists(), reason="real traces not found")
def test_fuser_kernel_removed_and_new_are_told_apart() -> None:
    d = compare(
        api.load(traces_dir() / "fuser_h100_report1.sqlite"),
        api.load(traces_dir() / "fuser_h200_report1.sqlite"),
    )
    named = labels(d.kernels)
    fused = {named[r.key]: r.verdict.value for r in d.kernels if r.name == "nvfuser_none_f0_c0_r0_g0"}
    assert fused == {
        "nvfuser_none_f0_c0_r0_g0 ⟨5 args⟩": "removed",
        "nvfuser_none_f0_c0_r0_g0 ⟨6 args⟩": "new",
    }
    assert len(set(named.values())) == len(named)


@pytest.mark.skipif(not (traces_dir() / "nsysai_mfu_h100x2_before.sqlite").exists(), reason="real traces not found")
def test_nsys_ai_elementwise_kernels_are_told_apart() -> None:
    fp = api.load(traces_dir() / "nsysai_mfu_h100x2_before.sqlite")
    named = labels_of((k.demangled, k.name) for k in fp.kernels)
    elementwise = [named[k.demangled] for k in fp.kernels if k.name == "elementwise_kernel"]
    assert len(elementwise) >= 4
    assert len(set(elementwise)) == len(elementwise)


def test_launch_shapes_follow_the_label() -> None:
    grid_a, grid_b = " [grid 8,1,1, block 128,1,1]", " [grid 16,1,1, block 128,1,1]"
    got = labels_of(
        [
            (ADD + grid_a, "elementwise_kernel"),
            (ADD + grid_b, "elementwise_kernel"),
            (MUL + grid_a, "elementwise_kernel"),
        ]
    )
    assert got == {
        ADD + grid_a: "elementwise_kernel ⟨CUDAFunctor_add⟩" + grid_a,
        ADD + grid_b: "elementwise_kernel ⟨CUDAFunctor_add⟩" + grid_b,
        MUL + grid_a: "elementwise_kernel ⟨MulFunctor⟩" + grid_a,
    }


ADD_MANGLED = "_ZN2at6native18elementwise_kernelILi128ELi4ENS0_15CUDAFunctor_addIfEEEEviT1_"


def test_mangled_names_where_known_else_the_demangled() -> None:
    got = labels_of([(ADD, "elementwise_kernel"), (MUL, "elementwise_kernel")], Names.mangled, {ADD: ADD_MANGLED})
    assert got == {ADD: ADD_MANGLED, MUL: MUL}


def test_mangled_names_keep_the_launch_shape() -> None:
    grid = " [grid 8,1,1, block 128,1,1]"
    assert labels_of([(ADD + grid, "elementwise_kernel")], Names.mangled, {ADD + grid: ADD_MANGLED}) == {
        ADD + grid: ADD_MANGLED + grid
    }


def test_mangled_of_and_unmangled_count_per_input() -> None:
    fp = fingerprint(kernels={"gemm": (1, 10), "fwd": (2, 20)}, source="old.sqlite")
    assert mangled_of(fp) == {}
    assert unmangled(fp) == ("2 of 2 kernels in old.sqlite",)
