"""The history store: entries and their provenance, append-only, concurrent writers, and
a store met as untrusted input (foreign, tampered, of another version, huge, bad JSON)."""

from __future__ import annotations

import hashlib
import sqlite3
import subprocess
import sys
import zlib
from datetime import datetime, timezone
from pathlib import Path

import fpspec
import pytest
from conftest import otava_test, run_cli
from histories import tamper_store

from nsysdiff.errors import NsysdiffError
from nsysdiff.fingerprint.model import fingerprint_to_json
from nsysdiff.history import store as st

NOW = datetime(2026, 1, 2, 3, 4, 5, tzinfo=timezone.utc)


def _fp(scale: float = 1.0, gpu: str = "NVIDIA H100 80GB HBM3"):
    return fpspec.fingerprint(
        {"gemm_a": (10, round(1_000_000 * scale)), "softmax": (20, 200_000)},
        memcpy={"HtoD": (4, 4096, 8000)},
        nvtx={"decode_step": (32, 5_000_000)},
        gpu=gpu,
    )


def _store(tmp_path: Path, n: int = 3) -> Path:
    path = tmp_path / "h.sqlite"
    s = st.create_or_open(path)
    for i in range(n):
        s.add(_fp(1 + i / 100), ref="main", commit=f"c{i // 2}", now=NOW)
    s.close()
    return path


def test_entries_keep_provenance_and_number_runs_within_a_commit(tmp_path: Path) -> None:
    path = _store(tmp_path, 3)
    s = st.open_store(path)
    entries = s.entries("main")
    assert [(e.provenance.commit, e.provenance.run) for e in entries] == [("c0", 1), ("c0", 2), ("c1", 1)]
    p = entries[0].provenance
    assert (p.ref, p.added, p.gpu, p.nsys_version, p.graph_mode, p.failed) == (
        "main",
        "2026-01-02T03:04:05Z",
        "NVIDIA H100 80GB HBM3",
        "2024.6.2.25",
        "none",
        False,
    )
    assert "window=None" in p.scope
    assert s.fingerprint(entries[2]) == _fp(1.02)
    series = s.series(entries)
    assert series[("kernel", "gemm_a")] == {
        entries[0].id: (10, 1_000_000),
        entries[1].id: (10, 1_010_000),
        entries[2].id: (10, 1_020_000),
    }
    assert series[("copy", "HtoD")][entries[0].id] == (4, 8000)
    assert series[("nvtx", "decode_step")][entries[0].id] == (32, 5_000_000)
    s.close()


def test_reading_never_modifies_the_store(tmp_path: Path) -> None:
    path = _store(tmp_path)
    before = hashlib.sha256(path.read_bytes()).hexdigest()
    with st.open_store(path) as s:
        for e in s.entries():
            s.fingerprint(e)
        with pytest.raises(NsysdiffError, match="readonly"):
            s.query("INSERT INTO keys (kind, name) VALUES ('kernel', 'x')")
            raise AssertionError("wrote through a read-only connection")
    with pytest.raises(sqlite3.ProgrammingError, match="closed"):  # the block closed it
        s.con.execute("SELECT 1")
    assert hashlib.sha256(path.read_bytes()).hexdigest() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["h.sqlite"]


def test_entries_are_append_only(tmp_path: Path) -> None:
    path = _store(tmp_path)
    con = sqlite3.connect(path)
    for sql in (
        "UPDATE entries SET failed = 1",
        "DELETE FROM entries",
        "UPDATE series SET total_ns = 1",
        "DELETE FROM series",
    ):
        with pytest.raises(sqlite3.IntegrityError, match="append-only"):
            con.execute(sql)
    con.close()


def test_sqlite_url_names_an_absolute_path(tmp_path: Path) -> None:
    path = _store(tmp_path)
    for url in (f"sqlite://{path}", f"sqlite:{path}", f"sqlite:///{str(path).lstrip('/')}"):
        s = st.open_store(url)
        assert len(s.entries()) == 3
        s.close()


