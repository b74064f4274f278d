"""Write Nsight Systems-shaped SQLite files, deterministically.

Tests, the example generator and the benchmarks all need nsys exports that nobody may
redistribute, in every schema generation nsysdiff reads. ``TraceBuilder`` records
events through a small API and writes them with the table names, column names, column
order, declared types and NOT NULL constraints copied from real exports of each
generation (see ``docs/nsys-sqlite.md`` and ``../shared/traces``):

- 2020.3: no metadata or ENUM tables, GPU info only in ``TARGET_INFO_CUDA_GPU``.
- 2021.2: no metadata or ENUM tables, full ``TARGET_INFO_GPU``.
- 2022.4: ``EXPORT_META_DATA``, ENUM tables (``ENUM_CUDA_KRENEL_LAUNCH_TYPE`` misspelt
  as nsys spelt it), ``mangledName``, NVTX JSON payload columns.
- 2024.6: ``META_DATA_EXPORT``, ``greenContextId``, NVTX ``binaryData``.
- 2026.2: schema 3.25.0, cluster / QMD kernel columns, ``tensorSizeMinusOneElements``,
  ``MEMCPY.copyCount``.

The same calls always produce the same bytes: nothing depends on the clock, the
environment or hash order, so golden files built from a ``TraceBuilder`` stay stable.
"""

from __future__ import annotations

import hashlib
import itertools
import operator
import os
import re
import sqlite3
import tempfile
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from enum import Enum
from pathlib import Path

import numpy as np
import numpy.typing as npt

__all__ = [
    "COPY_KINDS",
    "MEM_KINDS",
    "NVTX_EVENT_TYPES",
    "TARGET_INFO_CUDA_GPU_LAYOUT",
    "Generation",
    "Gpu",
    "TraceBuilder",
    "event_tables",
    "layout_of",
    "tamper",
]


class Generation(str, Enum):
    """An nsys export schema generation, named by the nsys release that wrote it."""

    V2020_3 = "2020.3"
    V2021 = "2021.2"
    V2022 = "2022.4"
    V2024 = "2024.6"
    V2026 = "2026.2"


# Enum members compare by value as strings ("2020.3" < "2021.2" happens to hold, but
# "2026.2" vs "2026.10" would not), so order generations by declaration instead.
_ORDER: dict[Generation, int] = {g: i for i, g in enumerate(Generation)}


def _since(generation: Generation, first: Generation) -> bool:
    return _ORDER[generation] >= _ORDER[first]


@dataclass(frozen=True, slots=True)
class Gpu:
    """One GPU as the export's GPU table describes it."""

    id: int = 0
    name: str = "NVIDIA H200"
    sm_count: int = 132
    compute: tuple[int, int] = (9, 0)
    clock_rate_hz: int = 1_980_000_000
    total_memory_bytes: int = 150_754_820_096
    memory_bandwidth_bytes_per_s: int = 4_800_000_000_000
    l2_cache_bytes: int = 52_428_800
    chip_name: str = "GH100"
    uuid: str | None = None  # derived from (id, name) when None, so it is stable


# copyKind ids (ENUM_CUDA_MEMCPY_OPER); ids 1..10 are the ones a memcpy() call can ask for.
COPY_KINDS: dict[str, int] = {
    "HtoD": 1,
    "DtoH": 2,
    "HtoA": 3,
    "AtoH": 4,
    "AtoA": 5,
    "AtoD": 6,
    "DtoA": 7,
    "DtoD": 8,
    "HtoH": 9,
    "PtoP": 10,
}

# ENUM_CUDA_MEM_KIND ids.
MEM_KINDS: dict[str, int] = {
    "PAGEABLE": 0,
    "PINNED": 1,
    "DEVICE": 2,
    "ARRAY": 3,
    "MANAGED": 4,
    "DEVICE_STATIC": 5,
    "MANAGED_STATIC": 6,
    "UNKNOWN": 7,
}

# The NVTX subset of ENUM_NSYS_EVENT_TYPE, with the names nsys writes.
NVTX_EVENT_TYPES: dict[str, int] = {
    "NvtxCategory": 33,
    "NvtxMark": 34,
    "NvtxThread": 39,
    "NvtxPushPopRange": 59,
    "NvtxStartEndRange": 60,
    "NvtxtPushPopRange": 70,
    "NvtxtStartEndRange": 71,
    "NvtxDomainCreate": 75,
    "NvtxDomainDestroy": 76,
}

# The memory kind each side of a copy gets by default. Host memory is pinned because a
# pageable copy is a finding of its own (cuda_memcpy_async); tests opt into it.
_SIDE_KIND: dict[str, int] = {"H": 1, "D": 2, "A": 3, "P": 2}

# Serialized GlobalId: the upper bits carry the VM / host id; nsys puts 1 at bit 48 for
# the local machine (every real export we have agrees), pid in bits 24..47, tid below.
_GLOBAL_VID = 1 << 48
_ID_LIMIT = 1 << 24

_META_VERSIONS: dict[Generation, tuple[str, str]] = {
    Generation.V2022: ("2022.4.2.1", "3.0.0"),
    Generation.V2024: ("2024.6.2.25", "3.16.1"),
    Generation.V2026: ("2026.2.1.210", "3.25.0"),
}

# --------------------------------------------------------------------------------------
# Table layouts, copied from PRAGMA table_info of the real exports. A layout is a tuple
# of (name, declared type, NOT NULL, PRIMARY KEY).

_Column = tuple[str, str, bool, bool]
_Layout = tuple[_Column, ...]


def _layout(spec: str) -> _Layout:
    """Parse "name TYPE [NN] [PK], ..." (the compact form used below)."""
    columns: list[_Column] = []
    for part in spec.split(","):
        words = part.split()
        columns.append((words[0], words[1], "NN" in words[2:], "PK" in words[2:]))
    return tuple(columns)


def _insert_after(layout: _Layout, after: str, spec: str) -> _Layout:
    names = [c[0] for c in layout]
    at = names.index(after) + 1
    return layout[:at] + _layout(spec) + layout[at:]


_KERNEL_2021 = _layout(
    "start INTEGER NN, end INTEGER NN, deviceId INTEGER NN, contextId INTEGER NN,"
    " streamId INTEGER NN, correlationId INTEGER, globalPid INTEGER,"
    " demangledName INTEGER NN, shortName INTEGER NN, launchType INTEGER,"
    " cacheConfig INTEGER, registersPerThread INTEGER NN, gridX INTEGER NN,"
    " gridY INTEGER NN, gridZ INTEGER NN, blockX INTEGER NN, blockY INTEGER NN,"
    " blockZ INTEGER NN, staticSharedMemory INTEGER NN, dynamicSharedMemory INTEGER NN,"
    " localMemoryPerThread INTEGER NN, localMemoryTotal INTEGER NN, gridId INTEGER NN,"
    " sharedMemoryExecuted INTEGER, graphNodeId INTEGER, sharedMemoryLimitConfig INTEGER"
)
_KERNEL_2022 = _insert_after(_KERNEL_2021, "shortName", "mangledName INTEGER")
_KERNEL_2024 = _insert_after(_KERNEL_2022, "contextId", "greenContextId INTEGER")
_KERNEL_2026 = _KERNEL_2024 + _layout(
    "qmdBulkReleaseDone INTEGER, qmdPreexitDone INTEGER, qmdLastCtaDone INTEGER,"
    " graphId INTEGER, clusterX INTEGER, clusterY INTEGER, clusterZ INTEGER,"
    " clusterSchedulingPolicy INTEGER, maxPotentialClusterSize INTEGER,"
    " maxActiveClusters INTEGER, sharedMemoryRequestedPercentage INTEGER,"
    " tensorSizeMinusOneElements TEXT NN"
)

