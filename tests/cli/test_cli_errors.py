"""Bad input gets one clear line on stderr, naming the file, and exit 2; never a traceback.

A few cases run the real process (``python -m nsysdiff``), the rest the console script's
entry point in this process.
Also: the exit codes of Ctrl-C (130) and of a bug (70), ``--version``, and the summary
JSON of every real trace when ../shared is there.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import real_traces, run_cli, run_process

import nsysdiff
from nsysdiff import api
from nsysdiff.api import fingerprint_trace
from nsysdiff.errors import ExitCode
from nsysdiff.fingerprint.model import fingerprint_to_json
from nsysdiff.synth.builder import Generation, TraceBuilder

BAD_INPUT = int(ExitCode.BAD_INPUT)


# --- inputs -------------------------------------------------------------------------


def _trace(path: Path, kernels: int = 2_000) -> Path:
    b = TraceBuilder(Generation.V2024)
    for i in range(kernels):
        b.launch("gemm" if i % 2 else "elementwise", 10_000 * i, 10_000 * i + 3_000, 2_000 + i % 50)
    for i in range(200):
        b.memcpy("HtoD", 10_000 * i + 7_000, 500, 4_096)
        b.nvtx_range(f"step {i % 5}", 10_000 * i, 10_000 * i + 9_000)
    return b.write(path)


@pytest.fixture(scope="module")
def good(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _trace(tmp_path_factory.mktemp("good") / "good.sqlite")


@pytest.fixture
def truncated(tmp_path: Path, good: Path) -> Path:
    data = good.read_bytes()
    assert len(data) > 100_000  # several pages of every table, so half loses real data
    path = tmp_path / "truncated.sqlite"
    path.write_bytes(data[: len(data) // 2])
    return path


@pytest.fixture
def corrupt_kernel_page(tmp_path: Path, good: Path) -> Path:
    """Size and schema intact, the kernel table's root page garbage: fails past the probe."""
    import sqlite3

    con = sqlite3.connect(f"file:{good}?mode=ro", uri=True)
    (root,) = con.execute("SELECT rootpage FROM sqlite_master WHERE name = 'CUPTI_ACTIVITY_KIND_KERNEL'").fetchone()
    (size,) = con.execute("PRAGMA page_size").fetchone()
    con.close()
    data = bytearray(good.read_bytes())
    data[(root - 1) * size : root * size] = b"\xa5" * size
    path = tmp_path / "corrupt.sqlite"
    path.write_bytes(bytes(data))
    return path


def _not_nsys(path: Path) -> Path:
    import sqlite3

    con = sqlite3.connect(path)
    con.execute("CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT)")
    con.execute("INSERT INTO users VALUES (1, 'ada')")
    con.commit()
    con.close()
    return path


def _nvtx_only(path: Path) -> Path:
    b = TraceBuilder(Generation.V2022)
    b.nvtx_range("forward", 0, 5_000)
    b.nvtx_range("backward", 6_000, 16_000)
    return b.write(path)


def _fingerprint_json(path: Path, good: Path, **changes: object) -> Path:
    doc = json.loads(fingerprint_to_json(fingerprint_trace(good)))
    doc.update(changes)
    path.write_text(json.dumps(doc), encoding="utf-8")
    return path


# --- assertions ---------------------------------------------------------------------


def assert_one_line_error(stderr: str, path: Path, *words: str) -> None:
    lines = stderr.splitlines()
    assert len(lines) == 1, stderr
    assert "Traceback" not in stderr
    assert lines[0].startswith("nsysdiff: error: ")
    assert str(path) in lines[0] or path.name in lines[0], lines[0]
    for w in words:
        assert w in lines[0], lines[0]


# --- real process -------------------------------------------------------------------


def test_process_missing_file(tmp_path: Path) -> None:
    missing = tmp_path / "nope.sqlite"
    p = run_process("summary", missing)
    assert p.exit_code == BAD_INPUT
    assert p.stdout == ""
    assert_one_line_error(p.stderr, missing, "no such file")


def test_process_text_file(tmp_path: Path) -> None:
    text = tmp_path / "notes.sqlite"
    text.write_text("these are not the bytes you are looking for\n", encoding="utf-8")
    p = run_process("summary", "--format", "json", text)
    assert p.exit_code == BAD_INPUT
    assert_one_line_error(p.stderr, text, "not an SQLite database")


def test_process_truncated(truncated: Path) -> None:
    p = run_process("summary", truncated)
    assert p.exit_code == BAD_INPUT
    assert p.stdout == ""
    assert_one_line_error(p.stderr, truncated, "corrupt")


