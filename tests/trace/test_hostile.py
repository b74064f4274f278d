"""Broken and crafted exports: one line and exit 2, never a traceback, never a wrong number.

Every file here is a builder trace changed through SQL by ``tamper`` (or cut, or
replaced by a FIFO), the way a damaged capture or a hostile job would hand it over.
"""

from __future__ import annotations

import os
import sqlite3
import threading
import time
from pathlib import Path

import pytest
from conftest import run_cli

from nsysdiff.api import fingerprint_trace
from nsysdiff.errors import ExitCode, TraceError
from nsysdiff.synth.builder import Generation, Gpu, TraceBuilder
from nsysdiff.synth.writer import tamper
from nsysdiff.trace import names, reader
from nsysdiff.trace.reader import open_trace

KERNEL = "CUPTI_ACTIVITY_KIND_KERNEL"
MEMCPY = "CUPTI_ACTIVITY_KIND_MEMCPY"


def _trace(path: Path, generation: Generation = Generation.V2024) -> Path:
    b = TraceBuilder(generation, gpus=(Gpu(0), Gpu(1)))
    for i in range(40):
        b.launch("gemm" if i % 2 else "elementwise", 10_000 * i, 10_000 * i + 3_000, 2_000 + i, device=i % 2)
        b.memcpy("HtoD", 10_000 * i + 7_000, 500, 4_096)
        b.nvtx_range(f"step {i % 5}", 10_000 * i, 10_000 * i + 9_000)
    b.runtime("cudaStreamSynchronize_v3020", 500_000, 501_000)
    return b.write(path)


def _fails(path: Path, *parts: str) -> str:
    """The one-line TraceError reading ``path`` gives; it names the file and ``parts``."""
    with pytest.raises(TraceError) as info:
        fingerprint_trace(path)
    message = str(info.value)
    assert "\n" not in message
    assert message.startswith(f"{path}: ")
    for part in parts:
        assert part in message
    return message


# --- types nsys never writes ------------------------------------------------------------

TYPE_CASES: dict[str, tuple[str, tuple[str, ...]]] = {
    "REAL start": (f"UPDATE {KERNEL} SET start = start + 0.5 WHERE rowid = 3", (KERNEL, "1 row", "rowid 3")),
    "REAL end": (f'UPDATE {KERNEL} SET "end" = 1e300 WHERE rowid = 5', (KERNEL, "rowid 5")),
    "TEXT start": (f"UPDATE {KERNEL} SET start = 'soon' WHERE rowid > 10", (KERNEL, "30 rows", "rowid 11")),
    "TEXT deviceId": (f"UPDATE {KERNEL} SET deviceId = 'gpu0' WHERE rowid = 2", (KERNEL, "deviceId", "rowid 2")),
    "NULL start": (f"UPDATE {KERNEL} SET start = NULL WHERE rowid = 7", (KERNEL, "NULL", "rowid 7")),
    "NULL end": (f'UPDATE {KERNEL} SET "end" = NULL WHERE rowid = 8', (KERNEL, "rowid 8")),
    "TEXT name id": (f"UPDATE {KERNEL} SET demangledName = 'gemm' WHERE rowid = 4", (KERNEL, "demangledName")),
    "NULL copyKind": (f"UPDATE {MEMCPY} SET copyKind = NULL WHERE rowid = 9", (MEMCPY, "copyKind", "rowid 9")),
    "TEXT bytes": (f"UPDATE {MEMCPY} SET bytes = 'lots' WHERE rowid = 1", (MEMCPY, "bytes", "rowid 1")),
    "TEXT GPU id": ("UPDATE TARGET_INFO_GPU SET id = 'zero' WHERE id = 0", ("TARGET_INFO_GPU", "id")),
    "TEXT smCount": ("UPDATE TARGET_INFO_GPU SET smCount = 'many'", ("TARGET_INFO_GPU", "smCount", "2 rows")),
    "REAL smCount": ("UPDATE TARGET_INFO_GPU SET smCount = 131.5", ("TARGET_INFO_GPU", "smCount")),
    "TEXT startTime": ("UPDATE ANALYSIS_DETAILS SET startTime = 'noon'", ("ANALYSIS_DETAILS", "startTime")),
    "REAL NVTX start": (
        "UPDATE NVTX_EVENTS SET start = start + 0.25 WHERE eventType = 59",
        ("NVTX_EVENTS", " row"),
    ),
    "TEXT runtime end": (
        "UPDATE CUPTI_ACTIVITY_KIND_RUNTIME SET \"end\" = 'later' WHERE nameId = "
        "(SELECT id FROM StringIds WHERE value LIKE 'cudaStreamSynchronize%')",
        ("CUPTI_ACTIVITY_KIND_RUNTIME", "1 row"),
    ),
}


