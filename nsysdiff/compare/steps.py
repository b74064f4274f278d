"""Steps x steps -> StepsDiff: the time per step, its tail, its parts and the host calls per step.

Both sides' steps (``Fingerprint.steps``) are summarised and compared (docs/steps.md):

- **Time per step** is the *mean* period: the whole run's time over its steps, which is
  what a user waits per token on average (serving benchmarks' TPOT). The p50, p90, p99
  and max of the periods and of the range durations are kept beside it.
- **The change is attributed exactly**: each part's mean per step (its total over the
  steps / the steps) adds up to the mean period, so the change of the mean period is the
  sum of the parts' changes. The median has no such property (the median of a sum is not
  the sum of the medians), so the attribution is of the mean, never of the p50.
- **The tail**: p99 / p50 of the periods; above :data:`TAIL_RATIO` (1.5x) a side has a
  systematic tail, not jitter.
- **Host calls per step** per family are exact counts (total calls / steps), identical
  across runs of one build; the time per call is noisy and shown as such.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from nsysdiff.fingerprint.steps import StepPart, Steps
from nsysdiff.trace.records import CallTimes, HostFamily

# p99 / p50 of the periods above this: a systematic tail (a slow step every so often).
TAIL_RATIO = 1.5
# A part whose mean per step moves by less than this share of the base time per step is
# not named in the first line (still in the table: the attribution stays exact).
MATERIAL_SHARE = 0.02
# Kernel time per step within this ratio either way reads "kernels unchanged": repeats of
# one build agree within 0.3%.
KERNELS_SAME = 1.01
# The GPU period is the time per step when it is longer than the host period by more than
# this: within it the two clocks of a synchronous loop agree, and the host period (whose
# parts add up exactly) is quoted.
GPU_AHEAD = 1.05
# A loop whose GPU is busy for at least this share of each step is GPU-bound.
GPU_BOUND_SHARE = 0.8
# The run-to-run noise of the time per step with one run per side, measured on real repeats
# of one build (llm_bs16: 32.59 / 26.52 / 20.95 ms per step, up to 1.53x): the `tpot` pack's
# `noise: 1.6x`. A time per step that fell further is an improvement clear of the noise.
PERIOD_NOISE = 1.6
# How the reason begins when one side has the step range and the other hasn't: the verdict
# line quotes it, since a renamed range must never look like anything but that.
ONE_SIDED = "steps on one side only"


class Bound(str, enum.Enum):
    """What a loop waits on, by the share of each step the GPU is busy and the parts."""

    GPU = "GPU-bound"  # the GPU is busy most of each step: GPU time is the time per step
    LAUNCH = "launch-bound"  # the GPU idles mostly while the host is inside launch calls
    HOST = "host-bound"  # the GPU idles mostly while the host does other work


@dataclass(frozen=True, slots=True)
class Dist:
    """A distribution across steps, in ns (linear interpolation between steps)."""

    mean: float
    p50: float
    p90: float
    p99: float
    max: float

    def of(self, stat: str) -> float:
        return float(getattr(self, stat))


STATS = ("mean", "p50", "p90", "p99", "max")


def dist(values: npt.NDArray[np.int64] | npt.NDArray[np.float64]) -> Dist:
    if values.size == 0:
        return Dist(0.0, 0.0, 0.0, 0.0, 0.0)
    p50, p90, p99 = np.percentile(values, (50.0, 90.0, 99.0))
    return Dist(float(values.mean()), float(p50), float(p90), float(p99), float(values.max()))


@dataclass(frozen=True, slots=True)
class StepSide:
    """One side's steps, summed and summarised: totals are exact integers."""

    name: str
    steps: int
    period: Dist
    duration: Dist
    period_total_ns: int
    part_totals: tuple[int, ...]  # per StepPart, in StepPart order; they add up to period_total_ns
    kernel_total_ns: int
    calls: tuple[int, ...]  # per HostFamily, in HostFamily order: calls over all steps
    call_ns: tuple[int, ...]  # per HostFamily: host time inside those calls
    bytes: tuple[int, ...]  # per HostFamily: bytes moved (copies)
    call_times: tuple[CallTimes, ...]
    gpu_period_ns: float | None = None  # the mean interval between steps' GPU completions
    counted: tuple[HostFamily, ...] = tuple(HostFamily)  # the families whose calls were counted

    @property
    def gpu_ahead(self) -> bool:
        """Whether the GPU finishes a step later than the host starts the next: the host
        runs ahead (graphs, asynchronous scheduling) and the user waits for the GPU."""
        g = self.gpu_period_ns
        return g is not None and g > GPU_AHEAD * self.period.mean

    @property
    def time_per_step(self) -> float:
        """The steady-state time per step: the longer of the host period and the GPU period."""
        return float(self.gpu_period_ns) if self.gpu_ahead and self.gpu_period_ns else self.period.mean

    @property
    def gpu_share(self) -> float:
        """The share of each step the GPU is busy: its time per step over the time per step."""
        t = self.time_per_step
        return min(1.0, self.kernel_per_step / t) if t > 0 else 0.0

    @property
    def bound(self) -> Bound:
        if self.gpu_ahead or self.gpu_share >= GPU_BOUND_SHARE:
            return Bound.GPU
        launch = self.part(StepPart.LAUNCH_BOUND)
        other = self.part(StepPart.HOST) + self.part(StepPart.BETWEEN) + self.part(StepPart.SYNC)
        return Bound.LAUNCH if launch >= other else Bound.HOST

    def part(self, part: StepPart) -> float:
        """The part's mean per step."""
        return self.part_totals[list(StepPart).index(part)] / self.steps if self.steps else 0.0

    def calls_per_step(self, family: HostFamily) -> float:
        return self.calls[list(HostFamily).index(family)] / self.steps if self.steps else 0.0

    def bytes_per_step(self, family: HostFamily) -> float:
        return self.bytes[list(HostFamily).index(family)] / self.steps if self.steps else 0.0

    def mean_call_ns(self, family: HostFamily) -> float | None:
        i = list(HostFamily).index(family)
        return self.call_ns[i] / self.calls[i] if self.calls[i] else None

    def times(self, family: HostFamily) -> CallTimes | None:
        return next((t for t in self.call_times if t.family is family), None)

    @property
    def kernel_per_step(self) -> float:
        return self.kernel_total_ns / self.steps if self.steps else 0.0

    @property
    def tail(self) -> float | None:
        """p99 / p50 of the periods."""
        return self.period.p99 / self.period.p50 if self.period.p50 > 0 else None

    @property
    def systematic_tail(self) -> bool:
        t = self.tail
        return t is not None and t > TAIL_RATIO


