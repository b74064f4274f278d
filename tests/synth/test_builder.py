"""TraceBuilder writes nsys-shaped SQLite: right tables and columns per generation,
joinable ids, the real files' traps, and the same bytes for the same calls."""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from nsysdiff.synth.builder import Generation, Gpu, TraceBuilder
from nsysdiff.synth.enums import COPY_KINDS

KERNEL = "CUPTI_ACTIVITY_KIND_KERNEL"
MEMCPY = "CUPTI_ACTIVITY_KIND_MEMCPY"
MEMSET = "CUPTI_ACTIVITY_KIND_MEMSET"
RUNTIME = "CUPTI_ACTIVITY_KIND_RUNTIME"
GRAPH_TRACE = "CUPTI_ACTIVITY_KIND_GRAPH_TRACE"
NVTX = "NVTX_EVENTS"

EVENT_TABLES = {KERNEL, MEMCPY, MEMSET, RUNTIME, NVTX}
ENUMS = {
    "ENUM_CUDA_MEMCPY_OPER",
    "ENUM_CUDA_MEM_KIND",
    "ENUM_CUDA_FUNC_CACHE_CONFIG",
    "ENUM_CUDA_SHARED_MEM_LIMIT_CONFIG",
    "ENUM_CUPTI_SYNC_TYPE",
    "ENUM_NSYS_EVENT_CLASS",
    "ENUM_NSYS_EVENT_TYPE",
}
MODERN_COMMON = {
    "StringIds",
    "ThreadNames",
    "PROCESSES",
    "ANALYSIS_DETAILS",
    "TARGET_INFO_SESSION_START_TIME",
    "TARGET_INFO_SYSTEM_ENV",
    "TARGET_INFO_GPU",
}
EXPECTED_TABLES: dict[Generation, set[str]] = {
    Generation.V2020_3: EVENT_TABLES | {"StringIds", "ThreadNames", "TARGET_INFO_CUDA_GPU"},
    Generation.V2021: EVENT_TABLES | {"StringIds", "ThreadNames", "TARGET_INFO_GPU"},
    Generation.V2022: EVENT_TABLES
    | MODERN_COMMON
    | ENUMS
    | {GRAPH_TRACE, "EXPORT_META_DATA", "ENUM_CUDA_KRENEL_LAUNCH_TYPE"},
    Generation.V2024: EVENT_TABLES
    | MODERN_COMMON
    | ENUMS
    | {GRAPH_TRACE, "META_DATA_EXPORT", "META_DATA_CAPTURE", "ENUM_CUDA_KERNEL_LAUNCH_TYPE"},
    Generation.V2026: EVENT_TABLES
    | MODERN_COMMON
    | ENUMS
    | {GRAPH_TRACE, "META_DATA_EXPORT", "META_DATA_CAPTURE", "ENUM_CUDA_KERNEL_LAUNCH_TYPE"},
}

HAS_GRAPH_TRACE = {Generation.V2022, Generation.V2024, Generation.V2026}


def populate(builder: TraceBuilder) -> None:
    """One of everything, the way a short decode step would look."""
    builder.nvtx_range("decode_step", 0, 90_000, domain="vllm")
    builder.launch("gemm", 1_000, 10_000, 20_000, grid=(132, 1, 1), block=(256, 1, 1))
    builder.launch(
        "flash_fwd_kernel",
        4_000,
        31_000,
        15_000,
        demangled="void flash::flash_fwd_kernel<Flash_fwd_kernel_traits<128, 64>>(Params)",
        dynamic_smem=98_304,
        registers=255,
    )
    builder.runtime("cudaMemcpyAsync_v3020", 50_000, 2_000)
    builder.memcpy("HtoD", 52_000, 1_000, 4096)
    builder.memset(54_000, 100, 1024)
    builder.nvtx_range("sample", 60_000, 80_000, push_pop=False, registered=True, end_tid=1002)
    builder.nvtx_mark("sync", 85_000)
    if builder.generation in HAS_GRAPH_TRACE:
        builder.graph_launch(100_000, 40_000)


def connect(path: Path) -> sqlite3.Connection:
    return sqlite3.connect(f"file:{path}?mode=ro", uri=True)


def tables(con: sqlite3.Connection) -> set[str]:
    return {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}


def columns(con: sqlite3.Connection, table: str) -> list[str]:
    return [r[1] for r in con.execute(f"PRAGMA table_info({table})")]


