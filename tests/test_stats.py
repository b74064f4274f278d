"""The numeric helpers behind the scale: weighted quantiles and capped weights."""

from __future__ import annotations

import numpy as np
import pytest

from nsysdiff import stats


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
