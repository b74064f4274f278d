"""Both sides of a diff read at once: the same results and errors as one after the other,
and a failing side stops the other's SQLite work instead of waiting for it."""

from __future__ import annotations

import signal
import sqlite3
import threading
import time
from pathlib import Path

import pytest
from conftest import run_cli

from nsysdiff.errors import ExitCode, TraceError
from nsysdiff.synth.builder import TraceBuilder
from nsysdiff.trace import schema, sides

# A query of ~10^9 steps: minutes when nothing stops it.
_LONG = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 1000000000) SELECT count(*) FROM c"


@pytest.fixture
def trace(tmp_path: Path) -> Path:
    b = TraceBuilder()
    b.launch("gemm", 0, 1_000, 1)
    return b.write(tmp_path / "t.sqlite")


def _long_read(path: Path) -> object:
    con = schema.connect(path)
    try:
        return con.execute(_LONG).fetchall()
    except schema.DB_ERRORS as e:
        raise schema.db_error(path, e) from None
    finally:
        con.close()


def _fail(message: str) -> object:
    raise TraceError(message)


def test_both_results_in_order_and_at_once() -> None:
    # Each side waits for the other to have started: only a concurrent read finishes.
    started = [threading.Event(), threading.Event()]

    def side(i: int) -> int:
        started[i].set()
        assert started[1 - i].wait(10), "the two sides were not read at once"
        return i

    assert sides.read_both(lambda: side(0), lambda: side(1)) == (0, 1)


def test_failing_base_stops_the_candidate(trace: Path) -> None:
    t = time.monotonic()
    with pytest.raises(TraceError, match=r"^bad base$"):
        sides.read_both(lambda: _fail("bad base"), lambda: _long_read(trace))
    assert time.monotonic() - t < 10


def test_failing_candidate_stops_the_base(trace: Path) -> None:
    t = time.monotonic()
    with pytest.raises(TraceError, match=r"^bad candidate$"):
        sides.read_both(lambda: _long_read(trace), lambda: _fail("bad candidate"))
    assert time.monotonic() - t < 10


def test_the_base_error_first_when_both_fail() -> None:
    with pytest.raises(TraceError, match=r"^bad base$"):
        sides.read_both(lambda: _fail("bad base"), lambda: _fail("bad candidate"))


@pytest.fixture
def python_sigint() -> object:
    """Python's own Ctrl-C handler, with SIGINT unblocked, as the command line runs: an
    earlier test in the same process (an event loop, a cluster client) may have left
    another handler or a blocked mask behind, and the Ctrl-C would then never reach the
    waiting thread as KeyboardInterrupt."""
    old = signal.signal(signal.SIGINT, signal.default_int_handler)
    mask = signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
    yield None
    signal.pthread_sigmask(signal.SIG_SETMASK, mask)
    signal.signal(signal.SIGINT, old)


def _interrupt_main_after(seconds: float, done: threading.Event) -> threading.Timer:
    main = threading.main_thread().ident
    assert main is not None

    def interrupt() -> None:
        signal.pthread_kill(main, signal.SIGINT)
        # Should the interrupt be lost, stop the reads after a while: the test then fails on
        # its result instead of hanging the suite.
        if not done.wait(10):
            schema.stop_reads()

    timer = threading.Timer(seconds, interrupt)
    timer.daemon = True
    timer.start()
    return timer


def test_ctrl_c_stops_both_reads_at_once(trace: Path, python_sigint: object) -> None:
    # Queries hold the thread that runs them until they return; the main thread only
    # waits, so the interrupt is seen at once and stops both.
    t = time.monotonic()
    done = threading.Event()
    _interrupt_main_after(0.3, done)
    try:
        with pytest.raises(KeyboardInterrupt):
            sides.read_both(lambda: _long_read(trace), lambda: _long_read(trace))
    finally:
        done.set()
    assert time.monotonic() - t < 10


def test_ctrl_c_stops_one_read_at_once(trace: Path, python_sigint: object) -> None:
    t = time.monotonic()
    done = threading.Event()
    _interrupt_main_after(0.3, done)
    try:
        with pytest.raises(KeyboardInterrupt):
            sides.read_one(lambda: _long_read(trace))
    finally:
        done.set()
    assert time.monotonic() - t < 10


def test_reads_run_again_after_a_stop(trace: Path) -> None:
    with pytest.raises(TraceError):
        sides.read_both(lambda: _fail("bad base"), lambda: _long_read(trace))
    con = schema.connect(trace)
    try:
        assert con.execute("SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL").fetchall() == [(1,)]
    finally:
        con.close()


def test_a_stopped_read_says_so_and_is_not_a_damaged_file(trace: Path) -> None:
    schema.stop_reads()
    try:
        with pytest.raises(schema.ReadStopped, match="read stopped"):
            _long_read(trace)
    finally:
        schema.resume_reads()


def _damaged_by_the_stop(path: Path) -> object:
    """A read that fails as SQLite does when an interrupt lands while it loads the schema:
    not with "interrupted" but "malformed database schema (?)"."""
    con = schema.connect(path)
    try:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                schema.check_stopped(str(path))
            except schema.ReadStopped:
                break
            time.sleep(0.005)
        raise sqlite3.DatabaseError("malformed database schema (?)")
    except schema.DB_ERRORS as e:
        raise schema.db_error(path, e) from None
    finally:
        con.close()


def test_any_error_after_the_stop_is_the_stop(trace: Path) -> None:
    # The damaged candidate's error is reported, not a pristine base read as corrupt.
    with pytest.raises(TraceError, match=r"^bad candidate$"):
        sides.read_both(lambda: _damaged_by_the_stop(trace), lambda: _fail("bad candidate"))


def test_diff_names_the_bad_side(tmp_path: Path, trace: Path) -> None:
    missing = tmp_path / "missing.sqlite"
    for args, named in (([str(trace), str(missing)], missing), ([str(missing), str(trace)], missing)):
        r = run_cli("diff", *args)
        assert r.exit_code == ExitCode.BAD_INPUT
        assert (r.stdout, r.stderr) == ("", f"nsysdiff: error: {named}: no such file\n")
    both = run_cli("diff", str(tmp_path / "a.sqlite"), str(tmp_path / "b.sqlite"))
    assert (both.stdout, both.stderr) == ("", f"nsysdiff: error: {tmp_path / 'a.sqlite'}: no such file\n")
