"""The frozen records the trace stage hands on: the reader's rows, and the few that a
fingerprint keeps as they are (GPUs, launch configurations, graphs, ranks, copies, sync
calls, the host call families of a step and their call times).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from nsysdiff import units as u

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]

# Percentiles kept per kernel. Enough to give p50/p90/p99 exactly and to compare two
# per-call distributions without storing every launch (a 1M-kernel trace stays small).
QUANTILE_GRID: tuple[float, ...] = (
    0.0,
    1.0,
    5.0,
    10.0,
    20.0,
    30.0,
    40.0,
    50.0,
    60.0,
    70.0,
    80.0,
    90.0,
    95.0,
    99.0,
    100.0,
)


class GraphMode(str, enum.Enum):
    """How the capture recorded CUDA graph launches (``--cuda-graph-trace``)."""

    NONE = "none"  # no graph launches seen
    NODE = "node"  # kernels inside graphs are ordinary kernel rows carrying graphNodeId
    GRAPH = "graph"  # one GRAPH_TRACE row per launch, no per-kernel rows for replays
    MIXED = "mixed"  # both: some graphs traced whole, some per node


@dataclass(frozen=True, slots=True)
class GpuInfo:
    id: int
    name: str
    sm_count: int | None = None


@dataclass(frozen=True, slots=True)
class LaunchConfig:
    """One launch shape of a kernel and how many of its launches had it. A trace's read
    fills every field (a column the export lacks reads as 0); a fingerprint saved before
    the local memory and the calls were kept reads them as None: unknown, not none."""

    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    registers: int
    static_smem: int
    dynamic_smem: int
    local_mem_per_thread: int | None = None  # localMemoryPerThread, bytes
    local_mem_total: int | None = None  # localMemoryTotal, bytes
    calls: int | None = None  # launches with this shape, summed over devices and processes


@dataclass(frozen=True, slots=True)
class GraphStats:
    """Whole-graph launches of one CUDA graph (graph-mode capture: one row per launch)."""

    graph_id: int
    launches: int
    total_ns: int


class HostFamily(str, enum.Enum):
    """CUDA API calls grouped by what they do to the time per token; the order is the
    order steps list them in (the step scan numbers them by it)."""

    LAUNCH = "launch"  # cudaLaunchKernel*, cuLaunchKernel*, graph launches
    SYNC = "sync"  # device, stream and event synchronisation
    COPY_H2D = "copy_h2d"  # copy calls by direction, with the bytes their copies moved
    COPY_D2H = "copy_d2h"
    COPY_D2D = "copy_d2d"
    ALLOC = "alloc"  # cudaMalloc*, cuMemAlloc*, async variants, and their frees
    # cudaMemset*, cuMemset*: a memset enqueued (a buffer zeroed every token). Last: counted
    # since fingerprints gained Steps.counted, the numbers of the others are unchanged.
    MEMSET = "memset"

    @property
    def copies(self) -> bool:
        """Whether its calls move bytes (only copies do)."""
        return self in (HostFamily.COPY_H2D, HostFamily.COPY_D2H, HostFamily.COPY_D2D)

    @property
    def noun(self) -> str:
        """What one of its calls is called in every report: ``launch``, ``sync call``,
        ``H2D copy`` (:func:`nsysdiff.units.plural` counts them)."""
        return _NOUNS[self]

    @property
    def calls(self) -> str:
        """Its calls as the subject of a time per call: ``launch calls``, ``sync calls``."""
        return u.many(self.noun) if self.noun.endswith(" call") else f"{self.noun} calls"


_NOUNS = {
    HostFamily.LAUNCH: "launch",
    HostFamily.SYNC: "sync call",
    HostFamily.COPY_H2D: "H2D copy",
    HostFamily.COPY_D2H: "D2H copy",
    HostFamily.COPY_D2D: "D2D copy",
    HostFamily.ALLOC: "alloc/free call",
    HostFamily.MEMSET: "memset call",
}


@dataclass(frozen=True, slots=True)
class CallTimes:
    """The time per call of one host family across every step: totals, and the per-call
    tail (nearest rank)."""

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


def idle_pct(busy_ns: int, span_ns: int) -> float:
    """The share of a kernel span (first start to last end) with no kernel running."""
    return 100.0 * (1.0 - busy_ns / span_ns) if span_ns else 0.0


@dataclass(frozen=True, slots=True)
class CollectiveShare:
    """One rank's launches of one collective operation (NCCL kernels by name: ``AllReduce``...)."""

    op: str
    calls: int
    total_ns: int


