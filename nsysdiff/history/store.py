"""The history store: one SQLite file of fingerprints with their provenance, appended to
by main-branch jobs and read by baselines (:mod:`nsysdiff.history.baseline`) and change
points (:mod:`nsysdiff.history.changes`).

A store travels between CI jobs (a cache, an artifact, a data branch), so it is untrusted
input like a trace:

* **Versioned and schema-checked.** ``PRAGMA application_id`` marks the file as a store,
  ``PRAGMA user_version`` is its format version, and its ``sqlite_master`` must equal,
  statement for statement, the schema this module creates: a foreign table, view or
  trigger (code that would run on our writes) refuses the file before anything is read.
* **Bounded.** Every text field has a length limit checked in SQL before it is fetched;
  a fingerprint is a zlib stream of at most :data:`MAX_COMPRESSED` bytes inflated to at
  most :data:`MAX_FINGERPRINT` (a zip bomb stops there), then validated exactly like a
  saved fingerprint file.
* **Append-only.** Triggers abort any ``UPDATE`` or ``DELETE`` of an entry, so adding a
  run can't rewrite an older one (a regressed run never overwrites the baseline).
* **Safe with concurrent writers.** Each ``add`` is one ``BEGIN IMMEDIATE`` transaction:
  SQLite's write lock serialises writers (a second waits up to :data:`BUSY_MS`), and a
  reader sees whole transactions only. The store keeps SQLite's rollback journal, not
  WAL: a CI cache or artifact captures one file, and WAL would keep committed entries in
  a ``-wal`` file beside it that the upload can miss; WAL also needs shared memory, which
  network file systems don't give. Readers open the file read-only (``mode=ro``).

Each entry also writes its per-key figures (calls and total time per kernel, family,
category, copy kind, NVTX range) into ``series``, so that a trend or a change-point scan
reads integers with one query instead of inflating and validating every fingerprint.
"""

from __future__ import annotations

import functools
import os
import re
import sqlite3
import stat
import zlib
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import TypeGuard

import numpy as np
import numpy.typing as npt

from nsysdiff.compare import labels
from nsysdiff.errors import NsysdiffError
from nsysdiff.fingerprint import runset
from nsysdiff.fingerprint.model import Fingerprint, fingerprint_from_json, fingerprint_to_json
from nsysdiff.trace.names import spelling

APPLICATION_ID = 0x6E736864  # "nshd"
VERSION = 1
BUSY_MS = 30_000
MAX_TEXT = 512  # characters of a ref, commit, GPU name, scope or key name
MAX_COMPRESSED = 16 * 1024 * 1024
MAX_FINGERPRINT = 64 * 1024 * 1024
_SQLITE_MAGIC = b"SQLite format 3\x00"

_SCHEMA = (
    """CREATE TABLE entries (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    ref TEXT NOT NULL,
    commit_sha TEXT NOT NULL,
    run INTEGER NOT NULL,
    added TEXT NOT NULL,
    gpu TEXT NOT NULL,
    nsys_version TEXT NOT NULL,
    scope TEXT NOT NULL,
    graph_mode TEXT NOT NULL,
    failed INTEGER NOT NULL,
    fingerprint BLOB NOT NULL,
    UNIQUE (ref, commit_sha, run)
)""",
    """CREATE TABLE keys (
    id INTEGER PRIMARY KEY,
    kind TEXT NOT NULL,
    name TEXT NOT NULL,
    UNIQUE (kind, name)
)""",
    """CREATE TABLE series (
    entry INTEGER NOT NULL REFERENCES entries (id),
    key INTEGER NOT NULL REFERENCES keys (id),
    calls INTEGER NOT NULL,
    total_ns INTEGER NOT NULL,
    PRIMARY KEY (key, entry)
) WITHOUT ROWID""",
    "CREATE INDEX entries_ref ON entries (ref, id)",
    """CREATE TRIGGER entries_append_only_update BEFORE UPDATE ON entries
BEGIN SELECT RAISE(ABORT, 'history entries are append-only'); END""",
    """CREATE TRIGGER entries_append_only_delete BEFORE DELETE ON entries
BEGIN SELECT RAISE(ABORT, 'history entries are append-only'); END""",
    """CREATE TRIGGER series_append_only_update BEFORE UPDATE ON series
BEGIN SELECT RAISE(ABORT, 'history entries are append-only'); END""",
    """CREATE TRIGGER series_append_only_delete BEFORE DELETE ON series
BEGIN SELECT RAISE(ABORT, 'history entries are append-only'); END""",
)

