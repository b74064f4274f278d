"""Steps from the reader's step scan: periods, the parts each period splits into, and the
host calls per family (the accounting of ``docs/steps.md``)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from nsysdiff.fingerprint.steps import StepPart, Steps, StepSeries
from nsysdiff.trace.records import CallTimes, HostFamily
from nsysdiff.trace.steps import StepRows


def build(name: str, domain: str, rows: StepRows, skipped: int = 0, found: str = "") -> Steps:
    """:class:`Steps` from a scan: times from the first step's start, each period split
    into parts that add up to it exactly."""
    start, end = rows.start_ns, rows.end_ns
    duration = end - start
    # Start to the next step's start; the last step's period is its range duration.
    period = np.concatenate((start[1:] - start[:-1], duration[-1:]))
    between = period - np.minimum(duration, period)
    parts = np.concatenate((rows.parts, between[:, None]), axis=1)
    wrong = np.flatnonzero(parts.sum(axis=1) != period)
    if len(wrong):
        i = int(wrong[0])
        raise RuntimeError(  # a bug in the scan: exit 70
            f"step {i}: parts add up to {int(parts[i].sum())} ns, not the period {int(period[i])} ns"
        )
    series = StepSeries.from_columns(start - start[0], duration, period, rows.kernel_ns, parts, rows.calls)
    return Steps(
        name,
        domain,
        series,
        rows.times,
        skipped=skipped,
        last_period_is_duration=True,
        found=found,
        gpu_period_ns=gpu_period(rows),
        sync=rows.sync,
    )


def gpu_period(rows: StepRows) -> float | None:
    """The GPU's time per step: the mean interval between the ends of consecutive steps'
    GPU work (the last kernel each launched). A loop whose host runs ahead (CUDA graphs,
    asynchronous scheduling) enqueues a step faster than the GPU finishes it: the user
    waits for the GPU. None with fewer than two steps that launched kernels."""
    done = rows.gpu_end_ns[rows.gpu_end_ns > 0]
    if len(done) < 2:
        return None
    return float(done[-1] - done[0]) / (len(done) - 1)


# --- figures across the steps ------------------------------------------------------------

# The seed guidance: a p99 above 1.5x the p50 is a tail that recurs, not one slow step.
SYSTEMATIC_TAIL = 1.5


@dataclass(frozen=True, slots=True)
class Spread:
    """The distribution of one figure across the steps (linear interpolation between
    steps, as for the kernels' per-call quantiles)."""

    p50: float
    p90: float
    p99: float
    max: float
    mean: float

    @property
    def tail(self) -> float | None:
        """p99 / p50; None when the p50 is 0."""
        return self.p99 / self.p50 if self.p50 else None


def spread(values: Sequence[int] | npt.NDArray[np.int64]) -> Spread:
    a = np.asarray(values, dtype=np.float64)
    p50, p90, p99 = (float(x) for x in np.percentile(a, (50, 90, 99)))
    return Spread(p50, p90, p99, float(a.max()), float(a.mean()))


def periods(steps: Steps) -> Spread:
    return spread(steps.steps.column("period_ns"))


def durations(steps: Steps) -> Spread:
    return spread(steps.steps.column("duration_ns"))


def kernel_times(steps: Steps) -> Spread:
    return spread(steps.steps.column("kernel_ns"))


def mean_parts(steps: Steps) -> dict[StepPart, float]:
    """Each part's mean per step; they add up to the mean period."""
    n = len(steps.steps)
    return {p: int(steps.steps.part(p).sum()) / n for p in StepPart}


@dataclass(frozen=True, slots=True)
class FamilyPerStep:
    """One host family per step: the median count (counts are exact: what a step issues),
    the range of counts, and the mean time and bytes per step."""

    family: HostFamily
    # The median step's count, the upper one of an even number of steps: the last step,
    # whose period ends with its range, may miss calls the others make between steps.
    calls: int
    least: int
    most: int
    time_ns: float
    bytes: float
    times: CallTimes


def families(steps: Steps) -> tuple[FamilyPerStep, ...]:
    n = len(steps.steps)
    out = []
    for t in steps.call_times:
        counts = sorted(int(c) for c in steps.steps.family(t.family)[:, 0])
        out.append(FamilyPerStep(t.family, counts[n // 2], counts[0], counts[-1], t.total_ns / n, t.bytes / n, t))
    return tuple(out)
