"""Steps: the time per token, where each step's time goes, and the host calls per step.

A step is one instance of an NVTX range (``--per NAME``; the ``tpot`` pack names
``decode_step``). Each step has two times: its range duration, and its period, from its
start to the next step's start (what a user waits per token, gaps included). The period
splits exactly into the parts of :class:`StepParts` (docs/steps.md defines each one), so
a change in the time per step can be attributed to them to the nanosecond.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import overload

import numpy as np
import numpy.typing as npt

# The host families and their call times are records of the step scan, kept in the trace
# stage that makes them; imported here because the fields below name them (the JSON
# reader resolves the hints here).
from nsysdiff.trace.records import ApiStats, CallTimes, HostFamily


class StepPart(str, enum.Enum):
    """The parts a step's period splits into, in the order they are shown."""

    COMPUTE = "compute"  # the GPU runs a kernel that is not a collective
    COMMUNICATION = "communication"  # the GPU runs collective (NCCL) kernels and nothing else
    COPIES = "copies"  # the GPU runs copies or memsets and no kernel
    LAUNCH_BOUND = "launch_bound"  # the GPU idles while the host is inside a launch call
    SYNC = "sync"  # the GPU idles while the host is blocked in a sync call
    HOST = "host"  # the GPU idles and the host is elsewhere inside the step
    BETWEEN = "between"  # from the step's range end to the next step's start


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


_PARTS = tuple(StepPart)
_FAMILIES = tuple(HostFamily)
# The host families a fingerprint saved before memset calls were counted per step has: its
# steps say nothing of memsets, which must not read as "no memsets".
COUNTED_BEFORE_MEMSETS = tuple(f for f in HostFamily if f is not HostFamily.MEMSET)
# Columns of a StepSeries row: start, duration, period, kernel, the parts, then per family
# whether the step lists it, its calls, total ns and bytes.
_FIXED = 4
_FAM = _FIXED + len(_PARTS)
_WIDTH = _FAM + 4 * len(_FAMILIES)
IntArray = npt.NDArray[np.int64]


class StepSeries(Sequence[Step]):
    """Every step of a trace, one int64 row each (about 250 bytes a step).

    A long capture holds hundreds of thousands of steps: as :class:`Step` objects (about
    1.3 KB each, their ints boxed) two sides of a diff broke the 500 MB bound at 85,000
    steps each. A step is made a :class:`Step` only when asked for; the figures across
    the steps read the columns (:meth:`column`, :meth:`part`, :meth:`family`).
    """

    __slots__ = ("_rows",)
    _rows: IntArray

    def __init__(self, steps: Iterable[Step] = ()) -> None:
        listed = list(steps)
        rows = np.zeros((len(listed), _WIDTH), dtype=np.int64)
        for i, st in enumerate(listed):
            rows[i, :_FIXED] = (st.start_ns, st.duration_ns, st.period_ns, st.kernel_ns)
            rows[i, _FIXED:_FAM] = [st.parts.of(p) for p in _PARTS]
            for c in st.calls:
                at = _FAM + 4 * _FAMILIES.index(c.family)
                rows[i, at : at + 4] = (1, c.calls, c.total_ns, c.bytes)
        self._rows = rows

    @classmethod
    def from_columns(
        cls,
        start_ns: IntArray,
        duration_ns: IntArray,
        period_ns: IntArray,
        kernel_ns: IntArray,
        parts: IntArray,
        calls: IntArray,
    ) -> StepSeries:
        """From per-step columns: ``parts`` (n, 7) in StepPart order, ``calls`` (n, 7, 3)
        (calls, total ns, bytes) in HostFamily order; a family is listed where it has calls."""
        n = len(start_ns)
        rows = np.zeros((n, _WIDTH), dtype=np.int64)
        rows[:, 0], rows[:, 1], rows[:, 2], rows[:, 3] = start_ns, duration_ns, period_ns, kernel_ns
        rows[:, _FIXED:_FAM] = parts
        fams = rows[:, _FAM:].reshape(n, len(_FAMILIES), 4)
        fams[:, :, 0] = calls[:, :, 0] > 0
        fams[:, :, 1:] = calls
        out = cls.__new__(cls)
        out._rows = rows
        return out

    def __len__(self) -> int:
        return len(self._rows)

    @overload
    def __getitem__(self, i: int) -> Step: ...
    @overload
    def __getitem__(self, i: slice) -> StepSeries: ...
    def __getitem__(self, i: int | slice) -> Step | StepSeries:
        if isinstance(i, slice):
            out = StepSeries.__new__(StepSeries)
            out._rows = self._rows[i]
            return out
        r = [int(x) for x in self._rows[i]]
        calls = tuple(
            HostCalls(f, *r[_FAM + 4 * k + 1 : _FAM + 4 * k + 4]) for k, f in enumerate(_FAMILIES) if r[_FAM + 4 * k]
        )
        return Step(r[0], r[1], r[2], StepParts(*r[_FIXED:_FAM]), calls, r[3])

    def __iter__(self) -> Iterator[Step]:
        for i in range(len(self._rows)):
            yield self[i]

    def __eq__(self, other: object) -> bool:
        if isinstance(other, StepSeries):
            return bool(np.array_equal(self._rows, other._rows))
        if isinstance(other, Sequence) and not isinstance(other, str):
            return len(other) == len(self) and all(a == b for a, b in zip(self, other, strict=True))
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self._rows.tobytes())

    def __repr__(self) -> str:
        return f"StepSeries({len(self)} steps)"

    def column(self, name: str) -> IntArray:
        """``start_ns``, ``duration_ns``, ``period_ns`` or ``kernel_ns`` of every step."""
        return self._rows[:, ("start_ns", "duration_ns", "period_ns", "kernel_ns").index(name)]

    def part(self, part: StepPart) -> IntArray:
        return self._rows[:, _FIXED + _PARTS.index(part)]

    def family(self, family: HostFamily) -> IntArray:
        """(calls, total ns, bytes) of every step, shape (n, 3); zeros where it made none."""
        at = _FAM + 4 * _FAMILIES.index(family)
        return self._rows[:, at + 1 : at + 4]


@dataclass(frozen=True, slots=True)
class Steps:
    """Every step of one trace, in order, and the host call times across them."""

    name: str  # the NVTX range that marks a step
    domain: str
    steps: StepSeries  # a sequence of Step objects may be given: it is packed
    call_times: tuple[CallTimes, ...]  # one per HostFamily with calls, in HostFamily order
    skipped: int = 0  # warm-up steps dropped before these (--skip-first)
    # Whether the last step's period is its range duration (no next step to measure to).
    last_period_is_duration: bool = True
    # Steps found without a marker (--per auto, name "auto"): how they were found, in one
    # phrase; "" for a range's instances.
    found: str = ""
    # The mean interval between consecutive steps' GPU completions (docs/steps.md, "The
    # GPU period"); None where too few steps launched kernels, or in older fingerprints.
    gpu_period_ns: float | None = None
    # The host families whose calls the steps counted: all of them, but in a fingerprint
    # saved before a family was counted (COUNTED_BEFORE_MEMSETS, set as it is read).
    counted: tuple[HostFamily, ...] = _FAMILIES
    # The synchronising calls of the steps' periods (from a step's start to the next's) by
    # name, which a sync budget per step judges: the scope's own sync calls are those inside
    # the ranges, where a decode loop's sync rarely is. None in fingerprints saved before.
    sync: tuple[ApiStats, ...] | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.steps, StepSeries):
            object.__setattr__(self, "steps", StepSeries(self.steps))