_TEXTS = ("ref", "commit_sha", "added", "gpu", "nsys_version", "scope", "graph_mode")

# What a ref or commit may be: git's names and hashes, nothing a terminal would act on.
_NAME = re.compile(r"[A-Za-z0-9._/+@-]{1,200}")

# The kinds of keys a fingerprint gives, in report order: those a run set compares. The
# steps of a fingerprint read per a step range (``--per``) are keys of kind ``step``:
# ``period``, ``duration`` and ``part:NAME`` with the steps as their calls, and
# ``calls:FAMILY`` with the family's host calls (nsysdiff.fingerprint.runset).
STEP = runset.KeyKind.STEP.value
KERNEL = runset.KeyKind.KERNEL.value
KINDS = tuple(k.value for k in runset.KeyKind)
# Kinds whose series is total / calls, not the total: for a step figure, the time per step
# (the number of steps may differ between runs, as --skip-first leaves them); for a host
# family's calls, the time per call.
PER_STEP = frozenset({STEP})


def unknown_ref(store: Store, ref: str) -> str:
    """``; did you mean 'main'?`` for a ref the store has no runs of, when it is a slip of
    one it has (:func:`slip`); else nothing."""
    meant = slip(ref, {e.provenance.ref for e in store.entries()})
    return f"; did you mean {meant!r}?" if meant else ""


def slip(given: str, known: Iterable[str]) -> str | None:
    """The one name of ``known`` that ``given`` is a slip of the keyboard away from: two
    neighbouring characters swapped, one character added or one left out. A substitution
    is not a slip: ``release-2.1`` beside ``release-2.0`` is another branch."""
    found = {k for k in known if k != given and _one_slip(given, k)}
    return found.pop() if len(found) == 1 else None


def _one_slip(a: str, b: str) -> bool:
    if len(a) == len(b):
        diff = [i for i in range(len(a)) if a[i] != b[i]]
        return len(diff) == 2 and diff[1] == diff[0] + 1 and a[diff[0]] == b[diff[1]] and a[diff[1]] == b[diff[0]]
    short, long_ = (a, b) if len(a) < len(b) else (b, a)
    if len(long_) - len(short) != 1:
        return False
    return any(long_[:i] + long_[i + 1 :] == short for i in range(len(long_)))


class StoreError(NsysdiffError):
    """A history store is missing, foreign, damaged or of another version."""


@dataclass(frozen=True, slots=True)
class Provenance:
    """Where one run came from: the comparability key (GPU, scope, graph mode) comes from
    the fingerprint itself; ref, commit and run number from the job that added it."""

    ref: str
    commit: str
    run: int
    added: str  # ISO 8601, UTC
    gpu: str
    nsys_version: str
    scope: str
    graph_mode: str
    failed: bool


@dataclass(frozen=True, slots=True)
class Entry:
    """One stored run, without its fingerprint (read with :meth:`Store.fingerprint`)."""

    id: int
    provenance: Provenance

    @property
    def label(self) -> str:
        p = self.provenance
        return f"{p.ref}@{p.commit[:12]}#{p.run}"


def store_path(spec: str) -> Path:
    """A store's path from a path or an ``sqlite:///ABSOLUTE/PATH`` URL (``sqlite:`` followed
    by any number of slashes names the absolute path after them, so the URL survives the
    slash-collapsing of a shell variable or a path argument)."""
    if spec.startswith("sqlite:"):
        rest = spec[len("sqlite:") :].lstrip("/")
        if not rest:
            raise StoreError(f"{spec}: an sqlite:/// URL needs a path after it")
        return Path("/" + rest)
    return Path(spec)


