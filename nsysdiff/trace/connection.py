"""The reader's base: one export's connection and schema, and the plumbing every table
family's queries go through (errors as one-line messages, impossible rows diagnosed).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TypeVar

from nsysdiff.errors import TraceError
from nsysdiff.trace import schema as s
from nsysdiff.trace.checks import CHECKS, BadRows, RowRules, diagnosis, fine
from nsysdiff.trace.names import LONG_NAME, long_name, name_text
from nsysdiff.trace.records import Selection
from nsysdiff.trace.schema import Schema

_T = TypeVar("_T")

# SQLite's own memory: sorts and temporary tables spill to a temporary file beyond this,
# so no query holds more than a few tens of MB however many rows it sorts.
CACHE_KIB = 32 * 1024


def tune(con: sqlite3.Connection, path: Path) -> None:
    """Settings for every connection to an export: bounded memory, scratch on disk."""
    try:
        con.execute("PRAGMA temp_store = FILE")
        con.execute(f"PRAGMA cache_size = -{CACHE_KIB}")
        con.execute(f"PRAGMA temp.cache_size = -{CACHE_KIB}")
        # Temporary tables are scratch: a failed statement needs no rollback.
        con.execute("PRAGMA temp.journal_mode = OFF")
    except sqlite3.Error as e:
        raise s.db_error(path, e) from None


def split_checks(rows: Sequence[Sequence[object]]) -> tuple[list[tuple[object, ...]], list[tuple[object, ...]]]:
    """(data columns, check columns) of each row of a query that ends with ``RowRules.sql``."""
    return [tuple(r[:-CHECKS]) for r in rows], [tuple(r[-CHECKS:]) for r in rows]


class TraceConnection:
    """One export, through its probed schema: the queries and checks all readers share."""

    def __init__(self, path: Path, con: sqlite3.Connection, schema: Schema) -> None:
        self.path = path
        self.con = con
        self.schema = schema
        self._strings: dict[int, str] = {}
        # (rules, conditions) whose rows a scan has found possible: the file is immutable.
        self.checked: set[tuple[RowRules, str]] = set()
        con.create_function(LONG_NAME, 1, long_name, deterministic=True)

    def query(self, sql: str, params: Sequence[object] = ()) -> list[tuple[object, ...]]:
        try:
            return self.con.execute(sql, params).fetchall()
        except s.DB_ERRORS as e:
            if "integer overflow" in str(e):
                # sum() refuses to wrap; only impossible values get there.
                raise TraceError(
                    s.one_line(f"{self.path}: a sum of durations or sizes overflows int64; the export is damaged")
                ) from None
            raise s.db_error(self.path, e) from None

    def verify(self, rules: RowRules, where: str, checks: Sequence[Sequence[object]]) -> None:
        """Raise on the impossible rows that a scan's ``RowRules.sql`` values show."""
        if not fine(checks):
            raise self.diagnose(rules, where)

    def diagnose(self, rules: RowRules, where: str) -> TraceError:
        (row,) = self.query(rules.diagnosis_sql(where))
        return diagnosis(self.path, rules, row)

    @contextmanager
    def scanning(self, rules: RowRules, where: str) -> Iterator[None]:
        """A bulk pass on the raw connection: a row it refused (:class:`BadRows`, or a BLOB
        where it parses text) gets ``rules``' one-line diagnosis, and a damaged file or a
        read stopped by the other side the reader's one-line error."""
        try:
            yield
        except BadRows:
            raise self.diagnose(rules, where) from None
        except s.DB_ERRORS as e:
            if isinstance(e, UnicodeDecodeError):  # a BLOB in a scanned column
                raise self.diagnose(rules, where) from None
            raise s.db_error(self.path, e) from None

    def without_rowid(self, table: str) -> bool:
        """Whether ``table`` was made WITHOUT ROWID (hand-made: nsys never writes one)."""
        rows = self.query("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = ?", (table,))
        return any(isinstance(r[0], str) and "WITHOUT ROWID" in " ".join(r[0].upper().split()) for r in rows)

    def strings(self, ids: Sequence[int]) -> dict[int, str]:
        """Resolve StringIds ids, fetching each at most once."""
        missing = sorted({int(i) for i in ids if i is not None} - self._strings.keys())
        if missing and self.schema.has("StringIds", "id", "value"):
            for chunk in range(0, len(missing), 500):
                part = missing[chunk : chunk + 500]
                marks = ",".join("?" * len(part))
                for key, value in self.query(f"SELECT id, value FROM StringIds WHERE id IN ({marks})", part):
                    self._strings[int(key)] = name_text(value)  # type: ignore[call-overload]
        for i in missing:
            self._strings.setdefault(i, f"<string {i}>")
        return self._strings

    def _where(self, table: str, sel: Selection, alias: str = "") -> str:
        """SQL conditions that apply ``sel`` to an activity table (kernel, memcpy...)."""
        a = f"{alias}." if alias else ""
        # No "start IS NOT NULL": a NULL time is an impossible row that check_sql counts.
        conds = ["1"]
        if sel.window is not None:
            conds.append(f"{a}start >= {int(sel.window.start_ns)}")
            conds.append(f"{a}start < {int(sel.window.end_ns)}")
        if sel.launches_table is not None and self.schema.has(table, "correlationId", "globalPid"):
            conds.append(
                f"(({a}globalPid >> 24) & 16777215, {a}correlationId) IN "
                f"(SELECT pid, corr FROM temp.{sel.launches_table})"
            )
        return " AND ".join(conds)

    def _enum(self, table: str) -> dict[str, int]:
        if not self.schema.has(table, "id", "name"):
            return {}
        rows = self.query(f"SELECT id, name FROM {table} WHERE typeof(id) = 'integer'")
        return {str(n): int(i) for i, n in rows}  # type: ignore[call-overload]

    def _named(self, rules: RowRules, where: str, scans: Callable[[], _T]) -> _T:
        """Run ``scans``; a sum that overflowed (only impossible rows get there) becomes the
        diagnosis that names the table and the rows."""
        try:
            return scans()
        except TraceError as e:
            if "overflow" in str(e):
                raise self.diagnose(rules, where) from None
            raise

    def execute(self, sql: str) -> None:
        self.query(sql)
