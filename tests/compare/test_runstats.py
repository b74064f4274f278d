"""Statistics across runs: the exact pieces, and calibration on simulated runs.

The simulations draw per-run values from log-normal run-to-run noise with fixed seeds
and run vectorised (thousands of comparisons in one array call), so the whole file
takes well under a few seconds.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from nsysdiff.compare import runstats as rs
from nsysdiff.compare.runstats import RunVerdict

CHANGED, NO_CHANGE, TOO_NOISY = (
    rs.VERDICTS.index(v) for v in (RunVerdict.CHANGED, RunVerdict.NO_CHANGE, RunVerdict.TOO_NOISY)
)

ALPHA = 0.05
BAND = 0.02


def _simulate(
    rng: np.random.Generator, sims: int, runs: int, noise: float, change: float, keys: int = 1
) -> tuple[np.ndarray, rs.RunTest]:
    """``sims`` comparisons of ``keys`` keys each: per-key verdicts (sims x keys) and the test."""
    base = 1000.0 * np.exp(rng.normal(0.0, noise, (sims * keys, runs)))
    cand = 1000.0 * np.exp(rng.normal(math.log1p(change), noise, (sims * keys, runs)))
    test = rs.welch_log(base, cand)
    q = rs.benjamini_hochberg(test.p_value.reshape(sims, keys)).reshape(-1)
    verdicts = rs.classify(q, test.ci_low, test.ci_high, ALPHA, BAND)
    return verdicts.reshape(sims, keys), test


@pytest.mark.parametrize("runs", [2, 3, 5])
@pytest.mark.parametrize("noise", [0.01, 0.05])
def test_aa_false_alarm_rate_stays_at_or_under_alpha(runs: int, noise: float) -> None:
    rng = np.random.default_rng(1200 + runs)
    verdicts, _ = _simulate(rng, 4000, runs, noise, 0.0)
    assert (verdicts == CHANGED).mean() <= ALPHA


def test_aa_false_alarm_rate_with_ten_runs_is_alpha_within_sampling_error() -> None:
    # At ten runs Welch's t is exact to within a fraction of a percent, so the simulated
    # rate sits on alpha and a 4,000-draw sample lands on either side of it by chance:
    # allow three binomial standard errors.
    rng = np.random.default_rng(1210)
    verdicts, _ = _simulate(rng, 4000, 10, 0.02, 0.0)
    se = math.sqrt(ALPHA * (1 - ALPHA) / 4000)
    assert (verdicts == CHANGED).mean() <= ALPHA + 3 * se


def test_aa_with_twenty_keys_bh_keeps_any_false_alarm_under_alpha() -> None:
    # Under the global null the FDR is the chance of any rejection, which BH bounds by alpha.
    rng = np.random.default_rng(1220)
    verdicts, _ = _simulate(rng, 2000, 5, 0.02, 0.0, keys=20)
    assert (verdicts == CHANGED).any(axis=1).mean() <= ALPHA


def test_power_for_a_five_percent_regression_with_one_percent_noise_and_five_runs() -> None:
    rng = np.random.default_rng(1230)
    verdicts, test = _simulate(rng, 4000, 5, 0.01, 0.05)
    assert (verdicts == CHANGED).mean() >= 0.90
    # The interval covers the true ratio as often as it claims.
    covered = (test.ci_low <= 1.05) & (test.ci_high >= 1.05)
    assert covered.mean() >= 0.94


def test_power_holds_among_fifty_keys_after_the_correction() -> None:
    # One regressed key among fifty unchanged ones, all with 1% noise and five runs.
    rng = np.random.default_rng(1231)
    sims, keys = 2000, 50
    base = 1000.0 * np.exp(rng.normal(0.0, 0.01, (sims, keys, 5)))
    cand = 1000.0 * np.exp(rng.normal(0.0, 0.01, (sims, keys, 5)))
    cand[:, 0, :] *= 1.05
    test = rs.welch_log(base.reshape(-1, 5), cand.reshape(-1, 5))
    q = rs.benjamini_hochberg(test.p_value.reshape(sims, keys))
    # The correction costs power: 89% here, against 100% for the key tested alone.
    assert (q[:, 0] <= ALPHA).mean() >= 0.85


def test_two_runs_with_five_percent_noise_call_a_three_percent_change_too_noisy() -> None:
    rng = np.random.default_rng(1240)
    verdicts, _ = _simulate(rng, 4000, 2, 0.05, 0.03)
    assert (verdicts == TOO_NOISY).mean() >= 0.90
    assert (verdicts == CHANGED).mean() <= ALPHA
    # "No significant change" with a 3% change against a 2% band is a false claim of
    # equivalence: the interval is inside the band at most (1 - confidence) / 2 of the time.
    assert (verdicts == NO_CHANGE).mean() <= 0.025


def test_quiet_runs_rule_out_a_change_larger_than_the_band() -> None:
    rng = np.random.default_rng(1250)
    verdicts, _ = _simulate(rng, 2000, 10, 0.005, 0.0)
    assert (verdicts == NO_CHANGE).mean() >= 0.90


def test_welch_matches_scipy_on_the_log_values() -> None:
    from scipy import stats as sps

    base = np.array([[100.0, 104.0, 98.0, 101.0], [7.0, 7.5, 6.9, 7.2]])
    cand = np.array([[110.0, 108.0, 111.0], [7.1, 7.0, 7.4]])
    test = rs.welch_log(base, cand)
    for i in range(2):
        ref = sps.ttest_ind(np.log(cand[i]), np.log(base[i]), equal_var=False)
        assert test.p_value[i] == pytest.approx(ref.pvalue, rel=1e-12)
        ci = ref.confidence_interval(0.95)
        assert test.ci_low[i] == pytest.approx(math.exp(ci.low), rel=1e-12)
        assert test.ci_high[i] == pytest.approx(math.exp(ci.high), rel=1e-12)
    gm = np.exp(np.log(cand).mean(axis=1) - np.log(base).mean(axis=1))
    assert test.ratio == pytest.approx(gm, rel=1e-15)


def test_identical_runs_have_a_point_interval() -> None:
    same = np.array([[5.0, 5.0, 5.0]])
    test = rs.welch_log(same, same)
    assert (test.ratio[0], test.ci_low[0], test.ci_high[0], test.p_value[0]) == (1.0, 1.0, 1.0, 1.0)
    moved = rs.welch_log(same, same * 2.0)
    assert moved.ratio[0] == pytest.approx(2.0) and moved.p_value[0] == 0.0


def test_benjamini_hochberg_matches_the_textbook_step_up() -> None:
    p = np.array([0.01, 0.04, 0.03, 0.005, 0.5])
    # Sorted: 0.005, 0.01, 0.03, 0.04, 0.5 -> x5/rank: 0.025, 0.025, 0.05, 0.05, 0.5.
    expected = np.array([0.025, 0.05, 0.05, 0.025, 0.5])
    assert rs.benjamini_hochberg(p) == pytest.approx(expected, rel=1e-12)
    # Row-wise on a 2-D array: each row is its own family.
    both = rs.benjamini_hochberg(np.vstack([p, p[::-1]]))
    assert both[1] == pytest.approx(expected[::-1], rel=1e-12)


def test_compare_runs_names_a_verdict_per_key_sorted() -> None:
    base = {
        "gemm": [100.0, 101.0, 99.0, 100.5, 99.5],
        "copy": [50.0, 50.2, 49.9, 50.1, 49.8],
        "flaky": [10.0, 14.0, 8.0, 12.0, 9.0],
        "base_only": [1.0, 1.0, 1.0, 1.0, 1.0],
    }
    cand = {
        "gemm": [105.0, 106.0, 104.0, 105.5, 104.5],
        "copy": [50.1, 49.9, 50.0, 50.2, 49.9],
        "flaky": [11.0, 9.0, 13.0, 10.0, 12.5],
    }
    result = rs.compare_runs(base, cand)
    by_key = {k.key: k for k in result.keys}
    assert [k.key for k in result.keys] == ["copy", "flaky", "gemm"]
    assert by_key["gemm"].verdict is RunVerdict.CHANGED
    assert by_key["copy"].verdict is RunVerdict.NO_CHANGE
    assert by_key["flaky"].verdict is RunVerdict.TOO_NOISY
    gemm = by_key["gemm"]
    assert gemm.base_values == tuple(base["gemm"])
    assert gemm.median_ratio == 105.0 / 100.0
    assert gemm.ci_low is not None and gemm.ci_high is not None
    assert gemm.ci_low < gemm.ratio < gemm.ci_high
    assert gemm.q_value is not None and gemm.p_value is not None and gemm.q_value >= gemm.p_value
    assert result.method == (
        "Welch's t on log per-run values (geometric-mean ratio, 95% interval), "
        "Benjamini-Hochberg over 3 keys at alpha 0.05, runs: 5 base, 5 candidate"
    )


def test_one_run_per_side_has_no_interval() -> None:
    result = rs.compare_runs({"k": [100.0]}, {"k": [106.0]})
    (k,) = result.keys
    assert k.verdict is RunVerdict.SINGLE_RUN
    assert (k.ci_low, k.ci_high, k.p_value, k.q_value) == (None, None, None, None)
    assert k.ratio == pytest.approx(1.06)
    assert "over 0 keys" in result.method


@pytest.mark.parametrize(
    ("base", "message"),
    [
        ({"k": [1.0, 2.0], "j": [1.0]}, "different numbers of runs"),
        ({"k": [1.0, 0.0]}, "positive and finite"),
        ({"k": [1.0, float("nan")]}, "positive and finite"),
    ],
)
def test_compare_runs_rejects_ragged_or_non_positive_values(base: dict[str, list[float]], message: str) -> None:
    cand = {key: [1.0, 1.0] for key in base}
    with pytest.raises(ValueError, match=message):
        rs.compare_runs(base, cand)