_MEMCPY_2021 = _layout(
    "start INTEGER NN, end INTEGER NN, deviceId INTEGER NN, contextId INTEGER NN,"
    " streamId INTEGER NN, correlationId INTEGER, globalPid INTEGER, bytes INTEGER NN,"
    " copyKind INTEGER NN, deprecatedSrcId INTEGER, srcKind INTEGER, dstKind INTEGER,"
    " srcDeviceId INTEGER, srcContextId INTEGER, dstDeviceId INTEGER, dstContextId INTEGER,"
    " migrationCause INTEGER, graphNodeId INTEGER"
)
_MEMCPY_2022 = _MEMCPY_2021 + _layout("virtualAddress INTEGER")
_MEMCPY_2024 = _insert_after(_MEMCPY_2022, "contextId", "greenContextId INTEGER")
_MEMCPY_2026 = _MEMCPY_2024 + _layout("copyCount INTEGER")

_MEMSET_2021 = _layout(
    "start INTEGER NN, end INTEGER NN, deviceId INTEGER NN, contextId INTEGER NN,"
    " streamId INTEGER NN, correlationId INTEGER, globalPid INTEGER, value INTEGER NN,"
    " bytes INTEGER NN, graphNodeId INTEGER, memKind INTEGER"
)
_MEMSET_2024 = _insert_after(_MEMSET_2021, "contextId", "greenContextId INTEGER")

_RUNTIME = _layout(
    "start INTEGER NN, end INTEGER NN, eventClass INTEGER NN, globalTid INTEGER,"
    " correlationId INTEGER, nameId INTEGER NN, returnValue INTEGER NN, callchainId INTEGER"
)

# No real export before --cuda-graph-trace (mid-2022) has this table; the columns are the
# documented 2024.6 ones, greenContextId arriving with the other tables'.
_GRAPH_TRACE_2022 = _layout(
    "start INTEGER NN, end INTEGER NN, deviceId INTEGER NN, contextId INTEGER NN,"
    " streamId INTEGER NN, correlationId INTEGER, globalPid INTEGER, graphId INTEGER,"
    " graphExecId INTEGER"
)
_GRAPH_TRACE_2024 = _insert_after(_GRAPH_TRACE_2022, "contextId", "greenContextId INTEGER")

# 2021-era NVTX has the numeric payload union but not the JSON members (added 2022).
_NVTX_2021 = _layout(
    "start INTEGER NN, end INTEGER, eventType INTEGER NN, rangeId INTEGER,"
    " category INTEGER, color INTEGER, text TEXT, globalTid INTEGER, endGlobalTid INTEGER,"
    " textId INTEGER, domainId INTEGER, uint64Value INTEGER, int64Value INTEGER,"
    " doubleValue REAL, uint32Value INTEGER, int32Value INTEGER, floatValue REAL"
)
_NVTX_2022 = _NVTX_2021 + _layout("jsonTextId INTEGER, jsonText TEXT")
_NVTX_2024 = _NVTX_2022 + _layout("binaryData TEXT")

_STRING_IDS = _layout("id INTEGER NN PK, value TEXT NN")
_THREAD_NAMES = _layout("nameId INTEGER NN, priority INTEGER, globalTid INTEGER")
_PROCESSES = _layout("globalPid INTEGER, pid INTEGER, name TEXT")
_ANALYSIS_DETAILS = _layout(
    "globalVid INTEGER NN, duration INTEGER NN, startTime INTEGER NN, stopTime INTEGER NN"
)
_SESSION_START_2022 = _layout("utcEpochNs INTEGER, utcTime TEXT, localTime TEXT")
_SESSION_START_2026 = _SESSION_START_2022 + _layout("systemClockNs INTEGER")
_SYSTEM_ENV_2022 = _layout(
    "globalVid INTEGER NN, devStateName TEXT NN, name TEXT NN, nameEnum INTEGER NN, value TEXT NN"
)
_SYSTEM_ENV_2024 = _layout(
    "globalVid INTEGER, devStateName TEXT NN, name TEXT NN, nameEnum INTEGER NN, value TEXT NN"
)
_META = _layout("name TEXT NN, value TEXT")
_ENUM = _layout("id INTEGER NN PK, name TEXT, label TEXT")

_TARGET_INFO_GPU = _layout(
    "vmId INTEGER NN, id INTEGER NN, name TEXT, busLocation TEXT, isDiscrete INTEGER,"
    " l2CacheSize INTEGER, totalMemory INTEGER, memoryBandwidth INTEGER, clockRate INTEGER,"
    " smCount INTEGER, pwGpuId INTEGER, uuid TEXT, luid INTEGER, chipName TEXT,"
    " cuDevice INTEGER, ctxswDevPath TEXT, ctrlDevPath TEXT, revision INTEGER,"
    " nodeMask INTEGER, constantMemory INTEGER, maxIPC INTEGER,"
    " maxRegistersPerBlock INTEGER, maxShmemPerBlock INTEGER,"
    " maxShmemPerBlockOptin INTEGER, maxShmemPerSm INTEGER, maxRegistersPerSm INTEGER,"
    " threadsPerWarp INTEGER, asyncEngines INTEGER, maxWarpsPerSm INTEGER,"
    " maxBlocksPerSm INTEGER, maxThreadsPerBlock INTEGER, maxBlockDimX INTEGER,"
    " maxBlockDimY INTEGER, maxBlockDimZ INTEGER, maxGridDimX INTEGER, maxGridDimY INTEGER,"
    " maxGridDimZ INTEGER, computeMajor INTEGER, computeMinor INTEGER, smMajor INTEGER,"
    " smMinor INTEGER"
)

# No 2020.3 export is available to copy from. The column names are the ones that
# readers written against 2020-era exports query (NVIDIA's early-2021 stats scripts join
# it USING(deviceId); others read numMultiprocessors, numThreadsPerWarp,
# maxWarpsPerMultiprocessor, coreClockRate, maxIPC, computeCapabilityMajor/Minor).
TARGET_INFO_CUDA_GPU_LAYOUT: _Layout = _layout(
    "id INTEGER NN, deviceId INTEGER NN, name TEXT NN, uuid TEXT, busLocation TEXT,"
    " totalMemory INTEGER NN, memoryBandwidth INTEGER NN, l2CacheSize INTEGER NN,"
    " coreClockRate INTEGER NN, numMultiprocessors INTEGER NN,"
    " numThreadsPerWarp INTEGER NN, maxWarpsPerMultiprocessor INTEGER NN,"
    " maxIPC INTEGER NN, computeCapabilityMajor INTEGER NN,"
    " computeCapabilityMinor INTEGER NN"
)

