"""Write what a TraceBuilder recorded as an nsys SQLite export, and tamper with one afterwards."""

from __future__ import annotations

import hashlib
import os
import sqlite3
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from nsysdiff.synth.enums import ENUMS
from nsysdiff.synth.events import Table, intern
from nsysdiff.synth.schema import (
    ANALYSIS_DETAILS,
    CONSTANTS,
    ENUM,
    FIELDS,
    GLOBAL_VID,
    META,
    META_VERSIONS,
    PROCESSES,
    SESSION_START_2022,
    SESSION_START_2026,
    STRING_IDS,
    SYSTEM_ENV_2022,
    SYSTEM_ENV_2024,
    TARGET_INFO_CUDA_GPU_LAYOUT,
    TARGET_INFO_GPU,
    THREAD_NAMES,
    Generation,
    Layout,
    create_sql,
    event_layout,
    literal,
    since,
)

__all__ = ["Gpu", "Recording", "tamper", "write"]


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


@dataclass(frozen=True, slots=True)
class Recording:
    """Everything a builder recorded, as the export needs it."""

    generation: Generation
    gpus: tuple[Gpu, ...]
    gpu_table: bool
    pid: int
    global_pid: int
    process_name: str
    session_start_ns: int
    window: tuple[int, int]  # ANALYSIS_DETAILS start and stop
    # DERIVED_WINDOW_NS: the range a tool cut this export to from a longer capture
    derived_window: tuple[int, int] | None
    node_mode: bool  # any event came from a graph node (META_DATA_CAPTURE says "Node")
    extra_columns: bool
    invalid_utf8_env: bool
    tables: Mapping[str, Table]
    thread_names: Mapping[int, str]
    tids: frozenset[int]
    # The builder's own StringIds map, not a copy: writing interns the thread names
    # into it, so ids stay consistent with any later string_id() or write().
    strings: dict[str, int]


def write(recording: Recording, path: str | os.PathLike[str]) -> Path:
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
            _write_into(connection, recording)
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
                raise FileExistsError(f"{target}: refusing to overwrite an existing file") from None
            os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)
    return target