_WRITER = """
import sys
sys.path.insert(0, sys.argv[3])
import fpspec
from nsysdiff.history import store as st
s = st.create_or_open(sys.argv[1])
for i in range(15):
    s.add(fpspec.fingerprint({"k": (1, 1000 + i)}), ref="main", commit="c" + sys.argv[2])
"""


def test_concurrent_writers_lose_nothing(tmp_path: Path) -> None:
    path = tmp_path / "h.sqlite"
    tests = str(Path(__file__).resolve().parent.parent)
    procs = [subprocess.Popen([sys.executable, "-c", _WRITER, str(path), str(w), tests]) for w in range(4)]
    assert [p.wait(timeout=120) for p in procs] == [0, 0, 0, 0]
    s = st.open_store(path)
    entries = s.entries("main")
    assert len(entries) == 60
    for w in range(4):
        assert sorted(e.provenance.run for e in entries if e.provenance.commit == f"c{w}") == list(range(1, 16))
    assert len(s.series(entries)[("kernel", "k")]) == 60
    s.close()


# -- untrusted stores: one line, exit code 2 --------------------------------------------


def _refused(path: Path | str, match: str, *reads: str) -> None:
    """Each read named (fingerprints, entries, series, totals; all by default) refuses the
    store in one line, exit 2."""
    for read in reads or ("fingerprints", "series", "totals"):
        with pytest.raises(NsysdiffError, match=match) as info:
            s = st.open_store(path)
            try:
                entries = s.entries()
                if read == "fingerprints":
                    [s.fingerprint(e) for e in entries]
                elif read == "series":
                    s.series(entries)
                elif read == "totals":
                    s.totals(entries)
            finally:
                s.close()
        assert info.value.exit_code == 2
        assert "\n" not in str(info.value)


def test_missing_empty_and_non_sqlite_files(tmp_path: Path) -> None:
    _refused(tmp_path / "none.sqlite", "no such history store")
    (tmp_path / "empty").write_bytes(b"")
    _refused(tmp_path / "empty", "not an SQLite file")
    (tmp_path / "text").write_text("hello")
    _refused(tmp_path / "text", "not an SQLite file")


def test_foreign_sqlite_file(tmp_path: Path) -> None:
    path = tmp_path / "trace.sqlite"
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE StringIds (id INTEGER, value TEXT)")
    con.commit()
    con.close()
    _refused(path, "not an nsysdiff history store")


def test_other_version(tmp_path: Path) -> None:
    path = _store(tmp_path)
    con = sqlite3.connect(path)
    con.execute("PRAGMA user_version = 7")
    con.commit()
    con.close()
    _refused(path, "version 7 is not supported")


@pytest.mark.parametrize(
    "sql",
    [
        "CREATE TABLE extra (x)",
        "CREATE VIEW v AS SELECT 1",
        "CREATE TRIGGER t AFTER INSERT ON entries BEGIN SELECT 1; END",
        "DROP TRIGGER entries_append_only_delete",
        "CREATE INDEX i ON keys (name)",
    ],
)
def test_tampered_schema(tmp_path: Path, sql: str) -> None:
    path = _store(tmp_path)
    con = sqlite3.connect(path)
    con.execute(sql)
    con.commit()
    con.close()
    _refused(path, "schema differs")
    with pytest.raises(NsysdiffError, match="schema differs"):
        st.create_or_open(path)


