"""Tail changes: a kernel whose slow calls multiplied while its median held.

A median and a total can both miss this: one call in fifty taking ten times longer leaves
the median where it was and moves the total by less than the noise of a busy trace. The
profiling rule of thumb is that p99/p50 above 1.5x is a systematic tail and max/p50 above
2x is outlier invocations; a single slow call proves nothing, so the test counts calls.

Method: the candidate's calls beyond the *base's own* p90, p95 and p99 are estimated from
the candidate's percentile sketch (its piecewise-linear distribution function); under "no
change" 10%, 5% and 1% of them lie there. A one-sided binomial test of each count, at a
significance of ``ALPHA`` divided by the tests made (three per kernel tested, Bonferroni),
decides significance. The base's p99 alone is not enough: a kernel that already has 1% of
slow calls (a cache miss, a clock change) hides a new 2% tail of 10x calls under it, and
the p95 sees it. Practical gates decide whether it matters: the median holds within
``MEDIAN_HOLDS``, and the time beyond what the base's mean call predicts is at least
``MIN_SHARE`` of the kernel's base time, ``MIN_TIME_NS``, and twice what the median's own
shift explains (else every call got slower: a per-call change, not a tail). The counts are estimates: the
sketch keeps p90, p95, p99 and the maximum, and places calls between them linearly.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from nsysdiff.fingerprint.model import Fingerprint, KernelStats
from nsysdiff.trace.records import QUANTILE_GRID

ALPHA = 0.01  # family-wise, split over the kernels tested
MEDIAN_HOLDS = 1.05  # the median within this factor either way (the diff's noise)
THRESHOLDS = (90.0, 95.0, 99.0)  # base percentiles the candidate's calls are counted beyond
MIN_SHARE = 0.05  # of the kernel's base time
MIN_TIME_NS = 100_000.0  # 0.1 ms: less is no story whatever its significance
MIN_CALLS = 200  # fewer calls put no call beyond a p99 worth counting

METHOD = (
    "calls beyond the base's own p90/p95/p99, estimated from the candidate's percentile "
    f"sketch; one-sided binomial tests at {ALPHA:g} over all tests (Bonferroni); the median "
    f"within {MEDIAN_HOLDS:g}x and the extra time at least {MIN_SHARE:.0%} of the kernel's"
)


@dataclass(frozen=True, slots=True)
class TailChange:
    """One kernel whose tail grew while its median held."""

    key: str  # the demangled name, as the diff keys kernels
    name: str
    calls: int  # candidate calls
    threshold: float  # the base percentile the calls are counted beyond (90, 95 or 99)
    threshold_ns: float  # its value in the base
    beyond: int  # candidate calls beyond it (estimated)
    expected: float  # calls expected there with no change
    p_value: float
    extra_ns: float  # candidate time beyond base mean x candidate calls
    base_total_ns: float
    base_p50_ns: float
    candidate_p50_ns: float
    base_p99_ns: float
    candidate_p99_ns: float
    base_max_ns: float
    candidate_max_ns: float


def beyond(quantiles: tuple[float, ...], x: float) -> float:
    """The share of calls above ``x`` in a percentile sketch, linear between its points."""
    q = np.maximum.accumulate(np.asarray(quantiles, dtype=np.float64))
    if x >= q[-1]:
        return 0.0
    if x < q[0]:
        return 1.0
    # The largest percentile whose value is at most x, then linear to the next one.
    i = int(np.searchsorted(q, x, side="right")) - 1
    lo, hi = q[i], q[min(i + 1, len(q) - 1)]
    p_lo, p_hi = QUANTILE_GRID[i], QUANTILE_GRID[min(i + 1, len(q) - 1)]
    pct = p_lo if hi <= lo else p_lo + (p_hi - p_lo) * (x - lo) / (hi - lo)
    return float(max(0.0, 1.0 - pct / 100.0))


def _candidate(b: KernelStats, c: KernelStats) -> bool:
    """The practical gates, before any test."""
    if b.calls < MIN_CALLS or c.calls < MIN_CALLS or b.p50_ns <= 0 or c.p50_ns <= 0:
        return False
    if not 1 / MEDIAN_HOLDS <= c.p50_ns / b.p50_ns <= MEDIAN_HOLDS:
        return False  # the whole distribution moved: a per-call change, not a tail
    extra = c.total_ns - c.calls * b.mean_ns
    # What a shift of every call explains is no tail: most of the extra time must lie beyond it.
    shifted = c.calls * max(c.p50_ns - b.p50_ns, 0.0)
    return extra >= max(MIN_TIME_NS, MIN_SHARE * b.total_ns, 2 * shifted)


def changes(base: Fingerprint, cand: Fingerprint) -> tuple[TailChange, ...]:
    """The kernels of both sides whose tail grew significantly, largest extra time first."""
    bk = {k.demangled: k for k in base.kernels}
    pairs = [(bk[c.demangled], c) for c in cand.kernels if c.demangled in bk]
    tested = [(b, c) for b, c in pairs if b.calls >= MIN_CALLS and c.calls >= MIN_CALLS]
    alpha = ALPHA / max(len(tested) * len(THRESHOLDS), 1)
    out = []
    for b, c in tested:
        if not _candidate(b, c):
            continue
        # scipy.stats takes half a second to import: only a pair with a tail to test pays.
        from scipy import stats as sps

        tests = []
        for pct in THRESHOLDS:
            x = b.quantile(pct)
            k = round(c.calls * beyond(c.quantiles_ns, x))
            share = 1 - pct / 100
            tests.append((float(sps.binomtest(k, c.calls, share, alternative="greater").pvalue), pct, x, k, share))
        p, pct, x, k, share = min(tests)
        if p >= alpha:
            continue
        out.append(
            TailChange(
                key=c.demangled,
                name=c.name,
                calls=c.calls,
                threshold=pct,
                threshold_ns=x,
                beyond=k,
                expected=share * c.calls,
                p_value=p,
                extra_ns=c.total_ns - c.calls * b.mean_ns,
                base_total_ns=b.total_ns,
                base_p50_ns=b.p50_ns,
                candidate_p50_ns=c.p50_ns,
                base_p99_ns=b.p99_ns,
                candidate_p99_ns=c.p99_ns,
                base_max_ns=b.max_ns,
                candidate_max_ns=c.max_ns,
            )
        )
    return tuple(sorted(out, key=lambda t: (-t.extra_ns, t.key)))