# Columns some post-processing tools append after export (pipit's saxpy file has them).
_EXTRA = _layout("name TEXT")

_KERNEL = "CUPTI_ACTIVITY_KIND_KERNEL"
_MEMCPY = "CUPTI_ACTIVITY_KIND_MEMCPY"
_MEMSET = "CUPTI_ACTIVITY_KIND_MEMSET"
_RUNTIME_T = "CUPTI_ACTIVITY_KIND_RUNTIME"
_GRAPH_TRACE = "CUPTI_ACTIVITY_KIND_GRAPH_TRACE"
_NVTX = "NVTX_EVENTS"


def _by_generation(*steps: tuple[Generation, _Layout]) -> dict[Generation, _Layout]:
    """Expand (first generation, layout) steps to a layout for every later generation."""
    out: dict[Generation, _Layout] = {}
    for generation in Generation:
        for first, layout in steps:
            if _since(generation, first):
                out[generation] = layout
    return out


_LAYOUTS: dict[str, dict[Generation, _Layout]] = {
    _KERNEL: _by_generation(
        (Generation.V2020_3, _KERNEL_2021),
        (Generation.V2022, _KERNEL_2022),
        (Generation.V2024, _KERNEL_2024),
        (Generation.V2026, _KERNEL_2026),
    ),
    _MEMCPY: _by_generation(
        (Generation.V2020_3, _MEMCPY_2021),
        (Generation.V2022, _MEMCPY_2022),
        (Generation.V2024, _MEMCPY_2024),
        (Generation.V2026, _MEMCPY_2026),
    ),
    _MEMSET: _by_generation((Generation.V2020_3, _MEMSET_2021), (Generation.V2024, _MEMSET_2024)),
    _RUNTIME_T: _by_generation((Generation.V2020_3, _RUNTIME)),
    _GRAPH_TRACE: _by_generation(
        (Generation.V2022, _GRAPH_TRACE_2022), (Generation.V2024, _GRAPH_TRACE_2024)
    ),
    _NVTX: _by_generation(
        (Generation.V2020_3, _NVTX_2021),
        (Generation.V2022, _NVTX_2022),
        (Generation.V2024, _NVTX_2024),
    ),
}

# The columns each event table takes from a call, in record order; every other column
# is a per-table constant (below) or NULL.
_FIELDS: dict[str, tuple[str, ...]] = {
    _KERNEL: (
        "start", "end", "deviceId", "contextId", "streamId", "correlationId",
        "demangledName", "shortName", "mangledName", "registersPerThread",
        "gridX", "gridY", "gridZ", "blockX", "blockY", "blockZ",
        "staticSharedMemory", "dynamicSharedMemory", "gridId", "sharedMemoryExecuted",
        "graphNodeId",
    ),
    _MEMCPY: (
        "start", "end", "deviceId", "contextId", "streamId", "correlationId", "bytes",
        "copyKind", "srcKind", "dstKind", "graphNodeId",
    ),
    _MEMSET: (
        "start", "end", "deviceId", "contextId", "streamId", "correlationId", "bytes",
        "graphNodeId",
    ),
    _RUNTIME_T: ("start", "end", "globalTid", "correlationId", "nameId"),
    _GRAPH_TRACE: (
        "start", "end", "deviceId", "contextId", "streamId", "correlationId",
        "graphId", "graphExecId",
    ),
    _NVTX: (
        "start", "end", "eventType", "rangeId", "text", "globalTid", "endGlobalTid",
        "textId", "domainId",
    ),
}  # fmt: skip

# Constant column values, as real exports show them for ordinary captures (regular
# launches, no green contexts, no clusters). globalPid is added per builder.
_CONSTANTS: dict[str, dict[str, object]] = {
    _KERNEL: {
        "greenContextId": 0,
        "launchType": 1,  # CUDA_KERNEL_LAUNCH_TYPE_REGULAR
        "cacheConfig": 1,
        "localMemoryPerThread": 0,
        "localMemoryTotal": 0,
        "sharedMemoryLimitConfig": 0,  # CUDA_SHARED_MEM_LIMIT_DEFAULT
        "clusterX": 0,
        "clusterY": 0,
        "clusterZ": 0,
        "clusterSchedulingPolicy": 1,
        "maxPotentialClusterSize": 0,
        "maxActiveClusters": 0,
        "tensorSizeMinusOneElements": "[]",
    },
    _MEMCPY: {"greenContextId": 0, "copyCount": 1},
    _MEMSET: {"greenContextId": 0, "value": 0, "memKind": MEM_KINDS["DEVICE"]},
    _RUNTIME_T: {"eventClass": 0, "returnValue": 0},  # TRACE_PROCESS_EVENT_CUDA_RUNTIME
    _GRAPH_TRACE: {"greenContextId": 0},
    _NVTX: {},
}