def _write_into(connection: sqlite3.Connection, rec: Recording) -> None:
    g = rec.generation
    pretty = since(g, Generation.V2022)
    # No journal and no fsync: the file is private until renamed, and a crash just
    # leaves a temporary file that the next write never reuses.
    connection.execute("PRAGMA journal_mode=OFF")
    connection.execute("PRAGMA synchronous=OFF")
    connection.execute("PRAGMA page_size=4096")
    connection.execute("PRAGMA encoding='UTF-8'")
    connection.execute("BEGIN")

    def table(name: str, layout: Layout, rows: Iterable[Sequence[object]]) -> None:
        connection.execute(create_sql(name, layout, pretty))
        marks = ", ".join("?" * len(layout))
        connection.executemany(f"INSERT INTO {name} VALUES ({marks})", rows)

    # Intern the names written below before StringIds is emitted.
    thread_rows = [
        (intern(rec.strings, rec.thread_names.get(tid, rec.process_name)), 20, rec.global_pid | tid)
        for tid in sorted(rec.tids)
    ]

    for name in FIELDS:
        _write_events(connection, rec, name, pretty)

    table("StringIds", STRING_IDS, ((i, s) for s, i in rec.strings.items()))
    if thread_rows:
        table("ThreadNames", THREAD_NAMES, thread_rows)

    if rec.gpu_table and rec.gpus:
        _write_gpus(connection, rec, pretty)

    if since(g, Generation.V2022):
        table("PROCESSES", PROCESSES, [(rec.global_pid, rec.pid, rec.process_name)])
        start, stop = rec.window
        table("ANALYSIS_DETAILS", ANALYSIS_DETAILS, [(GLOBAL_VID, stop - start, start, stop)])
        utc = datetime.fromtimestamp(rec.session_start_ns // 1_000_000_000, timezone.utc)
        stamp = utc.strftime("%Y-%m-%dT%H:%M:%S")
        session: tuple[object, ...] = (rec.session_start_ns, stamp, stamp)
        if since(g, Generation.V2026):
            table("TARGET_INFO_SESSION_START_TIME", SESSION_START_2026, [(*session, start)])
        else:
            table("TARGET_INFO_SESSION_START_TIME", SESSION_START_2022, [session])
        _write_meta(connection, rec, pretty, stamp)
        for enum_name, rows in ENUMS:
            if enum_name == "ENUM_CUDA_KERNEL_LAUNCH_TYPE" and g is Generation.V2022:
                enum_name = "ENUM_CUDA_KRENEL_LAUNCH_TYPE"  # as nsys 2022.x spelt it
            table(enum_name, ENUM, rows)

    if since(g, Generation.V2022) or rec.invalid_utf8_env:
        _write_env(connection, rec, pretty)
    connection.execute("COMMIT")


def _write_events(connection: sqlite3.Connection, rec: Recording, name: str, pretty: bool) -> None:
    events = rec.tables[name]
    if not events.rows:
        return  # lazy export: no rows, no table
    layout = event_layout(name, rec.generation, extra_columns=rec.extra_columns)
    constants = {**CONSTANTS[name], "globalPid": rec.global_pid}
    wanted: list[str] = []
    values: list[str] = []
    for column in layout:
        if column[0] in events.fields:
            wanted.append(column[0])
            values.append("?")
        else:
            values.append(literal(constants.get(column[0])))
    connection.execute(create_sql(name, layout, pretty))
    # Constants go into the statement as literals so each row only binds what varies.
    connection.executemany(f"INSERT INTO {name} VALUES ({', '.join(values)})", events.records(wanted))


def _write_gpus(connection: sqlite3.Connection, rec: Recording, pretty: bool) -> None:
    rows: list[tuple[object, ...]] = []
    if rec.generation is Generation.V2020_3:
        for gpu in sorted(rec.gpus, key=lambda g: g.id):
            rows.append(
                (
                    gpu.id,
                    gpu.id,
                    gpu.name,
                    _gpu_uuid(gpu),
                    _bus(gpu),
                    gpu.total_memory_bytes,
                    gpu.memory_bandwidth_bytes_per_s,
                    gpu.l2_cache_bytes,
                    gpu.clock_rate_hz,
                    gpu.sm_count,
                    32,
                    64,
                    0,
                    gpu.compute[0],
                    gpu.compute[1],
                )
            )
        layout, name = TARGET_INFO_CUDA_GPU_LAYOUT, "TARGET_INFO_CUDA_GPU"
    else:
        for gpu in sorted(rec.gpus, key=lambda g: g.id):
            rows.append(
                (
                    GLOBAL_VID,
                    gpu.id,
                    gpu.name,
                    _bus(gpu),
                    1,
                    gpu.l2_cache_bytes,
                    gpu.total_memory_bytes,
                    gpu.memory_bandwidth_bytes_per_s,
                    gpu.clock_rate_hz,
                    gpu.sm_count,
                    gpu.id,
                    _gpu_uuid(gpu),
                    0,
                    gpu.chip_name,
                    gpu.id,
                    None,
                    None,
                    161,
                    0,
                    65536,
                    0,
                    65536,
                    49152,
                    232448,
                    233472,
                    65536,
                    32,
                    3,
                    64,
                    32,
                    1024,
                    1024,
                    1024,
                    64,
                    2147483647,
                    65535,
                    65535,
                    gpu.compute[0],
                    gpu.compute[1],
                    gpu.compute[0],
                    gpu.compute[1],
                )
            )
        layout, name = TARGET_INFO_GPU, "TARGET_INFO_GPU"
    connection.execute(create_sql(name, layout, pretty))
    connection.executemany(f"INSERT INTO {name} VALUES ({', '.join('?' * len(layout))})", rows)


def _write_meta(connection: sqlite3.Connection, rec: Recording, pretty: bool, stamp: str) -> None:
    g = rec.generation
    product, schema = META_VERSIONS[g]
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
    if rec.derived_window is not None:
        rows.append(("DERIVED_WINDOW_NS", f"{rec.derived_window[0]}-{rec.derived_window[1]}"))
    connection.execute(create_sql(name, META, pretty))
    connection.executemany(f"INSERT INTO {name} VALUES (?, ?)", rows)
    if g is Generation.V2022:
        return
    capture = [
        ("DEVICE_ID", "Local (CLI)"),
        ("CAPTURE_EVENT_TYPE", "NvtxEvents"),
        ("CAPTURE_EVENT_TYPE", "Cuda"),
    ]
    if since(g, Generation.V2026):
        mode = "Node" if rec.node_mode else "Graph"
        capture.append(("CUDA_GRAPH_TRACE_OPTIONS:MODE", mode))
    capture.append(("PROCESS_0:COMMAND", rec.process_name))
    connection.execute(create_sql("META_DATA_CAPTURE", META, pretty))
    connection.executemany("INSERT INTO META_DATA_CAPTURE VALUES (?, ?)", capture)


def _write_env(connection: sqlite3.Connection, rec: Recording, pretty: bool) -> None:
    modern = since(rec.generation, Generation.V2024)
    layout = SYSTEM_ENV_2024 if modern else SYSTEM_ENV_2022
    connection.execute(create_sql("TARGET_INFO_SYSTEM_ENV", layout, pretty))
    connection.executemany(
        "INSERT INTO TARGET_INFO_SYSTEM_ENV VALUES (?, 'Local (CLI)', ?, ?, ?)",
        [(GLOBAL_VID, name, enum, value) for name, enum, value in _ENV_ROWS],
    )
    if rec.invalid_utf8_env:
        # Bound str parameters must be valid UTF-8, so the bytes go in as a BLOB cast
        # to TEXT: storage class TEXT, payload not UTF-8, exactly as nsys leaves it.
        connection.execute(
            "INSERT INTO TARGET_INFO_SYSTEM_ENV VALUES "
            f"(?, 'Local (CLI)', 'DeviceEnvironment', 610, CAST(x'{_BAD_ENV_VALUE.hex()}'"
            " AS TEXT))",
            (GLOBAL_VID,),
        )


def _gpu_uuid(gpu: Gpu) -> str:
    if gpu.uuid is not None:
        return gpu.uuid
    digest = hashlib.sha256(f"{gpu.id}:{gpu.name}".encode()).hexdigest()
    return f"{digest[:8]}-{digest[8:12]}-{digest[12:16]}-{digest[16:20]}-{digest[20:32]}"


def _bus(gpu: Gpu) -> str:
    return f"0000:{(0x1B + 0x28 * gpu.id) % 0x100:02x}:00.0"


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
        connection.execute("UPDATE sqlite_master SET sql = replace(sql, ' NOT NULL', '') WHERE type = 'table'")
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