def column_specs(con: sqlite3.Connection, table: str) -> list[tuple[str, str, bool]]:
    return [(r[1], r[2], bool(r[3])) for r in con.execute(f"PRAGMA table_info({table})")]


@pytest.fixture(params=list(Generation), ids=lambda g: g.value)
def generation(request: pytest.FixtureRequest) -> Generation:
    return Generation(request.param)


@pytest.fixture
def trace(tmp_path: Path, generation: Generation) -> Iterator[sqlite3.Connection]:
    builder = TraceBuilder(generation)
    populate(builder)
    con = connect(builder.write(tmp_path / "t.sqlite"))
    yield con
    con.close()


# ---- structure ---------------------------------------------------------------------


def test_tables_per_generation(trace: sqlite3.Connection, generation: Generation) -> None:
    assert tables(trace) == EXPECTED_TABLES[generation]


def test_lazy_tables_empty_builder(tmp_path: Path, generation: Generation) -> None:
    con = connect(TraceBuilder(generation).write(tmp_path / "empty.sqlite"))
    got = tables(con)
    assert not got & (EVENT_TABLES | {GRAPH_TRACE, "ThreadNames"})
    assert "StringIds" in got
    assert ("TARGET_INFO_CUDA_GPU" if generation is Generation.V2020_3 else "TARGET_INFO_GPU") in got


def test_kernel_columns_follow_the_doc(trace: sqlite3.Connection, generation: Generation) -> None:
    cols = columns(trace, KERNEL)
    assert cols[:3] == ["start", "end", "deviceId"]
    for name in (
        "correlationId",
        "globalPid",
        "demangledName",
        "shortName",
        "gridX",
        "blockZ",
        "registersPerThread",
        "staticSharedMemory",
        "dynamicSharedMemory",
        "graphNodeId",
    ):
        assert name in cols
    modern = generation not in (Generation.V2020_3, Generation.V2021)
    assert ("mangledName" in cols) == modern
    assert ("greenContextId" in cols) == (generation in (Generation.V2024, Generation.V2026))
    if "greenContextId" in cols:
        assert cols.index("greenContextId") == cols.index("contextId") + 1
    assert ("tensorSizeMinusOneElements" in cols) == (generation is Generation.V2026)
    if generation is Generation.V2026:
        spec = dict((n, (t, nn)) for n, t, nn in column_specs(trace, KERNEL))
        assert spec["tensorSizeMinusOneElements"] == ("TEXT", True)
        assert {"clusterX", "clusterY", "clusterZ", "graphId"} <= set(cols)
        assert "copyCount" in columns(trace, MEMCPY)


def test_memcpy_and_nvtx_columns(trace: sqlite3.Connection, generation: Generation) -> None:
    memcpy = columns(trace, MEMCPY)
    assert memcpy[memcpy.index("bytes") : memcpy.index("bytes") + 3] == [
        "bytes",
        "copyKind",
        "deprecatedSrcId",
    ]
    assert ("virtualAddress" in memcpy) == (generation not in (Generation.V2020_3, Generation.V2021))
    nvtx = columns(trace, NVTX)
    assert nvtx[:11] == [
        "start",
        "end",
        "eventType",
        "rangeId",
        "category",
        "color",
        "text",
        "globalTid",
        "endGlobalTid",
        "textId",
        "domainId",
    ]
    assert ("binaryData" in nvtx) == (generation in (Generation.V2024, Generation.V2026))
    assert columns(trace, RUNTIME) == [
        "start",
        "end",
        "eventClass",
        "globalTid",
        "correlationId",
        "nameId",
        "returnValue",
        "callchainId",
    ]