@pytest.mark.parametrize("case", TYPE_CASES, ids=list(TYPE_CASES))
def test_wrong_types_are_an_error(tmp_path: Path, case: str) -> None:
    sql, parts = TYPE_CASES[case]
    path = tamper(_trace(tmp_path / "t.sqlite"), sql)
    _fails(path, *parts)


def test_text_in_a_launch_configuration(tmp_path: Path) -> None:
    path = tamper(_trace(tmp_path / "t.sqlite"), f"UPDATE {KERNEL} SET gridX = 'wide' WHERE rowid = 1")
    _fails(path, KERNEL, "launch configuration", "'wide'")


def test_null_name_ids_are_named_not_crashed(tmp_path: Path) -> None:
    # nsys declares the name ids NOT NULL, but a missing name is not a number: the kernel
    # keeps its time under a placeholder name rather than failing the whole trace.
    path = tamper(_trace(tmp_path / "t.sqlite"), f"UPDATE {KERNEL} SET demangledName = NULL WHERE rowid = 1")
    fp = fingerprint_trace(path)
    assert fp.kernel_calls == 40
    assert any(k.demangled == "<string -1>" and k.calls == 1 for k in fp.kernels)


SCOPED_CLI_CASES = {
    "window, every start TEXT": (f"UPDATE {KERNEL} SET start = 'soon'", ["--window", "0:1ms"], KERNEL),
    "nvtx, REAL runtime thread": (
        "UPDATE CUPTI_ACTIVITY_KIND_RUNTIME SET globalTid = 1.5 WHERE rowid = 3",
        ["--nvtx", "step.*"],
        "CUPTI_ACTIVITY_KIND_RUNTIME",
    ),
    "per, NVTX end before start": (
        'UPDATE NVTX_EVENTS SET "end" = start - 1 WHERE rowid = 2',  # a push/pop range
        ["--per", "step.*"],
        "NVTX_EVENTS",
    ),
}


@pytest.mark.parametrize("case", SCOPED_CLI_CASES, ids=list(SCOPED_CLI_CASES))
def test_scoped_reading_checks_too(tmp_path: Path, case: str) -> None:
    sql, options, table = SCOPED_CLI_CASES[case]
    path = tamper(_trace(tmp_path / "t.sqlite"), sql)
    code, _, err = run_cli("summary", *options, path)
    assert code == int(ExitCode.BAD_INPUT), err
    assert err.count("\n") == 1 and table in err and "rowid" in err


# --- impossible times ----------------------------------------------------------------------


def test_end_before_start(tmp_path: Path) -> None:
    path = tamper(_trace(tmp_path / "t.sqlite"), f'UPDATE {KERNEL} SET "end" = start - 19000 WHERE rowid IN (6, 9)')
    message = _fails(path, KERNEL, "2 rows", "ending before they start", "first rowid 6")
    code, _, err = run_cli("summary", path)
    assert (code, err) == (int(ExitCode.BAD_INPUT), f"nsysdiff: error: {message}\n")


def test_negative_start(tmp_path: Path) -> None:
    path = tamper(_trace(tmp_path / "t.sqlite"), f'UPDATE {KERNEL} SET start = -5, "end" = 10 WHERE rowid = 12')
    _fails(path, KERNEL, "negative", "rowid 12")


def test_memcpy_end_before_start(tmp_path: Path) -> None:
    path = tamper(_trace(tmp_path / "t.sqlite"), f'UPDATE {MEMCPY} SET "end" = start - 1 WHERE rowid = 4')
    _fails(path, MEMCPY, "1 row", "rowid 4")