def side(s: Steps) -> StepSide:
    """One side's steps summarised (sums in integers, so the parts stay exact)."""
    periods = s.steps.column("period_ns")
    durations = s.steps.column("duration_ns")
    parts = [int(s.steps.part(p).sum()) for p in StepPart]
    sums = [s.steps.family(fam).sum(axis=0) for fam in HostFamily]  # calls, total ns, bytes
    return StepSide(
        name=s.name,
        steps=len(s.steps),
        period=dist(periods),
        duration=dist(durations),
        period_total_ns=int(periods.sum()),
        part_totals=tuple(parts),
        kernel_total_ns=int(s.steps.column("kernel_ns").sum()),
        calls=tuple(int(x[0]) for x in sums),
        call_ns=tuple(int(x[1]) for x in sums),
        bytes=tuple(int(x[2]) for x in sums),
        call_times=s.call_times,
        gpu_period_ns=s.gpu_period_ns,
        counted=s.counted,
    )


@dataclass(frozen=True, slots=True)
class PartChange:
    """One part's mean per step on both sides; the deltas add up to the period's."""

    part: StepPart
    base_ns: float
    candidate_ns: float

    @property
    def delta_ns(self) -> float:
        return self.candidate_ns - self.base_ns


@dataclass(frozen=True, slots=True)
class FamilyChange:
    """One host family per step on both sides: calls (exact) and time per call (noisy)."""

    family: HostFamily
    base_calls: float  # per step
    candidate_calls: float
    base_mean_ns: float | None  # per call
    candidate_mean_ns: float | None
    base_bytes: float  # per step (copies)
    candidate_bytes: float

    @property
    def delta_calls(self) -> float:
        return self.candidate_calls - self.base_calls

    @property
    def mean_ratio(self) -> float | None:
        b, c = self.base_mean_ns, self.candidate_mean_ns
        return c / b if b and c else None


