"""Pure numeric functions on arrays; the only module that imports scipy."""

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
    # scipy.stats takes half a second to import: only a diff with changes pays for it.
    from scipy import stats as sps

    u = sps.mannwhitneyu(c, b, alternative="two-sided").statistic
    ks = sps.ks_2samp(b, c, method="asymp").statistic
    return float(u) / (len(b) * len(c)), float(ks)