def test_negative_bytes(tmp_path: Path) -> None:
    path = tamper(_trace(tmp_path / "t.sqlite"), f"UPDATE {MEMCPY} SET bytes = -4096 WHERE rowid = 2")
    _fails(path, MEMCPY, "size", "rowid 2")


def test_durations_overflowing_int64(tmp_path: Path) -> None:
    big = (1 << 63) - 1
    path = tamper(
        _trace(tmp_path / "t.sqlite"),
        f'UPDATE {KERNEL} SET start = 0, "end" = {big} WHERE rowid IN (1, 3)',
    )
    _fails(path, KERNEL, "int64")


def test_memcpy_durations_overflowing_int64(tmp_path: Path) -> None:
    big = (1 << 63) - 1
    path = tamper(_trace(tmp_path / "t.sqlite"), f'UPDATE {MEMCPY} SET start = 0, "end" = {big} WHERE rowid IN (1, 2)')
    _fails(path, "int64")


# Their exact sum is 2^63 + 382; in float64 it rounds to 2^63 - 1024, below int64's end.
PAST_INT64 = (4063837255408061183, 3304731420277958912, 1854803361168756095)


@pytest.mark.parametrize("table", ["CUPTI_ACTIVITY_KIND_RUNTIME", KERNEL])
def test_a_sum_past_int64_that_float64_rounds_below_it(tmp_path: Path, table: str) -> None:
    b = TraceBuilder()
    for dur in PAST_INT64:
        if table == KERNEL:
            b.kernel("gemm", 1_000, dur)
        else:
            b.runtime("cudaFree_v3020", 1_000, dur)
    path = b.write(tmp_path / "t.sqlite")
    assert sum(PAST_INT64) == (1 << 63) + 382 and float(sum(float(d) for d in PAST_INT64)) < 2**63
    _fails(path, table, "int64")
    saved = tmp_path / "t.json"
    code, out, err = run_cli("fingerprint", path, "-o", saved)
    assert (code, out) == (2, "") and len(err.splitlines()) == 1 and "int64" in err, err
    assert not saved.exists()


@pytest.mark.parametrize(
    ("table", "column"),
    [("CUPTI_ACTIVITY_KIND_RUNTIME", "nameId"), (KERNEL, "demangledName")],
)
def test_a_blob_name_id_is_refused_not_read_as_its_digits(tmp_path: Path, table: str, column: str) -> None:
    # x'3132' spells "12" in group_concat's text: it must not count under id 12.
    path = tamper(_trace(tmp_path / "t.sqlite"), f"UPDATE {table} SET {column} = x'3132' WHERE rowid = 1")
    _fails(path, table, column, "rowid 1")


@pytest.mark.parametrize("rows", ["rowid IN (1, 6)", "rowid IN (1, 2)"], ids=["one name", "two names"])
def test_nvtx_durations_overflowing_int64(tmp_path: Path, rows: str) -> None:
    # The NVTX summary sums integers in its keyed table (no float per row): a sum past
    # int64 turns REAL there, within a name or across names, and is refused.
    big = (1 << 63) - 1
    path = tamper(_trace(tmp_path / "t.sqlite"), f'UPDATE NVTX_EVENTS SET start = 0, "end" = {big} WHERE {rows}')
    _fails(path, "NVTX_EVENTS", "int64")


def test_impossible_capture_window(tmp_path: Path) -> None:
    path = tamper(_trace(tmp_path / "t.sqlite"), "UPDATE ANALYSIS_DETAILS SET stopTime = startTime - 1")
    _fails(path, "ANALYSIS_DETAILS", "impossible")


def test_graph_trace_end_before_start(tmp_path: Path) -> None:
    b = TraceBuilder(Generation.V2024)
    b.graph_launch(1_000, 500)
    b.graph_launch(3_000, 500)
    sql = 'UPDATE CUPTI_ACTIVITY_KIND_GRAPH_TRACE SET "end" = 0 WHERE rowid = 2'
    path = tamper(b.write(tmp_path / "g.sqlite"), sql)
    _fails(path, "CUPTI_ACTIVITY_KIND_GRAPH_TRACE", "rowid 2")


