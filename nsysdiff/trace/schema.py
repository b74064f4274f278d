"""Open an export read-only and probe what it holds: tables, columns, versions.

Every other reader function asks the :class:`Schema` before it writes a query, because
nsys exports are lazy (a table with no rows is not created) and change shape across
versions (``EXPORT_META_DATA`` vs ``META_DATA_EXPORT``, optional ``mangledName``...).
"""

from __future__ import annotations

import sqlite3
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


def connect(path: Path) -> sqlite3.Connection:
    """A read-only connection that can't create, modify or lock the file or its neighbours.

    ``immutable=1`` tells SQLite the file can't change, so it takes no locks and never
    looks for or creates ``-journal``/``-wal``/``-shm`` files beside it.
    """
    if not path.exists():
        raise TraceError(f"{path}: no such file")
    if path.is_dir():
        raise TraceError(f"{path}: is a directory, not an nsys SQLite export")
    try:
        with path.open("rb") as fh:
            head = fh.read(len(_SQLITE_MAGIC))
    except OSError as e:
        raise TraceError(f"{path}: can't be read ({e.strerror})") from None
    if not head:
        raise TraceError(f"{path}: is empty, not an nsys SQLite export")
    if head != _SQLITE_MAGIC:
        hint = ""
        if path.suffix in (".nsys-rep", ".qdrep"):
            hint = "; export it first: nsys export --type sqlite " + path.name
        raise TraceError(f"{path}: not an SQLite database{hint}")
    uri = path.resolve().as_uri() + "?mode=ro&immutable=1"
    try:
        con = sqlite3.connect(uri, uri=True, check_same_thread=False)
    except sqlite3.Error as e:
        raise TraceError(f"{path}: can't be opened as SQLite ({e})") from None
    con.text_factory = _decode
    return con


def probe(con: sqlite3.Connection, path: Path) -> Schema:
    try:
        names = [
            r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
        ]
        tables = {
            name: frozenset(r[1] for r in con.execute(f'PRAGMA table_info("{name}")'))
            for name in names
        }
    except sqlite3.DatabaseError as e:
        raise TraceError(f"{path}: corrupt or truncated SQLite file ({e})") from None
    if not _NSYS_MARKERS.intersection(tables):
        raise TraceError(
            f"{path}: SQLite file is not an Nsight Systems export "
            "(none of StringIds, CUPTI_ACTIVITY_KIND_*, NVTX_EVENTS, TARGET_INFO_*)"
        )
    return Schema(str(path), tables)