def identity(fp: Fingerprint) -> tuple[str, str, str]:
    """(GPU, scope, graph mode) as stored: what must agree between comparable runs."""
    pairs = dict(runset.identity(fp))
    return pairs["GPU model"], pairs["scope"], pairs["graph mode"]


def scope_words(scope: str) -> str:
    """A stored scope (``window=None ... skip_first=0``) as what was given: the options set,
    or "the whole capture"."""
    given = [part for part in scope.split(" ") if not part.endswith(("=None", "=0"))]
    return "scope " + " ".join(given) if given else "the whole capture"


def _check_name(value: str, what: str) -> str:
    if not _NAME.fullmatch(value):
        raise StoreError(f"{what} {value[:60]!r}: expected 1 to 200 characters of letters, digits and ._/+@-")
    return value


def check_names(ref: str, commit: str) -> None:
    """Refuse a ref or commit no entry may carry, before a store is created for it (a
    first ``add`` refused for its --ref would otherwise leave an empty store behind)."""
    _check_name(ref, "--ref")
    _check_name(commit, "--commit")


def _whole(value: object) -> TypeGuard[int]:
    # SQLite compares 2.0 equal to 2 and Python hashes them alike: a REAL (or a bool from a
    # converter) where an integer column belongs must not pass as that integer.
    return type(value) is int


