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
    return weighted_quantile(values, weights, 0.5)


def weighted_quantile(values: npt.NDArray[np.float64], weights: npt.NDArray[np.float64], q: float) -> float:
    """The value below which a share ``q`` of the total weight lies (``q=0.5``: the
    weighted median). Between two values holding exactly ``q`` on either side, their
    midpoint, as an unweighted median does."""
    order = np.argsort(values, kind="stable")
    v, w = values[order], weights[order]
    cum = np.cumsum(w)
    cut = cum[-1] * q
    i = min(int(np.searchsorted(cum, cut)), len(v) - 1)
    if np.isclose(cum[i], cut) and i + 1 < len(v):
        return float((v[i] + v[i + 1]) / 2.0)
    return float(v[i])


def capped_weights(sizes: npt.NDArray[np.float64], cap: float) -> npt.NDArray[np.float64]:
    """``sizes`` clipped at one common level so that no item holds more than ``cap`` of the
    total weight (water-filling: the largest are cut to the same height, the rest keep
    their size). With fewer than ``1 / cap`` items no level can do that: equal weights."""
    n = len(sizes)
    if n == 0:
        return np.array(sizes, dtype=np.float64)
    if n * cap <= 1.0:
        return np.ones(n)
    desc = np.sort(sizes)[::-1]
    for k in range(n):  # k: how many of the largest are cut
        level = cap * float(desc[k:].sum()) / (1.0 - cap * k)
        if desc[k] <= level:
            capped: npt.NDArray[np.float64] = np.minimum(sizes, level)
            return capped
    return np.ones(n)  # unreachable: with n * cap > 1 some k fits


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
    gap = np.searchsorted(np.sort(b), every, side="right") / len(b) - np.searchsorted(
        np.sort(c), every, side="right"
    ) / len(c)
    return float(u) / (len(b) * len(c)), float(np.max(np.abs(gap)))