# --- damaged files ------------------------------------------------------------------------


@pytest.mark.parametrize("cut", [100, 4096, 10_000])
def test_cut_trace_is_an_error(tmp_path: Path, cut: int) -> None:
    data = _trace(tmp_path / "t.sqlite").read_bytes()
    path = tmp_path / "cut.sqlite"
    path.write_bytes(data[:-cut])
    _fails(path, "truncated")


def test_cut_header(tmp_path: Path) -> None:
    path = tmp_path / "cut.sqlite"
    path.write_bytes(_trace(tmp_path / "t.sqlite").read_bytes()[:60])
    _fails(path, "truncated")


def test_corrupt_page_met_while_reading(tmp_path: Path) -> None:
    good = _trace(tmp_path / "t.sqlite")
    con = sqlite3.connect(f"file:{good}?mode=ro", uri=True)
    (root,) = con.execute("SELECT rootpage FROM sqlite_master WHERE name = ?", (MEMCPY,)).fetchone()
    con.close()
    data = bytearray(good.read_bytes())
    data[(root - 1) * 4096 : root * 4096] = bytes(4096)
    path = tmp_path / "zeroed.sqlite"
    path.write_bytes(bytes(data))
    _fails(path, "corrupt or unreadable")


def test_undecodable_sqlite_error_text(tmp_path: Path) -> None:
    # A damaged schema puts the file's bytes into SQLite's error text, which Python
    # decodes as strict UTF-8 (a fuzzer found this with one overwritten byte).
    path = _trace(tmp_path / "t.sqlite")
    con = sqlite3.connect(path, isolation_level=None)
    con.execute("PRAGMA writable_schema=ON")
    con.execute(
        "UPDATE sqlite_master SET sql = 'CREATE TABLE x (a', name = CAST(x'53749574' AS TEXT) WHERE name = 'StringIds'"
    )
    con.close()
    _fails(path, "corrupt or unreadable", "St\ufffdt")


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this platform")
def test_fifo_is_refused_without_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "trace.sqlite"
    os.mkfifo(fifo)
    outcome: list[str] = []
    worker = threading.Thread(target=lambda: outcome.append(_fails(fifo, "not a regular file")), daemon=True)
    worker.start()
    worker.join(10)
    if worker.is_alive():  # unblock the reader so the test process can exit
        with open(fifo, "wb"):
            pass
        pytest.fail("reading a FIFO blocked")
    assert outcome


def test_table_names_are_never_spliced_into_sql(tmp_path: Path) -> None:
    path = tamper(
        _trace(tmp_path / "t.sqlite"),
        'CREATE TABLE "x"")); DROP TABLE StringIds; --" (a INTEGER)',
        "CREATE TABLE [odd ' name] (b INTEGER)",
    )
    fp = fingerprint_trace(path)
    assert fp.kernel_calls == 40


def test_error_text_with_a_newline_stays_one_line(tmp_path: Path) -> None:
    path = tmp_path / "two\nlines.sqlite"
    code, _, err = run_cli("summary", path)
    assert code == int(ExitCode.BAD_INPUT)
    assert err.count("\n") == 1 and "Traceback" not in err


def test_a_refused_file_is_left_alone(tmp_path: Path) -> None:
    path = tamper(_trace(tmp_path / "t.sqlite"), f'UPDATE {KERNEL} SET "end" = 0')
    before = path.read_bytes()
    _fails(path, KERNEL)
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["t.sqlite"]


# --- hostile names -------------------------------------------------------------------------


def test_ten_megabyte_names_are_cut_and_stay_distinct(tmp_path: Path) -> None:
    # Unbounded, each regex of the taxonomy took half a second per name (a fuzz hang).
    b = TraceBuilder()
    b.kernel("A" * 10_000_000 + "x", 0, 100)
    b.kernel("A" * 10_000_000 + "y", 200, 100)
    b.nvtx_range("N" * 10_000_000, 0, 500)
    fp = fingerprint_trace(b.write(tmp_path / "big.sqlite"))
    names = sorted(k.demangled for k in fp.kernels)
    assert len(names) == 2 and names[0] != names[1]
    assert all(len(n) < 70_000 and "more characters cut; sha256" in n for n in names)
    assert len(fp.nvtx[0].name) < 70_000