class Store:
    """An open store. Use :func:`open_store` (read-only) or :func:`create_or_open` (to add),
    in a ``with`` block that closes it."""

    def __init__(self, path: Path, con: sqlite3.Connection) -> None:
        self.path = path
        self.con = con
        self._labels: dict[str, str] | None = None

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self.con.close()

    def _error(self, e: BaseException) -> StoreError:
        return StoreError(" ".join(f"{self.path}: {e}".split()))

    def query(self, sql: str, params: Sequence[object] = ()) -> list[tuple[object, ...]]:
        try:
            return self.con.execute(sql, params).fetchall()
        except (sqlite3.Error, UnicodeDecodeError) as e:
            raise self._error(e) from None

    # -- reading ------------------------------------------------------------------------

    def entries(self, ref: str | None = None) -> tuple[Entry, ...]:
        """Every entry (of ``ref``), oldest first, provenance checked."""
        where, params = ("WHERE ref = ?", (ref,)) if ref is not None else ("", ())
        # Texts are cut in SQL to one past the limit: a tampered field of a gigabyte is
        # refused by its length without ever being fetched.
        cut = ", ".join(
            f"substr({c}, 1, {MAX_TEXT + 1})" if c in _TEXTS else c
            for c in ("ref", "commit_sha", "run", "added", "gpu", "nsys_version", "scope", "graph_mode", "failed")
        )
        longest = ", ".join(f"length({c})" for c in _TEXTS)
        rows = self.query(f"SELECT id, {cut}, max({longest}) FROM entries {where} ORDER BY id", params)
        return tuple(self._entry(r) for r in rows)

    def _entry(self, row: tuple[object, ...]) -> Entry:
        eid, *fields, longest = row
        if not _whole(eid) or not _whole(longest) or longest > MAX_TEXT:
            raise StoreError(f"{self.path}: entry {eid!r} has a field over {MAX_TEXT} characters")
        ref, commit, run, added, gpu, nsys, scope, mode, failed = fields
        texts = (ref, commit, added, gpu, nsys, scope, mode)
        if not all(isinstance(t, str) for t in texts) or not _whole(run) or not _whole(failed) or failed not in (0, 1):
            raise StoreError(f"{self.path}: entry {eid} has a field of the wrong type")
        if run < 1:
            raise StoreError(f"{self.path}: entry {eid} has run number {run}")
        r, c, a, g, n, s, m = (str(t) for t in texts)
        return Entry(eid, Provenance(r, c, run, a, g, n, s, m, bool(failed)))

    def fingerprint(self, entry: Entry) -> Fingerprint:
        """The entry's fingerprint, inflated within bounds and validated as a saved file."""
        where = f"{self.path} entry {entry.id} ({entry.label})"
        rows = self.query("SELECT length(fingerprint), typeof(fingerprint) FROM entries WHERE id = ?", (entry.id,))
        if not rows:
            raise StoreError(f"{where}: no such entry")
        size, kind = rows[0]
        if kind != "blob" or not isinstance(size, int) or size > MAX_COMPRESSED:
            raise StoreError(f"{where}: fingerprint is not a zlib blob of at most {MAX_COMPRESSED:,} bytes")
        blob = self.query("SELECT fingerprint FROM entries WHERE id = ?", (entry.id,))[0][0]
        assert isinstance(blob, bytes)
        inflate = zlib.decompressobj()
        try:
            raw = inflate.decompress(blob, MAX_FINGERPRINT)
        except zlib.error as e:
            raise StoreError(f"{where}: fingerprint is not a zlib stream ({e})") from None
        if inflate.unconsumed_tail or not inflate.eof:
            raise StoreError(f"{where}: fingerprint inflates past {MAX_FINGERPRINT:,} bytes or is cut short")
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            raise StoreError(f"{where}: fingerprint is not UTF-8 text") from None
        return fingerprint_from_json(text, where)

    def kernel_labels(self) -> dict[str, str]:
        """Each kernel key (a demangled signature) mapped to the label a diff gives it: its
        short name, told apart from the store's other kernels of that name
        (:mod:`nsysdiff.compare.labels`). Made over every kernel of the store, so that a
        label names one kernel on every ref and in every report of the store."""
        if self._labels is None:
            rows = self.query("SELECT name FROM keys WHERE kind = ? AND length(name) <= ?", (KERNEL, MAX_TEXT))
            names = [str(r[0]) for r in rows]
            self._labels = labels.short_labels((n, labels.short_name(n)) for n in names)
        return self._labels

    def series(
        self, entries: Sequence[Entry], name: str | None = None
    ) -> dict[tuple[str, str], dict[int, tuple[int, int]]]:
        """(kind, key) -> {entry id: (calls, total_ns)} for ``entries`` (the keys called
        ``name`` only, when given: one index range instead of every key's rows)."""
        ids = [e.id for e in entries]
        if not ids:
            return {}
        lo, hi = min(ids), max(ids)
        wanted = set(ids)
        only, params = ("AND k.name = ?", (lo, hi, name)) if name is not None else ("", (lo, hi))
        rows = self.query(
            f"SELECT substr(k.kind, 1, 16), substr(k.name, 1, {MAX_TEXT + 1}), s.entry, s.calls, s.total_ns, "
            "length(k.name) FROM series s "
            f"JOIN keys k ON k.id = s.key WHERE s.entry BETWEEN ? AND ? {only}",
            params,
        )
        out: dict[tuple[str, str], dict[int, tuple[int, int]]] = {}
        kinds = set(KINDS)
        for kind, key, entry, calls, total, length in rows:
            if not _whole(entry):
                raise StoreError(f"{self.path}: a figure of the series has entry id {entry!r}, not an integer")
            if entry not in wanted:
                continue
            if (
                kind not in kinds
                or not isinstance(key, str)
                or not isinstance(length, int)
                or length > MAX_TEXT
                or not _whole(calls)
                or not _whole(total)
                or calls < 0
                or total < 0
            ):
                raise StoreError(f"{self.path}: entry {entry!r} has a malformed figure for {str(key)[:60]!r}")
            out.setdefault((str(kind), key), {})[entry] = (calls, total)
        return out

    def totals(
        self, entries: Sequence[Entry]
    ) -> tuple[tuple[tuple[str, str], ...], npt.NDArray[np.int64], npt.NDArray[np.int64]]:
        """Every key of ``entries`` as (kind, name), and their total times and calls as two
        matrices (entries x keys, in the order given; 0 where an entry lacks a key). Read
        in chunks into numpy and checked there: no Python object per row."""
        ids = np.array([e.id for e in entries], dtype=np.int64)
        if not len(ids):
            return (), np.zeros((0, 0), dtype=np.int64), np.zeros((0, 0), dtype=np.int64)
        order = np.argsort(ids)
        span = (int(ids.min()), int(ids.max()))
        # Only the keys these entries have: the matrix stays entries x their keys, however
        # many other refs and builds share the store.
        rows = self.query(
            f"SELECT id, substr(kind, 1, 16), substr(name, 1, {MAX_TEXT + 1}), length(name) FROM keys "
            "WHERE id IN (SELECT DISTINCT key FROM series WHERE entry BETWEEN ? AND ?) ORDER BY id",
            span,
        )
        kinds = set(KINDS)
        for kid, kind, name, length in rows:
            if kind not in kinds or not isinstance(name, str) or not _whole(length) or length > MAX_TEXT:
                raise StoreError(f"{self.path}: key {kid!r} is malformed ({str(name)[:60]!r})")
        key_ids = np.array([r[0] for r in rows], dtype=np.int64)
        names = tuple((str(r[1]), str(r[2])) for r in rows)
        out = np.zeros((len(ids), len(key_ids)), dtype=np.int64)
        calls = np.zeros_like(out)
        try:
            cur = self.con.execute(
                "SELECT entry, key, CASE WHEN typeof(total_ns) = 'integer' AND total_ns >= 0 "
                "AND typeof(calls) = 'integer' AND calls >= 0 AND typeof(entry) = 'integer' "
                "AND typeof(key) = 'integer' THEN total_ns ELSE -1 END, "
                "CASE WHEN typeof(calls) = 'integer' THEN calls ELSE -1 END "
                "FROM series WHERE entry BETWEEN ? AND ?",
                span,
            )
            while chunk := cur.fetchmany(65536):
                a = np.array(chunk, dtype=np.int64).reshape(-1, 4)
                at = np.searchsorted(ids, a[:, 0], sorter=order)
                at = np.minimum(at, len(ids) - 1)
                row = order[at]
                wanted = ids[row] == a[:, 0]
                col = np.searchsorted(key_ids, a[:, 1])
                known = (col < len(key_ids)) & (key_ids[np.minimum(col, len(key_ids) - 1)] == a[:, 1])
                if (a[wanted, 2] < 0).any() or not known[wanted].all():
                    raise StoreError(
                        f"{self.path}: a figure of the series is malformed (negative, not an integer, "
                        "or of an unknown key)"
                    )
                out[row[wanted], col[wanted]] = a[wanted, 2]
                calls[row[wanted], col[wanted]] = a[wanted, 3]
        except (sqlite3.Error, UnicodeDecodeError, OverflowError, ValueError, TypeError) as e:
            raise self._error(e) from None
        return names, out, calls

    # -- writing ------------------------------------------------------------------------

    def add(
        self, fp: Fingerprint, *, ref: str, commit: str, failed: bool = False, now: datetime | None = None
    ) -> Entry:
        """Append ``fp`` as the next run of ``commit`` on ``ref``, in one transaction."""
        check_names(ref, commit)
        gpu, scope, mode = identity(fp)
        text = fingerprint_to_json(fp)
        blob = zlib.compress(text.encode("utf-8"), 6)
        if len(text) > MAX_FINGERPRINT or len(blob) > MAX_COMPRESSED:
            raise StoreError(f"{self.path}: a fingerprint of {len(text):,} bytes is too large for a store")
        added = (now or datetime.now(timezone.utc)).strftime("%Y-%m-%dT%H:%M:%SZ")
        nsys = fp.meta.nsys_version or "unknown"
        # A kernel's key is its name with template arguments spelled one way: a run captured
        # by another nsys (another demangler) continues the same series.
        figures = [
            (kind.value, spelling(key) if kind is runset.KeyKind.KERNEL else key, calls, total)
            for kind in runset.KeyKind
            for key, calls, total in runset.stats(fp, kind)
        ]
        if any(len(key) > MAX_TEXT for _, key, _, _ in figures):
            raise StoreError(f"{self.path}: a key name is over {MAX_TEXT} characters")
        with self._write():
            row = self.con.execute(
                "SELECT coalesce(max(run), 0) + 1 FROM entries WHERE ref = ? AND commit_sha = ?", (ref, commit)
            ).fetchone()
            run = int(row[0])
            cur = self.con.execute(
                "INSERT INTO entries (ref, commit_sha, run, added, gpu, nsys_version, scope, graph_mode, failed, "
                "fingerprint) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (ref, commit, run, added, gpu, nsys, scope, mode, int(failed), blob),
            )
            eid = int(cur.lastrowid or 0)
            self.con.executemany(
                "INSERT OR IGNORE INTO keys (kind, name) VALUES (?, ?)", [(k, n) for k, n, _, _ in figures]
            )
            self.con.executemany(
                "INSERT INTO series (entry, key, calls, total_ns) "
                "SELECT ?, id, ?, ? FROM keys WHERE kind = ? AND name = ?",
                [(eid, c, t, k, n) for k, n, c, t in figures],
            )
        return Entry(eid, Provenance(ref, commit, run, added, gpu, nsys, scope, mode, failed))

    @contextmanager
    def _write(self) -> Iterator[None]:
        try:
            self.con.execute("BEGIN IMMEDIATE")
        except sqlite3.Error as e:
            raise self._error(e) from None
        try:
            yield
        except sqlite3.Error as e:
            # A full disk, a read-only file system, a lock held past the timeout: one line.
            self._rollback()
            raise self._error(e) from None
        except BaseException:
            self._rollback()
            raise
        try:
            self.con.execute("COMMIT")
        except sqlite3.Error as e:
            self._rollback()
            raise self._error(e) from None

    def _rollback(self) -> None:
        # SQLite may have rolled the transaction back itself (a full disk): nothing to undo.
        with suppress(sqlite3.Error):
            self.con.execute("ROLLBACK")


