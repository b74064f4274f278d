"""Launch geometry: whether the kernels both sides run launch grids of another size.

The same kernels with grids many times larger (a batch dimension in gridY, an elementwise
grid 392 → 50,176) do more work per call: a different input or batch size, not one
kernel's regression. The figure is the call-weighted mean of blocks per launch over the
kernels common to both sides, from the launch shapes the reader already aggregated in
SQLite (``KernelStats.configs``: the distinct shapes of each kernel, never one record per
launch). A kernel launched with several shapes counts with the mean of its shapes.
Pure: no SQL, no formatting but ``units``.
"""

from __future__ import annotations

from dataclasses import dataclass

from nsysdiff import units as u
from nsysdiff.compare import matching
from nsysdiff.fingerprint.model import Fingerprint, KernelStats

# Blocks per launch that grew or shrank this much is another workload: split-K factors and
# tile choices move grids by 2-4x between builds of one workload, batch sizes by far more.
GROWTH = 8.0


@dataclass(frozen=True, slots=True)
class Geometry:
    """The call-weighted blocks per launch of the kernels both sides run."""

    kernels: int  # common kernels with a launch shape on both sides
    base_blocks: float
    candidate_blocks: float

    @property
    def ratio(self) -> float:
        return self.candidate_blocks / self.base_blocks if self.base_blocks else 1.0

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
    n = 0
    sums = [0.0, 0.0, 0.0, 0.0]  # base blocks x calls, base calls, candidate's the same
    for kc in cand.kernels:
        kb = by_name.get(kc.demangled)
        if kb is None or not kb.calls or not kc.calls:
            continue
        bb, bc = _blocks(kb), _blocks(kc)
        if bb is None or bc is None:
            continue
        n += 1
        sums[0] += bb * kb.calls
        sums[1] += kb.calls
        sums[2] += bc * kc.calls
        sums[3] += kc.calls
    if not n:
        return None
    return Geometry(n, sums[0] / sums[1], sums[2] / sums[3])


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
        f"the launch geometry {_word(g)}: blocks per launch {g.base_blocks:,.0f} → {g.candidate_blocks:,.0f} "
        f"({u.ratio(g.ratio)}, call-weighted over {g.kernels:,} common kernels). The work per call "
        "changed (a different input or batch size): per-kernel times measure the workload, not a regression"
    )


def reason(g: Geometry) -> str:
    return (
        f"the launch geometry {_word(g)} {u.ratio(g.ratio)} (blocks per launch of the common kernels): "
        "a different input or batch size; compare two runs of one workload"
    )