@pytest.mark.parametrize(
    ("sql", "params", "match"),
    [
        ("UPDATE entries SET fingerprint = ?", (zlib.compress(b"{not json"),), "not valid JSON"),
        ("UPDATE entries SET fingerprint = ?", (b"plain bytes",), "not a zlib stream"),
        ("UPDATE entries SET fingerprint = 'text'", (), "not a zlib blob"),
        ("UPDATE entries SET fingerprint = zeroblob(20000000)", (), "not a zlib blob of at most"),
        ("UPDATE entries SET fingerprint = ?", (zlib.compress(b" " * (70 * 1024 * 1024), 9),), "inflates past"),
        (
            "UPDATE entries SET fingerprint = ?",
            (zlib.compress(b'{"format": "nsysdiff-fingerprint"}'),),
            "version None is not supported",
        ),
        ("UPDATE entries SET gpu = ?", ("x" * 10_000,), "over 512 characters"),
        ("UPDATE entries SET run = 'one' WHERE id = 1", (), "wrong type"),
        ("UPDATE entries SET run = 0 WHERE id = 1", (), "run number 0"),
        ("UPDATE series SET total_ns = -5", (), "malformed figure"),
        ("UPDATE series SET calls = 'many'", (), "malformed figure"),
    ],
)
def test_tampered_rows(tmp_path: Path, sql: str, params: tuple[object, ...], match: str) -> None:
    path = _store(tmp_path)
    tamper_store(path, sql, params)
    if "SET fingerprint" in sql:
        _refused(path, match, "fingerprints")
    elif sql.startswith("UPDATE series"):
        _refused(path, match, "series")
        _refused(path, "malformed", "totals")
    else:
        _refused(path, match, "entries")


