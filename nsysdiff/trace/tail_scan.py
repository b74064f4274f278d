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

_FOLD_ROWS = 1 << 20  # histogram rows held before they are folded again


class TailReader(TraceConnection):
    """The tail scan."""

    def kernel_tails(self, sel: Selection = WHOLE) -> tuple[ShapeTail, ...]:
        """The launch shapes of ``sel``'s kernels with at least TAIL_MIN_CALLS calls, by
        name and shape."""
        if not self.schema.has(s.KERNEL, "start", "end"):
            return ()
        cols = self.schema.tables[s.KERNEL]
        name_col = "demangledName" if "demangledName" in cols else "shortName"
        if name_col not in cols:
            return ()
        where = self._where(s.KERNEL, sel)
        columns = (
            f"coalesce({name_col}, -1)",
            *(text_scan.non_negative(f'coalesce("{c}", 0)') if c in cols else "0" for c in SHAPE_COLS),
            text_scan.duration(),
        )
        keys: list[IntArray] = [np.empty(0, dtype=np.int64)] * len(columns)
        counts = np.empty(0, dtype=np.int64)
        with self.scanning(RowRules(s.KERNEL, nullable=(name_col,)), where):
            for chunk, _ in text_scan.chunks(self.con, s.KERNEL, where, columns):
                keys = [np.concatenate((k, c)) for k, c in zip(keys, chunk, strict=True)]
                counts = np.concatenate((counts, np.ones(len(chunk[0]), dtype=np.int64)))
                if len(counts) >= _FOLD_ROWS:
                    keys, (counts,) = fold_rows(keys, [counts])
        if not len(counts):
            return ()
        # Sorted by name, shape, then duration: each (name, shape) is one run, fastest first.
        keys, (counts,) = fold_rows(keys, [counts])
        return self._tails(keys, counts)

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
            if n < TAIL_MIN_CALLS or group[0][a] < 0:
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
                    ",".join(str(int(c[a])) for c in group[1:]),
                    n,
                    int(np.dot(d, counts[a:b])),
                    med,
                    beyond,
                )
            )
        return tuple(sorted(out, key=lambda t: (t.name, t.shape)))
