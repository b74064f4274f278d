"""The overall scale and the outlier test: properties on hand-made fingerprints.

The scale is judged at family level with weights capped per family, so that neither one
heavy kernel nor many light variants decide it (docs/diff.md, "Overall scale").
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from conftest import run_cli
from fpspec import fingerprint, kernel, saved_pair

from nsysdiff.compare import comparability
from nsysdiff.compare.diff import Diff, compare
from nsysdiff.fingerprint.model import KernelStats
from nsysdiff.render.phrases import scale_line

MS = 1_000_000


def flagged(d: Diff) -> set[str]:
    """Families flagged, as a family row or through one of their kernels."""
    return {r.key for r in d.families if r.is_outlier} | {r.family or "" for r in d.kernels if r.is_outlier}


def background(n: int = 20, total_ms: float = 100.0) -> dict[str, tuple[int, int]]:
    """``n`` unrelated kernels (one family each) of uneven size summing to ``total_ms``."""
    weights = [1 + (i % 7) for i in range(n)]
    s = sum(weights)
    return {f"op{i}_kernel": (10 + i, round(total_ms * MS * w / s)) for i, w in enumerate(weights)}


def scaled(spec: dict[str, tuple[int, int]], factor: float, jitter: float = 0.0) -> dict[str, tuple[int, int]]:
    """Every kernel ``factor`` slower, each off by up to ``jitter`` (deterministic)."""
    return {
        n: (c, round(t * factor * (1 + jitter * (((i * 7) % 5) - 2) / 2))) for i, (n, (c, t)) in enumerate(spec.items())
    }


def test_concentrated_change_keeps_the_scale_and_flags_both_kernels() -> None:
    # A real optimisation: two kernels carry 68% of the time and improve (0.47x, 0.79x),
    # the other 18 are unchanged. A time-weighted median lands on 0.79x and flags nothing.
    rest = {f"op{i}_kernel": (10, round(32 * MS / 18)) for i in range(18)}
    base = {"gemm_big_kernel": (10, 34 * MS), "attn_big_kernel": (10, 34 * MS)} | rest
    cand = {"gemm_big_kernel": (10, round(34 * MS * 0.47)), "attn_big_kernel": (10, round(34 * MS * 0.79))} | rest
    d = compare(fingerprint(base), fingerprint(cand))
    assert d.headline.scale == pytest.approx(1.0, abs=0.01)
    assert flagged(d) == {"gemm_big_kernel", "attn_big_kernel"}
    assert {r.name for r in d.outliers} == {"gemm_big_kernel", "attn_big_kernel"}


def _variants(factor: float) -> list[KernelStats]:
    """21 template instantiations of one kernel, each under 1% of a 100 ms trace, 7% together."""
    return [
        kernel(
            "vectorized_elementwise_kernel",
            20,
            round(7 * MS / 21 * factor),
            demangled=f"void at::native::vectorized_elementwise_kernel<{i}, Functor{i}>(int, T)",
        )
        for i in range(21)
    ]


def test_regression_spread_over_variants_is_flagged_at_family_level() -> None:
    rest = background(20, 93.0)
    base = [*(kernel(n, c, t) for n, (c, t) in rest.items()), *_variants(1.0)]
    cand = [*(kernel(n, c, t) for n, (c, t) in rest.items()), *_variants(3.0)]
    d = compare(fingerprint(base), fingerprint(cand))
    fam = next(r for r in d.families if r.key == "vectorized_elementwise_kernel")
    assert fam.ratio == pytest.approx(3.0, rel=1e-5)
    assert fam.is_outlier and fam.outlier_score is not None and fam.outlier_score > 3.5
    assert flagged(d) == {"vectorized_elementwise_kernel"}
    assert d.headline.scale == pytest.approx(1.0)


@pytest.mark.parametrize("factor", [0.25, 0.5, 0.9, 1.0, 1.1, 1.25, 2.0, 16.0])
def test_uniform_scaling_gives_that_scale_and_no_flag(factor: float) -> None:
    base = background()
    d = compare(fingerprint(base), fingerprint(scaled(base, factor)))
    assert d.headline.scale == pytest.approx(factor, rel=1e-6)
    assert flagged(d) == set()
    assert d.headline.scale_info.meaningful


@pytest.mark.parametrize("share", [0.005, 0.02, 0.1, 0.3, 0.6])
@pytest.mark.parametrize("spread_over", [1, 12])
@pytest.mark.parametrize("bg", [0.8, 1.1, 2.0])
@pytest.mark.parametrize("regression", [1.5, 3.0])
def test_a_regression_in_one_family_is_flagged_against_any_background(
    share: float, spread_over: int, bg: float, regression: float
) -> None:
    rest = background(20, 100.0 * (1 - share))
    names = [f"void culprit_kernel<{i}>(float*)" for i in range(spread_over)]

    def culprit(factor: float) -> list[KernelStats]:
        each = round(100 * MS * share / spread_over * factor)
        return [kernel("culprit_kernel", 50, each, demangled=n) for n in names]

    base = [*(kernel(n, c, t) for n, (c, t) in rest.items()), *culprit(1.0)]
    cand_rest = scaled(rest, bg, jitter=0.03)
    cand = [*(kernel(n, c, t) for n, (c, t) in cand_rest.items()), *culprit(bg * regression)]
    d = compare(fingerprint(base), fingerprint(cand))
    assert d.headline.scale == pytest.approx(bg, rel=0.04)
    assert flagged(d) == {"culprit_kernel"}


def test_a_a_flags_nothing() -> None:
    fp = fingerprint(background())
    d = compare(fp, fp)
    assert flagged(d) == set() and d.headline.scale == 1.0
    info = d.headline.scale_info
    assert (info.low, info.high, info.spread) == (1.0, 1.0, 0.0)


def test_the_scale_reports_its_spread_and_what_it_is_measured_over() -> None:
    base = background() | {"gone_kernel": (5, 25 * MS)}
    cand = scaled(background(), 1.2, jitter=0.1) | {"fresh_kernel": (5, 30 * MS)}
    info = compare(fingerprint(base), fingerprint(cand)).headline.scale_info
    assert info.families == 20
    assert info.base_share == pytest.approx(100 / 125, rel=1e-6)
    assert info.candidate_share == pytest.approx(120 / 150, rel=0.02)
    assert info.low < info.factor < info.high
    assert info.spread > 0 and info.meaningful


def test_no_common_families_means_no_scale() -> None:
    d = compare(fingerprint({"a_kernel": (1, 10 * MS)}), fingerprint({"b_kernel": (1, 10 * MS)}))
    info = d.headline.scale_info
    assert not info.meaningful and info.families == 0
    assert flagged(d) == set()


def test_little_common_time_means_no_scale() -> None:
    base = {"shared_kernel": (1, 4 * MS), "old_kernel": (1, 6 * MS)}
    cand = {"shared_kernel": (1, 4 * MS), "new_kernel": (1, 6 * MS)}
    info = compare(fingerprint(base), fingerprint(cand)).headline.scale_info
    assert info.base_share == pytest.approx(0.4) and not info.meaningful


def test_one_heavy_family_does_not_decide_the_scale() -> None:
    # 60% of the time in one family that regressed 2x; the rest at 1.1x.
    rest = background(20, 40.0)
    base = rest | {"heavy_kernel": (100, 60 * MS)}
    cand = scaled(rest, 1.1) | {"heavy_kernel": (100, 132 * MS)}
    d = compare(fingerprint(base), fingerprint(cand))
    assert d.headline.scale == pytest.approx(1.1, rel=1e-3)
    assert flagged(d) == {"heavy_kernel"}
    assert not math.isclose(d.headline.ratio or 0, d.headline.scale)


def test_a_family_flagged_as_a_whole_is_reported_as_one(tmp_path: Path) -> None:
    rest = background(20, 93.0)
    base = [*(kernel(n, c, t) for n, (c, t) in rest.items()), *_variants(1.0)]
    cand = [*(kernel(n, c, t) for n, (c, t) in rest.items()), *_variants(3.0)]
    d = compare(fingerprint(base), fingerprint(cand))
    assert [r.key for r in d.outlier_families] == ["vectorized_elementwise_kernel"]
    r = run_cli(*saved_pair(tmp_path, fingerprint(base), fingerprint(cand)))
    assert r.exit_code == 1
    assert "Families flagged as a whole (1)" in r.stdout and "[21 variants]" in r.stdout
    (finding,) = [line for line in r.stdout.splitlines() if "outlier · " in line]
    assert "vectorized_elementwise_kernel" in finding


def test_a_scale_with_an_enormous_spread_is_no_reference() -> None:
    # fp32 then fp16 convolutions: the families changed by 0.3x to 40x, so their weighted
    # median (the "scale") is no reference, and a kernel 3,477x slower is not an outlier
    # of z 0.75 against it: the scale is absent, as with too little time in common.
    ratios = [0.3, 0.32, 0.5, 1.0, 3.0, 25.0, 26.0, 40.0, 42.0, 60.0]
    base = {f"conv{i}_kernel": (100, 10 * MS) for i in range(len(ratios))} | {"odd_kernel": (10, 1 * MS)}
    cand = {f"conv{i}_kernel": (100, round(10 * MS * r)) for i, r in enumerate(ratios)} | {
        "odd_kernel": (10, 3477 * MS)
    }
    d = compare(fingerprint(base), fingerprint(cand))
    info = d.headline.scale_info
    assert info.scattered and not info.meaningful
    assert not d.outliers
    reason = comparability.scale_reason(d)
    assert reason is not None and "no meaningful overall scale" in reason and "spread" in reason
    assert scale_line(d).startswith("none meaningful")


def test_an_ordinary_spread_keeps_the_scale() -> None:
    d = compare(fingerprint(background()), fingerprint(scaled(background(), 1.5, jitter=0.4)))
    assert d.headline.scale_info.meaningful and not d.headline.scale_info.scattered
