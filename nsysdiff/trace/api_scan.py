"""The host API census in one pass over the runtime rows, in chunks handed to numpy as text
(:mod:`nsysdiff.trace.text_scan`).

Each chunk's (name id, duration) pairs fold into a histogram of distinct durations per
name with their counts, sorted by (name, duration): the calls, total, minimum and maximum
of a name are its rows' sums and ends, and its exact median two rank lookups. SQLite
neither sorts the calls nor keeps a b-tree keyed per call: a sorted temporary table of
every call cost 20 times the scan of the sync calls it replaced.

Memory holds one chunk and the distinct pairs; past ``_HIST_LIMIT`` pairs the histogram
moves into a temporary table keyed by (name, duration), which spills to disk, and the
figures come from it by SQL (the medians by a running sum over that key's order).
"""

from __future__ import annotations

import sqlite3

import numpy as np

from nsysdiff.trace import text_scan
from nsysdiff.trace.checks import INT64_MAX, BadRows
from nsysdiff.trace.kernel_scan import fold_rows, ints
from nsysdiff.trace.records import IntArray

_HIST_LIMIT = 1 << 20  # distinct (name, duration) pairs held in numpy before they spill
_CHUNK = 1 << 16  # histogram rows per insert when it spills
_TABLE = "temp.nsysdiff_api_hist"


# name id, calls, total, median (the mean of the middle two of an even count, as nsys
# gives it), minimum and maximum
ApiFold = list[tuple[int, int, int, float, int, int]]


def scan(con: sqlite3.Connection, source: str, where: str, flagged: str = "0") -> tuple[ApiFold, int]:
    """Each name id's figures over the calls of ``source`` that ``where`` selects, sorted
    by name id, and how many of those calls the per-row 0/1 expression ``flagged`` marks
    (a check that rides this pass instead of a scan of its own); raises :class:`BadRows`."""
    empty: IntArray = np.empty(0, np.int64)
    keys: list[IntArray] = [empty, empty]
    counts: IntArray = empty
    spilled = False
    total = 0
    marked = 0
    columns = (text_scan.integer("nameId"), text_scan.duration())
    try:
        for (name, dur), (flags,) in text_scan.chunks(con, source, where, columns, (flagged,)):
            marked += flags
            total += text_scan.exact_sum(dur)
            if total > INT64_MAX:  # so no sum below can overflow
                raise BadRows
            chunk_keys, chunk_counts = _distinct(name, dur)
            keys, (counts,) = fold_rows(
                [np.concatenate(p) for p in zip(keys, chunk_keys, strict=True)],
                [np.concatenate((counts, chunk_counts))],
                runs=True,
            )
            if len(counts) > _HIST_LIMIT:
                _spill(con, keys, counts, fresh=not spilled)
                spilled = True
                keys, counts = [empty, empty], empty
        if not spilled:
            return _figures(keys[0], keys[1], counts), marked
        _spill(con, keys, counts, fresh=False)
        return _table_figures(con), marked
    finally:
        if spilled:
            con.execute(f"DROP TABLE IF EXISTS {_TABLE}")


def _distinct(name: IntArray, dur: IntArray) -> tuple[list[IntArray], IntArray]:
    """The chunk's distinct (name, duration) pairs, sorted, and their counts: one sort of
    the pair packed into an int64 (numpy's vectorised sort, several times faster than the
    argsort that sorting several columns together takes) where the ranges allow."""
    lo_name, lo_dur = int(name.min()), int(dur.min())
    width = int(dur.max()) - lo_dur + 1
    if (int(name.max()) - lo_name + 1) * width > 1 << 62:
        keys, (counts,) = fold_rows([name, dur], [np.ones(len(dur), dtype=np.int64)])
        return keys, counts
    key = np.sort((name - lo_name) * width + (dur - lo_dur))
    at = np.flatnonzero(np.concatenate(([True], key[1:] != key[:-1])))
    counts = np.diff(np.append(at, len(key)))
    key = key[at]
    return [key // width + lo_name, key % width + lo_dur], counts


def _figures(name: IntArray, dur: IntArray, n: IntArray) -> ApiFold:
    """Each name's figures from the histogram, sorted by (name, duration)."""
    if not len(name):
        return []
    starts = np.flatnonzero(np.concatenate(([True], name[1:] != name[:-1])))
    last = np.concatenate((starts[1:], [len(name)])) - 1
    calls = np.add.reduceat(n, starts)
    total = np.add.reduceat(n * dur, starts)
    ends = np.cumsum(n)
    first = ends[starts] - n[starts]
    lo = dur[np.searchsorted(ends, first + (calls - 1) // 2, side="right")]
    hi = dur[np.searchsorted(ends, first + calls // 2, side="right")]
    return [
        (nm, c, t, (a + b) / 2, mn, mx)
        for nm, c, t, a, b, mn, mx in zip(
            ints(name[starts]),
            ints(calls),
            ints(total),
            ints(lo),
            ints(hi),
            ints(dur[starts]),
            ints(dur[last]),
            strict=True,
        )
    ]


def _spill(con: sqlite3.Connection, keys: list[IntArray], n: IntArray, *, fresh: bool) -> None:
    """Add (name, duration, count) rows to the histogram table (made anew when ``fresh``)."""
    if fresh:
        con.execute(f"DROP TABLE IF EXISTS {_TABLE}")
        con.execute(
            f"CREATE TABLE {_TABLE} (name INTEGER, dur INTEGER, n INTEGER, PRIMARY KEY (name, dur)) WITHOUT ROWID"
        )
    # In slices: the Python rows of one slice at a time, not of the whole histogram.
    for at in range(0, len(n), _CHUNK):
        part = slice(at, at + _CHUNK)
        con.executemany(
            f"INSERT INTO {_TABLE} VALUES (?, ?, ?) ON CONFLICT (name, dur) DO UPDATE SET n = n + excluded.n",
            zip(ints(keys[0][part]), ints(keys[1][part]), ints(n[part]), strict=True),
        )


def _table_figures(con: sqlite3.Connection) -> ApiFold:
    """The same figures from the spilled histogram: the rows in its key's order, each with
    the calls before it, so that only the rows holding the middle ranks reach Python."""
    sums = con.execute(
        f"SELECT name, sum(n), sum(n * dur), min(dur), max(dur) FROM {_TABLE} GROUP BY name ORDER BY name"
    ).fetchall()
    middle: dict[int, list[tuple[int, int, int]]] = {}
    for name, dur, before, n in con.execute(
        "SELECT name, dur, before, n FROM (SELECT name, dur, n, "
        "sum(n) OVER (PARTITION BY name ORDER BY dur ROWS UNBOUNDED PRECEDING) - n AS before, "
        f"sum(n) OVER (PARTITION BY name) AS calls FROM {_TABLE}) "
        "WHERE before <= calls / 2 AND before + n > (calls - 1) / 2"
    ):
        middle.setdefault(int(name), []).append((int(before), int(n), int(dur)))
    out = []
    for name, calls, total, lo, hi in sums:
        rows = middle[int(name)]
        a, b = (next(d for before, n, d in rows if before <= r < before + n) for r in ((calls - 1) // 2, calls // 2))
        out.append((int(name), int(calls), int(total), (a + b) / 2, int(lo), int(hi)))
    return out
