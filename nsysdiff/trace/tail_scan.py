"""The tails of the kernel table: per kernel and launch shape, the median call and how many
calls took longer than a few multiples of it, counted exactly (``ShapeTail``).

A tail is a population's: calls of one kernel launched with another grid (a prefill at
another batch, a new caller) are another population, so the counts are per (name, shape).
One chunked pass in rowid order (:mod:`nsysdiff.trace.text_scan`) folds the launches into
a histogram of distinct durations per (name, shape) in numpy (GPU durations repeat: the
histogram is far smaller than the launches); its cumulative counts give each median and
the calls beyond each multiple exactly. One row per (name, shape) reaches Python.
"""

from __future__ import annotations

import numpy as np

from nsysdiff.trace import schema as s
from nsysdiff.trace import text_scan
from nsysdiff.trace.checks import RowRules
from nsysdiff.trace.connection import TraceConnection
from nsysdiff.trace.kernel_scan import fold_rows
from nsysdiff.trace.names import SHAPE_COLS
from nsysdiff.trace.records import TAIL_MIN_CALLS, TAIL_MULTIPLES, WHOLE, IntArray, Selection, ShapeTail

# Histogram rows held in numpy before they are folded again; when folding leaves more than
# half of them (durations that hardly repeat), the scan is made in SQLite instead, whose
# sorter spills to disk.
HIST_LIMIT = 1 << 20


def _packed(cols: set[str], names: tuple[str, ...], bits: tuple[int, ...]) -> str:
    """SQL packing launch dimensions into one integer, -1 when one is out of its range
    (CUDA's: grid X below 2^31, grid Y and Z below 2^16, a block's below 2^11)."""
    values = [f'coalesce("{c}", 0)' if c in cols else "0" for c in names]
    inside = " AND ".join(f"{v} BETWEEN 0 AND {(1 << b) - 1}" for v, b in zip(values, bits, strict=True))
    shifts = [sum(bits[i + 1 :]) for i in range(len(bits))]
    packed = " + ".join(f"({v} << {sh})" if sh else v for v, sh in zip(values, shifts, strict=True))
    return f"CASE WHEN {inside} THEN {packed} ELSE -1 END"


def _unpacked(value: int, bits: tuple[int, ...]) -> list[int]:
    out = []
    for b in reversed(bits):
        out.append(value & ((1 << b) - 1))
        value >>= b
    return out[::-1]


_GRID_BITS = (31, 16, 16)
_BLOCK_BITS = (11, 11, 11)


def _shape(grid: int, block: int) -> str:
    """The shape key of a packed grid and block: ``"gridX,gridY,gridZ,blockX,blockY,blockZ"``."""
    return ",".join(map(str, (*_unpacked(grid, _GRID_BITS), *_unpacked(block, _BLOCK_BITS))))


