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
from typer.testing import CliRunner

from nsysdiff.api import fingerprint_trace
from nsysdiff.cli import app, route
from nsysdiff.errors import ExitCode, TraceError
from nsysdiff.trace.builder import Generation, Gpu, TraceBuilder, tamper

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


def _cli(*args: object) -> tuple[int, str]:
    result = CliRunner().invoke(app, route([str(a) for a in args]))
    return result.exit_code, result.stderr


# --- types nsys never writes ------------------------------------------------------------

TYPE_CASES: dict[str, tuple[str, tuple[str, ...]]] = {
    "REAL start": (f"UPDATE {KERNEL} SET start = start + 0.5 WHERE rowid = 3", (KERNEL, "1 row(s)", "rowid 3")),
    "REAL end": (f'UPDATE {KERNEL} SET "end" = 1e300 WHERE rowid = 5', (KERNEL, "rowid 5")),
    "TEXT start": (f"UPDATE {KERNEL} SET start = 'soon' WHERE rowid > 10", (KERNEL, "30 row(s)", "rowid 11")),
    "TEXT deviceId": (f"UPDATE {KERNEL} SET deviceId = 'gpu0' WHERE rowid = 2", (KERNEL, "deviceId", "rowid 2")),
    "NULL start": (f"UPDATE {KERNEL} SET start = NULL WHERE rowid = 7", (KERNEL, "NULL", "rowid 7")),
    "NULL end": (f'UPDATE {KERNEL} SET "end" = NULL WHERE rowid = 8', (KERNEL, "rowid 8")),
    "TEXT name id": (f"UPDATE {KERNEL} SET demangledName = 'gemm' WHERE rowid = 4", (KERNEL, "demangledName")),
    "NULL copyKind": (f"UPDATE {MEMCPY} SET copyKind = NULL WHERE rowid = 9", (MEMCPY, "copyKind", "rowid 9")),
    "TEXT bytes": (f"UPDATE {MEMCPY} SET bytes = 'lots' WHERE rowid = 1", (MEMCPY, "bytes", "rowid 1")),
    "TEXT GPU id": ("UPDATE TARGET_INFO_GPU SET id = 'zero' WHERE id = 0", ("TARGET_INFO_GPU", "id")),
    "TEXT smCount": ("UPDATE TARGET_INFO_GPU SET smCount = 'many'", ("TARGET_INFO_GPU", "smCount", "2 row(s)")),
    "REAL smCount": ("UPDATE TARGET_INFO_GPU SET smCount = 131.5", ("TARGET_INFO_GPU", "smCount")),
    "TEXT startTime": ("UPDATE ANALYSIS_DETAILS SET startTime = 'noon'", ("ANALYSIS_DETAILS", "startTime")),
    "REAL NVTX start": (
        "UPDATE NVTX_EVENTS SET start = start + 0.25 WHERE eventType = 59",
        ("NVTX_EVENTS", "row(s)"),
    ),
    "TEXT runtime end": (
        'UPDATE CUPTI_ACTIVITY_KIND_RUNTIME SET "end" = \'later\' WHERE nameId = '
        "(SELECT id FROM StringIds WHERE value LIKE 'cudaStreamSynchronize%')",
        ("CUPTI_ACTIVITY_KIND_RUNTIME", "1 row(s)"),
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


SCOPED_CASES = {
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


@pytest.mark.parametrize("case", SCOPED_CASES, ids=list(SCOPED_CASES))
def test_scoped_reading_checks_too(tmp_path: Path, case: str) -> None:
    sql, options, table = SCOPED_CASES[case]
    path = tamper(_trace(tmp_path / "t.sqlite"), sql)
    code, err = _cli("summary", *options, path)
    assert code == int(ExitCode.BAD_INPUT), err
    assert err.count("\n") == 1 and table in err and "rowid" in err


# --- impossible times ----------------------------------------------------------------------


def test_end_before_start(tmp_path: Path) -> None:
    path = tamper(_trace(tmp_path / "t.sqlite"), f'UPDATE {KERNEL} SET "end" = start - 19000 WHERE rowid IN (6, 9)')
    message = _fails(path, KERNEL, "2 row(s)", "ending before they start", "first rowid 6")
    code, err = _cli("summary", path)
    assert (code, err) == (int(ExitCode.BAD_INPUT), f"nsysdiff: error: {message}\n")


def test_negative_start(tmp_path: Path) -> None:
    path = tamper(_trace(tmp_path / "t.sqlite"), f"UPDATE {KERNEL} SET start = -5, \"end\" = 10 WHERE rowid = 12")
    _fails(path, KERNEL, "negative", "rowid 12")


def test_memcpy_end_before_start(tmp_path: Path) -> None:
    path = tamper(_trace(tmp_path / "t.sqlite"), f'UPDATE {MEMCPY} SET "end" = start - 1 WHERE rowid = 4')
    _fails(path, MEMCPY, "1 row(s)", "rowid 4")


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
    code, err = _cli("summary", path)
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