@dataclass(frozen=True, slots=True)
class StepsDiff:
    """The steps of both sides compared (``Diff.steps``)."""

    base: StepSide
    candidate: StepSide
    parts: tuple[PartChange, ...]  # every part, in StepPart order
    families: tuple[FamilyChange, ...]  # families with calls on either side, in HostFamily order

    @property
    def name(self) -> str:
        return self.base.name

    @property
    def delta_ns(self) -> float:
        """The change of the mean period: exactly the sum of the parts' deltas."""
        return self.candidate.period.mean - self.base.period.mean

    @property
    def time_ratio(self) -> float | None:
        """The steady-state time per step, candidate over base."""
        b, c = self.base.time_per_step, self.candidate.time_per_step
        return c / b if b > 0 else None

    def improvement(self, noise: float = PERIOD_NOISE) -> str | None:
        """Why the candidate is an improvement clear of the noise, if it is: its time per
        step fell by more than one run per side can move it (``noise``). None otherwise."""
        r = self.time_ratio
        if r is None or r * noise >= 1.0:
            return None
        return f"time per step {r:.2f}x, faster than the run-to-run noise of one run per side ({noise:g}x)"

    def ratio(self, what: str = "period", stat: str = "mean") -> float | None:
        b = getattr(self.base, what).of(stat)
        c = getattr(self.candidate, what).of(stat)
        return c / b if b > 0 else None

    @property
    def kernel_ratio(self) -> float | None:
        b, c = self.base.kernel_per_step, self.candidate.kernel_per_step
        return c / b if b > 0 else None

    @property
    def kernels_unchanged(self) -> bool:
        r = self.kernel_ratio
        return r is not None and 1 / KERNELS_SAME <= r <= KERNELS_SAME

    def material(self) -> tuple[PartChange, ...]:
        """The parts that moved by a material share of the base time per step, largest first."""
        floor = MATERIAL_SHARE * self.base.period.mean
        moved = [p for p in self.parts if abs(p.delta_ns) >= floor and p.delta_ns != 0]
        return tuple(sorted(moved, key=lambda p: -abs(p.delta_ns)))

    def count_changes(self) -> tuple[FamilyChange, ...]:
        """Families whose calls per step changed (exact counts), in HostFamily order."""
        return tuple(f for f in self.families if f.delta_calls != 0)

    def family(self, family: HostFamily) -> FamilyChange | None:
        return next((f for f in self.families if f.family is family), None)


def compare(base: Steps, candidate: Steps) -> StepsDiff | None:
    """The steps of two sides compared; None when either has no step."""
    if not base.steps or not candidate.steps:
        return None
    b, c = side(base), side(candidate)
    parts = tuple(PartChange(p, b.part(p), c.part(p)) for p in StepPart)
    families = tuple(
        FamilyChange(
            f,
            b.calls_per_step(f),
            c.calls_per_step(f),
            b.mean_call_ns(f),
            c.mean_call_ns(f),
            b.bytes_per_step(f),
            c.bytes_per_step(f),
        )
        for f in HostFamily
        # A family one side did not count (saved before it was) is unknown there, not none.
        if (b.calls_per_step(f) or c.calls_per_step(f)) and f in b.counted and f in c.counted
    )
    return StepsDiff(b, c, parts, families)
