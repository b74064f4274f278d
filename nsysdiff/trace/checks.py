"""Impossible rows: what nsys guarantees of a table's values, and the error when a file breaks it.

nsys writes integer nanoseconds with ``0 <= start <= end``, integer ids and non-negative
sizes. A damaged or hand-made file can hold NULL, REAL, TEXT or BLOB values anywhere
(SQLite keeps any type in any column), and a reader that trusted it would sum a negative
kernel time or crash numpy's parser. Every scan that sums or parses such columns checks
its own rows in the same pass:

- aggregate scans append :meth:`RowRules.sql` (two aggregates: a count of impossible
  rows and the summed duration as a float, which never overflows) to their SELECT list;
- the bulk ``group_concat`` scan of the kernel table, where even those aggregates would
  double the cost, checks the text SQLite hands over with :func:`ints_ok`, and the
  parsed intervals itself as it folds them (``trace/kernel_scan.py``).

Only when a check fails does the reader run :meth:`RowRules.diagnosis_sql`, a slower query
that counts each kind of bad row and finds the first rowid, for the error message. The
checks live here, apart from the queries, so that a restructured reader keeps them.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import cast

import numpy as np

from nsysdiff import units as u
from nsysdiff.errors import TraceError
from nsysdiff.trace.schema import one_line

CHECKS = 2  # values RowRules.sql adds to a query's result row
# The runtime and driver calls through which GPU work is attributed to ranges (those with
# a correlation id), and the ids they must hold as integers besides their times: checked
# once per reader, by the host API census's pass where it reads the whole runtime table.
LAUNCHING = "correlationId IS NOT NULL AND correlationId != 0"
CALL_IDS = ("globalTid", "correlationId")
INT64_MAX = (1 << 63) - 1
_END = '"end"'
_INT_LIST = re.compile(rb"-?[0-9]+(?:,-?[0-9]+)*")
_COMMA, _ZERO = ord(","), ord("0")


@dataclass(frozen=True, slots=True)
class RowRules:
    """What every row of ``table`` must hold for the reader to use it."""

    table: str
    ids: tuple[str, ...] = ()  # integers
    nullable: tuple[str, ...] = ()  # integers or NULL
    sizes: tuple[str, ...] = ()  # non-negative integers
    times: bool = True  # integer start and end, 0 <= start <= end
    alias: str = ""  # the table's alias in the query, if any

    def _col(self, name: str) -> str:
        return f"{self.alias}.{name}" if self.alias else name

    def _integers(self) -> tuple[str, ...]:
        return (("start", _END) if self.times else ()) + self.ids + self.sizes

    def _wrong_type(self) -> list[str]:
        return [f"typeof({self._col(c)}) != 'integer'" for c in self._integers()] + [
            f"typeof({self._col(c)}) NOT IN ('integer', 'null')" for c in self.nullable
        ]

    def _wrong_value(self) -> list[str]:
        out = [f"{self._col(c)} < 0" for c in self.sizes]
        if self.times:
            out += [f"{self._col('start')} < 0", f"{self._col(_END)} < {self._col('start')}"]
        return out

    def _total(self) -> str:
        return f"total({self._col(_END)} - {self._col('start')})" if self.times else "0"

    @property
    def columns(self) -> str:
        return ", ".join(c.strip('"') for c in self._integers() + self.nullable)

    def sql(self) -> str:
        """The CHECKS aggregates to append to a scan's SELECT list."""
        bad = " OR ".join(self._wrong_type() + self._wrong_value()) or "0"
        return f"coalesce(sum({bad}), 0), {self._total()}"

    def row_sql(self) -> str:
        """The per-row form of :meth:`sql`'s count (a 0/1 flag), for a query that
        accumulates its rows itself (an upsert) instead of aggregating them; such a query
        keeps its integer sums, which SQLite turns REAL when they overflow."""
        bad = " OR ".join(self._wrong_type() + self._wrong_value()) or "0"
        return f"coalesce({bad}, 0)"

    def diagnosis_sql(self, where: str) -> str:
        """Counts and first rowids of each kind of bad row among those ``where`` selects."""
        typ = " OR ".join(self._wrong_type()) or "0"
        val = f"NOT ({typ}) AND ({' OR '.join(self._wrong_value()) or '0'})"
        rowid = self._col("rowid")
        frm = f"{self.table} {self.alias}" if self.alias else self.table
        return (
            f"SELECT coalesce(sum({typ}), 0), min(CASE WHEN {typ} THEN {rowid} END), "
            f"coalesce(sum({val}), 0), min(CASE WHEN {val} THEN {rowid} END), "
            f"{self._total()} FROM {frm} WHERE {where}"
        )


class BadRows(Exception):
    """A bulk scan met a value that is not a plain integer, or an impossible row."""


def fine(checks: Sequence[Sequence[object]]) -> bool:
    """Whether the :meth:`RowRules.sql` values of every result row show no bad row."""
    bad = 0
    total = 0.0
    for c in checks:
        bad += int(c[0])  # type: ignore[call-overload]
        total += float(c[1])  # type: ignore[arg-type]
    return bad == 0 and total <= INT64_MAX


def diagnosis(path: Path, rules: RowRules, row: Sequence[object]) -> TraceError:
    """The one-line error for the values of :meth:`RowRules.diagnosis_sql`."""
    bad_type, first_type, bad_value, first_value, total = row
    where = f"{path}: {rules.table}:"
    if bad_type:
        rows = u.plural(cast(int, bad_type), "row")
        text = f"{rows} with a NULL or non-integer value in {rules.columns} (first rowid {first_type})"
    elif bad_value:
        rows = u.plural(cast(int, bad_value), "row")
        text = f"{rows} ending before they start, or with a negative start or size (first rowid {first_value})"
    elif float(total) > INT64_MAX:  # type: ignore[arg-type]
        text = f"durations sum to {float(total):.4g} ns, past the int64 range"  # type: ignore[arg-type]
    else:  # the bulk checks saw text that SQLite's typeof() calls an integer (a BLOB)
        text = f"values in {rules.columns} that are not plain integers"
    return TraceError(one_line(f"{where} {text}; the export is damaged"))


def ints_ok(text: bytes | str | None, count: int) -> bool:
    """Whether a ``group_concat`` of a column is ``count`` plain integers.

    A REAL renders with ``.`` or ``e``, TEXT with anything, and a NULL is skipped (so the
    count falls short): a few vectorised passes over the bytes find all three (numpy's
    comparisons run several times faster than ``bytes.count`` or a search for ``,,``).
    """
    if isinstance(text, str):
        text = text.encode()
    if not text:
        return count == 0
    a = np.frombuffer(text, dtype=np.uint8)
    commas = a == _COMMA
    if int(np.count_nonzero(commas)) + 1 != count:
        return False
    # uint8 wraps below "0", so only digits come out under 10.
    if int(np.count_nonzero((a - _ZERO) < 10)) + count - 1 == len(a):
        # Digits and commas only: every integer is there unless a comma starts, ends or doubles.
        return not (commas[0] or commas[-1] or bool(np.any(commas[1:] & commas[:-1])))
    return _INT_LIST.fullmatch(text) is not None  # negatives (a coalesce's -1) or garbage