def _connect(path: Path, *, readonly: bool) -> sqlite3.Connection:
    mode = "ro" if readonly else "rw"
    try:
        con = sqlite3.connect(
            path.resolve().as_uri() + f"?mode={mode}", uri=True, isolation_level=None, timeout=BUSY_MS / 1000
        )
        # The file's own schema runs no function with side effects, and damaged b-tree
        # cells stop a read instead of feeding it garbage (SQLite's advice for files from elsewhere).
        con.execute("PRAGMA trusted_schema = OFF")
        con.execute("PRAGMA cell_size_check = ON")
    except (sqlite3.Error, UnicodeDecodeError) as e:
        raise StoreError(" ".join(f"{path}: can't be opened as SQLite ({e})".split())) from None
    return con


def _check(path: Path, con: sqlite3.Connection) -> None:
    """Refuse a file that is not a store of this version, before anything else is read."""
    try:
        app_id = con.execute("PRAGMA application_id").fetchone()[0]
        version = con.execute("PRAGMA user_version").fetchone()[0]
        master = con.execute("SELECT type, name, tbl_name, sql FROM sqlite_master").fetchall()
    except (sqlite3.Error, UnicodeDecodeError) as e:
        raise StoreError(" ".join(f"{path}: not a readable SQLite file ({e})".split())) from None
    if app_id != APPLICATION_ID:
        raise StoreError(f"{path}: not an nsysdiff history store (application id {app_id:#x})")
    if version != VERSION:
        raise StoreError(
            f"{path}: history store version {version} is not supported (this nsysdiff reads version {VERSION})"
        )
    # Every schema object, SQLite's own included, is compared by type, name, table and
    # statement: a trigger, view or index that takes the name of one of ours (or of
    # sqlite_sequence, which SQLite makes for AUTOINCREMENT) is as foreign as any other.
    seen = sorted((str(t), str(n), str(tb), _normal(str(q)) if q is not None else "") for t, n, tb, q in master)
    expected = _expected_master()
    if seen != expected:
        extra = [row for row in seen if row not in expected] or [row for row in expected if row not in seen] or seen
        raise StoreError(
            f"{path}: history store schema differs from version {VERSION} (at: {' '.join(extra[0])[:80]!r})"
        )


