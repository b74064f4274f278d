"""One pass over the kernel rows in rowid order, in chunks handed to numpy as text
(:mod:`nsysdiff.trace.text_scan`).

A chunk of launches comes out of SQLite as four ``group_concat`` texts (name, device,
start, end), which numpy parses at C speed; the per-(name, device) totals, the histogram of
distinct durations per name (for exact quantiles) and the busy union per device are then
folded chunk by chunk. SQLite neither sorts the launches nor keeps a b-tree keyed per
launch, so this costs about a plain scan, where the window query of the busy union and the
per-launch upsert of the histogram each sorted or probed every launch.

Memory holds one chunk, the groups and the distinct durations; past ``_HIST_LIMIT``
distinct (name, duration) pairs the histogram moves into SQLite's temporary table (which
spills to disk), as the upsert reader kept it. The busy union needs each device's launches
in start order: nsys writes them so, and the scan checks it; a file that breaks it gets the
window query instead (``KernelScan.devices`` is None).

The rows are checked in the same pass: the texts must be plain integers (:func:`~nsysdiff.trace.checks.ints_ok`:
a REAL, TEXT, BLOB or NULL shows in the text or in the count), and the intervals possible,
``0 <= start <= end`` with the durations of the whole scan summing inside int64. The
interval check is written into :func:`scan` rather than shared: it reuses the durations
the fold needs anyway, and its sum runs across chunks. A failed check raises
:class:`BadRows` for the reader's diagnosis.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from typing import cast

import numpy as np

from nsysdiff.trace import text_scan
from nsysdiff.trace.checks import INT64_MAX, BadRows
from nsysdiff.trace.records import QUANTILE_GRID, DeviceRow, FloatArray, IntArray

_HIST_LIMIT = 1 << 20  # distinct (name, duration) pairs held in numpy before they spill
_CHUNK = 1 << 16  # histogram rows per insert when it spills
_NO_REACH = np.iinfo(np.int64).min


@dataclass(frozen=True)
class KernelScan:
    """What the pass found: groups by (name id, device), sorted; their quantiles by name."""

    names: IntArray  # name id of each group
    devices_of: IntArray  # device of each group
    calls: IntArray
    total_ns: IntArray
    quantiles: dict[int, FloatArray]  # by name id
    devices: tuple[DeviceRow, ...] | None  # None: launches out of start order on a device
    spilled: bool  # the histogram went to temp.nsysdiff_hist


def percentile_ranks(n: IntArray) -> tuple[IntArray, IntArray, FloatArray]:
    """For samples of sizes ``n``: the 0-based ranks of the order statistics that
    ``np.percentile`` (linear) interpolates between at each QUANTILE_GRID point, and the
    weight of the upper one: arrays of shape (len(n), len(QUANTILE_GRID))."""
    q = np.true_divide(np.array(QUANTILE_GRID), 100)
    virtual = (n[:, None] - 1) * q[None, :]
    lo = np.floor(virtual)
    gamma = virtual - lo
    lo = lo.astype(np.int64)
    hi = np.minimum(lo + 1, n[:, None] - 1)
    return np.minimum(lo, n[:, None] - 1), hi, gamma


def lerp(a: FloatArray, b: FloatArray, t: FloatArray) -> FloatArray:
    """numpy's own interpolation (``numpy.lib._function_base_impl._lerp``), to the bit."""
    diff = b - a
    out: FloatArray = a + diff * t
    np.subtract(b, diff * (1 - t), out=out, where=t >= 0.5)
    return out


def _key(cols: list[IntArray]) -> IntArray | None:
    """One int64 per row that orders as the columns do together (first column first), or
    None when their ranges are too wide to pack into one."""
    lows = [int(c.min()) for c in cols]
    widths = [int(c.max()) - lo + 1 for c, lo in zip(cols, lows, strict=True)]
    size = 1
    for w in widths:
        size *= w
    if size > 1 << 62:
        return None
    key = cols[0] - lows[0]
    for c, lo, w in zip(cols[1:], lows[1:], widths[1:], strict=True):
        key = key * w + (c - lo)
    return key


