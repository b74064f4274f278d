"""The nsys export schema generations: table layouts, event-table fields and constants, DDL."""

from __future__ import annotations

from collections.abc import Mapping
from enum import Enum

from nsysdiff.synth.enums import MEM_KINDS

__all__ = [
    "TARGET_INFO_CUDA_GPU_LAYOUT",
    "Generation",
    "event_tables",
    "layout_of",
]


class Generation(str, Enum):
    """An nsys export schema generation, named by the nsys release that wrote it.

    The layouts below copy table names, column names, column order, declared types and
    NOT NULL constraints from real exports of each (see ``docs/nsys-sqlite.md`` and
    ``../shared/traces``):

    - 2020.3: no metadata or ENUM tables, GPU info only in ``TARGET_INFO_CUDA_GPU``.
    - 2021.2: no metadata or ENUM tables, full ``TARGET_INFO_GPU``.
    - 2022.4: ``EXPORT_META_DATA``, ENUM tables (``ENUM_CUDA_KRENEL_LAUNCH_TYPE`` misspelt
      as nsys spelt it), ``mangledName``, NVTX JSON payload columns.
    - 2024.6: ``META_DATA_EXPORT``, ``greenContextId``, NVTX ``binaryData``.
    - 2026.2: schema 3.25.0, cluster / QMD kernel columns, ``tensorSizeMinusOneElements``,
      ``MEMCPY.copyCount``.
    """

    V2020_3 = "2020.3"
    V2021 = "2021.2"
    V2022 = "2022.4"
    V2024 = "2024.6"
    V2026 = "2026.2"


# Enum members compare by value as strings ("2020.3" < "2021.2" happens to hold, but
# "2026.2" vs "2026.10" would not), so order generations by declaration instead.
_ORDER: dict[Generation, int] = {g: i for i, g in enumerate(Generation)}


def since(generation: Generation, first: Generation) -> bool:
    """Whether `generation` is `first` or a later one."""
    return _ORDER[generation] >= _ORDER[first]


# Serialized GlobalId: the upper bits carry the VM / host id; nsys puts 1 at bit 48 for
# the local machine (every real export we have agrees), pid in bits 24..47, tid below.
GLOBAL_VID = 1 << 48

# (EXPORT_PRODUCT_VERSION, EXPORT_SCHEMA_VERSION) of the generations that write metadata.
META_VERSIONS: dict[Generation, tuple[str, str]] = {
    Generation.V2022: ("2022.4.2.1", "3.0.0"),
    Generation.V2024: ("2024.6.2.25", "3.16.1"),
    Generation.V2026: ("2026.2.1.210", "3.25.0"),
}

# --------------------------------------------------------------------------------------
# Table layouts, copied from PRAGMA table_info of the real exports. A layout is a tuple
# of (name, declared type, NOT NULL, PRIMARY KEY).

Column = tuple[str, str, bool, bool]
Layout = tuple[Column, ...]


def _layout(spec: str) -> Layout:
    """Parse "name TYPE [NN] [PK], ..." (the compact form used below)."""
    columns: list[Column] = []
    for part in spec.split(","):
        words = part.split()
        columns.append((words[0], words[1], "NN" in words[2:], "PK" in words[2:]))
    return tuple(columns)


def _insert_after(layout: Layout, after: str, spec: str) -> Layout:
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