@dataclass(frozen=True, slots=True)
class JobIdentity:
    """What tells whether traces are ranks of one job: when the nsys session started (UTC
    epoch ns), the GPUs, the names of the processes that ran kernels, and when the first
    kernel started and the last ended (UTC epoch ns; None without a session start)."""

    session_start_ns: int | None
    gpus: tuple[str, ...]
    processes: tuple[str, ...]
    kernels_ns: tuple[int, int] | None = None


@dataclass(frozen=True, slots=True)
class RankStats:
    """One rank of a job: a (process, device) pair of a multi-GPU trace, or a trace of its own.

    ``busy_ns`` is the union of the rank's kernel intervals; ``collectives`` its NCCL kernel
    time per operation, so ``kernel_ns - collective_ns`` is its compute.
    """

    rank: int  # position in the job: pairs ordered by (device, process), traces as given
    label: str  # what identifies it: "GPU 1 · pid 145", or the trace's name
    pid: int | None  # None where the export has no process ids
    device: int | None  # None for a trace given as a whole rank
    kernels: int
    kernel_ns: int
    busy_ns: int
    span_ns: int
    collectives: tuple[CollectiveShare, ...] = ()

    @property
    def collective_ns(self) -> int:
        return sum(c.total_ns for c in self.collectives)

    @property
    def collective_calls(self) -> int:
        return sum(c.calls for c in self.collectives)

    @property
    def compute_ns(self) -> int:
        return self.kernel_ns - self.collective_ns

    @property
    def idle_pct(self) -> float:
        return idle_pct(self.busy_ns, self.span_ns)


# --- what the reader returns ----------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Window:
    """Absolute session-clock bounds: keep GPU work that starts in ``[start, end)``."""

    start_ns: int
    end_ns: int


@dataclass(frozen=True, slots=True)
class Selection:
    """What part of a trace to read. Empty: everything."""

    window: Window | None = None
    # A temp table ``(pid INTEGER, corr INTEGER)`` of the launches to keep, made by
    # :meth:`TraceReader.select_launches`; correlation ids are unique only per process.
    launches_table: str | None = None


# The default selection, the whole trace: frozen, so one instance serves every default.
WHOLE = Selection()


@dataclass(frozen=True, slots=True)
class KernelGroups:
    """Kernel launches aggregated by (demangled name, device), all in SQLite.

    Group ``i`` is ``calls[i]`` launches of ``demangled[i]`` on ``device[i]`` taking
    ``total_ns[i]``; ``quantiles[i]`` are the per-call percentiles (on ``QUANTILE_GRID``)
    of that name over all its devices, exact, as ``np.percentile`` of every duration.
    """

    short: tuple[str, ...]
    demangled: tuple[str, ...]
    mangled: tuple[str | None, ...]  # None where the export has no mangledName (before 2022.1)
    device: IntArray
    calls: IntArray
    total_ns: IntArray
    quantiles: FloatArray  # shape (groups, len(QUANTILE_GRID))
    devices: tuple[DeviceRow, ...]
    configs: tuple[tuple[str, LaunchConfig], ...]  # distinct (demangled, config) pairs


@dataclass(frozen=True, slots=True)
class DeviceRow:
    """One device's launches: count, summed time, the union of their intervals, the span."""

    device: int
    kernels: int
    kernel_ns: int
    busy_ns: int
    first_ns: int
    last_ns: int


