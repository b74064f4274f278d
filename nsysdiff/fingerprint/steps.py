"""Steps: the time per token, where each step's time goes, and the host calls per step.

A step is one instance of an NVTX range (``--per NAME``; the ``tpot`` pack names
``decode_step``). Each step has two times: its range duration, and its period, from its
start to the next step's start (what a user waits per token, gaps included). The period
splits exactly into the parts of :class:`StepParts` (docs/steps.md defines each one), so
a change in the time per step can be attributed to them to the nanosecond.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass


class StepPart(str, enum.Enum):
    """The parts a step's period splits into, in the order they are shown."""

    COMPUTE = "compute"  # the GPU runs a kernel that is not a collective
    COMMUNICATION = "communication"  # the GPU runs collective (NCCL) kernels and nothing else
    COPIES = "copies"  # the GPU runs copies or memsets and no kernel
    LAUNCH_BOUND = "launch_bound"  # the GPU idles while the host is inside a launch call
    SYNC = "sync"  # the GPU idles while the host is blocked in a sync call
    HOST = "host"  # the GPU idles and the host is elsewhere inside the step
    BETWEEN = "between"  # from the step's range end to the next step's start


class HostFamily(str, enum.Enum):
    """CUDA API calls grouped by what they do to the time per token."""

    LAUNCH = "launch"  # cudaLaunchKernel*, cuLaunchKernel*, graph launches
    SYNC = "sync"  # device, stream and event synchronisation
    COPY_H2D = "copy_h2d"  # copy calls by direction, with the bytes their copies moved
    COPY_D2H = "copy_d2h"
    COPY_D2D = "copy_d2d"
    ALLOC = "alloc"  # cudaMalloc*, cuMemAlloc*, async variants, and their frees


@dataclass(frozen=True, slots=True)
class StepParts:
    """One step's period, split exactly: the fields add up to ``Step.period_ns``."""

    compute_ns: int
    communication_ns: int
    copies_ns: int
    launch_bound_ns: int
    sync_ns: int
    host_ns: int
    between_ns: int

    def of(self, part: StepPart) -> int:
        return int(getattr(self, f"{part.value}_ns"))

    @property
    def gpu_busy_ns(self) -> int:
        return self.compute_ns + self.communication_ns + self.copies_ns

    @property
    def total_ns(self) -> int:
        return sum(self.of(p) for p in StepPart)


@dataclass(frozen=True, slots=True)
class HostCalls:
    """One family's calls inside one step (issued from the step's start to the next's)."""

    family: HostFamily
    calls: int
    total_ns: int  # time the host spent inside these calls
    bytes: int = 0  # copies only: what their copies moved


@dataclass(frozen=True, slots=True)
class Step:
    """One step: its range, its period and what filled it."""

    start_ns: int  # from the first step's start, so a series lines up across traces
    duration_ns: int  # the NVTX range's own duration
    period_ns: int  # start to the next step's start; the range duration for the last step
    parts: StepParts
    calls: tuple[HostCalls, ...]  # one per HostFamily with calls, in HostFamily order
    kernel_ns: int = 0  # summed kernel time inside the step (overlaps counted, as in nsys stats)

    def calls_of(self, family: HostFamily) -> HostCalls:
        for c in self.calls:
            if c.family is family:
                return c
        return HostCalls(family, 0, 0, 0)


@dataclass(frozen=True, slots=True)
class CallTimes:
    """The time per call of one host family across every step: mean and tail."""

    family: HostFamily
    calls: int
    total_ns: int
    bytes: int
    p50_ns: int
    p90_ns: int
    p99_ns: int
    max_ns: int

    @property
    def mean_ns(self) -> float:
        return self.total_ns / self.calls if self.calls else 0.0


@dataclass(frozen=True, slots=True)
class Steps:
    """Every step of one trace, in order, and the host call times across them."""

    name: str  # the NVTX range that marks a step
    domain: str
    steps: tuple[Step, ...]
    call_times: tuple[CallTimes, ...]  # one per HostFamily with calls, in HostFamily order
    skipped: int = 0  # warm-up steps dropped before these (--skip-first)
    # Whether the last step's period is its range duration (no next step to measure to).
    last_period_is_duration: bool = True