class TailReader(TraceConnection):
    """The tail scan."""

    def kernel_tails(self, sel: Selection = WHOLE) -> tuple[ShapeTail, ...]:
        """The launch shapes of ``sel``'s kernels with at least TAIL_MIN_CALLS calls, by
        name and shape."""
        if not self.schema.has(s.KERNEL, "start", "end"):
            return ()
        cols = set(self.schema.tables[s.KERNEL])
        name_col = "demangledName" if "demangledName" in cols else "shortName"
        if name_col not in cols:
            return ()
        where = self._where(s.KERNEL, sel)
        # Four columns, not eight: reading them is most of the pass.
        columns = (
            f"coalesce({name_col}, -1)",
            _packed(cols, SHAPE_COLS[:3], _GRID_BITS),
            _packed(cols, SHAPE_COLS[3:], _BLOCK_BITS),
            text_scan.duration(),
        )
        parts: list[tuple[list[IntArray], IntArray]] = []
        held = 0
        with self.scanning(RowRules(s.KERNEL, nullable=(name_col,)), where):
            for chunk, _ in text_scan.chunks(self.con, s.KERNEL, where, columns):
                # A chunk folds to its distinct (name, shape, duration) rows: GPU durations repeat.
                keys, (counts,) = fold_rows(list(chunk), [np.ones(len(chunk[0]), dtype=np.int64)])
                parts.append((keys, counts))
                held += len(counts)
                if held >= HIST_LIMIT:
                    parts = [self._merged(parts)]
                    held = len(parts[0][1])
                    if 2 * held >= HIST_LIMIT:
                        del parts
                        return self._in_sqlite(columns, where, name_col)
        if not parts:
            return ()
        # Sorted by name, shape, then duration: each (name, shape) is one run, fastest first.
        keys, counts = self._merged(parts)
        return self._tails(keys, counts)

    def _in_sqlite(self, columns: tuple[str, ...], where: str, name_col: str) -> tuple[ShapeTail, ...]:
        """The same counts by a window over the launches sorted by duration in SQLite."""
        name, grid, block, dur = columns
        over = ", ".join(f"sum(d.dur * 2 > {round(2 * m)} * m.med)" for m in TAIL_MULTIPLES)
        launches = f"SELECT {name} AS nm, {grid} AS g, {block} AS b, {dur} AS dur FROM {s.KERNEL} WHERE {where}"
        sql = (
            f"WITH d AS ({launches}), "
            f"big AS (SELECT nm, g, b, count(*) AS n FROM d GROUP BY nm, g, b HAVING n >= {TAIL_MIN_CALLS}), "
            "r AS (SELECT d.nm, d.g, d.b, d.dur, big.n, "
            "row_number() OVER (PARTITION BY d.nm, d.g, d.b ORDER BY d.dur) AS i FROM d JOIN big USING (nm, g, b)), "
            "m AS (SELECT nm, g, b, n, dur AS med FROM r WHERE i = (n + 1) / 2) "
            f"SELECT m.nm, m.g, m.b, m.n, sum(d.dur), m.med, {over} FROM d JOIN m USING (nm, g, b) "
            "GROUP BY m.nm, m.g, m.b"
        )
        with self.scanning(RowRules(s.KERNEL, nullable=(name_col,)), where):
            rows = [tuple(int(v) for v in r) for r in self.query(sql)]  # type: ignore[call-overload]
        names = self.strings([r[0] for r in rows if r[0] >= 0])
        out = [
            ShapeTail(names[nm], _shape(g, b), n, total, med, tuple(counts))
            for nm, g, b, n, total, med, *counts in rows
            if min(nm, g, b) >= 0
        ]
        return tuple(sorted(out, key=lambda t: (t.name, t.shape)))

    @staticmethod
    def _merged(parts: list[tuple[list[IntArray], IntArray]]) -> tuple[list[IntArray], IntArray]:
        keys = [np.concatenate([k[i] for k, _ in parts]) for i in range(len(parts[0][0]))]
        folded, (counts,) = fold_rows(keys, [np.concatenate([c for _, c in parts])], runs=True)
        return folded, counts

    def _tails(self, keys: list[IntArray], counts: IntArray) -> tuple[ShapeTail, ...]:
        group, dur = keys[:-1], keys[-1]
        change = np.zeros(len(dur), dtype=bool)
        change[0] = True
        for c in group:
            change[1:] |= c[1:] != c[:-1]
        starts = np.flatnonzero(change)
        ends = np.append(starts[1:], len(dur))
        out = []
        names = self.strings([int(group[0][a]) for a in starts if group[0][a] >= 0])
        for a, b in zip(starts.tolist(), ends.tolist(), strict=True):
            n = int(counts[a:b].sum())
            # A name or launch dimension out of range (an impossible row) has no shape to count in.
            if n < TAIL_MIN_CALLS or min(int(c[a]) for c in group) < 0:
                continue
            cum = np.cumsum(counts[a:b])
            d = dur[a:b]
            # The median call: the (n + 1) // 2-th fastest (the lower middle one of an even n).
            med = int(d[np.searchsorted(cum, (n + 1) // 2)])
            # Calls longer than m x med: those after the last duration at or under it.
            at = [int(np.searchsorted(d * 2, round(2 * m) * med, side="right")) for m in TAIL_MULTIPLES]
            beyond = tuple(n - int(cum[i - 1]) if i else n for i in at)
            out.append(
                ShapeTail(
                    names[int(group[0][a])],
                    _shape(int(group[1][a]), int(group[2][a])),
                    n,
                    int(np.dot(d, counts[a:b])),
                    med,
                    beyond,
                )
            )
        return tuple(sorted(out, key=lambda t: (t.name, t.shape)))
