"""One program under two demanglers (nsysdiff.compare.matching, nsysdiff.trace.names.spelling)."""

from __future__ import annotations

import dataclasses
from collections import Counter
from pathlib import Path

import numpy as np
from conftest import run_cli
from demanglers import NGP, SPELLED_APART
from fpspec import fingerprint, kernel, saved_pair

from nsysdiff.compare import comparability, matching
from nsysdiff.compare.diff import compare
from nsysdiff.compare.matching import canonical
from nsysdiff.synth.builder import TraceBuilder
from nsysdiff.synth.schema import Generation
from nsysdiff.synth.writer import Gpu
from nsysdiff.trace.names import spelling, without_parameters

MS = 1_000_000

# instant-ngp's kernels as nsys 2021.2 and 2021.3 demangle them.
OLD = (
    "void tcnn::kernel_grid<__half, 3u, 2u, 16u, true>(unsigned int, __half*, float const*)",
    "void tcnn::kernel_mlp_fused<128, (tcnn::Activation)2, false>(tcnn::Activation, __half const*, __half*)",
    "void ngp::march_rays<3u>(unsigned int, float*, bool)",
    "void tcnn::elementwise_add<float>(unsigned int, float*, float const*)",
)
NEW = (
    "void tcnn::kernel_grid<__half, (unsigned int)3, (unsigned int)2, (unsigned int)16, (bool)1>"
    "(unsigned int, T1 *, const float *)",
    "void tcnn::kernel_mlp_fused<(int)128, (tcnn::Activation)2, (bool)0>(tcnn::Activation, const T1 *, T1 *)",
    "void ngp::march_rays<(unsigned int)3>(unsigned int, float *, bool)",
    "void tcnn::elementwise_add<float>(unsigned int, T1 *, const T1 *)",
)


def side(names: tuple[str, ...], scale: float = 1.0) -> list:  # type: ignore[type-arg]
    return [
        kernel(n.split("<")[0].split()[-1], 1000 * (i + 1), int(scale * (i + 3) * MS), demangled=n)
        for i, n in enumerate(names)
    ]


def test_spellings_of_template_arguments_are_one() -> None:
    assert spelling("f<(unsigned int)3, (bool)1, (bool)0, (int)-2, (long)7>") == "f<3u, true, false, -2, 7l>"
    assert spelling("g(float *, T1 &)") == "g(float*, T1&)"
    assert without_parameters("f<3u>(T3 *, int)") == "f<3u>/2"
    assert without_parameters("f<3u>(pair<int, int>, int)") == "f<3u>/2"
    assert without_parameters("f<3u>()") == "f<3u>/0" and without_parameters("f<3u>") == "f<3u>"


def test_another_argument_list_is_another_kernel() -> None:
    b = fingerprint(side(("nvfuser_none_f0_c0_r0_g0(Tensor<float, 2>, Tensor<float, 2>)",)))
    c = fingerprint(side(("nvfuser_none_f0_c0_r0_g0(Tensor<float, 2>, Tensor<float, 2>, float)",)))
    assert matching.matches(b, c) == {}


def test_every_kernel_matches_across_demanglers() -> None:
    b, c = fingerprint(side(OLD)), fingerprint(side(NEW))
    assert len(matching.matches(b, c)) == len(OLD)
    d = compare(b, c)
    assert d.headline.common_kernels == len(OLD)
    assert d.attribution.effects.new_ns == 0 and d.attribution.effects.removed_ns == 0
    assert comparability.kernel_overlap(b, matching.align(b, c)) == 1.0
    assert not any("low kernel-set overlap" in n for n in comparability.assess(b, c)[1])


def test_the_mangled_name_matches_first() -> None:
    b = fingerprint([dataclasses.replace(k, mangled=f"_Z{i}k") for i, k in enumerate(side(OLD))])
    # Two kernels the spelling can't tell apart, told apart by their mangled names.
    c = fingerprint([dataclasses.replace(k, mangled=f"_Z{i}k") for i, k in enumerate(side(NEW))])
    assert {n: k.mangled for n, k in matching.matches(b, c).items()} == {n: f"_Z{i}k" for i, n in enumerate(NEW)}


def test_an_ambiguous_match_is_left_alone() -> None:
    b = fingerprint(side(("void f<3u>(float*)", "void f<3u>(int*)")))
    c = fingerprint(side(("void f<(unsigned int)3>(T1 *)",)))
    assert matching.matches(b, c) == {}


def test_the_report_shares_the_kernels(tmp_path: Path) -> None:
    b, c = saved_pair(tmp_path, fingerprint(side(OLD)), fingerprint(side(NEW, 1.02)))
    r = run_cli(b, c, "--width", "200")
    assert f"distinct kernels 4 → 4 ({len(OLD)} common)" in r.stdout
    assert "new +" not in r.stdout and "low kernel-set overlap" not in r.stdout
    assert r.exit_code == 0


