"""Tail changes: a kernel whose slow calls multiplied while its median held.

A median and a total can both miss this: one call in fifty taking ten times longer leaves
the median where it was and moves the total by less than the noise of a busy trace. The
profiling rule of thumb is that p99/p50 above 1.5x is a systematic tail and max/p50 above
2x is outlier invocations; a single slow call proves nothing, so the test counts calls.

Method: a tail belongs to one population, so each kernel is compared per launch shape
(grid and block) within the scope (a per-step read holds the decode steps' launches
only), and phase by phase when both sides were read with phases: a prefill's calls at
another batch, or a new caller with another grid, are another population, never a tail.
Each fingerprint counts, exactly, the calls of a (kernel, shape) longer than 1.5x, 2x, 4x
and 10x its own median (``ShapeTail``). For each multiple, the
candidate's share of such calls is tested against the base's with a one-sided Fisher exact
test, at a significance of ``ALPHA`` divided by the tests made (four per pair tested,
Bonferroni). Several multiples, not one: a kernel that already has 1% of calls at 2x the
median (a cache miss, a clock change) hides a new 2% of 10x calls under it, and the 10x
count sees them. Practical gates decide whether it matters: at least ``MIN_CALLS`` calls of
the shape on both sides and ``MIN_BEYOND`` candidate calls beyond (one slow call, a warm-up,
is no tail), the median holds within ``MEDIAN_HOLDS``, and the time beyond what the base's
mean call predicts is at least ``MIN_SHARE`` of the shape's base time, ``MIN_TIME_NS``, and
twice what the median's own shift explains (else every call got slower: a per-call change,
not a tail). Fingerprints saved before the counts were kept have no tail to compare.
"""

from __future__ import annotations

from dataclasses import dataclass

from nsysdiff.compare import matching
from nsysdiff.fingerprint.model import Fingerprint
from nsysdiff.trace.names import shape_suffix
from nsysdiff.trace.records import TAIL_MIN_CALLS, TAIL_MULTIPLES, ShapeTail

ALPHA = 0.01  # family-wise, split over the tests made
MEDIAN_HOLDS = 1.05  # the median within this factor either way (the diff's noise)
MIN_SHARE = 0.05  # of the shape's base time
MIN_TIME_NS = 100_000.0  # 0.1 ms: less is no story whatever its significance
MIN_CALLS = TAIL_MIN_CALLS  # fewer calls of a shape put no call beyond a multiple worth counting
MIN_BEYOND = 3  # candidate calls beyond: one slow call (a warm-up) is no tail

METHOD = (
    "calls of one launch shape beyond 1.5x/2x/4x/10x its median, counted exactly on both "
    f"sides; one-sided Fisher exact tests at {ALPHA:g} over all tests (Bonferroni); the median "
    f"within {MEDIAN_HOLDS:g}x and the extra time at least {MIN_SHARE:.0%} of the shape's"
)


@dataclass(frozen=True, slots=True)
class TailChange:
    """One kernel's launch shape whose tail grew while its median held."""

    key: str  # the demangled name, as the diff keys kernels
    name: str
    shape: str  # "gridX,gridY,gridZ,blockX,blockY,blockZ"
    calls: int  # candidate calls of the shape
    multiple: float  # the multiple of the median the calls are counted beyond
    beyond: int  # candidate calls beyond it (exact)
    base_beyond: int  # base calls beyond it (exact)
    base_calls: int
    p_value: float
    extra_ns: float  # candidate time beyond base mean x candidate calls, of the shape
    base_total_ns: float  # of the shape
    base_p50_ns: float
    candidate_p50_ns: float
    phase: str = ""  # the phase compared, when both sides were read with phases

    @property
    def where(self) -> str:
        """The launch shape (and phase) as the reports write it."""
        shape = shape_suffix(self.shape).strip()
        return f"{shape} in phase {self.phase}" if self.phase else shape