def test_process_default_command_routes_to_diff(tmp_path: Path, good: Path) -> None:
    missing = tmp_path / "candidate.sqlite"
    p = run_process(good, missing, "--no-rules")
    assert p.exit_code == BAD_INPUT
    assert_one_line_error(p.stderr, missing, "no such file")


def test_process_version() -> None:
    p = run_process("--version")
    assert p.exit_code == 0
    assert p.stdout.strip() == f"nsysdiff {nsysdiff.__version__} (fingerprint format 2)"


# --- in this process ----------------------------------------------------------------


def test_directory(tmp_path: Path) -> None:
    code, out, err = run_cli("summary", tmp_path)
    assert (code, out) == (BAD_INPUT, "")
    assert_one_line_error(err, tmp_path, "directory")


def test_empty_file(tmp_path: Path) -> None:
    empty = tmp_path / "empty.sqlite"
    empty.touch()
    code, out, err = run_cli("summary", empty)
    assert (code, out) == (BAD_INPUT, "")
    assert_one_line_error(err, empty, "empty")


def test_text_file(tmp_path: Path) -> None:
    text = tmp_path / "report.txt"
    text.write_text("Time (%)  Total Time (ns)  Instances  Name\n", encoding="utf-8")
    code, _, err = run_cli("fingerprint", text)
    assert code == BAD_INPUT
    assert_one_line_error(err, text, "not an SQLite database")


def test_nsys_rep_gets_an_export_hint(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "no-nsys-here"))
    rep = tmp_path / "profile.nsys-rep"
    rep.write_bytes(b"\x00\x01NSYS report container" * 10)
    code, _, err = run_cli("summary", rep)
    assert code == BAD_INPUT
    assert_one_line_error(err, rep, f"nsys export --type sqlite --output {tmp_path / 'profile.sqlite'} {rep}")


@pytest.mark.parametrize("command", ["summary", "fingerprint"])
def test_truncated_sqlite(truncated: Path, command: str) -> None:
    code, out, err = run_cli(command, truncated)
    assert (code, out) == (BAD_INPUT, "")
    assert_one_line_error(err, truncated, "corrupt")


def test_corrupt_page_past_the_probe(corrupt_kernel_page: Path) -> None:
    code, out, err = run_cli("summary", "--format", "json", corrupt_kernel_page)
    assert (code, out) == (BAD_INPUT, "")
    assert_one_line_error(err, corrupt_kernel_page, "corrupt")


def test_sqlite_but_not_nsys(tmp_path: Path) -> None:
    db = _not_nsys(tmp_path / "app.sqlite")
    code, _, err = run_cli("summary", db)
    assert code == BAD_INPUT
    assert_one_line_error(err, db, "not an Nsight Systems export")


def test_diff_names_the_bad_side(tmp_path: Path, good: Path) -> None:
    db = _not_nsys(tmp_path / "app.sqlite")
    code, out, err = run_cli(good, db, "--no-rules")
    assert (code, out) == (BAD_INPUT, "")
    assert_one_line_error(err, db, "not an Nsight Systems export")


def test_malformed_fingerprint_json(tmp_path: Path) -> None:
    bad = tmp_path / "base.json"
    bad.write_text('{"format": "nsysdiff-fingerprint", "version": 1, "kernels": [', encoding="utf-8")
    code, _, err = run_cli("summary", bad)
    assert code == BAD_INPUT
    assert_one_line_error(err, bad, "not valid JSON")


def test_fingerprint_with_wrong_shape(tmp_path: Path, good: Path) -> None:
    bad = _fingerprint_json(tmp_path / "shape.json", good, kernels="not a list")
    code, _, err = run_cli("summary", bad)
    assert code == BAD_INPUT
    assert_one_line_error(err, bad, "malformed fingerprint")


def test_json_that_is_not_a_fingerprint(tmp_path: Path) -> None:
    other = tmp_path / "package.json"
    other.write_text('{"name": "left-pad"}', encoding="utf-8")
    code, _, err = run_cli("summary", other)
    assert code == BAD_INPUT
    assert_one_line_error(err, other, "not an nsysdiff fingerprint")


def test_unsupported_fingerprint_version(tmp_path: Path, good: Path) -> None:
    future = _fingerprint_json(tmp_path / "future.json", good, version=999)
    code, _, err = run_cli("summary", future)
    assert code == BAD_INPUT
    assert_one_line_error(err, future, "version 999 is not supported")
    code, _, err = run_cli(future, good, "--no-rules")
    assert code == BAD_INPUT
    assert_one_line_error(err, future, "version 999 is not supported")


def test_missing_fingerprint_file(tmp_path: Path) -> None:
    gone = tmp_path / "baseline.json"
    code, _, err = run_cli("summary", gone)
    assert code == BAD_INPUT
    assert_one_line_error(err, gone, "no such file")


