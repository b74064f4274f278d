"""The overall scale of a diff: the weighted median of the family ratios, the spread
around it, and whether it is a reference to judge a key against (docs/diff.md).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from nsysdiff.compare import stats
from nsysdiff.fingerprint.model import KernelStats

# No family carries more than this share of the scale's weight (docs/diff.md).
WEIGHT_CAP = 0.20
# Below this share of either side's kernel time in families on both sides, no scale.
MIN_COMMON = 0.5
# Above this ratio between the weighted quartiles of the family ratios (half the weight
# spread over more than an order of magnitude), the families changed in unrelated ways:
# their median is no reference to judge a key against.
MAX_SPREAD = 10.0


@dataclass(frozen=True, slots=True)
class Scale:
    """The overall scale and what it rests on."""

    factor: float  # the weighted median of the family ratios (1.0 when there is none)
    spread: float  # weighted MAD of the family log ratios around it, before the floor
    low: float  # weighted quartiles of the family ratios: half the weight lies between
    high: float
    families: int  # families on both sides it is measured over
    base_share: float  # of base kernel time in those families
    candidate_share: float

    @property
    def covered(self) -> bool:
        """Enough of both sides' time in common families for a scale to be measured."""
        return self.families > 0 and min(self.base_share, self.candidate_share) >= MIN_COMMON

    @property
    def scattered(self) -> bool:
        """The family ratios spread too wide (``MAX_SPREAD`` between the quartiles) for
        their median to be a reference."""
        return self.families > 0 and self.high > MAX_SPREAD * self.low

    @property
    def meaningful(self) -> bool:
        """A scale that means something: covered and not scattered."""
        return self.covered and not self.scattered

    def times(self, k: float) -> Scale:
        """The same scale with every ratio multiplied by ``k`` (per-step normalisation)."""
        return dataclasses.replace(self, factor=self.factor * k, low=self.low * k, high=self.high * k)


NO_SCALE = Scale(1.0, 0.0, 1.0, 1.0, 0, 0.0, 0.0)


def _family_totals(kernels: Sequence[KernelStats]) -> dict[str, int]:
    out: dict[str, int] = {}
    for k in kernels:
        out[k.family] = out.get(k.family, 0) + k.total_ns
    return out


def overall_scale(base: Sequence[KernelStats], cand: Sequence[KernelStats], min_share: float = 0.0) -> Scale:
    """The scale over the families on both sides (see the module docstring)."""
    return scale_of(_family_totals(base), _family_totals(cand), min_share)


def scale_of(fb: Mapping[str, float], fc: Mapping[str, float], min_share: float = 0.0) -> Scale:
    """The scale over the keys (families, NVTX ranges, graphs) on both sides.

    Keys under ``min_share`` of both sides' time are left out (their ratios are timing
    noise) unless that would leave nothing.
    """
    tb, tc = sum(fb.values()), sum(fc.values())
    common = sorted(f for f in fb.keys() & fc.keys() if fb[f] > 0 and fc[f] > 0)
    if not common or not tb or not tc:
        return NO_SCALE
    share_b = np.array([fb[f] / tb for f in common])
    share_c = np.array([fc[f] / tc for f in common])
    logs = np.log(np.array([fc[f] for f in common], dtype=np.float64)) - np.log(
        np.array([fb[f] for f in common], dtype=np.float64)
    )
    material = np.maximum(share_b, share_c) >= min_share
    if not material.any():
        material[:] = True
    size = (share_b + share_c)[material]
    lr = logs[material]
    w = stats.capped_weights(size, WEIGHT_CAP)
    centre = stats.weighted_median(lr, w)
    spread = stats.weighted_median(np.abs(lr - centre), w)
    return Scale(
        factor=math.exp(centre),
        spread=spread,
        low=math.exp(stats.weighted_quantile(lr, w, 0.25)),
        high=math.exp(stats.weighted_quantile(lr, w, 0.75)),
        families=len(common),
        base_share=float(share_b.sum()),
        candidate_share=float(share_c.sum()),
    )