def test_a_huge_registered_nvtx_string_is_read_once(tmp_path: Path) -> None:
    # Joined per row, a 10 MB registered string used by a thousand ranges was copied and
    # folded a thousand times (a fuzz hang, 14 s per trace); it is now looked up once.
    b = TraceBuilder()
    huge = "N" * 10_000_000 + ", seq = 1"
    for i in range(1_000):
        b.nvtx_range(huge, 10 * i, 10 * i + 5, registered=True)
    path = b.write(tmp_path / "nvtx.sqlite")
    started = time.monotonic()
    fp = fingerprint_trace(path)
    assert time.monotonic() - started < 5.0
    ((row),) = fp.nvtx
    assert (row.count, row.total_ns) == (1_000, 5_000)
    assert row.name.startswith("NNNN") and "more characters cut" in row.name


def _long_ranges(path: Path) -> tuple[Path, dict[str, tuple[int, int]]]:
    """Ranges with explicit texts past NAME_LIMIT beside ordinary ones, and the
    (count, total ns) each folded and cut name must get, worked out by hand."""
    b = TraceBuilder()
    b.launch("gemm", 0, 1_000, 900)
    plain, tail = "A" * 200_000, "B" * 100_000
    texts = [
        (plain + "x", 10),  # two names that differ past the limit stay two names
        (plain + "y", 20),
        (tail + ", seq = 7, op_id = 1", 30),  # a suffix past the limit: folded, then cut
        (tail + ", op_id = 2", 40),
        ("aten::mm, seq = 3" + "C" * 100_000, 50),  # a suffix before: the short name
        ("aten::mm, seq = 4", 60),
        ("é" * 40_000, 70),  # more bytes than the limit, fewer characters: kept whole
        ("é" * 70_000, 80),  # more characters: cut
    ]
    for i, (text, dur) in enumerate(texts):
        b.nvtx_range(text, 1_000 * i, 1_000 * i + dur)
    want = {
        names.name_text(plain + "x"): (1, 10),
        names.name_text(plain + "y"): (1, 20),
        names.name_text(tail): (2, 70),
        "aten::mm": (2, 110),
        "é" * 40_000: (1, 70),
        names.name_text("é" * 70_000): (1, 80),
    }
    return b.write(path), want


def _watched(r: reader.TraceReader) -> tuple[list[int], list[int]]:
    """Route the reader's connection's ``instr`` and long-name calls through counters:
    (haystack length of every instr call, byte length of every long-name call)."""
    searched: list[int] = []
    handed: list[int] = []

    def instr(hay: object, needle: object) -> int:
        text = str(hay)
        searched.append(len(text))
        return text.find(str(needle)) + 1

    def long_name(raw: bytes) -> str:
        handed.append(len(raw))
        return names.long_name(raw)

    r.con.create_function("instr", 2, instr)
    r.con.create_function(names.LONG_NAME, 1, long_name)
    return searched, handed


def test_long_range_texts_are_read_once_per_range(tmp_path: Path) -> None:
    # Fuzz seed 1, case 508: every NVTX range of a trace carried a 10 MB text, and the SQL
    # fold read it six times and searched it five times per range, then stored it whole
    # in the keyed table (44 s, over the fuzzer's 30 s, for a 6.4 GB file).
    path, want = _long_ranges(tmp_path / "long.sqlite")
    with open_trace(path) as r:
        searched, handed = _watched(r)
        rows = r.nvtx_summary()
    assert {x.name: (x.count, x.total_ns) for x in rows} == want
    assert max(searched) <= names.NAME_LIMIT  # the SQL fold never meets a long text
    assert len(handed) == 7  # every long range handed over once, the short ones never