def fold_rows(
    cols: list[IntArray], values: list[IntArray], *, runs: bool = False
) -> tuple[list[IntArray], list[IntArray]]:
    """Sum ``values`` over equal rows of ``cols``; the result sorted by the columns.
    ``runs``: the rows are a few sorted runs (a stable sort merges them in linear time)."""
    if not len(cols[0]):
        return cols, values
    key = _key(cols)
    if key is None:
        order = np.lexsort(cols[::-1])
        ks = [c[order] for c in cols]
        change = np.zeros(len(order), dtype=bool)
        for c in ks:
            change[1:] |= c[1:] != c[:-1]
    else:
        order = np.argsort(key, kind="stable" if runs else None)
        ks = [c[order] for c in cols]
        k = key[order]
        change = np.empty(len(order), dtype=bool)
        np.not_equal(k[1:], k[:-1], out=change[1:])
    change[0] = True
    at = np.flatnonzero(change)
    return [c[at] for c in ks], [np.add.reduceat(v[order], at) for v in values]


class _Busy:
    """The union of each device's launch intervals, folded over chunks in rowid order."""

    def __init__(self) -> None:
        # device -> [launches, kernel ns, busy ns, first start, last end, reach, last start]
        self.acc: dict[int, list[int]] = {}
        self.in_order = True

    def add(self, dev: IntArray, start: IntArray, end: IntArray) -> None:
        if not self.in_order:
            return
        if int(dev.min()) == int(dev.max()):
            d, s, e = dev, start, end
        else:
            order = np.argsort(dev, kind="stable")  # rowid order within each device
            d, s, e = dev[order], start[order], end[order]
        cuts = np.flatnonzero(d[1:] != d[:-1]) + 1
        for lo, hi in zip(np.concatenate(([0], cuts)), np.concatenate((cuts, [len(d)])), strict=True):
            a = self.acc.setdefault(int(d[lo]), [0, 0, 0, int(s[lo]), int(e[lo]), int(_NO_REACH), int(s[lo])])
            ss, ee = s[lo:hi], e[lo:hi]
            if int(ss[0]) < a[6] or bool(np.any(ss[1:] < ss[:-1])):
                self.in_order = False
                return
            reach = np.maximum.accumulate(ee)
            before = np.concatenate(([a[5]], reach[:-1]))
            gain = ee - np.maximum(ss, before)
            a[0] += hi - lo
            a[1] += int(np.sum(ee - ss))
            a[2] += int(np.sum(gain[gain > 0]))
            a[3] = min(a[3], int(ss.min()))
            a[4] = max(a[4], int(ee.max()))
            a[5] = max(a[5], int(reach[-1]))
            a[6] = int(ss[-1])

    def rows(self) -> tuple[DeviceRow, ...] | None:
        if not self.in_order:
            return None
        return tuple(DeviceRow(dev, *a[:5]) for dev, a in sorted(self.acc.items()))


