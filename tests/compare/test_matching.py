"""One program under two demanglers (nsysdiff.compare.matching, nsysdiff.trace.names.spelling)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from conftest import run_cli
from fpspec import fingerprint, kernel, saved_pair

from nsysdiff.compare import comparability, matching
from nsysdiff.compare.diff import compare
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
