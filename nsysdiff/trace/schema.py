"""Open an export read-only and probe what it holds: tables, columns, versions.

Every other reader function asks the :class:`Schema` before it writes a query, because
nsys exports are lazy (a table with no rows is not created) and change shape across
versions (``EXPORT_META_DATA`` vs ``META_DATA_EXPORT``, optional ``mangledName``...).
"""

from __future__ import annotations

import os
import sqlite3
import stat
from dataclasses import dataclass
from pathlib import Path

from nsysdiff.errors import TraceError

_SQLITE_MAGIC = b"SQLite format 3\x00"

# Tables of which at least one marks a file as an Nsight Systems export.
_NSYS_MARKERS = frozenset(
    {
        "StringIds",
        "CUPTI_ACTIVITY_KIND_KERNEL",
        "NVTX_EVENTS",
        "TARGET_INFO_GPU",
        "TARGET_INFO_CUDA_GPU",
        "META_DATA_EXPORT",
        "EXPORT_META_DATA",
        "TARGET_INFO_SESSION_START_TIME",
    }
)

KERNEL = "CUPTI_ACTIVITY_KIND_KERNEL"
MEMCPY = "CUPTI_ACTIVITY_KIND_MEMCPY"
MEMSET = "CUPTI_ACTIVITY_KIND_MEMSET"
RUNTIME = "CUPTI_ACTIVITY_KIND_RUNTIME"
DRIVER = "CUPTI_ACTIVITY_KIND_DRIVER"
GRAPH_TRACE = "CUPTI_ACTIVITY_KIND_GRAPH_TRACE"
NVTX = "NVTX_EVENTS"


@dataclass(frozen=True, slots=True)
class Schema:
    """The tables of one export and the columns each has, as the file says."""

    path: str
    tables: dict[str, frozenset[str]]

    def has(self, table: str, *columns: str) -> bool:
        cols = self.tables.get(table)
        return cols is not None and all(c in cols for c in columns)


def _decode(raw: bytes) -> str:
    # Real exports store bytes that are not UTF-8 (TARGET_INFO_SYSTEM_ENV, some names);
    # the default decoder raises on them, so names keep what they can and mark the rest.
    return raw.decode("utf-8", "replace")


def one_line(text: str) -> str:
    """SQLite's error text (and a file name) may hold newlines; an error is one line."""
    return " ".join(text.split())


# What a failed SQLite call can raise: Python decodes SQLite's error text as strict UTF-8,
# and a damaged schema puts the file's own bytes into that text.
DB_ERRORS = (sqlite3.Error, UnicodeDecodeError)

# Reads stop on request: a diff reads its two sides at once (nsysdiff.trace.sides), and when one
# side fails, the other side's queries stop within milliseconds instead of running on for
# minutes. SQLite calls the handler every _STOP_EVERY virtual-machine steps (about a
# thousand times a second); a bound C method (list.__len__) runs no Python frame, so the
# check costs nothing measurable and can't swallow a Ctrl-C meant for the main thread.
_STOPPING: list[int] = []
_STOP_EVERY = 1 << 16


class ReadStopped(TraceError):
    """A read stopped by :func:`stop_reads`: the error to report is the other side's."""


def stop_reads() -> None:
    """Stop every query of this process's open traces (they raise :class:`ReadStopped`)."""
    if not _STOPPING:
        _STOPPING.append(1)


def check_stopped(what: str) -> None:
    """Raise :class:`ReadStopped` once :func:`stop_reads` was called: loops that read many
    saved inputs (hundreds of fingerprints, a run set of thousands of runs) run no SQLite
    query to interrupt, so they ask between inputs."""
    if _STOPPING:
        raise ReadStopped(f"{what}: read stopped")


def resume_reads() -> None:
    _STOPPING.clear()


def db_error(path: Path, e: sqlite3.Error | UnicodeDecodeError) -> TraceError:
    """The error for an SQLite failure met while reading: never swallowed as "absent"."""
    if _STOPPING:
        # Any error once the reads were stopped is the stop: an interrupt that lands while
        # SQLite loads the schema reads "malformed database schema (?)", not "interrupted",
        # and would otherwise pass for a damaged file and win over the other side's error.
        return ReadStopped(one_line(f"{path}: read stopped"))
    detail = str(e)
    if isinstance(e, UnicodeDecodeError) and isinstance(e.object, bytes):
        detail = e.object.decode("utf-8", "replace")
    return TraceError(one_line(f"{path}: corrupt or unreadable SQLite export ({detail})"))


