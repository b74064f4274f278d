"""Passes over a table in rowid ranges whose integer columns reach numpy as text: one
``group_concat`` per column and chunk, parsed at C speed (the kernel pass of
:mod:`nsysdiff.trace.kernel_scan`, the host API census, the copies of a whole read).

The columns are checked in the same pass, without a ``typeof`` call per value: a column
given through :func:`duration` or :func:`non_negative` is NULL (so the chunk's count falls
short) when its value is out of range, which SQLite's ordering of types makes true of a
TEXT or BLOB value, and a REAL value shows in the text (:func:`~nsysdiff.trace.checks.ints_ok`).
A failed check raises :class:`~nsysdiff.trace.checks.BadRows` for the reader's
diagnosis.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator, Sequence

import numpy as np

from nsysdiff.trace.checks import INT64_MAX, BadRows, ints_ok
from nsysdiff.trace.records import IntArray

ROWS = 1 << 18  # rows per chunk: a few MB of text, whatever the table's size


def duration(alias: str = "") -> str:
    """``end - start`` of a row, NULL unless ``0 <= start <= end <= INT64_MAX``."""
    a = f"{alias}." if alias else ""
    return f'CASE WHEN {a}start BETWEEN 0 AND {a}"end" AND {a}"end" <= {INT64_MAX} THEN {a}"end" - {a}start END'


def non_negative(column: str) -> str:
    """``column``, NULL unless ``0 <= column <= INT64_MAX``."""
    return f"CASE WHEN {column} BETWEEN 0 AND {INT64_MAX} THEN {column} END"


def integer(column: str) -> str:
    """``column``, NULL unless it is a number: TEXT and BLOB values sort above every number,
    so a BLOB whose bytes spell digits (``x'3132'``) can't pass as the integer its text reads."""
    return f"CASE WHEN {column} <= {INT64_MAX} THEN {column} END"


def exact_sum(values: IntArray) -> int:
    """The exact sum of a chunk's non-negative int64 values, as a Python integer: the high
    and low 32 bits summed apart, neither of which can overflow int64 within ``ROWS``
    values (a float64 sum rounds 2^63 + 382 down to below int64's end)."""
    return (int(np.sum(values >> 32)) << 32) + int(np.sum(values & 0xFFFFFFFF))


def chunks(
    con: sqlite3.Connection, source: str, where: str, columns: Sequence[str], sums: Sequence[str] = ()
) -> Iterator[tuple[list[IntArray], list[int]]]:
    """The ``columns`` (integer expressions) of each chunk of the rows of ``source`` that
    ``where`` selects, in rowid order, as arrays, and the chunk's ``sums`` (integer
    expressions summed in SQL: checks that ride the pass); raises :class:`BadRows` when a
    column holds a NULL or a value that is not a plain integer.

    A chunk is a rowid range, which SQLite reads with no subquery: a third of the cost of
    paging with ORDER BY and LIMIT. Rowids are distinct integers, so a range of ``ROWS``
    rowids holds at most ``ROWS`` rows: a whole table (``where`` is ``1``) is read in such
    ranges, as long as they come back at least half full (nsys numbers rows from 1 up). A
    filtered read, or a table whose rowids leave gaps, finds the end of each range by a
    walk of ``ROWS`` rowids along the table's key instead (a tenth of the pass's cost).
    """
    texts = ", ".join(f"group_concat({c})" for c in columns)
    summed = "".join(f", coalesce(sum({e}), 0)" for e in sums)
    sql = f"SELECT count(*), {texts}{summed} FROM {source} WHERE rowid > ? AND rowid <= ? AND ({where})"
    step = f"SELECT rowid FROM {source} WHERE rowid > ? ORDER BY rowid LIMIT 1 OFFSET {ROWS - 1}"
    lo, top = -(1 << 63), INT64_MAX
    dense = where == "1"
    if dense:
        # Two subqueries: each is one descent of the key, where min() and max() together scan.
        ((first, last),) = con.execute(
            f"SELECT (SELECT min(rowid) FROM {source}), (SELECT max(rowid) FROM {source})"
        ).fetchall()
        if first is None:
            return
        lo, top = max(lo, int(first) - 1), int(last)
    while True:
        if dense:
            hi = min(lo + ROWS, top)
        else:
            bound = con.execute(step, (lo,)).fetchone()
            hi = top if bound is None else int(bound[0])
        n, *values = con.execute(sql, (lo, hi)).fetchone()
        count = int(n)
        if count:
            found = values[: len(columns)]
            if not all(ints_ok(t, count) for t in found):
                raise BadRows
            # Checked to be plain integers above, so numpy's parser reads every one.
            arrays = [np.fromstring(t, dtype=np.int64, sep=",") for t in found]
            if any(len(a) != count for a in arrays):
                raise BadRows
            yield arrays, [int(v) for v in values[len(columns) :]]
        if hi >= top:
            return
        dense = dense and count >= ROWS // 2
        lo = hi
