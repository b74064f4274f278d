"""Launch geometry: how the work the common kernels launch changed between the sides.

Two figures, both over the kernels both sides run, both from the launch shapes the reader
aggregated in SQLite (``KernelStats.configs``: each distinct shape with its calls, never
one record per launch):

- the *blocks per launch*: per kernel, the call-weighted mean of its shapes' blocks; the
  typical change is the geometric mean of the kernels' ratios, each weighted by the calls
  both sides made of it. Grids many times larger (a batch dimension in gridY, an
  elementwise grid 392 → 50,176) are more work per call.
- the *threads launched*: blocks x threads per block x calls, summed over the common
  kernels. Work that stayed within a few percent while the launches were cut differently
  (one launch of 39,063 blocks against 10,000 launches of 4) is the same work split
  differently, not another input.

A fingerprint saved before shapes carried their calls spreads a kernel's calls evenly over
its shapes (``Geometry.exact`` is then False, and the text says so).
Pure: no SQL, no formatting but ``units``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from nsysdiff import units as u
from nsysdiff.compare import matching
from nsysdiff.fingerprint.model import Fingerprint, KernelStats

# Blocks per launch that grew or shrank this much is a resized workload: split-K factors
# and tile choices move one kernel's grid by 2-4x, not the typical kernel's; batch sizes
# move all of them.
GROWTH = 2.0
# Threads launched within this factor of the base's are the same work.
CONSERVED = 1.10
# Launches (or blocks per launch) of the common kernels that moved this much cut the work
# differently.
SPLIT = 1.5


@dataclass(frozen=True, slots=True)
class Geometry:
    """How the launches of the kernels both sides run changed."""

    kernels: int  # common kernels with a launch shape on both sides
    ratio: float  # the typical change of blocks per launch (call-weighted geometric mean)
    example: str  # the common kernel with the most calls among those that moved that way
    example_base: float  # its blocks per launch on each side (call-weighted)
    example_candidate: float
    base_threads: int  # threads launched by the common kernels (blocks x block size x calls)
    candidate_threads: int
    base_launches: int  # launches of the common kernels
    candidate_launches: int
    exact: bool = True  # every shape's calls are recorded (else spread evenly)

    @property
    def work_ratio(self) -> float:
        """Threads launched, candidate / base: the change of the work itself."""
        return self.candidate_threads / self.base_threads if self.base_threads else math.inf

    @property
    def launches_ratio(self) -> float:
        return self.candidate_launches / self.base_launches if self.base_launches else math.inf

    @property
    def conserved(self) -> bool:
        """The common kernels launched the same threads within ``CONSERVED``."""
        return 1 / CONSERVED <= self.work_ratio <= CONSERVED

    @property
    def split(self) -> bool:
        """The same work (threads conserved) cut into launches of another size or number."""
        moved = max(self.launches_ratio, 1 / self.launches_ratio, self.ratio, 1 / self.ratio) >= SPLIT
        return self.conserved and moved

    @property
    def resized(self) -> bool:
        """The work per launch and the work itself changed the same way (a batch or input
        size): two pieces of evidence, not one finer threshold."""
        if self.conserved or self.split:
            return False
        per_launch = self.ratio >= GROWTH or self.ratio <= 1 / GROWTH
        return per_launch and (self.ratio > 1) == (self.work_ratio > 1)


def _shapes(k: KernelStats) -> list[tuple[int, int, float]]:
    """(blocks, threads per block, calls) of each launch shape with a grid; a kernel whose
    shapes lack their calls (a fingerprint saved before) spreads its calls evenly."""
    shapes = [c for c in k.configs if min(c.grid) > 0]
    if not shapes:
        return []
    known = all(c.calls is not None for c in shapes)
    even = k.calls / len(shapes)
    return [
        (
            c.grid[0] * c.grid[1] * c.grid[2],
            c.block[0] * c.block[1] * c.block[2],
            float(c.calls) if known and c.calls is not None else even,
        )
        for c in shapes
    ]


def _exact(k: KernelStats) -> bool:
    return all(c.calls is not None for c in k.configs)


def blocks_per_launch(k: KernelStats) -> float | None:
    """The call-weighted mean of blocks per launch over a kernel's shapes."""
    shapes = _shapes(k)
    calls = sum(s[2] for s in shapes)
    return sum(s[0] * s[2] for s in shapes) / calls if calls else None