@functools.cache
def _expected_master() -> list[tuple[str, str, str, str]]:
    """sqlite_master as :data:`_SCHEMA` makes it, SQLite's own objects included (the
    autoindexes of the UNIQUE constraints, sqlite_sequence), from an in-memory database."""
    con = sqlite3.connect(":memory:")
    try:
        for sql in _SCHEMA:
            con.execute(sql)
        rows = con.execute("SELECT type, name, tbl_name, sql FROM sqlite_master").fetchall()
    finally:
        con.close()
    return sorted((str(t), str(n), str(tb), _normal(str(q)) if q is not None else "") for t, n, tb, q in rows)


def _normal(sql: str) -> str:
    return " ".join(sql.split())


def _sqlite_file(path: Path) -> None:
    """A regular file that starts as SQLite does. Opened without blocking and checked on
    the descriptor: a FIFO given as the store would block the open (and SQLite's) forever."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0))
    except FileNotFoundError:
        near = [p.name for p in path.parent.iterdir() if p.is_file()] if path.parent.is_dir() else []
        meant = slip(path.name, near)
        hint = f"; did you mean {str(path.with_name(meant))!r}?" if meant else ""
        raise StoreError(f"{path}: no such history store{hint}") from None
    except OSError as e:
        raise StoreError(f"{path}: can't be read ({e.strerror})") from None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise StoreError(f"{path}: not a regular file, so not an nsysdiff history store")
        head = os.pread(fd, len(_SQLITE_MAGIC), 0)
    except OSError as e:
        raise StoreError(f"{path}: can't be read ({e.strerror})") from None
    finally:
        os.close(fd)
    if head != _SQLITE_MAGIC:
        raise StoreError(f"{path}: not an SQLite file, so not an nsysdiff history store")


def open_store(spec: str | Path) -> Store:
    """An existing store, read-only and checked."""
    return _opened(store_path(str(spec)), readonly=True)


def create_or_open(spec: str | Path) -> Store:
    """A store to add to: created (empty, this version) when the path doesn't exist yet."""
    path = store_path(str(spec))
    # A file of 0 bytes is a store another writer is creating right now (SQLite makes the
    # file at connect and writes it at the first commit): wait for its lock, then look.
    if not path.exists() or (path.is_file() and path.stat().st_size == 0):
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            con = sqlite3.connect(str(path), isolation_level=None, timeout=BUSY_MS / 1000)
            con.execute("BEGIN IMMEDIATE")
            # Two first runs may race to create the file: the loser finds the schema made.
            empty = con.execute("SELECT count(*) FROM sqlite_master").fetchone()[0] == 0
            if empty and con.execute("PRAGMA user_version").fetchone()[0] == 0:
                con.execute(f"PRAGMA application_id = {APPLICATION_ID}")
                con.execute(f"PRAGMA user_version = {VERSION}")
                for sql in _SCHEMA:
                    con.execute(sql)
            con.execute("COMMIT")
            con.close()
        except (sqlite3.Error, OSError) as e:
            raise StoreError(" ".join(f"{path}: can't create a history store ({e})".split())) from None
    return _opened(path, readonly=False)


def _opened(path: Path, *, readonly: bool) -> Store:
    """The store at ``path``, checked before it is handed out (closed when it fails)."""
    _sqlite_file(path)
    con = _connect(path, readonly=readonly)
    try:
        _check(path, con)
    except StoreError:
        con.close()
        raise
    return Store(path, con)