def test_scoped_reading_of_long_range_texts(tmp_path: Path) -> None:
    path, want = _long_ranges(tmp_path / "long.sqlite")
    with open_trace(path) as r:
        searched, handed = _watched(r)
        keys = r.nvtx_keys()
        assert {k.sql_name: k.count for k in keys} == {n: c for n, (c, _) in want.items()}
        r.load_ranges([(k, i) for i, k in enumerate(keys)])
        ((copied,),) = r.con.execute("SELECT count(*) FROM temp.nsysdiff_r").fetchall()
    assert copied == 8  # every range found its key again
    assert max(searched) <= names.NAME_LIMIT
    assert len(handed) == 2 * 7


@pytest.mark.parametrize(
    "text",
    [
        "",
        "aten::mm",
        "aten::mm, seq = 1, op_id = 2",
        ", seq = 1",
        "a, b, c",
        "x, op_id = 5",
        "x, sizes = [[1]], seq = 2",
        "x, stashed seq = 3",
        "x, input_op_ids = [1]",
        "é, seq = 1, op_id = 2",
        "multi\nline, op_id = 3",
        "no comma space,seq = 1",
        "a, seq = 1" * 3,
        # The first ", " starts no suffix, or a later suffix comes first in the list.
        "a, b, seq = 1",
        "x, op_id = 1, seq = 2",
        "x, sizes = [], op_id = 1",
        "x, ",
        "x, se",
        "x, seq =",
        "x, seq = 1, seq = 2",
        "a, b",
        ", ",
        "x,, seq = 1",
    ],
)
def test_long_name_fold_is_the_sql_fold(text: str) -> None:
    # A name takes one of two ways by its length; both must give the same key.
    con = sqlite3.connect(":memory:")
    ((folded,),) = con.execute(f"SELECT {names.fold_sql('?1')}", (text,)).fetchall()
    assert names.long_name(text.encode()) == folded


def test_blob_names_are_text(tmp_path: Path) -> None:
    sql = "UPDATE StringIds SET value = ? WHERE value = 'gemm'"
    path = tamper(_trace(tmp_path / "t.sqlite"), sql, params=(b"gemm\xff",))
    assert "gemm\ufffd" in {k.name for k in fingerprint_trace(path).kernels}


# --- the tamper hook itself ---------------------------------------------------------------


def test_tamper_lifts_not_null(tmp_path: Path) -> None:
    path = tamper(_trace(tmp_path / "t.sqlite"), f"UPDATE {KERNEL} SET start = NULL WHERE rowid = 1")
    con = sqlite3.connect(path)
    assert con.execute(f"SELECT count(*) FROM {KERNEL} WHERE start IS NULL").fetchone() == (1,)
    assert con.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    con.close()


# --- scoped reads check the rows they order ---------------------------------------------

RUNTIME = "CUPTI_ACTIVITY_KIND_RUNTIME"
SCOPED_CASES: dict[str, tuple[str, tuple[str, ...]]] = {
    "NVTX end before start": ('UPDATE NVTX_EVENTS SET "end" = start - 1 WHERE rowid = 4', ("NVTX_EVENTS", "rowid 4")),
    "NVTX TEXT start": ("UPDATE NVTX_EVENTS SET start = 'x' WHERE rowid = 6", ("NVTX_EVENTS", "rowid 6")),
    "runtime TEXT thread": (f"UPDATE {RUNTIME} SET globalTid = 'main' WHERE rowid = 3", (RUNTIME, "rowid 3")),
    "runtime REAL end": (f'UPDATE {RUNTIME} SET "end" = 1.5 WHERE rowid = 5', (RUNTIME, "rowid 5")),
}


# --per alone reads no runtime call (it only counts ranges), so it meets only the NVTX rows.
SCOPED_RUNS = [
    (case, scope)
    for case in SCOPED_CASES
    for scope in (("--nvtx", "step 1"), ("--per", "step .*"), ("--phases", "PHASES"))
    if not (scope[0] == "--per" and case.startswith("runtime"))
]