def threads(k: KernelStats) -> float:
    """Threads a kernel launched: blocks x threads per block x calls over its shapes."""
    return sum(s[0] * s[1] * s[2] for s in _shapes(k))


def compare(base: Fingerprint, cand: Fingerprint) -> Geometry | None:
    """The launch geometry of both sides' common kernels; None where none has a shape."""
    cand = matching.align(base, cand)
    by_name = {k.demangled: k for k in base.kernels}
    # One weight per kernel for both sides (the calls both made): a build that fuses away
    # many small launches changes the mix of kernels, not the grid of any one of them.
    moved: list[tuple[float, float, str, float, float]] = []  # weight, log ratio, name, blocks
    work = [0.0, 0.0, 0, 0]
    exact = True
    for kc in cand.kernels:
        kb = by_name.get(kc.demangled)
        if kb is None:
            continue
        bb, bc = blocks_per_launch(kb), blocks_per_launch(kc)
        if bb is None or bc is None or not min(kb.calls, kc.calls):
            continue
        exact = exact and _exact(kb) and _exact(kc)
        moved.append((float(min(kb.calls, kc.calls)), math.log(bc / bb), kc.name, bb, bc))
        work[0] += threads(kb)
        work[1] += threads(kc)
        work[2] += kb.calls
        work[3] += kc.calls
    if not moved:
        return None
    weight = sum(m[0] for m in moved)
    log_ratio = sum(m[0] * m[1] for m in moved) / weight
    same_way = [m for m in moved if m[1] * log_ratio > 0] or moved
    top = max(same_way, key=lambda m: (m[0], abs(m[1]), m[2]))
    return Geometry(
        kernels=len(moved),
        ratio=math.exp(log_ratio),
        example=top[2],
        example_base=top[3],
        example_candidate=top[4],
        base_threads=round(work[0]),
        candidate_threads=round(work[1]),
        base_launches=int(work[2]),
        candidate_launches=int(work[3]),
        exact=exact,
    )


def _word(ratio: float) -> str:
    return "grew" if ratio > 1 else "shrank"


def resized_phrase(g: Geometry) -> str:
    """``blocks per launch 7.52x, threads launched 7.40x``."""
    return f"blocks per launch {u.ratio(g.ratio)}, threads launched {u.ratio(g.work_ratio)}"


def split_phrase(g: Geometry) -> str:
    """``1 launch → 10,000 smaller launches, the same 10.0M threads (1.02x)``."""
    size = "smaller" if g.launches_ratio > 1 else "larger"
    return (
        f"{u.plural(g.base_launches, 'launch')} → {g.candidate_launches:,} {size} launches, the same "
        f"{u.si(g.base_threads)} threads ({u.ratio(g.work_ratio)})"
    )


def text(g: Geometry) -> str:
    """The evidence line: blocks per launch of the typical kernel and of an example."""
    approx = "" if g.exact else " (calls per shape not recorded: shapes weighted evenly)"
    return (
        f"blocks per launch {_word(g.ratio)} {u.ratio(g.ratio)} over {g.kernels:,} common kernels "
        f"(call-weighted){approx}, e.g. {u.shorten(g.example)} {g.example_base:,.0f} → "
        f"{g.example_candidate:,.0f}; threads launched {u.si(g.base_threads)} → "
        f"{u.si(g.candidate_threads)} ({u.ratio(g.work_ratio)}) in {g.base_launches:,} → "
        f"{g.candidate_launches:,} launches"
    )