# ENUM tables: (table, rows). Values copied from the 2022.4 and 2024.6 exports; nsys
# writes many more tables and, for ENUM_NSYS_EVENT_TYPE, every type it knows, but
# readers only resolve these.
_ENUMS: tuple[tuple[str, tuple[tuple[int, str, str], ...]], ...] = (
    (
        "ENUM_CUDA_MEMCPY_OPER",
        (
            (0, "CUDA_MEMCPY_KIND_UNKNOWN", "Unknown"),
            (1, "CUDA_MEMCPY_KIND_HTOD", "Host-to-Device"),
            (2, "CUDA_MEMCPY_KIND_DTOH", "Device-to-Host"),
            (3, "CUDA_MEMCPY_KIND_HTOA", "Host-to-Array"),
            (4, "CUDA_MEMCPY_KIND_ATOH", "Array-to-Host"),
            (5, "CUDA_MEMCPY_KIND_ATOA", "Array-to-Array"),
            (6, "CUDA_MEMCPY_KIND_ATOD", "Array-to-Device"),
            (7, "CUDA_MEMCPY_KIND_DTOA", "Device-to-Array"),
            (8, "CUDA_MEMCPY_KIND_DTOD", "Device-to-Device"),
            (9, "CUDA_MEMCPY_KIND_HTOH", "Host-to-Host"),
            (10, "CUDA_MEMCPY_KIND_PTOP", "Peer-to-Peer"),
            (11, "CUDA_MEMCPY_KIND_UVM_HTOD", "Unified Host-to-Device"),
            (12, "CUDA_MEMCPY_KIND_UVM_DTOH", "Unified Device-to-Host"),
            (13, "CUDA_MEMCPY_KIND_UVM_DTOD", "Unified Device-to-Device"),
        ),
    ),
    (
        "ENUM_CUDA_MEM_KIND",
        tuple(
            (i, f"CUDA_MEMOPR_MEMORY_KIND_{name}", label)
            for (name, i), label in zip(
                MEM_KINDS.items(),
                (
                    "Pageable",
                    "Pinned",
                    "Device",
                    "Array",
                    "Managed",
                    "Device Static",
                    "Managed Static",
                    "Unknown",
                ),
                strict=True,
            )
        ),
    ),
    (
        "ENUM_CUDA_KERNEL_LAUNCH_TYPE",  # renamed to the misspelt form for 2022.4
        (
            (0, "CUDA_KERNEL_LAUNCH_TYPE_UNKNOWN", "Unknown"),
            (1, "CUDA_KERNEL_LAUNCH_TYPE_REGULAR", "Regular"),
            (2, "CUDA_KERNEL_LAUNCH_TYPE_COOPERATIVE_SINGLE_DEVICE", "Coop Single Device"),
            (3, "CUDA_KERNEL_LAUNCH_TYPE_COOPERATIVE_MULTI_DEVICE", "Coop Multi Device"),
        ),
    ),
    (
        "ENUM_CUDA_FUNC_CACHE_CONFIG",
        (
            (0, "CU_FUNC_CACHE_PREFER_NONE", "None"),
            (1, "CU_FUNC_CACHE_PREFER_SHARED", "Shared"),
            (2, "CU_FUNC_CACHE_PREFER_L1", "L1"),
            (3, "CU_FUNC_CACHE_PREFER_EQUAL", "Equal"),
        ),
    ),
    (
        "ENUM_CUDA_SHARED_MEM_LIMIT_CONFIG",
        (
            (0, "CUDA_SHARED_MEM_LIMIT_DEFAULT", "Default"),
            (1, "CUDA_SHARED_MEM_LIMIT_OPTIN", "Opt in"),
        ),
    ),
    (
        "ENUM_CUPTI_SYNC_TYPE",
        (
            (0, "CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_UNKNOWN", "Unknown"),
            (1, "CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_EVENT_SYNCHRONIZE", "Event sync"),
            (2, "CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_WAIT_EVENT", "Stream wait sync"),
            (3, "CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE", "Stream sync"),
            (4, "CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE", "Context sync"),
        ),
    ),
    (
        "ENUM_NSYS_EVENT_CLASS",
        (
            (0, "TRACE_PROCESS_EVENT_CUDA_RUNTIME", "CUDA runtime"),
            (1, "TRACE_PROCESS_EVENT_CUDA_DRIVER", "CUDA driver"),
            (6, "TRACE_PROCESS_EVENT_NVTX_START", "NVTX start"),
            (7, "TRACE_PROCESS_EVENT_NVTX_FINISH", "NVTX finish"),
            (26, "TRACE_PROCESS_EVENT_CUDA_API", "CUDA API"),
            (27, "TRACE_PROCESS_EVENT_OS_RUNTIME", "OSRT runtime"),
        ),
    ),
    (
        "ENUM_NSYS_EVENT_TYPE",
        ((0, "Unknown", "Unknown"), *((i, n, n) for n, i in NVTX_EVENT_TYPES.items())),
    ),
)

# A few TARGET_INFO_SYSTEM_ENV rows every real export has: (name, nameEnum, value).
_ENV_ROWS: tuple[tuple[str, int, str], ...] = (
    ("CpuCores", 1, "16"),
    ("CpuArchitecture", 3, "x86_64"),
    ("NvDriverVersion", 205, "550.54.15"),
    ("CudaDriverVersion", 611, "12040"),
    ("Hostname", 619, "nsysdiff-builder"),
)
# An environment dump with a Latin-1 byte, a lone continuation byte and a truncated
# sequence: what real exports contain and what Python's default decoding rejects.
_BAD_ENV_VALUE = b"LANG=C\nPS1=\xe9t\xe9 \x80\nTERM=xterm\xc3"

# --------------------------------------------------------------------------------------


@dataclass(slots=True)
class _Batch:
    """Rows from one bulk call, kept columnar until write time (1M rows stay cheap)."""

    n: int
    columns: dict[str, list[int] | object]  # a list per varying field, else a scalar


_Chunk = list[tuple[object, ...]] | _Batch


class _Table:
    """Events for one table, in call order."""

    __slots__ = ("chunks", "fields", "name", "rows")

    def __init__(self, name: str) -> None:
        self.name = name
        self.fields = _FIELDS[name]
        self.chunks: list[_Chunk] = []
        self.rows = 0

    def add(self, record: tuple[object, ...]) -> None:
        last = self.chunks[-1] if self.chunks else None
        if isinstance(last, list):
            last.append(record)
        else:
            self.chunks.append([record])
        self.rows += 1

    def add_batch(self, batch: _Batch) -> None:
        if batch.n:
            self.chunks.append(batch)
            self.rows += batch.n

    def records(self, wanted: Sequence[str]) -> Iterator[tuple[object, ...]]:
        """Yield rows holding the `wanted` fields, in that order."""
        index = [self.fields.index(name) for name in wanted]
        identity = index == list(range(len(self.fields)))
        pick = operator.itemgetter(*index) if len(index) > 1 else None
        for chunk in self.chunks:
            if isinstance(chunk, _Batch):
                iterables: list[Iterable[object]] = []
                for name in wanted:
                    value = chunk.columns[name]
                    iterables.append(
                        value if isinstance(value, list) else itertools.repeat(value, chunk.n)
                    )
                yield from zip(*iterables, strict=True)
            elif identity:
                yield from chunk
            elif pick is not None:
                for record in chunk:
                    yield pick(record)
            else:
                for record in chunk:
                    yield (record[index[0]],)


def _literal(value: object) -> str:
    """An SQL literal for a constant column (ints and plain strings only)."""
    if value is None:
        return "NULL"
    if isinstance(value, bool) or not isinstance(value, int | str):
        raise TypeError(f"unsupported constant {value!r}")
    if isinstance(value, int):
        return str(value)
    return "'" + value.replace("'", "''") + "'"


def _create_sql(name: str, layout: _Layout, pretty: bool) -> str:
    def column(c: _Column) -> str:
        flags = " NOT NULL" * c[2] + " PRIMARY KEY" * c[3]
        if pretty:
            return f"    {c[0]:<27} {c[1]:<9}{flags}".rstrip()
        return f"{c[0]} {c[1]}{flags}"

    if pretty:  # 2022+ exports lay the schema out one column per line
        return f"CREATE TABLE {name} (\n" + ",\n".join(map(column, layout)) + "\n)"
    return f"CREATE TABLE {name} (" + ", ".join(map(column, layout)) + ")"


def _mangle(short: str) -> str | None:
    # An Itanium-style name for plain identifiers ("_Z6kernelv"); templated or
    # namespaced names cannot be derived from the short name, so nsys would leave them
    # to the demangler and we leave them NULL.
    if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", short):
        return f"_Z{len(short)}{short}v"
    return None


