"""Pure numeric functions on arrays."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

DISTRIBUTION_METHOD = (
    "Mann-Whitney U and Kolmogorov-Smirnov on per-call quantile sketches "
    "(effect sizes only; no p-value, launches are not independent samples)"
)


def weighted_median(values: npt.NDArray[np.float64], weights: npt.NDArray[np.float64]) -> float:
    """The value at which half the total weight lies on either side."""
    order = np.argsort(values, kind="stable")
    v, w = values[order], weights[order]
    cum = np.cumsum(w)
    half = cum[-1] / 2.0
    i = int(np.searchsorted(cum, half))
    # On an exact tie between two values, take their midpoint, as an unweighted median does.
    if np.isclose(cum[i], half) and i + 1 < len(v):
        return float((v[i] + v[i + 1]) / 2.0)
    return float(v[i])


def compare_sketches(base: Sequence[float], cand: Sequence[float]) -> tuple[float, float] | None:
    """(P(candidate call > base call), KS distance) from two quantile sketches.

    The sketches are quantiles on the same grid, so each point stands for an equal share
    of launches; the statistics describe the shift of the distribution, not its certainty.
    """
    b = np.asarray(base, dtype=np.float64)
    c = np.asarray(cand, dtype=np.float64)
    if not len(b) or not len(c):
        return None
    if np.array_equal(b, c):
        return 0.5, 0.0
    # Both statistics are exact on two small sketches without scipy.stats, which takes
    # half a second to import (most of a diff of two saved fingerprints).
    # Mann-Whitney U of the candidate: pairs where it is larger, ties counting half.
    u = np.sum(c[:, None] > b[None, :]) + 0.5 * np.sum(c[:, None] == b[None, :])
    # Two-sample Kolmogorov-Smirnov: the largest gap between the empirical CDFs.
    every = np.concatenate((b, c))
    gap = (
        np.searchsorted(np.sort(b), every, side="right") / len(b)
        - np.searchsorted(np.sort(c), every, side="right") / len(c)
    )
    return float(u) / (len(b) * len(c)), float(np.max(np.abs(gap)))