@pytest.mark.parametrize(("case", "scope"), SCOPED_RUNS, ids=[f"{c} {s[0]}" for c, s in SCOPED_RUNS])
def test_scoped_reads_refuse_impossible_rows(tmp_path: Path, case: str, scope: tuple[str, str]) -> None:
    sql, parts = SCOPED_CASES[case]
    path = tamper(_trace(tmp_path / "t.sqlite"), sql)
    option, value = scope
    if value == "PHASES":
        value = str(tmp_path / "phases.yaml")
        Path(value).write_text("phases:\n  one: step 1\n", encoding="utf-8")
    code, _, err = run_cli("summary", path, option, value)
    assert code == int(ExitCode.BAD_INPUT), err
    assert err.startswith(f"nsysdiff: error: {path}: ") and err.count("\n") == 1
    for part in parts:
        assert part in err


def test_a_null_graph_id_is_an_error_not_a_crash(tmp_path: Path) -> None:
    # Found by the fuzzer (page swaps in graph-mode traces): graph launches were summed
    # per graphId with int() on whatever the column held.
    b = TraceBuilder(Generation.V2024)
    b.graph_launch(100, 40_000)
    b.graph_launch(50_000, 30_000, graph_id=2)
    sql = "UPDATE CUPTI_ACTIVITY_KIND_GRAPH_TRACE SET graphId = NULL WHERE rowid = 2"
    path = tamper(b.write(tmp_path / "g.sqlite"), sql)
    _fails(path, "CUPTI_ACTIVITY_KIND_GRAPH_TRACE", "graphId", "rowid 2")


def test_a_damaged_runtime_table_is_one_line_not_a_crash(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The host API census scans the runtime table on the raw connection: SQLite's own error
    # (a zeroed page, or a read stopped by the other side) is the reader's one-line exit 2.
    from nsysdiff.synth.builder import TraceBuilder
    from nsysdiff.trace import api_scan

    b = TraceBuilder()
    b.launch("gemm", 1_000, 2_000, 500)
    trace = b.write(tmp_path / "t.sqlite")

    def damaged(*_: object) -> object:
        raise sqlite3.DatabaseError("database disk image is malformed")

    monkeypatch.setattr(api_scan, "scan", damaged)
    code, out, err = run_cli("summary", trace)
    assert (code, out) == (int(ExitCode.BAD_INPUT), "")
    assert err == f"nsysdiff: error: {trace}: corrupt or unreadable SQLite export (database disk image is malformed)\n"


# --- memory before a refusal ---------------------------------------------------------------

_PEAK = (
    "import resource, subprocess, sys; "
    "subprocess.run([sys.executable, '-m', 'nsysdiff', *sys.argv[1:]], capture_output=True); "
    "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)"
)


def _peak_kib(*args: str | Path) -> int:
    """The peak RSS of ``nsysdiff ARGS`` in a process of its own, in KiB."""
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-c", _PEAK, *map(str, args)], capture_output=True, text=True, check=True)
    return int(out.stdout)


@pytest.mark.parametrize(
    ("table", "column", "extra"),
    [
        (KERNEL, "deviceId", ()),
        ("CUPTI_ACTIVITY_KIND_RUNTIME", "nameId", ()),
        (KERNEL, "shortName", ("--per", "auto")),
    ],
)
def test_long_text_in_an_integer_column_is_refused_without_reading_it_whole(
    tmp_path: Path, table: str, column: str, extra: tuple[str, ...]
) -> None:
    # 3 MiB of text in every row's integer column: refused before the chunked passes
    # concatenate it (they held several copies of it at once: 5 times the text in RSS).
    # What the text may still cost is SQLite's page cache (32 MiB a connection, two).
    plain = _trace(tmp_path / "plain.sqlite")
    path = tamper(_trace(tmp_path / "t.sqlite"), f"UPDATE {table} SET {column} = printf('%.*c', 3 << 20, 'x')")
    ((rows,),) = sqlite3.connect(path).execute(f"SELECT count(*) FROM {table}").fetchall()
    grown = _peak_kib("summary", path, *extra) - _peak_kib("summary", plain, *extra)
    text = rows * 3 << 10
    assert grown < text, f"{grown:,} KiB more for {text:,} KiB of text"
    code, out, err = run_cli("summary", path, *extra)
    assert (code, out) == (2, "") and len(err.splitlines()) == 1 and table in err, err
