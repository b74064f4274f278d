"""Launch geometry: whether the kernels both sides run launch grids of another size.

The same kernels with grids many times larger (a batch dimension in gridY, an elementwise
grid 392 → 50,176) do more work per call: a different input or batch size, not one
kernel's regression. The figure is the call-weighted mean of blocks per launch over the
kernels common to both sides, from the launch shapes the reader already aggregated in
SQLite (``KernelStats.configs``: the distinct shapes of each kernel, never one record per
launch). A kernel launched with several shapes counts with the mean of its shapes; each kernel's
ratio is weighted by the calls both sides made of it.
Pure: no SQL, no formatting but ``units``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from nsysdiff import units as u
from nsysdiff.compare import matching
from nsysdiff.fingerprint.model import Fingerprint, KernelStats

# Blocks per launch that grew or shrank this much is another workload: split-K factors and
# tile choices move one kernel's grid by 2-4x, not the typical kernel's; batch sizes move all.
GROWTH = 4.0


@dataclass(frozen=True, slots=True)
class Geometry:
    """How the blocks per launch of the kernels both sides run changed."""

    kernels: int  # common kernels with a launch shape on both sides
    ratio: float  # the typical change: call-weighted geometric mean of the kernels' ratios
    example: str  # the common kernel with the most calls among those that moved that way
    example_base: float  # its blocks per launch on each side
    example_candidate: float

    @property
    def changed(self) -> bool:
        return self.ratio >= GROWTH or self.ratio <= 1 / GROWTH


def _blocks(k: KernelStats) -> float | None:
    grids = [c.grid[0] * c.grid[1] * c.grid[2] for c in k.configs if min(c.grid) > 0]
    return sum(grids) / len(grids) if grids else None


def compare(base: Fingerprint, cand: Fingerprint) -> Geometry | None:
    """The launch geometry of both sides' common kernels; None where none has a shape."""
    cand = matching.align(base, cand)
    by_name = {k.demangled: k for k in base.kernels}
    # One weight per kernel for both sides (the calls both made): a build that fuses away
    # many small launches changes the mix of kernels, not the grid of any one of them.
    moved: list[tuple[float, float, str, float, float]] = []  # weight, log ratio, name, blocks
    for kc in cand.kernels:
        kb = by_name.get(kc.demangled)
        if kb is None:
            continue
        bb, bc = _blocks(kb), _blocks(kc)
        if bb is None or bc is None or not min(kb.calls, kc.calls):
            continue
        moved.append((float(min(kb.calls, kc.calls)), math.log(bc / bb), kc.name, bb, bc))
    if not moved:
        return None
    weight = sum(m[0] for m in moved)
    log_ratio = sum(m[0] * m[1] for m in moved) / weight
    same_way = [m for m in moved if m[1] * log_ratio > 0] or moved
    top = max(same_way, key=lambda m: (m[0], abs(m[1]), m[2]))
    return Geometry(len(moved), math.exp(log_ratio), top[2], top[3], top[4])


def changed(base: Fingerprint, cand: Fingerprint) -> Geometry | None:
    """The geometry when it changed enough to be another workload, else None."""
    g = compare(base, cand)
    return g if g is not None and g.changed else None


def _word(g: Geometry) -> str:
    return "grew" if g.ratio > 1 else "shrank"


def verdict_phrase(g: Geometry) -> str:
    return f"launch geometry {_word(g)} {u.ratio(g.ratio)}: the work per call changed"


def text(g: Geometry) -> str:
    return (
        f"the launch geometry {_word(g)} {u.ratio(g.ratio)}: blocks per launch of {g.kernels:,} common kernels "
        f"(call-weighted), e.g. {u.shorten(g.example)} {g.example_base:,.0f} → {g.example_candidate:,.0f}. "
        "The work per call changed (a different input or batch size): per-kernel times measure "
        "the workload, not a regression"
    )


def reason(g: Geometry) -> str:
    return (
        f"the launch geometry {_word(g)} {u.ratio(g.ratio)} (blocks per launch of the common kernels): "
        "a different input or batch size; compare two runs of one workload"
    )