def scan(con: sqlite3.Connection, source: str, where: str, name_col: str) -> KernelScan:
    """Fold every launch of ``source`` that ``where`` selects; raises :class:`BadRows`."""
    empty: IntArray = np.empty(0, np.int64)
    # (name, device) -> launches, total; (name, duration) -> launches
    g_keys: list[IntArray] = [empty, empty]
    g_vals: list[IntArray] = [empty, empty]
    h_keys: list[IntArray] = [empty, empty]
    h_vals: list[IntArray] = [empty]
    busy = _Busy()
    spilled = False
    total = 0
    # Each column NULL unless a number: a long TEXT in any of them would otherwise be
    # concatenated whole, a chunk of rows at a time, before the check refused it.
    columns = tuple(text_scan.integer(c) for c in (f"coalesce({name_col}, -1)", "deviceId", "start", '"end"'))
    for (name, dev, start, end), _ in text_scan.chunks(con, source, where, columns):
        if int(start.min()) < 0 or bool(np.any(end < start)):
            raise BadRows
        dur = end - start
        total += text_scan.exact_sum(dur)
        if total > INT64_MAX:  # so no sum below can overflow
            raise BadRows
        # One sort of the chunk: its distinct (name, device, duration) rows and their
        # counts, from which the groups and the histogram take their parts.
        (cn, cd, cu), (cc,) = fold_rows([name, dev, dur], [np.ones(len(dur), dtype=np.int64)])
        gk, gv = fold_rows([cn, cd], [cc, cu * cc], runs=True)
        g_keys, g_vals = fold_rows(
            [np.concatenate(p) for p in zip(g_keys, gk, strict=True)],
            [np.concatenate(p) for p in zip(g_vals, gv, strict=True)],
            runs=True,
        )
        hk, hv = fold_rows([cn, cu], [cc])
        h_keys, h_vals = fold_rows(
            [np.concatenate(p) for p in zip(h_keys, hk, strict=True)], [np.concatenate((h_vals[0], hv[0]))], runs=True
        )
        if len(h_keys[0]) > _HIST_LIMIT:
            _spill(con, h_keys, h_vals[0], fresh=not spilled)
            spilled = True
            h_keys, h_vals = [empty, empty], [empty]
        busy.add(dev, start, end)
    if spilled:
        _spill(con, h_keys, h_vals[0], fresh=False)
        quantiles: dict[int, FloatArray] = {}
    else:
        quantiles = _quantiles(h_keys[0], h_keys[1], h_vals[0])
    return KernelScan(g_keys[0], g_keys[1], g_vals[0], g_vals[1], quantiles, busy.rows(), spilled)


def _spill(con: sqlite3.Connection, keys: list[IntArray], n: IntArray, *, fresh: bool) -> None:
    """Add (name, duration, count) rows to temp.nsysdiff_hist (made anew when ``fresh``)."""
    if fresh:
        con.execute("DROP TABLE IF EXISTS temp.nsysdiff_hist")
        con.execute(
            "CREATE TEMP TABLE nsysdiff_hist (name INTEGER, shape TEXT, dev INTEGER, dur INTEGER, "
            "n INTEGER, short INTEGER, mangled INTEGER, PRIMARY KEY (name, shape, dev, dur))"
        )
    # In slices: the Python rows of one slice at a time, not of the whole histogram.
    for at in range(0, len(n), _CHUNK):
        part = slice(at, at + _CHUNK)
        con.executemany(
            "INSERT INTO temp.nsysdiff_hist (name, shape, dev, dur, n) VALUES (?, '', 0, ?, ?) "
            "ON CONFLICT (name, shape, dev, dur) DO UPDATE SET n = n + excluded.n",
            zip(ints(keys[0][part]), ints(keys[1][part]), ints(n[part]), strict=True),
        )


def ints(a: IntArray) -> list[int]:
    """A 1-D integer array as Python ints (numpy's own stubs type ``tolist`` loosely)."""
    return cast("list[int]", a.tolist())


def _quantiles(name: IntArray, dur: IntArray, n: IntArray) -> dict[int, FloatArray]:
    """Exact per-name percentiles (``np.percentile``, linear) from the histogram, sorted
    by (name, duration)."""
    if not len(name):
        return {}
    starts = np.flatnonzero(np.concatenate(([True], name[1:] != name[:-1])))
    per_name = np.add.reduceat(n, starts)
    first = np.concatenate(([0], np.cumsum(per_name)[:-1]))
    lo, hi, gamma = percentile_ranks(per_name)
    ends = np.cumsum(n)
    a = dur[np.searchsorted(ends, first[:, None] + lo, side="right")].astype(np.float64)
    b = dur[np.searchsorted(ends, first[:, None] + hi, side="right")].astype(np.float64)
    values = lerp(a, b, gamma)
    k = len(QUANTILE_GRID)
    return {int(nm): values[i].reshape(k) for i, nm in enumerate(name[starts])}