def test_metadata_versions(trace: sqlite3.Connection, generation: Generation) -> None:
    expected = {
        Generation.V2022: ("EXPORT_META_DATA", "2022.4.2.1", "3.0.0"),
        Generation.V2024: ("META_DATA_EXPORT", "2024.6.2.25", "3.16.1"),
        Generation.V2026: ("META_DATA_EXPORT", "2026.2.1.210", "3.25.0"),
    }.get(generation)
    if expected is None:
        assert not {"EXPORT_META_DATA", "META_DATA_EXPORT"} & tables(trace)
        assert not any(t.startswith("ENUM_") for t in tables(trace))
        return
    table, product, schema = expected
    meta = dict(trace.execute(f"SELECT name, value FROM {table}").fetchall())
    assert meta["EXPORT_PRODUCT_VERSION"] == product
    assert meta["EXPORT_SCHEMA_VERSION"] == schema
    oper = dict(trace.execute("SELECT name, id FROM ENUM_CUDA_MEMCPY_OPER").fetchall())
    assert oper["CUDA_MEMCPY_KIND_HTOD"] == 1
    assert oper["CUDA_MEMCPY_KIND_DTOD"] == 8
    assert oper["CUDA_MEMCPY_KIND_PTOP"] == 10
    types = dict(trace.execute("SELECT name, id FROM ENUM_NSYS_EVENT_TYPE").fetchall())
    assert (types["NvtxPushPopRange"], types["NvtxStartEndRange"]) == (59, 60)


def test_gpu_tables(tmp_path: Path, generation: Generation) -> None:
    gpus = (Gpu(0, "NVIDIA H100 80GB HBM3", 132, (9, 0)), Gpu(1, "NVIDIA H100 80GB HBM3"))
    con = connect(TraceBuilder(generation, gpus=gpus).write(tmp_path / "g.sqlite"))
    if generation is Generation.V2020_3:
        assert "TARGET_INFO_GPU" not in tables(con)
        rows = con.execute(
            "SELECT deviceId, name, numMultiprocessors, computeCapabilityMajor"
            " FROM TARGET_INFO_CUDA_GPU ORDER BY deviceId"
        ).fetchall()
        assert rows == [(0, "NVIDIA H100 80GB HBM3", 132, 9), (1, "NVIDIA H100 80GB HBM3", 132, 9)]
    else:
        rows = con.execute(
            "SELECT id, name, smCount, computeMajor, computeMinor FROM TARGET_INFO_GPU ORDER BY id"
        ).fetchall()
        assert rows == [
            (0, "NVIDIA H100 80GB HBM3", 132, 9, 0),
            (1, "NVIDIA H100 80GB HBM3", 132, 9, 0),
        ]
    no_gpu = connect(TraceBuilder(generation, gpu_table=False).write(tmp_path / "n.sqlite"))
    assert not {"TARGET_INFO_GPU", "TARGET_INFO_CUDA_GPU"} & tables(no_gpu)


def test_extra_columns_are_appended(tmp_path: Path) -> None:
    builder = TraceBuilder(Generation.V2022, extra_columns=True)
    populate(builder)
    con = connect(builder.write(tmp_path / "x.sqlite"))
    assert columns(con, MEMCPY)[-2:] == ["virtualAddress", "name"]
    assert columns(con, RUNTIME)[-1] == "name"
    assert con.execute(f"SELECT count(*) FROM {MEMCPY} WHERE name IS NULL").fetchone() == (1,)


# ---- content -----------------------------------------------------------------------


def test_correlation_joins_runtime_to_kernel(trace: sqlite3.Connection) -> None:
    rows = trace.execute(
        f"""SELECT api.value, k.value, r."end" <= g.start
            FROM {KERNEL} g JOIN {RUNTIME} r USING (correlationId)
            JOIN StringIds api ON api.id = r.nameId
            JOIN StringIds k ON k.id = g.shortName ORDER BY g.start"""
    ).fetchall()
    assert rows == [
        ("cudaLaunchKernel_v7000", "gemm", 1),
        ("cudaLaunchKernel_v7000", "flash_fwd_kernel", 1),
    ]
    demangled = trace.execute(
        f"SELECT s.value FROM {KERNEL} g JOIN StringIds s ON s.id = g.demangledName ORDER BY g.start"
    ).fetchall()
    assert demangled[1][0].startswith("void flash::flash_fwd_kernel<")
    ids = [r[0] for r in trace.execute(f"SELECT correlationId FROM {RUNTIME} ORDER BY start")]
    assert ids == sorted(set(ids))


def test_graph_launch_shares_correlation_id(trace: sqlite3.Connection, generation: Generation) -> None:
    if generation not in HAS_GRAPH_TRACE:
        assert GRAPH_TRACE not in tables(trace)
        return
    rows = trace.execute(
        f"SELECT s.value, g.graphId, g.graphExecId FROM {GRAPH_TRACE} g"
        f" JOIN {RUNTIME} r USING (correlationId) JOIN StringIds s ON s.id = r.nameId"
    ).fetchall()
    assert rows == [("cudaGraphLaunch_v10000", 1, 1)]