@dataclass(frozen=True, slots=True)
class CopyStats:
    """Memcpy of one kind (``HtoD``, ``DtoD``, ...) or memset (kind ``memset``)."""

    kind: str
    ops: int
    bytes: int
    total_ns: int

    @property
    def gbps(self) -> float | None:
        return self.bytes / self.total_ns if self.total_ns else None  # B/ns == GB/s


@dataclass(frozen=True, slots=True)
class ApiStats:
    """A synchronising CUDA API call, version suffix stripped."""

    name: str
    calls: int
    total_ns: int


@dataclass(frozen=True, slots=True)
class HostApiStats:
    """One host API name's calls (runtime table), as ``nsys stats --report cuda_api_sum``
    gives them: the name as the trace spells it, version suffix and all; the median of an
    even number of calls is the mean of the middle two."""

    name: str
    calls: int
    total_ns: int
    median_ns: float
    min_ns: int
    max_ns: int

    @property
    def mean_ns(self) -> float:
        return self.total_ns / self.calls if self.calls else 0.0


@dataclass(frozen=True, slots=True)
class RangeRow:
    name: str
    domain: str
    count: int
    total_ns: int


@dataclass(frozen=True, slots=True)
class Metadata:
    nsys_version: str | None
    schema_version: str | None
    gpus: tuple[GpuInfo, ...]
    capture_start_ns: int | None
    capture_end_ns: int | None
    graph_mode: GraphMode
    graph_launches: int
    graph_total_ns: int
    # The time range the export was cut to, where its metadata says so (a window cut from
    # a longer capture: ``DERIVED_WINDOW_NS``); None for a whole capture.
    window: tuple[int, int] | None = None


@dataclass(frozen=True, slots=True)
class RangeKey:
    """A distinct NVTX range name (cut at PyTorch's suffixes by SQL) in one domain."""

    sql_name: str
    domain_id: int
    domain: str
    count: int


@dataclass(frozen=True, slots=True)
class Tables:
    """The tables a fingerprint is made of, as one read of a trace returns them
    (:func:`nsysdiff.fingerprint.read.read`)."""

    meta: Metadata
    groups: KernelGroups
    has_kernels: bool
    memcpy: tuple[CopyStats, ...]
    memset: tuple[CopyStats, ...]
    sync: tuple[ApiStats, ...]
    nvtx: tuple[RangeRow, ...]
    api: tuple[HostApiStats, ...] | None
    # The exact tail counts per kernel and launch shape; None for a read keyed by shape.
    tails: tuple[ShapeTail, ...] | None = None


@dataclass(frozen=True, slots=True)
class Attribution:
    """Which events a scope keeps (the rules are in ``nsysdiff/fingerprint/scope.py``).

    An event is kept when it lies inside a range of every mask in ``within`` (a mask is
    the codes given to :meth:`TraceReader.load_ranges`), starts at or after its process's
    cut (made by :meth:`TraceReader.make_cuts`) when ``cut``, and, for the events a window
    applies to, starts inside ``window``.
    """

    within: tuple[tuple[int, ...], ...] = ()
    window: Window | None = None
    cut: bool = False


# A tail is counted in calls longer than these multiples of their launch shape's median.
TAIL_MULTIPLES: tuple[float, ...] = (1.5, 2.0, 4.0, 10.0)
# Launch shapes with fewer calls have no tail worth counting, and are not kept.
TAIL_MIN_CALLS = 200


@dataclass(frozen=True, slots=True)
class ShapeTail:
    """One kernel's launches of one shape (grid and block) in a scope: their calls, time,
    median and, for each of TAIL_MULTIPLES, how many took longer than that multiple of the
    median; all exact."""

    name: str  # the demangled name, as the kernels are keyed
    shape: str  # "gridX,gridY,gridZ,blockX,blockY,blockZ"
    calls: int
    total_ns: int
    p50_ns: int  # the median call (the lower of the middle two of an even number)
    beyond: tuple[int, ...]  # calls longer than m x p50_ns, for each m of TAIL_MULTIPLES