def _head(path: Path) -> tuple[bytes, int]:
    """The first 100 bytes (the SQLite header) and the size of a regular file.

    The file is opened non-blocking and checked with ``fstat`` on the open descriptor, so
    a FIFO, socket or device given as a trace is refused instead of blocking forever, and
    nothing can swap the file between the check and the read.
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        raise TraceError(one_line(f"{path}: no such file")) from None
    except OSError as e:
        raise TraceError(one_line(f"{path}: can't be read ({e.strerror})")) from None
    try:
        st = os.fstat(fd)
        if stat.S_ISDIR(st.st_mode):
            raise TraceError(one_line(f"{path}: is a directory, not an nsys SQLite export"))
        if not stat.S_ISREG(st.st_mode):
            kind = "a pipe, socket or device"
            raise TraceError(one_line(f"{path}: is not a regular file ({kind}); give an nsys SQLite export"))
        return os.pread(fd, 100, 0), st.st_size
    except OSError as e:
        raise TraceError(one_line(f"{path}: can't be read ({e.strerror})")) from None
    finally:
        os.close(fd)


def _check_size(path: Path, head: bytes, size: int) -> None:
    """Refuse a file shorter than its header says: SQLite reads missing pages as zeros.

    A cut file is otherwise read without an error, its last rows silently absent (nsys
    writes the metadata last, so a cut trace loses its version first). The header holds
    the page size and, when valid, the page count, so this costs nothing; a full
    ``PRAGMA quick_check`` costs a scan of every page (see docs/security.md).
    """
    cut = f"{path}: corrupt or truncated SQLite file ({size} bytes"
    if len(head) < 100:
        raise TraceError(one_line(f"{cut}, shorter than its header)"))
    page = int.from_bytes(head[16:18], "big")
    page = 65536 if page == 1 else page
    if page < 512 or page & (page - 1):
        raise TraceError(one_line(f"{path}: corrupt SQLite header (page size {page})"))
    pages = int.from_bytes(head[28:32], "big")
    # The header's page count is valid only while its change counter matches
    # "version-valid-for" (files written by SQLite before 3.7.0 don't keep it).
    if pages and head[24:28] == head[92:96]:
        if size < pages * page:
            raise TraceError(one_line(f"{cut}; its header says {pages} pages of {page} bytes)"))
    elif size % page:
        raise TraceError(one_line(f"{cut}, not a whole number of {page}-byte pages)"))


def connect(path: Path) -> sqlite3.Connection:
    """A read-only connection that can't create, modify or lock the file or its neighbours.

    ``immutable=1`` tells SQLite the file can't change, so it takes no locks and never
    looks for or creates ``-journal``/``-wal``/``-shm`` files beside it. Only a regular
    file whose size matches its header is opened.
    """
    head, size = _head(path)
    if not head:
        raise TraceError(one_line(f"{path}: is empty, not an nsys SQLite export"))
    if not head.startswith(_SQLITE_MAGIC):
        hint = ""
        if path.suffix in (".nsys-rep", ".qdrep"):
            hint = "; export it first: nsys export --type sqlite " + path.name
        raise TraceError(one_line(f"{path}: not an SQLite database{hint}"))
    _check_size(path, head, size)
    uri = path.resolve().as_uri() + "?mode=ro&immutable=1"
    try:
        con = sqlite3.connect(uri, uri=True, check_same_thread=False)
    except DB_ERRORS as e:
        raise TraceError(one_line(f"{path}: can't be opened as SQLite ({e})")) from None
    con.text_factory = _decode
    con.set_progress_handler(_STOPPING.__len__, _STOP_EVERY)
    try:
        # SQLite's advice for files from elsewhere: functions in the file's own schema
        # (views, triggers, defaults) may not have side effects, and every b-tree cell is
        # checked as it is read, so damage stops a scan instead of feeding it garbage.
        con.execute("PRAGMA trusted_schema = OFF")
        con.execute("PRAGMA cell_size_check = ON")
    except DB_ERRORS as e:
        con.close()
        raise db_error(path, e) from None
    return con


def probe(con: sqlite3.Connection, path: Path) -> Schema:
    cols: dict[str, set[str]] = {}
    try:
        # pragma_table_info takes the table name as a bound parameter: no identifier is
        # ever spliced into SQL, whatever a hostile file names its tables.
        for table, column in con.execute(
            "SELECT m.name, p.name FROM sqlite_master m LEFT JOIN pragma_table_info(m.name) p WHERE m.type = 'table'"
        ):
            cols.setdefault(str(table), set())
            if column is not None:
                cols[str(table)].add(str(column))
    except DB_ERRORS as e:
        raise db_error(path, e) from None
    tables = {name: frozenset(c) for name, c in cols.items()}
    if not _NSYS_MARKERS.intersection(tables):
        raise TraceError(
            f"{path}: SQLite file is not an Nsight Systems export "
            "(none of StringIds, CUPTI_ACTIVITY_KIND_*, NVTX_EVENTS, TARGET_INFO_*)"
        )
    return Schema(str(path), tables)