def test_graph_launch_refused_before_2022() -> None:
    with pytest.raises(ValueError, match="graph"):
        TraceBuilder(Generation.V2021).graph_launch(0, 10)


def test_global_tid_encoding_and_thread_names(tmp_path: Path) -> None:
    builder = TraceBuilder(pid=4242)
    builder.runtime("cudaFree_v3020", 0, 10, tid=77)
    builder.name_thread(77, "worker")
    con = connect(builder.write(tmp_path / "t.sqlite"))
    (gtid,) = con.execute(f"SELECT globalTid FROM {RUNTIME}").fetchone()
    assert ((gtid >> 24) & 0xFFFFFF, gtid & 0xFFFFFF) == (4242, 77)
    assert gtid >> 48 == 1  # the VM bits nsys sets for the local host
    (gpid,) = con.execute("SELECT globalPid FROM PROCESSES WHERE pid = 4242").fetchone()
    assert gpid == gtid & ~0xFFFFFF
    assert con.execute("SELECT s.value FROM ThreadNames t JOIN StringIds s ON s.id = t.nameId").fetchall() == [
        ("worker",)
    ]


def test_nvtx_rows(trace: sqlite3.Connection) -> None:
    rows = trace.execute(
        f"SELECT n.eventType, coalesce(n.text, s.value), n.domainId, n.endGlobalTid IS NULL"
        f" FROM {NVTX} n LEFT JOIN StringIds s ON s.id = n.textId ORDER BY n.start, n.eventType"
    ).fetchall()
    domain_id = rows[0][2]
    assert domain_id != 0
    assert rows == [
        (59, "decode_step", domain_id, 1),
        (75, "vllm", domain_id, 1),
        (60, "sample", 0, 0),
        (34, "sync", 0, 1),
    ]
    (text,) = trace.execute(f"SELECT text FROM {NVTX} WHERE eventType = 60").fetchone()
    assert text is None  # registered strings live in StringIds


def test_memcpy_kinds(tmp_path: Path) -> None:
    builder = TraceBuilder()
    for i, kind in enumerate(COPY_KINDS):
        builder.memcpy(kind, i * 100, 10, 1 << i)
    con = connect(builder.write(tmp_path / "m.sqlite"))
    got = [r[0] for r in con.execute(f"SELECT copyKind FROM {MEMCPY} ORDER BY start")]
    assert got == list(range(1, 11))
    with pytest.raises(ValueError, match="copy kind"):
        builder.memcpy("HtoX", 0, 1, 1)


def test_bulk_kernels_with_runtime(tmp_path: Path) -> None:
    builder = TraceBuilder(Generation.V2026)
    builder.kernel("first", 0, 10)
    n = 10_000
    starts = np.arange(n, dtype=np.int64) * 1_000 + 100_000
    builder.kernels("decode", starts, np.full(n, 700), api="cudaLaunchKernel_v7000")
    con = connect(builder.write(tmp_path / "b.sqlite"))
    assert con.execute(f"SELECT count(*), count(DISTINCT correlationId) FROM {KERNEL}").fetchone() == (
        n + 1,
        n + 1,
    )
    joined = con.execute(f"SELECT count(*) FROM {KERNEL} k JOIN {RUNTIME} r USING (correlationId)").fetchone()
    assert joined == (n,)
    assert con.execute(f'SELECT sum("end" - start) FROM {KERNEL} WHERE start >= 100000').fetchone() == (n * 700,)


def test_explicit_correlation_ids_stay_unique(tmp_path: Path) -> None:
    builder = TraceBuilder()
    assert builder.kernel("a", 0, 1, correlation_id=50) == 50
    assert builder.kernel("b", 1, 1) == 51


def test_invalid_utf8_env_row(tmp_path: Path, generation: Generation) -> None:
    path = TraceBuilder(generation, invalid_utf8_env=True).write(tmp_path / "u.sqlite")
    con = connect(path)
    con.text_factory = bytes
    row = con.execute(
        "SELECT typeof(value), value FROM TARGET_INFO_SYSTEM_ENV WHERE name = 'DeviceEnvironment'"
    ).fetchone()
    assert row[0] == b"text"
    with pytest.raises(UnicodeDecodeError):
        row[1].decode("utf-8")
    # ...and Python's default text decoding trips over it, which is the trap readers face.
    with pytest.raises(sqlite3.OperationalError):
        connect(path).execute("SELECT value FROM TARGET_INFO_SYSTEM_ENV").fetchall()


