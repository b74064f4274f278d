"""The numeric helpers: weighted quantiles, capped weights, and the sketch statistics against scipy's own."""

from __future__ import annotations

import numpy as np
import pytest

from nsysdiff.compare import stats
from nsysdiff.compare.stats import compare_sketches
from nsysdiff.trace.records import QUANTILE_GRID


def test_weighted_quantile_matches_the_unweighted_one_with_equal_weights() -> None:
    v = np.array([5.0, 1.0, 3.0, 2.0])
    w = np.ones(4)
    assert stats.weighted_median(v, w) == 2.5  # midpoint of the two middle values
    assert stats.weighted_quantile(v, w, 0.25) == 1.5
    assert stats.weighted_quantile(v, w, 1.0) == 5.0


def test_weighted_quantile_follows_the_weight() -> None:
    v = np.array([1.0, 2.0, 3.0])
    assert stats.weighted_median(v, np.array([1.0, 1.0, 5.0])) == 3.0
    assert stats.weighted_quantile(v, np.array([1.0, 1.0, 5.0]), 0.2) == 2.0


@pytest.mark.parametrize("cap", [0.1, 0.2, 0.5])
def test_capped_weights_hold_no_item_above_the_cap(cap: float) -> None:
    sizes = np.array([60.0, 20.0, 5.0, 5.0, 3.0, 2.0, 1.0, 1.0, 1.0, 1.0, 0.5, 0.5])
    w = stats.capped_weights(sizes, cap)
    assert (w / w.sum()).max() <= cap + 1e-12
    # Items under the level keep their size: the order and the small ones are untouched.
    small = sizes < w.max()
    assert np.array_equal(w[small], sizes[small])
    assert list(np.argsort(-w, kind="stable")) == list(np.argsort(-sizes, kind="stable"))


def test_capped_weights_leave_balanced_sizes_alone_and_equalise_too_few_items() -> None:
    sizes = np.arange(1.0, 21.0)
    assert np.array_equal(stats.capped_weights(sizes, 0.2), sizes)
    assert np.array_equal(stats.capped_weights(np.array([9.0, 1.0, 1.0]), 0.2), np.ones(3))
    assert stats.capped_weights(np.array([]), 0.2).size == 0


@pytest.mark.parametrize("seed", range(20))
def test_compare_sketches_equals_scipy(seed: int) -> None:
    sps = pytest.importorskip("scipy.stats")
    rng = np.random.default_rng(seed)
    n = len(QUANTILE_GRID)
    # Integer-valued sketches with repeats, so ties between and within sketches occur.
    b = np.sort(rng.integers(100, 100 + 3 * (seed + 1), n)).astype(np.float64)
    c = np.sort(rng.integers(100 + seed, 110 + 3 * (seed + 1), n)).astype(np.float64)
    got = compare_sketches(b.tolist(), c.tolist())
    u = sps.mannwhitneyu(c, b, alternative="two-sided").statistic
    ks = sps.ks_2samp(b, c, method="asymp").statistic
    assert got == (float(u) / (n * n), float(ks))


def test_compare_sketches_does_not_import_scipy() -> None:
    import subprocess
    import sys

    code = (
        "import sys; from nsysdiff.compare.stats import compare_sketches; "
        "compare_sketches([1.0, 2.0, 3.0], [2.0, 3.0, 4.0]); "
        "print('scipy' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