def test_damaged_file(tmp_path: Path) -> None:
    path = _store(tmp_path, 20)
    data = bytearray(path.read_bytes())
    data[len(data) // 2 : len(data) // 2 + 4096] = b"\xff" * 4096
    path.write_bytes(bytes(data))
    with pytest.raises(NsysdiffError) as info:
        s = st.open_store(path)
        for e in s.entries():
            s.fingerprint(e)
        s.series(s.entries())
    assert info.value.exit_code == 2 and "\n" not in str(info.value)


def test_add_refuses_bad_names_and_foreign_stores(tmp_path: Path) -> None:
    s = st.create_or_open(tmp_path / "h.sqlite")
    with pytest.raises(NsysdiffError, match="--ref"):
        s.add(_fp(), ref="main\n::error::x", commit="c0")
    with pytest.raises(NsysdiffError, match="--commit"):
        s.add(_fp(), ref="main", commit="")
    s.close()
    foreign = tmp_path / "foreign.sqlite"
    con = sqlite3.connect(foreign)
    con.execute("CREATE TABLE t (x)")
    con.commit()
    con.close()
    with pytest.raises(NsysdiffError, match="not an nsysdiff history store"):
        st.create_or_open(foreign)


def test_fingerprint_json_is_the_saved_format(tmp_path: Path) -> None:
    """An entry inflates to exactly what `nsysdiff fingerprint` writes."""
    path = _store(tmp_path, 1)
    con = sqlite3.connect(path)
    blob = con.execute("SELECT fingerprint FROM entries").fetchone()[0]
    con.close()
    assert zlib.decompress(blob).decode() == fingerprint_to_json(_fp())


def test_tampered_keys(tmp_path: Path) -> None:
    path = _store(tmp_path)
    con = sqlite3.connect(path)
    con.execute("UPDATE keys SET kind = 'bogus' WHERE id = 1")
    con.commit()
    con.close()
    _refused(path, "malformed", "series", "totals")


def test_a_failed_write_is_one_line_and_leaves_the_store_as_it_was(tmp_path: Path) -> None:
    path = _store(tmp_path, 2)
    s = st.open_store(path)  # read-only: every write fails inside SQLite
    with pytest.raises(NsysdiffError, match="readonly") as info:
        s.add(_fp(), ref="main", commit="c9")
    assert info.value.exit_code == 2 and "\n" not in str(info.value)
    s.close()
    s = st.open_store(path)
    assert len(s.entries()) == 2
    s.close()


def test_a_lock_held_too_long_is_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = _store(tmp_path, 1)
    monkeypatch.setattr(st, "BUSY_MS", 50)
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    try:
        s = st.create_or_open(path)
        with pytest.raises(NsysdiffError, match="locked") as info:
            s.add(_fp(), ref="main", commit="c9")
        assert info.value.exit_code == 2
        s.close()
    finally:
        holder.execute("ROLLBACK")
        holder.close()


def _with_steps(periods: list[int]):
    import histories

    return histories.with_steps(_fp(), periods)


def test_steps_are_keys_of_kind_step(tmp_path: Path) -> None:
    """The period per step and its parts are stored as keys of kind ``step``, with the
    steps as their calls: total / calls is the time per step."""
    path = tmp_path / "h.sqlite"
    s = st.create_or_open(path)
    s.add(_with_steps([3_000_000] * 32), ref="main", commit="c0")
    s.add(_with_steps([3_300_000] * 30), ref="main", commit="c1")
    entries = s.entries()
    series = s.series(entries)
    assert series[("step", "period")] == {entries[0].id: (32, 96_000_000), entries[1].id: (30, 99_000_000)}
    assert series[("step", "part:compute")][entries[1].id] == (30, 99_000_000)
    assert entries[0].provenance.scope.endswith("per=decode_step skip_first=0")
    assert st.scope_words(entries[0].provenance.scope) == "scope per=decode_step"
    s.close()


def test_one_kernel_under_two_demanglers_is_one_series(tmp_path: Path) -> None:
    old, new = "void march_rays<3u, true>(float*)", "void march_rays<(unsigned int)3, (bool)1>(float *)"
    s = st.create_or_open(tmp_path / "h.sqlite")
    for i, name in enumerate((old, new)):
        fp = fpspec.fingerprint([fpspec.kernel("march_rays", 10, 1_000_000 + i, demangled=name)], gpu="NVIDIA H100")
        s.add(fp, ref="main", commit=f"c{i}", now=NOW)
    entries = s.entries("main")
    kernels = {k: v for k, v in s.series(entries).items() if k[0] == "kernel"}
    assert kernels == {("kernel", old): {entries[0].id: (10, 1_000_000), entries[1].id: (10, 1_000_001)}}
    s.close()


# -- hostile stores: FIFOs, forged schema objects, odd column types ----------------------


def _timed_out(target, seconds: float = 20.0) -> BaseException | None:
    """Run ``target`` on a thread and return what it raised: a FIFO must be refused at
    once, not block the open forever (a daemon thread, so a regression fails, not hangs)."""
    import threading

    box: list[BaseException | None] = []

    def body() -> None:
        try:
            target()
            box.append(None)
        except BaseException as e:  # handed back to the test
            box.append(e)

    t = threading.Thread(target=body, daemon=True)
    t.start()
    t.join(seconds)
    assert box, "blocked on the FIFO"
    return box[0]


@pytest.mark.skipif(not hasattr(__import__("os"), "mkfifo"), reason="no FIFOs here")
def test_a_fifo_is_refused_without_blocking(tmp_path: Path) -> None:
    import os

    fifo = tmp_path / "h.sqlite"
    os.mkfifo(fifo)
    for open_ in (st.open_store, st.create_or_open):
        error = _timed_out(lambda open_=open_: open_(fifo))
        assert isinstance(error, NsysdiffError) and "not a regular file" in str(error), error
        assert error.exit_code == 2


@pytest.mark.parametrize(
    "sql",
    [
        # A trigger under SQLite's own name: the name alone was once enough to pass.
        "CREATE TRIGGER sqlite_sequence AFTER INSERT ON entries WHEN new.failed = 1 BEGIN "
        "INSERT INTO entries (ref, commit_sha, run, added, gpu, nsys_version, scope, graph_mode, failed, "
        "fingerprint) SELECT ref, commit_sha, run + 1, added, gpu, nsys_version, scope, graph_mode, 0, "
        "fingerprint FROM entries WHERE id = new.id; END",
        "CREATE VIEW sqlite_sequence_2 AS SELECT 1",
    ],
)
def test_a_forged_schema_object_under_any_name_is_refused(tmp_path: Path, sql: str) -> None:
    path = _store(tmp_path)
    con = sqlite3.connect(path)
    con.execute("PRAGMA writable_schema = ON")
    name = sql.split()[2]
    kind = sql.split()[1].lower()
    # Written straight into sqlite_master, as a hostile job would, under the name it chose.
    con.execute(
        "INSERT INTO sqlite_master (type, name, tbl_name, rootpage, sql) VALUES (?, ?, ?, 0, ?)",
        (kind, name, "entries" if kind != "view" else name, sql),
    )
    con.commit()
    con.close()
    _refused(path, "schema differs", "entries")
    with pytest.raises(NsysdiffError, match="schema differs"):
        st.create_or_open(path)


@pytest.mark.parametrize(
    ("sql", "read"),
    [
        ("UPDATE series SET entry = 2.0 WHERE entry = 2", "series"),
        ("UPDATE series SET calls = 10.0", "series"),
        ("UPDATE entries SET failed = 1.0 WHERE id = 1", "entries"),
        ("UPDATE entries SET run = 1.0 WHERE id = 1", "entries"),
    ],
)
def test_real_values_in_integer_columns_are_refused(tmp_path: Path, sql: str, read: str) -> None:
    path = _store(tmp_path)
    con = sqlite3.connect(path)
    con.execute("PRAGMA writable_schema = ON")
    # The columns' INTEGER affinity turns 2.0 back into 2: only a column whose declared
    # type is changed keeps a REAL, as a hand-made store can.
    table = sql.split()[1]
    text = con.execute("SELECT sql FROM sqlite_master WHERE name = ?", (table,)).fetchone()[0]
    untyped = text.replace("INTEGER NOT NULL", "NOT NULL")
    con.execute("UPDATE sqlite_master SET sql = ? WHERE name = ?", (untyped, table))
    con.commit()
    con.close()
    con = sqlite3.connect(path)
    for name in ("entries_append_only_update", "series_append_only_update"):
        con.execute(f"DROP TRIGGER {name}")
    con.execute(sql)
    con.execute("PRAGMA writable_schema = ON")
    con.execute("UPDATE sqlite_master SET sql = ? WHERE name = ?", (text, table))
    con.commit()
    for s in st._SCHEMA:
        if "_update BEFORE UPDATE" in s:
            con.execute(s)
    con.commit()
    assert con.execute(f"SELECT count(*) FROM {table} WHERE typeof({sql.split()[3]}) = 'real'").fetchone()[0] >= 1
    con.close()
    _refused(path, "not an integer|wrong type|malformed", read)


@otava_test  # history report scans for change points before it writes a page
def test_hard_linked_pages_never_overwrite_the_store(tmp_path: Path) -> None:
    """Checked by file identity: a page hard-linked to the store resolves to its own path."""
    import os

    path = _store(tmp_path, 4)
    before = path.read_bytes()
    site = tmp_path / "site"
    site.mkdir()
    os.link(path, site / "index.html")
    code, out, err = run_cli("history", "report", path, "-o", site)
    assert code == 2, out + err
    assert "never writes over an input" in err
    assert path.read_bytes() == before


def test_an_invalid_ref_leaves_no_store_behind(tmp_path: Path) -> None:
    from nsysdiff import api

    fp_file = tmp_path / "run.json"
    fp_file.write_text(fingerprint_to_json(_fp()))
    store = tmp_path / "new.sqlite"
    with pytest.raises(NsysdiffError, match="--ref"):
        api.history_add(store, [fp_file], ref="main\n::error::x", commit="c0")
    assert not store.exists()


def test_nan_under_an_unknown_key_of_a_stored_fingerprint_is_refused(tmp_path: Path) -> None:
    path = _store(tmp_path, 1)
    text = fingerprint_to_json(_fp()).replace('"scope": {', '"extra": NaN, "scope": {', 1)
    tamper_store(path, "UPDATE entries SET fingerprint = ?", (zlib.compress(text.encode()),))
    _refused(path, r"at \$\.extra: NaN", "fingerprints")