def test_lambdas_literals_and_placeholders_are_spelled_one_way() -> None:
    assert canonical("f<ns::g(float*)::{lambda(unsigned long)#2}>(unsigned long)") == canonical(
        "f<ns::g(float *)::[lambda(unsigned long) (instance 2)]>(unsigned long)"
    )
    # A placeholder is the function template's own argument, in place and qualified.
    assert (
        canonical("void k<__half, (unsigned long)4>(const T1 *, T2, T1 &)")
        == "void k<__half, 4ul>(__half const*, 4ul, __half&)"
    )
    assert canonical("void k<float>(tcnn::MatrixView<const T1>)") == canonical(
        "void k<float>(tcnn::MatrixView<float const>)"
    )
    assert canonical("a::(anonymous namespace)::f()::{lambda()#1}::operator()() const") == canonical(
        "a::<unnamed>::f()::[lambda() (instance 1)]::operator ()() const"
    )
    # Placeholders of a function in a template argument are that function's arguments.
    assert (
        canonical("void k<A::m<int>(T1 &)::{lambda()#1}>(T1)")
        == "void k<A::m<int>(int&)::{lambda()#1}>(A::m<int>(int&)::{lambda()#1})"
    )
    # A placeholder past the arguments stays one; brackets that don't nest keep the simpler spelling.
    assert canonical("void k<int>(T2)") == "void k<int>(T2)"
    assert canonical("bool operator< <int>(T1 const&)") == "bool operator<<int>(T1 const&)"


def test_instant_ngp_matches_across_demanglers() -> None:
    old, new = tuple(o for o, _ in NGP), tuple(n for _, n in NGP)
    b, c = fingerprint(side(old)), fingerprint(side(new, 1.02))
    found = matching.matches(b, c)
    assert {n: k.demangled for n, k in found.items()} == {n: o for o, n in NGP}
    # The spellings matched before leave the last ones apart (or ambiguous: two kernels
    # with one name and as many parameters).
    without = Counter(without_parameters(spelling(o)) for o in old)
    for o, n in NGP[-SPELLED_APART:]:
        key = without_parameters(spelling(o))
        assert spelling(o) != spelling(n) and (key != without_parameters(spelling(n)) or without[key] > 1)
    d = compare(b, c)
    assert d.headline.common_kernels == len(NGP)
    assert d.attribution.effects.new_ns == 0 and d.attribution.effects.removed_ns == 0
    assert comparability.kernel_overlap(b, matching.align(b, c)) == 1.0


def test_instant_ngp_report_shares_every_kernel(tmp_path: Path) -> None:
    old, new = tuple(o for o, _ in NGP), tuple(n for _, n in NGP)
    b, c = saved_pair(tmp_path, fingerprint(side(old)), fingerprint(side(new, 1.02)))
    r = run_cli(b, c, "--width", "200")
    assert f"distinct kernels {len(NGP)} → {len(NGP)} ({len(NGP)} common)" in r.stdout
    assert "different kernels" not in r.stdout and "base-only" not in r.stdout and "new +" not in r.stdout
    assert r.exit_code == 0


def test_different_kernels_under_either_spelling_stay_apart() -> None:
    lam = (
        "void tcnn::parallel_for_kernel<ngp::f(float*)::{lambda(unsigned long)#1}>"
        "(unsigned long, ngp::f(float*)::{lambda(unsigned long)#1})"
    )
    other_lambda = (
        "void tcnn::parallel_for_kernel<ngp::f(float *)::[lambda(unsigned long) (instance 2)]>(unsigned long, T1)"
    )
    other_type = "void ngp::fill_rollover<__half, (unsigned long)4>(unsigned int, unsigned int, const T1 *, T1 *)"
    other_size = "void ngp::fill_rollover<float, (unsigned long)3>(unsigned int, unsigned int, const T1 *, T1 *)"
    b = fingerprint(
        side((lam, "void ngp::fill_rollover<float, 4ul>(unsigned int, unsigned int, float const*, float*)"))
    )
    c = fingerprint(side((other_lambda, other_type)))
    assert matching.matches(b, c) == {}
    assert matching.matches(b, fingerprint(side((other_size,)))) == {}
    assert compare(b, c).headline.common_kernels == 0


def test_a_hostile_name_is_spelled_in_linear_time() -> None:
    deep = "f" + "<a" * 100_000 + ">" * 100_000 + "(T1)"
    assert canonical(deep) == deep  # deeper than any real name: left as it is
    many = "void k<" + "x" * 1000 + ">(" + ", ".join(["T1"] * 20_000) + ")"
    assert canonical(many).endswith("T1)")  # would grow the name 20,000 times: left


def _ngp_trace(path: Path, names: tuple[str, ...], gpu: Gpu, scale: float) -> Path:
    """A training loop of instant-ngp's kernels, 20 launches each, as nsys 2021.x exports it."""
    b = TraceBuilder(Generation.V2021, gpus=(gpu,))
    for i, n in enumerate(names):
        short = n.split("(")[0].split("<")[0].split()[-1].split("::")[-1]
        starts = 1_000_000 + np.arange(20) * 10_000_000 + i * 100_000
        b.kernels(short, starts, np.full(20, int(scale * (i + 1) * 2_000)), demangled=n)
    return b.write(path)


def test_built_instant_ngp_traces_share_every_kernel(tmp_path: Path) -> None:
    old, new = tuple(o for o, _ in NGP), tuple(n for _, n in NGP)
    rtx3070 = Gpu(name="NVIDIA GeForce RTX 3070", sm_count=46, compute=(8, 6), chip_name="GA104")
    rtx3090 = Gpu(name="NVIDIA GeForce RTX 3090", sm_count=82, compute=(8, 6), chip_name="GA102")
    b = _ngp_trace(tmp_path / "rtx3070_2021_2.sqlite", old, rtx3070, 1.0)
    c = _ngp_trace(tmp_path / "rtx3090_2021_3.sqlite", new, rtx3090, 0.7)
    r = run_cli(b, c, "--width", "200")
    assert f"distinct kernels {len(NGP)} → {len(NGP)} ({len(NGP)} common)" in r.stdout
    assert "different kernels" not in r.stdout and "base-only" not in r.stdout
