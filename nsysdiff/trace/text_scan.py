"""Passes over a table in rowid ranges whose integer columns reach numpy as text: one
``group_concat`` per column and chunk, parsed at C speed (as :mod:`nsysdiff.trace.kernel_scan`
reads the kernels).

The columns are checked in the same pass, without a ``typeof`` call per value: a column
given through :func:`duration` or :func:`non_negative` is NULL (so the chunk's count falls
short) when its value is out of range, which SQLite's ordering of types makes true of a
TEXT or BLOB value, and a REAL value shows in the text (:func:`~nsysdiff.trace.checks.ints_ok`).
A failed check raises :class:`~nsysdiff.trace.kernel_scan.BadRows` for the reader's
diagnosis.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator, Sequence

import numpy as np

from nsysdiff.trace.checks import INT64_MAX, ints_ok
from nsysdiff.trace.kernel_scan import BadRows
from nsysdiff.trace.records import IntArray

ROWS = 1 << 18  # rows per chunk: a few MB of text, whatever the table's size


def duration(alias: str = "") -> str:
    """``end - start`` of a row, NULL unless ``0 <= start <= end <= INT64_MAX``."""
    a = f"{alias}." if alias else ""
    return f'CASE WHEN {a}start BETWEEN 0 AND {a}"end" AND {a}"end" <= {INT64_MAX} THEN {a}"end" - {a}start END'


def non_negative(column: str) -> str:
    """``column``, NULL unless ``0 <= column <= INT64_MAX``."""
    return f"CASE WHEN {column} BETWEEN 0 AND {INT64_MAX} THEN {column} END"


def chunks(
    con: sqlite3.Connection, source: str, where: str, columns: Sequence[str], sums: Sequence[str] = ()
) -> Iterator[tuple[list[IntArray], list[int]]]:
    """The ``columns`` (integer expressions) of each chunk of the rows of ``source`` that
    ``where`` selects, in rowid order, as arrays, and the chunk's ``sums`` (integer
    expressions summed in SQL: checks that ride the pass); raises :class:`BadRows` when a
    column holds a NULL or a value that is not a plain integer.

    A chunk is a rowid range (each end found by one walk of the table's key), which SQLite
    reads with no subquery: a third of the cost of paging with ORDER BY and LIMIT.
    """
    texts = ", ".join(f"group_concat({c})" for c in columns)
    summed = "".join(f", coalesce(sum({e}), 0)" for e in sums)
    sql = f"SELECT count(*), {texts}{summed} FROM {source} WHERE rowid > ? AND rowid <= ? AND ({where})"
    step = f"SELECT rowid FROM {source} WHERE rowid > ? ORDER BY rowid LIMIT 1 OFFSET {ROWS - 1}"
    lo = -(1 << 63)
    while True:
        bound = con.execute(step, (lo,)).fetchone()
        hi = INT64_MAX if bound is None else int(bound[0])
        n, *values = con.execute(sql, (lo, hi)).fetchone()
        count = int(n)
        if count:
            found = values[: len(columns)]
            if not all(ints_ok(t, count) for t in found):
                raise BadRows
            yield [np.fromstring(t, dtype=np.int64, sep=",") for t in found], [int(v) for v in values[len(columns) :]]
        if bound is None:
            return
        lo = hi