def _shared_memory_executed(total: int) -> int:
    # The driver rounds the kernel's shared memory up to a supported carveout; Hopper's
    # steps, never below the 32 KiB real exports show for kernels using none.
    for carveout in (32768, 65536, 102400, 135168, 167936, 200704, 233472):
        if total <= carveout:
            return carveout
    return total


def _as_int64(values: npt.ArrayLike, what: str) -> npt.NDArray[np.int64]:
    array = np.asarray(values, dtype=np.int64)
    if array.ndim != 1:
        raise ValueError(f"{what} must be one-dimensional, got shape {array.shape}")
    return array


class TraceBuilder:
    """Collects events and writes them as an nsys SQLite export of one generation."""

    def __init__(
        self,
        generation: Generation = Generation.V2024,
        *,
        gpus: Sequence[Gpu] = (Gpu(),),
        pid: int = 1000,
        session_start_ns: int = 1_700_000_000_000_000_000,
        extra_columns: bool = False,
        invalid_utf8_env: bool = False,
        gpu_table: bool = True,
        process_name: str = "python",
        analysis_window: tuple[int, int] | None = None,
    ) -> None:
        if not 0 <= pid < _ID_LIMIT:
            raise ValueError(f"pid must be in [0, 2**24), got {pid}")
        if analysis_window is not None and analysis_window[0] > analysis_window[1]:
            raise ValueError(f"analysis_window start > stop: {analysis_window}")
        self.generation = Generation(generation)
        self.gpus: tuple[Gpu, ...] = tuple(gpus)
        self.pid = pid
        self.session_start_ns = session_start_ns
        self.extra_columns = extra_columns
        self.invalid_utf8_env = invalid_utf8_env
        self.gpu_table = gpu_table
        self.process_name = process_name
        self.analysis_window = analysis_window
        self._strings: dict[str, int] = {}
        self._tables: dict[str, _Table] = {name: _Table(name) for name in _FIELDS}
        self._next_correlation = 1
        self._next_grid = 1
        self._next_range = 1
        self._domains: dict[str, int] = {}
        self._thread_names: dict[int, str] = {}
        self._tids: set[int] = set()
        self._t_min: int | None = None
        self._t_max: int | None = None
        self._node_mode = False

    # ---- ids ---------------------------------------------------------------------

    @property
    def global_pid(self) -> int:
        """The serialized GlobalId of the traced process."""
        return _GLOBAL_VID | (self.pid << 24)

    def global_tid(self, tid: int) -> int:
        """The serialized GlobalId of thread `tid` of the traced process."""
        if not 0 <= tid < _ID_LIMIT:
            raise ValueError(f"tid must be in [0, 2**24), got {tid}")
        self._tids.add(tid)
        return self.global_pid | tid

    def string_id(self, text: str) -> int:
        """The StringIds id of `text`, interning it on first use (ids count from 0)."""
        found = self._strings.get(text)
        if found is None:
            found = self._strings[text] = len(self._strings)
        return found

    def name_thread(self, tid: int, name: str) -> None:
        """Name a thread in ThreadNames (default: the process name)."""
        self.global_tid(tid)
        self._thread_names[tid] = name

    def _correlation(self, given: int | None, count: int = 1) -> int:
        # Explicit ids push the counter past them so auto ids never collide with them.
        first = self._next_correlation if given is None else given
        self._next_correlation = max(self._next_correlation, first + count)
        return first

    def _span(self, start: int, end: int) -> None:
        if end < start:
            raise ValueError(f"event ends before it starts: start={start}, end={end}")
        self._t_min = start if self._t_min is None else min(self._t_min, start)
        self._t_max = end if self._t_max is None else max(self._t_max, end)

    def _device(self, device: int) -> None:
        if self.gpus and device not in {g.id for g in self.gpus}:
            raise ValueError(f"device {device} is not one of the builder's GPUs")

    # ---- GPU activity ------------------------------------------------------------

    def kernel(
        self,
        name: str,
        start: int,
        duration: int,
        *,
        demangled: str | None = None,
        mangled: str | None = None,
        device: int = 0,
        stream: int = 7,
        grid: tuple[int, int, int] = (1, 1, 1),
        block: tuple[int, int, int] = (128, 1, 1),
        registers: int = 32,
        static_smem: int = 0,
        dynamic_smem: int = 0,
        correlation_id: int | None = None,
        graph_node_id: int | None = None,
    ) -> int:
        """Record one kernel; `name` is the short name. Returns its correlationId."""
        self._device(device)
        self._span(start, start + duration)
        cid = self._correlation(correlation_id)
        mangled_text = mangled if mangled is not None else _mangle(name)
        self._tables[_KERNEL].add(
            (
                start, start + duration, device, device + 1, stream, cid,
                self.string_id(demangled if demangled is not None else name),
                self.string_id(name),
                None if mangled_text is None else self.string_id(mangled_text),
                registers, *grid, *block, static_smem, dynamic_smem, self._next_grid,
                _shared_memory_executed(static_smem + dynamic_smem), graph_node_id,
            )
        )  # fmt: skip
        self._next_grid += 1
        self._node_mode |= graph_node_id is not None
        return cid

    def kernels(
        self,
        name: str,
        starts: npt.ArrayLike,
        durations: npt.ArrayLike,
        *,
        demangled: str | None = None,
        mangled: str | None = None,
        device: int = 0,
        stream: int = 7,
        grid: tuple[int, int, int] = (1, 1, 1),
        block: tuple[int, int, int] = (128, 1, 1),
        registers: int = 32,
        static_smem: int = 0,
        dynamic_smem: int = 0,
        graph_node_id: int | None = None,
        api: str | None = None,
        api_lead: int = 5000,
        api_duration: int = 3000,
        tid: int = 1001,
    ) -> None:
        """Record many launches of one kernel at once (benchmarks: millions of rows).

        Correlation ids are auto-assigned, consecutive and increasing. With `api`
        (e.g. "cudaLaunchKernel_v7000") each kernel also gets a RUNTIME row on `tid`
        starting `api_lead` ns before it, sharing its correlationId.
        """
        start_arr = _as_int64(starts, "starts")
        duration_arr = _as_int64(durations, "durations")
        if start_arr.shape != duration_arr.shape:
            raise ValueError("starts and durations must have the same length")
        n = int(start_arr.size)
        if n == 0:
            return
        if int(duration_arr.min()) < 0:
            raise ValueError("durations must be >= 0")
        self._device(device)
        end_arr = start_arr + duration_arr
        self._span(int(start_arr.min()), int(end_arr.max()))
        first_cid = self._correlation(None, n)
        cids = list(range(first_cid, first_cid + n))
        first_grid = self._next_grid
        self._next_grid += n
        mangled_text = mangled if mangled is not None else _mangle(name)
        scalars: dict[str, object] = {
            "deviceId": device,
            "contextId": device + 1,
            "streamId": stream,
            "demangledName": self.string_id(demangled if demangled is not None else name),
            "shortName": self.string_id(name),
            "mangledName": None if mangled_text is None else self.string_id(mangled_text),
            "registersPerThread": registers,
            "gridX": grid[0],
            "gridY": grid[1],
            "gridZ": grid[2],
            "blockX": block[0],
            "blockY": block[1],
            "blockZ": block[2],
            "staticSharedMemory": static_smem,
            "dynamicSharedMemory": dynamic_smem,
            "sharedMemoryExecuted": _shared_memory_executed(static_smem + dynamic_smem),
            "graphNodeId": graph_node_id,
        }
        columns: dict[str, list[int] | object] = {
            "start": start_arr.tolist(),
            "end": end_arr.tolist(),
            "correlationId": cids,
            "gridId": list(range(first_grid, first_grid + n)),
            **scalars,
        }
        self._tables[_KERNEL].add_batch(_Batch(n, columns))
        self._node_mode |= graph_node_id is not None
        if api is not None:
            cpu_starts = start_arr - api_lead
            self._span(int(cpu_starts.min()), int(cpu_starts.max()) + api_duration)
            runtime_columns: dict[str, list[int] | object] = {
                "start": cpu_starts.tolist(),
                "end": (cpu_starts + api_duration).tolist(),
                "globalTid": self.global_tid(tid),
                "correlationId": cids,
                "nameId": self.string_id(api),
            }
            self._tables[_RUNTIME_T].add_batch(_Batch(n, runtime_columns))

    def memcpy(
        self,
        kind: str,
        start: int,
        duration: int,
        nbytes: int,
        *,
        device: int = 0,
        stream: int = 7,
        correlation_id: int | None = None,
        graph_node_id: int | None = None,
        src_kind: int | None = None,
        dst_kind: int | None = None,
    ) -> int:
        """Record one copy; `kind` is a COPY_KINDS key ("HtoD", "DtoD", "PtoP", ...).

        Host memory defaults to pinned; pass src_kind/dst_kind=MEM_KINDS["PAGEABLE"]
        for a pageable copy.
        """
        if kind not in COPY_KINDS:
            raise ValueError(f"unknown copy kind {kind!r}; expected one of {list(COPY_KINDS)}")
        self._device(device)
        self._span(start, start + duration)
        cid = self._correlation(correlation_id)
        self._tables[_MEMCPY].add(
            (
                start, start + duration, device, device + 1, stream, cid, nbytes,
                COPY_KINDS[kind],
                _SIDE_KIND[kind[0]] if src_kind is None else src_kind,
                _SIDE_KIND[kind[3]] if dst_kind is None else dst_kind,
                graph_node_id,
            )
        )  # fmt: skip
        self._node_mode |= graph_node_id is not None
        return cid

    def memset(
        self,
        start: int,
        duration: int,
        nbytes: int,
        *,
        device: int = 0,
        stream: int = 7,
        correlation_id: int | None = None,
        graph_node_id: int | None = None,
    ) -> int:
        """Record one memset of device memory. Returns its correlationId."""
        self._device(device)
        self._span(start, start + duration)
        cid = self._correlation(correlation_id)
        self._tables[_MEMSET].add(
            (start, start + duration, device, device + 1, stream, cid, nbytes, graph_node_id)
        )
        self._node_mode |= graph_node_id is not None
        return cid

    # ---- CPU side ----------------------------------------------------------------

    def runtime(
        self,
        name: str,
        start: int,
        duration: int,
        *,
        tid: int = 1001,
        correlation_id: int | None = None,
    ) -> int:
        """Record one CUDA runtime API call (name with its suffix, "cudaMalloc_v3020")."""
        self._span(start, start + duration)
        cid = self._correlation(correlation_id)
        self._tables[_RUNTIME_T].add(
            (start, start + duration, self.global_tid(tid), cid, self.string_id(name))
        )
        return cid

    def launch(
        self,
        name: str,
        cpu_start: int,
        gpu_start: int,
        duration: int,
        *,
        tid: int = 1001,
        api: str = "cudaLaunchKernel_v7000",
        api_duration: int = 3000,
        demangled: str | None = None,
        mangled: str | None = None,
        device: int = 0,
        stream: int = 7,
        grid: tuple[int, int, int] = (1, 1, 1),
        block: tuple[int, int, int] = (128, 1, 1),
        registers: int = 32,
        static_smem: int = 0,
        dynamic_smem: int = 0,
        correlation_id: int | None = None,
        graph_node_id: int | None = None,
    ) -> int:
        """Record a launch API call and the kernel it ran, sharing a correlationId."""
        cid = self.runtime(api, cpu_start, api_duration, tid=tid, correlation_id=correlation_id)
        return self.kernel(
            name, gpu_start, duration, demangled=demangled, mangled=mangled, device=device,
            stream=stream, grid=grid, block=block, registers=registers,
            static_smem=static_smem, dynamic_smem=dynamic_smem, correlation_id=cid,
            graph_node_id=graph_node_id,
        )  # fmt: skip

    def graph_launch(
        self,
        start: int,
        duration: int,
        *,
        graph_id: int = 1,
        graph_exec_id: int = 1,
        device: int = 0,
        stream: int = 7,
        cpu_start: int | None = None,
        tid: int = 1001,
        api_duration: int = 3000,
        correlation_id: int | None = None,
    ) -> int:
        """Record a whole-graph launch (--cuda-graph-trace=graph): a GRAPH_TRACE row
        plus its "cudaGraphLaunch_v10000" runtime row, sharing a correlationId.

        The CPU call starts at `cpu_start`, by default `api_duration` ns before the GPU
        work (clamped at 0).
        """
        if not _since(self.generation, Generation.V2022):
            raise ValueError(
                f"nsys {self.generation.value} exports have no CUDA graph trace table;"
                " graph launches need generation 2022.4 or later"
            )
        self._device(device)
        cpu = max(0, start - api_duration) if cpu_start is None else cpu_start
        cid = self.runtime(
            "cudaGraphLaunch_v10000", cpu, api_duration, tid=tid, correlation_id=correlation_id
        )
        self._span(start, start + duration)
        self._tables[_GRAPH_TRACE].add(
            (start, start + duration, device, device + 1, stream, cid, graph_id, graph_exec_id)
        )
        return cid

    def nvtx_range(
        self,
        text: str,
        start: int,
        end: int,
        *,
        tid: int = 1001,
        push_pop: bool = True,
        domain: str | None = None,
        end_tid: int | None = None,
        registered: bool = False,
    ) -> None:
        """Record an NVTX range: push/pop (59, per thread) or start/end (60).

        `domain` creates the domain's NvtxDomainCreate (75) row on first use.
        `registered` stores the text as a StringIds id (textId) instead of in `text`.
        """
        self._span(start, end)
        if push_pop and end_tid is not None and end_tid != tid:
            raise ValueError("a push/pop range starts and ends on the same thread")
        global_tid = self.global_tid(tid)
        domain_id = self._domain(domain, start, tid)
        text_value, text_id = (None, self.string_id(text)) if registered else (text, None)
        if push_pop:
            event, range_id, end_global = NVTX_EVENT_TYPES["NvtxPushPopRange"], None, None
        else:
            event, range_id = NVTX_EVENT_TYPES["NvtxStartEndRange"], self._next_range
            self._next_range += 1
            end_global = self.global_tid(tid if end_tid is None else end_tid)
        self._tables[_NVTX].add(
            (start, end, event, range_id, text_value, global_tid, end_global, text_id, domain_id)
        )

    def nvtx_mark(self, text: str, at: int, *, tid: int = 1001) -> None:
        """Record an NVTX mark (34): an instant, `end` NULL."""
        self._span(at, at)
        self._tables[_NVTX].add(
            (at, None, NVTX_EVENT_TYPES["NvtxMark"], None, text, self.global_tid(tid),
             None, None, 0)
        )  # fmt: skip

    def _domain(self, domain: str | None, at: int, tid: int) -> int:
        # Real exports write domainId 0 (the default domain) on every ordinary row.
        if domain is None:
            return 0
        found = self._domains.get(domain)
        if found is None:
            found = self._domains[domain] = len(self._domains) + 1
            self._tables[_NVTX].add(
                (at, None, NVTX_EVENT_TYPES["NvtxDomainCreate"], None, domain,
                 self.global_tid(tid), None, None, found)
            )  # fmt: skip
        return found

    # ---- writing -----------------------------------------------------------------

    def write(self, path: str | os.PathLike[str]) -> Path:
        """Write the export to a new file `path` (FileExistsError if it exists).

        The database is built in a temporary file beside the target and moved into
        place only when complete, so a reader never sees half a trace and no journal
        or temporary file is left behind.
        """
        target = Path(path)
        if target.exists():
            raise FileExistsError(f"{target}: refusing to overwrite an existing file")
        fd, tmp_name = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
        os.close(fd)
        tmp = Path(tmp_name)
        try:
            connection = sqlite3.connect(tmp, isolation_level=None)
            try:
                self._write_into(connection)
            finally:
                connection.close()
            try:
                # link() refuses to replace an existing file, closing the race between
                # the exists() check above and this point.
                os.link(tmp, target)
            except FileExistsError:
                raise FileExistsError(f"{target}: refusing to overwrite an existing file") from None
            except OSError:  # filesystems without hard links
                if target.exists():
                    raise FileExistsError(
                        f"{target}: refusing to overwrite an existing file"
                    ) from None
                os.replace(tmp, target)
        finally:
            tmp.unlink(missing_ok=True)
        return target

    def _write_into(self, connection: sqlite3.Connection) -> None:
        g = self.generation
        pretty = _since(g, Generation.V2022)
        # No journal and no fsync: the file is private until renamed, and a crash just
        # leaves a temporary file that the next write never reuses.
        connection.execute("PRAGMA journal_mode=OFF")
        connection.execute("PRAGMA synchronous=OFF")
        connection.execute("PRAGMA page_size=4096")
        connection.execute("PRAGMA encoding='UTF-8'")
        connection.execute("BEGIN")

        def table(name: str, layout: _Layout, rows: Iterable[Sequence[object]]) -> None:
            connection.execute(_create_sql(name, layout, pretty))
            marks = ", ".join("?" * len(layout))
            connection.executemany(f"INSERT INTO {name} VALUES ({marks})", rows)

        # Intern the names written below before StringIds is emitted.
        thread_rows = [
            (self.string_id(self._thread_names.get(tid, self.process_name)), 20,
             self.global_pid | tid)
            for tid in sorted(self._tids)
        ]  # fmt: skip

        for name in _FIELDS:
            self._write_events(connection, name, pretty)

        table("StringIds", _STRING_IDS, ((i, s) for s, i in self._strings.items()))
        if thread_rows:
            table("ThreadNames", _THREAD_NAMES, thread_rows)

        if self.gpu_table and self.gpus:
            self._write_gpus(connection, pretty)

        if _since(g, Generation.V2022):
            table("PROCESSES", _PROCESSES, [(self.global_pid, self.pid, self.process_name)])
            start, stop = self._window()
            table("ANALYSIS_DETAILS", _ANALYSIS_DETAILS,
                  [(_GLOBAL_VID, stop - start, start, stop)])  # fmt: skip
            utc = datetime.fromtimestamp(self.session_start_ns // 1_000_000_000, timezone.utc)
            stamp = utc.strftime("%Y-%m-%dT%H:%M:%S")
            session: tuple[object, ...] = (self.session_start_ns, stamp, stamp)
            if _since(g, Generation.V2026):
                table("TARGET_INFO_SESSION_START_TIME", _SESSION_START_2026,
                      [(*session, start)])  # fmt: skip
            else:
                table("TARGET_INFO_SESSION_START_TIME", _SESSION_START_2022, [session])
            self._write_meta(connection, pretty, stamp)
            for enum_name, rows in _ENUMS:
                if enum_name == "ENUM_CUDA_KERNEL_LAUNCH_TYPE" and g is Generation.V2022:
                    enum_name = "ENUM_CUDA_KRENEL_LAUNCH_TYPE"  # as nsys 2022.x spelt it
                table(enum_name, _ENUM, rows)

        if _since(g, Generation.V2022) or self.invalid_utf8_env:
            self._write_env(connection, pretty)
        connection.execute("COMMIT")

    def _window(self) -> tuple[int, int]:
        if self.analysis_window is not None:
            return self.analysis_window
        if self._t_min is None or self._t_max is None:
            return (0, 0)
        return (self._t_min, self._t_max)

    def _write_events(self, connection: sqlite3.Connection, name: str, pretty: bool) -> None:
        events = self._tables[name]
        if not events.rows:
            return  # lazy export: no rows, no table
        layout = _LAYOUTS[name][self.generation]
        if self.extra_columns and name in (_MEMCPY, _RUNTIME_T):
            layout = layout + _EXTRA
        constants = {**_CONSTANTS[name], "globalPid": self.global_pid}
        wanted: list[str] = []
        values: list[str] = []
        for column in layout:
            if column[0] in events.fields:
                wanted.append(column[0])
                values.append("?")
            else:
                values.append(_literal(constants.get(column[0])))
        connection.execute(_create_sql(name, layout, pretty))
        # Constants go into the statement as literals so each row only binds what varies.
        connection.executemany(
            f"INSERT INTO {name} VALUES ({', '.join(values)})", events.records(wanted)
        )

    def _write_gpus(self, connection: sqlite3.Connection, pretty: bool) -> None:
        rows: list[tuple[object, ...]] = []
        if self.generation is Generation.V2020_3:
            for gpu in sorted(self.gpus, key=lambda g: g.id):
                rows.append(
                    (gpu.id, gpu.id, gpu.name, _gpu_uuid(gpu), _bus(gpu),
                     gpu.total_memory_bytes, gpu.memory_bandwidth_bytes_per_s,
                     gpu.l2_cache_bytes, gpu.clock_rate_hz, gpu.sm_count, 32, 64, 0,
                     gpu.compute[0], gpu.compute[1])
                )  # fmt: skip
            layout, name = TARGET_INFO_CUDA_GPU_LAYOUT, "TARGET_INFO_CUDA_GPU"
        else:
            for gpu in sorted(self.gpus, key=lambda g: g.id):
                rows.append(
                    (_GLOBAL_VID, gpu.id, gpu.name, _bus(gpu), 1, gpu.l2_cache_bytes,
                     gpu.total_memory_bytes, gpu.memory_bandwidth_bytes_per_s,
                     gpu.clock_rate_hz, gpu.sm_count, gpu.id, _gpu_uuid(gpu), 0,
                     gpu.chip_name, gpu.id, None, None, 161, 0, 65536, 0, 65536, 49152,
                     232448, 233472, 65536, 32, 3, 64, 32, 1024, 1024, 1024, 64,
                     2147483647, 65535, 65535, gpu.compute[0], gpu.compute[1],
                     gpu.compute[0], gpu.compute[1])
                )  # fmt: skip
            layout, name = _TARGET_INFO_GPU, "TARGET_INFO_GPU"
        connection.execute(_create_sql(name, layout, pretty))
        connection.executemany(f"INSERT INTO {name} VALUES ({', '.join('?' * len(layout))})", rows)

    def _write_meta(self, connection: sqlite3.Connection, pretty: bool, stamp: str) -> None:
        g = self.generation
        product, schema = _META_VERSIONS[g]
        major, minor, micro = schema.split(".")
        rows: list[tuple[str, str]] = [
            ("EXPORT_PRODUCT_NAME", "NVIDIA Nsight Systems"),
            ("EXPORT_PRODUCT_VERSION", product),
            ("EXPORT_PRODUCT_DATE", g.value),
            ("EXPORT_SCHEMA_VERSION", schema),
            ("EXPORT_SCHEMA_VERSION_MAJOR", major),
            ("EXPORT_SCHEMA_VERSION_MINOR", minor),
            ("EXPORT_SCHEMA_VERSION_MICRO", micro),
            ("EXPORT_PLATFORM", "linux-desktop"),
            ("EXPORT_ARCH", "x64"),
            ("EXPORT_TIME_UTC", stamp),
            ("EXPORT_HOST", "nsysdiff-builder"),
        ]
        if g is Generation.V2022:
            rows += [("EXPORT_INPUT_FILE", "report.nsys-rep"), ("EXPORT_LAZY", "true")]
            name = "EXPORT_META_DATA"
        else:
            rows += [
                ("EXPORT_PARAM_INPUT_FILE", "report.nsys-rep"),
                ("EXPORT_PARAM_INPUT_PATH_ABS", "/tmp/report.nsys-rep"),
                ("EXPORT_PARAM_LAZY", "true"),
            ]
            name = "META_DATA_EXPORT"
        connection.execute(_create_sql(name, _META, pretty))
        connection.executemany(f"INSERT INTO {name} VALUES (?, ?)", rows)
        if g is Generation.V2022:
            return
        capture = [
            ("DEVICE_ID", "Local (CLI)"),
            ("CAPTURE_EVENT_TYPE", "NvtxEvents"),
            ("CAPTURE_EVENT_TYPE", "Cuda"),
        ]
        if _since(g, Generation.V2026):
            mode = "Node" if self._node_mode else "Graph"
            capture.append(("CUDA_GRAPH_TRACE_OPTIONS:MODE", mode))
        capture.append(("PROCESS_0:COMMAND", self.process_name))
        connection.execute(_create_sql("META_DATA_CAPTURE", _META, pretty))
        connection.executemany("INSERT INTO META_DATA_CAPTURE VALUES (?, ?)", capture)

    def _write_env(self, connection: sqlite3.Connection, pretty: bool) -> None:
        modern = _since(self.generation, Generation.V2024)
        layout = _SYSTEM_ENV_2024 if modern else _SYSTEM_ENV_2022
        connection.execute(_create_sql("TARGET_INFO_SYSTEM_ENV", layout, pretty))
        connection.executemany(
            "INSERT INTO TARGET_INFO_SYSTEM_ENV VALUES (?, 'Local (CLI)', ?, ?, ?)",
            [(_GLOBAL_VID, name, enum, value) for name, enum, value in _ENV_ROWS],
        )
        if self.invalid_utf8_env:
            # Bound str parameters must be valid UTF-8, so the bytes go in as a BLOB cast
            # to TEXT: storage class TEXT, payload not UTF-8, exactly as nsys leaves it.
            connection.execute(
                "INSERT INTO TARGET_INFO_SYSTEM_ENV VALUES "
                f"(?, 'Local (CLI)', 'DeviceEnvironment', 610, CAST(x'{_BAD_ENV_VALUE.hex()}'"
                " AS TEXT))",
                (_GLOBAL_VID,),
            )


def _gpu_uuid(gpu: Gpu) -> str:
    if gpu.uuid is not None:
        return gpu.uuid
    digest = hashlib.sha256(f"{gpu.id}:{gpu.name}".encode()).hexdigest()
    return f"{digest[:8]}-{digest[8:12]}-{digest[12:16]}-{digest[16:20]}-{digest[20:32]}"


def _bus(gpu: Gpu) -> str:
    return f"0000:{(0x1B + 0x28 * gpu.id) % 0x100:02x}:00.0"


def layout_of(table: str, generation: Generation, *, extra_columns: bool = False) -> list[str]:
    """The column names the builder writes for an event table in `generation`."""
    layout = _LAYOUTS[table][generation]
    if extra_columns and table in (_MEMCPY, _RUNTIME_T):
        layout = layout + _EXTRA
    return [column[0] for column in layout]


def event_tables() -> Mapping[str, Mapping[Generation, _Layout]]:
    """Event-table layouts per generation (table -> generation -> columns)."""
    return _LAYOUTS


def tamper(path: str | os.PathLike[str], *statements: str, params: Sequence[object] = ()) -> Path:
    """Run SQL against a written export in place, as a broken or hostile producer would.

    For crafted test files: ``UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET start = 'x'`` stores
    TEXT where nsys writes integers (SQLite keeps any type in any column). The NOT NULL
    constraints that real exports declare are lifted first, by rewriting the stored
    schema, so a statement can write the NULLs a damaged file may hold. ``params`` are
    bound to every statement. No journal is kept: the file is a throwaway copy.
    """
    target = Path(path)
    connection = sqlite3.connect(target, isolation_level=None)
    try:
        connection.execute("PRAGMA journal_mode=OFF")
        connection.execute("PRAGMA writable_schema=ON")
        connection.execute(
            "UPDATE sqlite_master SET sql = replace(sql, ' NOT NULL', '') WHERE type = 'table'"
        )
        connection.execute("PRAGMA writable_schema=OFF")
    finally:
        connection.close()
    # A fresh connection reads the rewritten schema.
    connection = sqlite3.connect(target, isolation_level=None)
    try:
        connection.execute("PRAGMA journal_mode=OFF")
        for sql in statements:
            connection.execute(sql, tuple(params))
    finally:
        connection.close()
    return target