def _candidate(b: ShapeTail, c: ShapeTail) -> bool:
    """The practical gates, before any test."""
    if b.calls < MIN_CALLS or c.calls < MIN_CALLS or b.p50_ns <= 0 or c.p50_ns <= 0:
        return False
    if not 1 / MEDIAN_HOLDS <= c.p50_ns / b.p50_ns <= MEDIAN_HOLDS:
        return False  # the whole distribution moved: a per-call change, not a tail
    extra = c.total_ns - c.calls * b.total_ns / b.calls
    # What a shift of every call explains is no tail: most of the extra time must lie beyond it.
    shifted = c.calls * max(c.p50_ns - b.p50_ns, 0)
    return extra >= max(MIN_TIME_NS, MIN_SHARE * b.total_ns, 2 * shifted)


def _pairs(base: Fingerprint, cand: Fingerprint) -> list[tuple[ShapeTail, ShapeTail]]:
    """The (kernel, shape) counts of both sides, paired; none when a side has none."""
    if base.tails is None or cand.tails is None:
        return []
    # A candidate kernel under another demangler's name is the base's kernel.
    renamed = {n: k.demangled for n, k in matching.matches(base, cand).items()}
    bt = {(t.name, t.shape): t for t in base.tails}
    return [(bt[key], c) for c in cand.tails if (key := (renamed.get(c.name, c.name), c.shape)) in bt]


def changes(base: Fingerprint, cand: Fingerprint) -> tuple[TailChange, ...]:
    """The kernels' launch shapes of both sides whose tail grew significantly, largest
    extra time first; none when a side has no tail counts (saved before they were kept).
    Sides read with phases are compared phase by phase: a prefill and a decode step
    launching one kernel with one grid are still two populations."""
    if base.phases and cand.phases:
        theirs = {p.name: p.fingerprint for p in cand.phases}
        sides = [(p.name, p.fingerprint, theirs[p.name]) for p in base.phases if p.name in theirs]
    else:
        sides = [("", base, cand)]
    tested = [
        (phase, b, c)
        for phase, bf, cf in sides
        for b, c in _pairs(bf, cf)
        if b.calls >= MIN_CALLS and c.calls >= MIN_CALLS
    ]
    alpha = ALPHA / max(len(tested) * len(TAIL_MULTIPLES), 1)
    names = {k.demangled: k.name for k in base.kernels}
    out = []
    for phase, b, c in tested:
        found = _tail(b, c, alpha)
        if found is None:
            continue
        p, m, kb, kc = found
        out.append(
            TailChange(
                key=b.name,
                name=names.get(b.name, b.name),
                shape=b.shape,
                calls=c.calls,
                multiple=m,
                beyond=kc,
                base_beyond=kb,
                base_calls=b.calls,
                p_value=p,
                extra_ns=c.total_ns - c.calls * b.total_ns / b.calls,
                base_total_ns=b.total_ns,
                base_p50_ns=b.p50_ns,
                candidate_p50_ns=c.p50_ns,
                phase=phase,
            )
        )
    return tuple(sorted(out, key=lambda t: (-t.extra_ns, t.key, t.shape, t.phase)))


def _tail(b: ShapeTail, c: ShapeTail, alpha: float) -> tuple[float, float, int, int] | None:
    """(p-value, multiple, base and candidate calls beyond it) of the most significant
    count of a pair, when it passes the gates and ``alpha``."""
    if not _candidate(b, c):
        return None
    # scipy.stats takes half a second to import: only a pair with a tail to test pays.
    from scipy import stats as sps

    tests = []
    for m, kb, kc in zip(TAIL_MULTIPLES, b.beyond, c.beyond, strict=True):
        if kc < MIN_BEYOND or kc * b.calls <= kb * c.calls:
            continue  # too few, or no larger a share than the base's
        table = [[kc, c.calls - kc], [kb, b.calls - kb]]
        tests.append((float(sps.fisher_exact(table, alternative="greater").pvalue), -m, kb, kc))
    if not tests:
        return None
    p, neg_m, kb, kc = min(tests)
    return (p, -neg_m, kb, kc) if p < alpha else None