# ---- writing -----------------------------------------------------------------------


def test_deterministic_bytes(tmp_path: Path, generation: Generation) -> None:
    paths = []
    for name in ("a.sqlite", "b.sqlite"):
        builder = TraceBuilder(generation, invalid_utf8_env=True)
        populate(builder)
        builder.kernels("bulk", np.arange(1000) * 10 + 200_000, np.full(1000, 5))
        paths.append(builder.write(tmp_path / name))
    assert paths[0].read_bytes() == paths[1].read_bytes()


def test_write_refuses_to_overwrite_and_leaves_no_side_files(tmp_path: Path) -> None:
    builder = TraceBuilder()
    populate(builder)
    target = builder.write(tmp_path / "t.sqlite")
    before = target.read_bytes()
    with pytest.raises(FileExistsError):
        builder.write(target)
    assert target.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["t.sqlite"]


# ---- against real exports ----------------------------------------------------------

TRACES = Path(os.environ.get("NSYSDIFF_TRACES", Path(__file__).resolve().parents[3] / "shared" / "traces"))

# The real exports of each generation (the 2022 pair: ecf has NVTX only, pipit's saxpy,
# captured with 2022.2, has the CUDA tables). No 2020.3 export is available.
REAL = {
    Generation.V2021: ("mordred_quadro6000_2021_2.sqlite",),
    Generation.V2022: ("ecf_nvtxonly_baseline.sqlite", "pipit_saxpy_mpi_a100.sqlite"),
    Generation.V2024: ("fuser_h100_report1.sqlite",),
    Generation.V2026: ("nsysai_mfu_h100x2_before.sqlite",),
}


def is_subsequence(short: list[tuple[str, str, bool]], long: list[tuple[str, str, bool]]) -> bool:
    it = iter(long)
    return all(item in it for item in short)


@pytest.mark.parametrize("generation", list(REAL), ids=lambda g: g.value)
def test_columns_match_real_exports(tmp_path: Path, generation: Generation) -> None:
    files = [TRACES / name for name in REAL[generation]]
    if not all(f.is_file() for f in files):
        pytest.skip(f"real traces not found under {TRACES} (set NSYSDIFF_TRACES)")
    builder = TraceBuilder(generation)
    populate(builder)
    ours = connect(builder.write(tmp_path / "ours.sqlite"))
    checked: set[str] = set()
    for f in files:
        real = sqlite3.connect(f"file:{f}?mode=ro&immutable=1", uri=True)
        try:
            for table in sorted(tables(ours) & tables(real)):
                mine, theirs = column_specs(ours, table), column_specs(real, table)
                # Post-processing tools append columns (pipit's `name`), so ours must be an
                # in-order subsequence of the real table, with the same types and NOT NULLs.
                assert is_subsequence(mine, theirs), (f.name, table, mine, theirs)
                if table in (KERNEL, MEMCPY):
                    assert [c[0] for c in theirs[: len(mine)]] == [c[0] for c in mine]
                checked.add(table)
        finally:
            real.close()
    assert {KERNEL, MEMCPY, RUNTIME, "StringIds"} <= checked


def test_mangled_names_written_where_the_generation_has_them(tmp_path: Path, generation: Generation) -> None:
    b = TraceBuilder(generation)
    b.kernel("gemm", 0, 10)  # a plain identifier: the builder mangles it
    b.kernel("fwd", 20, 10, demangled="void ns::fwd<1>(float *)", mangled="_ZN2ns3fwdILi1EEEvPf")
    b.kernel("bwd<2>", 40, 10, demangled="void ns::bwd<2>(float *)")  # nothing to derive: NULL
    con = sqlite3.connect(b.write(tmp_path / "t.sqlite"))
    if generation in (Generation.V2020_3, Generation.V2021):
        assert "mangledName" not in [r[1] for r in con.execute(f"PRAGMA table_info({KERNEL})")]
        return
    rows = con.execute(
        f"SELECT s.value FROM {KERNEL} g LEFT JOIN StringIds s ON s.id = g.mangledName ORDER BY g.start"
    ).fetchall()
    assert rows == [("_Z4gemmv",), ("_ZN2ns3fwdILi1EEEvPf",), (None,)]