_RUNTIME_2021 = _layout(
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

STRING_IDS = _layout("id INTEGER NN PK, value TEXT NN")
THREAD_NAMES = _layout("nameId INTEGER NN, priority INTEGER, globalTid INTEGER")
PROCESSES = _layout("globalPid INTEGER, pid INTEGER, name TEXT")
ANALYSIS_DETAILS = _layout("globalVid INTEGER NN, duration INTEGER NN, startTime INTEGER NN, stopTime INTEGER NN")
SESSION_START_2022 = _layout("utcEpochNs INTEGER, utcTime TEXT, localTime TEXT")
SESSION_START_2026 = SESSION_START_2022 + _layout("systemClockNs INTEGER")
SYSTEM_ENV_2022 = _layout(
    "globalVid INTEGER NN, devStateName TEXT NN, name TEXT NN, nameEnum INTEGER NN, value TEXT NN"
)
SYSTEM_ENV_2024 = _layout("globalVid INTEGER, devStateName TEXT NN, name TEXT NN, nameEnum INTEGER NN, value TEXT NN")
META = _layout("name TEXT NN, value TEXT")
ENUM = _layout("id INTEGER NN PK, name TEXT, label TEXT")

TARGET_INFO_GPU = _layout(
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
TARGET_INFO_CUDA_GPU_LAYOUT: Layout = _layout(
    "id INTEGER NN, deviceId INTEGER NN, name TEXT NN, uuid TEXT, busLocation TEXT,"
    " totalMemory INTEGER NN, memoryBandwidth INTEGER NN, l2CacheSize INTEGER NN,"
    " coreClockRate INTEGER NN, numMultiprocessors INTEGER NN,"
    " numThreadsPerWarp INTEGER NN, maxWarpsPerMultiprocessor INTEGER NN,"
    " maxIPC INTEGER NN, computeCapabilityMajor INTEGER NN,"
    " computeCapabilityMinor INTEGER NN"
)

# Columns some post-processing tools append after export (pipit's saxpy file has them).
EXTRA = _layout("name TEXT")

KERNEL = "CUPTI_ACTIVITY_KIND_KERNEL"
MEMCPY = "CUPTI_ACTIVITY_KIND_MEMCPY"
MEMSET = "CUPTI_ACTIVITY_KIND_MEMSET"
RUNTIME = "CUPTI_ACTIVITY_KIND_RUNTIME"
GRAPH_TRACE = "CUPTI_ACTIVITY_KIND_GRAPH_TRACE"
NVTX = "NVTX_EVENTS"


def _by_generation(*steps: tuple[Generation, Layout]) -> dict[Generation, Layout]:
    """Expand (first generation, layout) steps to a layout for every later generation."""
    out: dict[Generation, Layout] = {}
    for generation in Generation:
        for first, layout in steps:
            if since(generation, first):
                out[generation] = layout
    return out


LAYOUTS: dict[str, dict[Generation, Layout]] = {
    KERNEL: _by_generation(
        (Generation.V2020_3, _KERNEL_2021),
        (Generation.V2022, _KERNEL_2022),
        (Generation.V2024, _KERNEL_2024),
        (Generation.V2026, _KERNEL_2026),
    ),
    MEMCPY: _by_generation(
        (Generation.V2020_3, _MEMCPY_2021),
        (Generation.V2022, _MEMCPY_2022),
        (Generation.V2024, _MEMCPY_2024),
        (Generation.V2026, _MEMCPY_2026),
    ),
    MEMSET: _by_generation((Generation.V2020_3, _MEMSET_2021), (Generation.V2024, _MEMSET_2024)),
    RUNTIME: _by_generation((Generation.V2020_3, _RUNTIME_2021)),
    GRAPH_TRACE: _by_generation((Generation.V2022, _GRAPH_TRACE_2022), (Generation.V2024, _GRAPH_TRACE_2024)),
    NVTX: _by_generation(
        (Generation.V2020_3, _NVTX_2021),
        (Generation.V2022, _NVTX_2022),
        (Generation.V2024, _NVTX_2024),
    ),
}

# The columns every GPU activity row starts with: its span, where it ran, and the
# correlationId that ties it to the API call that launched it.
_ACTIVITY = ("start", "end", "deviceId", "contextId", "streamId", "correlationId")

# The columns each event table takes from a call, in record order; every other column
# is a per-table constant (below) or NULL.
FIELDS: dict[str, tuple[str, ...]] = {
    KERNEL: (
        *_ACTIVITY,
        "demangledName",
        "shortName",
        "mangledName",
        "registersPerThread",
        "gridX",
        "gridY",
        "gridZ",
        "blockX",
        "blockY",
        "blockZ",
        "staticSharedMemory",
        "dynamicSharedMemory",
        "gridId",
        "sharedMemoryExecuted",
        "graphNodeId",
    ),
    MEMCPY: (
        *_ACTIVITY,
        "bytes",
        "copyKind",
        "srcKind",
        "dstKind",
        "graphNodeId",
    ),
    MEMSET: (
        *_ACTIVITY,
        "bytes",
        "graphNodeId",
    ),
    RUNTIME: ("start", "end", "globalTid", "correlationId", "nameId"),
    GRAPH_TRACE: (
        *_ACTIVITY,
        "graphId",
        "graphExecId",
    ),
    NVTX: (
        "start",
        "end",
        "eventType",
        "rangeId",
        "text",
        "globalTid",
        "endGlobalTid",
        "textId",
        "domainId",
    ),
}

# Constant column values, as real exports show them for ordinary captures (regular
# launches, no green contexts, no clusters). globalPid is added per builder.
CONSTANTS: dict[str, dict[str, object]] = {
    KERNEL: {
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
    MEMCPY: {"greenContextId": 0, "copyCount": 1},
    MEMSET: {"greenContextId": 0, "value": 0, "memKind": MEM_KINDS["DEVICE"]},
    RUNTIME: {"eventClass": 0, "returnValue": 0},  # TRACE_PROCESS_EVENT_CUDA_RUNTIME
    GRAPH_TRACE: {"greenContextId": 0},
    NVTX: {},
}


def literal(value: object) -> str:
    """An SQL literal for a constant column (ints and plain strings only)."""
    if value is None:
        return "NULL"
    if isinstance(value, bool) or not isinstance(value, int | str):
        raise TypeError(f"unsupported constant {value!r}")
    if isinstance(value, int):
        return str(value)
    return "'" + value.replace("'", "''") + "'"


def create_sql(name: str, layout: Layout, pretty: bool) -> str:
    """The CREATE TABLE statement for `layout`, laid out as the generation's nsys does."""

    def column(c: Column) -> str:
        flags = " NOT NULL" * c[2] + " PRIMARY KEY" * c[3]
        if pretty:
            return f"    {c[0]:<27} {c[1]:<9}{flags}".rstrip()
        return f"{c[0]} {c[1]}{flags}"

    if pretty:  # 2022+ exports lay the schema out one column per line
        return f"CREATE TABLE {name} (\n" + ",\n".join(map(column, layout)) + "\n)"
    return f"CREATE TABLE {name} (" + ", ".join(map(column, layout)) + ")"


def event_layout(table: str, generation: Generation, *, extra_columns: bool = False) -> Layout:
    """The layout the builder writes for an event table in `generation`."""
    layout = LAYOUTS[table][generation]
    if extra_columns and table in (MEMCPY, RUNTIME):
        layout = layout + EXTRA
    return layout


def layout_of(table: str, generation: Generation, *, extra_columns: bool = False) -> list[str]:
    """The column names the builder writes for an event table in `generation`."""
    return [column[0] for column in event_layout(table, generation, extra_columns=extra_columns)]


def event_tables() -> Mapping[str, Mapping[Generation, Layout]]:
    """Event-table layouts per generation (table -> generation -> columns)."""
    return LAYOUTS