def test_nvtx_only_export_summarises(tmp_path: Path) -> None:
    path = _nvtx_only(tmp_path / "nvtx.sqlite")
    code, out, err = run_cli("summary", path)
    assert (code, err) == (0, "")
    assert "kernel data is absent" in out
    assert "forward" in out and "backward" in out
    code, out, err = run_cli("summary", "--format", "json", path)
    assert (code, err) == (0, "")
    data = json.loads(out)
    assert data["meta"]["has_kernels"] is False
    assert data["kernels"] == []
    assert {r["name"] for r in data["nvtx"]} == {"forward", "backward"}


def test_version() -> None:
    code, out, _ = run_cli("--version")
    assert code == 0
    assert out.strip() == f"nsysdiff {nsysdiff.__version__} (fingerprint format 2)"


def test_usage_error_is_exit_2(good: Path) -> None:
    code, _, err = run_cli("summary", good, "--format", "yaml")
    assert code == BAD_INPUT
    assert "Traceback" not in err


# --- Ctrl-C and bugs ----------------------------------------------------------------


def _reading_raises(monkeypatch: pytest.MonkeyPatch, exc: BaseException) -> None:
    def load(*_: object, **__: object) -> None:
        raise exc

    monkeypatch.setattr(api, "load", load)


def test_ctrl_c_exits_130(monkeypatch: pytest.MonkeyPatch, good: Path) -> None:
    _reading_raises(monkeypatch, KeyboardInterrupt())
    code, _, err = run_cli("summary", good)
    assert code == 130
    assert "Traceback" not in err


def test_bug_exits_70(monkeypatch: pytest.MonkeyPatch, good: Path) -> None:
    _reading_raises(monkeypatch, RuntimeError("boom"))
    code, _, err = run_cli("summary", good)
    assert code == int(ExitCode.INTERNAL)
    assert "internal error" in err
    assert "boom" in err  # the traceback is there for the bug report


@pytest.mark.parametrize(
    "argv",
    [["summary", "--bogus"], ["summary"], ["summary", "x.sqlite", "--format", "yaml"]],
    ids=["unknown-option", "missing-argument", "bad-choice"],
)
def test_usage_error_through_main_is_exit_2(argv: list[str]) -> None:
    """A usage error is the user's, never a bug."""
    code, _, err = run_cli(*argv)
    assert code == BAD_INPUT, err
    assert "Traceback" not in err
    assert "internal error" not in err


def test_bad_input_through_main(tmp_path: Path) -> None:
    missing = tmp_path / "missing.sqlite"
    code, _, err = run_cli("summary", missing)
    assert code == BAD_INPUT
    assert_one_line_error(err, missing, "no such file")


# --- real traces --------------------------------------------------------------------

TRACES = real_traces()
SUMMARY_KEYS = {
    "format",
    "version",
    "meta",
    "scope",
    "totals",
    "kernels",
    "categories",
    "memcpy",
    "memset",
    "sync",
    "nvtx",
}
TOTALS_KEYS = {"kernel_launches", "kernel_ns", "busy_ns", "span_ns", "idle_pct", "devices"}
KERNEL_KEYS = {
    "name",
    "demangled",
    "family",
    "category",
    "calls",
    "total_ns",
    "mean_ns",
    "p50_ns",
    "p90_ns",
    "max_ns",
    "pct_of_kernel_time",
}
META_KEYS = {"source", "nsys_version", "schema_version", "gpus", "capture_start_ns", "capture_end_ns", "has_kernels"}


@pytest.mark.skipif(not TRACES, reason="real traces not found")
@pytest.mark.parametrize("trace", TRACES, ids=[p.stem for p in TRACES])
def test_real_trace_summary_json(trace: Path) -> None:
    code, out, err = run_cli("summary", "--format", "json", trace)
    assert (code, err) == (0, "")
    data = json.loads(out)
    assert data.keys() >= SUMMARY_KEYS
    assert data["format"] == "nsysdiff-summary"
    assert data["meta"].keys() >= META_KEYS
    assert data["meta"]["source"] == trace.name
    assert data["totals"].keys() >= TOTALS_KEYS
    assert data["meta"]["has_kernels"] == bool(data["kernels"])
    for k in data["kernels"]:
        assert k.keys() >= KERNEL_KEYS
    assert data["totals"]["kernel_launches"] == sum(k["calls"] for k in data["kernels"])
    assert data["totals"]["kernel_ns"] == sum(k["total_ns"] for k in data["kernels"])
    for c in data["memcpy"]:
        assert {"kind", "ops", "bytes", "total_ns"} <= c.keys()
