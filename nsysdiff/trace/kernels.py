"""The kernel table and the graph launches: per-kernel groups with exact quantiles, the busy
union per device, launch configurations, totals, and how the capture recorded graphs.

Everything is aggregated in SQLite or moved into numpy arrays in bulk, so no Python object
is made per launch and a million-kernel trace reads in about the time of a bare
``GROUP BY`` scan.
"""

from __future__ import annotations

import dataclasses
import math
import sqlite3
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

from nsysdiff.errors import TraceError
from nsysdiff.trace import kernel_scan, text_scan
from nsysdiff.trace import schema as s
from nsysdiff.trace.checks import RowRules
from nsysdiff.trace.connection import TraceConnection, split_checks, tune
from nsysdiff.trace.kernel_scan import ints, lerp, percentile_ranks
from nsysdiff.trace.names import SHAPE_COLS, shape_suffix, suffix
from nsysdiff.trace.records import (
    QUANTILE_GRID,
    WHOLE,
    DeviceRow,
    FloatArray,
    GraphMode,
    GraphStats,
    KernelGroups,
    LaunchConfig,
    Selection,
)
from nsysdiff.trace.schema import Schema

_Rows = list[tuple[object, ...]]
# What a reading of the kernel table gives: groups, busy rows, configuration rows, quantiles.
_Read = tuple[_Rows, _Rows, _Rows, dict[tuple[int, str], FloatArray]]

# Rows per fetch when a result is streamed into numpy: a few MB, whatever the trace size.
_CHUNK = 1 << 16

# The columns of a launch shape, in LaunchConfig's order, and where a configuration row
# holds what follows them: the graph-node flag, then (the raw scan only) the device, the
# short and mangled names and the process id.
CONFIG_COLS = (
    *SHAPE_COLS,
    *("registersPerThread", "staticSharedMemory", "dynamicSharedMemory", "localMemoryPerThread", "localMemoryTotal"),
)
_SHAPE = slice(1, 1 + len(CONFIG_COLS))
_NODE = 1 + len(CONFIG_COLS)
_DEV, _SHORT, _MANGLED, _PID = range(_NODE + 1, _NODE + 5)


def _fetch_beside(path: Path, sqls: Sequence[str]) -> list[list[tuple[object, ...]]]:
    """Run queries on a connection of their own (for a worker thread)."""
    con = s.connect(path)
    try:
        tune(con, path)
        return [con.execute(sql).fetchall() for sql in sqls]
    except s.DB_ERRORS as e:
        if "integer overflow" in str(e):
            raise TraceError(s.one_line(f"{path}: a sum of durations overflows int64")) from None
        raise s.db_error(path, e) from None
    finally:
        con.close()


class KernelReader(TraceConnection):
    """Kernel launches (``CUPTI_ACTIVITY_KIND_KERNEL``) and whole-graph launches (``GRAPH_TRACE``)."""

    def __init__(self, path: Path, con: sqlite3.Connection, schema: Schema) -> None:
        super().__init__(path, con, schema)
        self._node_mode: bool | None = None  # learnt while reading configs, when it was
        self._pairs: list[tuple[object, ...]] | None = None  # likewise

    def has_kernels(self) -> bool:
        return self.schema.has(s.KERNEL, "start", "end")

    def launch_count(self) -> int:
        """Kernel rows plus whole-graph launches: the most steps a trace can hold (every
        step launches GPU work). ``count(*)`` reads the tables' b-trees, not their rows."""
        n = 0
        for table in (s.KERNEL, s.GRAPH_TRACE):
            if self.schema.has(table, "start", "end"):
                ((c,),) = self.query(f"SELECT count(*) FROM {table}")
                n += int(c)  # type: ignore[call-overload]
        return n

    def kernels(self, sel: Selection = WHOLE, *, shapes: bool = False) -> KernelGroups:
        """Kernel launches of ``sel``, aggregated without holding one value per launch.

        With ``shapes``, each (name, grid, block) is a kernel of its own, as ``nsys stats``'
        ``gpukernsum`` groups them: its name gets ``[grid X,Y,Z, block X,Y,Z]`` appended.

        Two scans, each bounded in memory whatever the row count: one pass over the
        launches in rowid order, folded chunk by chunk in numpy (counts, totals, exact
        quantiles and the busy union: :mod:`nsysdiff.trace.kernel_scan`), and beside it the
        distinct launch configurations (with the short and mangled names and the rank
        pairs). With ``shapes``, the older reader: a histogram of the distinct durations per
        (name, shape, device) in a temporary table and a window query for the busy union.
        """
        if not self.schema.has(s.KERNEL, "start", "end", "deviceId"):
            e = np.empty(0, dtype=np.int64)
            return KernelGroups((), (), (), e, e, e, np.empty((0, len(QUANTILE_GRID))), (), ())
        cols = self.schema.tables[s.KERNEL]
        name_col = "demangledName" if "demangledName" in cols else "shortName"
        short_col = "shortName" if "shortName" in cols else name_col
        # Exports from nsys 2022.1 on carry the mangled name; one per demangled name is
        # taken in a scan made anyway (the least id), never in a scan of its own.
        mangled_col = "mangledName" if "mangledName" in cols else "NULL"
        source, where = s.KERNEL, self._where(s.KERNEL, sel)
        checked = where  # the rows' own conditions, for the diagnosis of impossible rows
        rules = RowRules(s.KERNEL, ids=("deviceId",), nullable=(name_col, short_col))
        if sel.launches_table is not None:
            # Filter once into a temporary table rather than probing the selection in
            # each of the three scans below.
            self.execute("DROP TABLE IF EXISTS temp.nsysdiff_k")
            self.execute(f"CREATE TEMP TABLE nsysdiff_k AS SELECT * FROM {s.KERNEL} WHERE {where}")
            source, where = "temp.nsysdiff_k", "1"
        # The launch shape as one text key ('' when launches of a name are one kernel).
        shape = "''"
        if shapes:
            shape = " || ',' || ".join(f'coalesce("{c}", 0)' if c in cols else "0" for c in SHAPE_COLS)
        busy_sql = self._busy_sql(source, where, name_col, short_col, rules)
        if shapes or self.without_rowid(s.KERNEL):
            # A table without rowids (hand-made: nsys never writes one) has no order to
            # scan in chunks; the histogram reader needs none.
            configs_sql = self._configs_sql(name_col, where, source)
            groups, busy_rows, config_rows, quantiles = self._histogram(
                source, where, checked, rules, busy_sql, configs_sql, (name_col, short_col, mangled_col, shape)
            )
        else:
            # The short and mangled names of each (name, device) ride on the configuration
            # scan, whose few distinct rows also check the short names' types.
            configs_sql = self._configs_sql(name_col, where, source, (short_col, mangled_col))
            groups, busy_rows, config_rows, quantiles = self._scanned(
                source, where, checked, rules, busy_sql, configs_sql, name_col
            )
        keys = [(int(g[0]), str(g[1])) for g in groups]  # type: ignore[call-overload]
        shorts = [int(g[3]) for g in groups]  # type: ignore[call-overload]
        mangled_ids = [None if g[6] is None else int(g[6]) for g in groups]  # type: ignore[call-overload]
        strings = self.strings([k[0] for k in keys] + shorts + [i for i in mangled_ids if i is not None])
        demangled = tuple(strings[n] + shape_suffix(sh) for n, sh in keys)
        calls: dict[str, int] = {}
        for key, g in zip(demangled, groups, strict=True):
            calls[key] = calls.get(key, 0) + int(g[4])  # type: ignore[call-overload]
        configs = self._kernel_configs(config_rows, sel == Selection(), calls, (source, where, name_col), shapes)
        return KernelGroups(
            short=tuple(strings[i] for i in shorts),
            demangled=demangled,
            mangled=tuple(None if i is None else strings[i] for i in mangled_ids),
            device=np.array([g[2] for g in groups], dtype=np.int64),
            calls=np.array([g[4] for g in groups], dtype=np.int64),
            total_ns=np.array([g[5] for g in groups], dtype=np.int64),
            quantiles=np.array([quantiles[k] for k in keys]).reshape(len(keys), len(QUANTILE_GRID)),
            devices=tuple(DeviceRow(*(int(x) for x in r)) for r in busy_rows),  # type: ignore[call-overload]
            configs=configs,
        )

    def _histogram(
        self,
        source: str,
        where: str,
        checked: str,
        rules: RowRules,
        busy_sql: str,
        configs_sql: str,
        cols: tuple[str, str, str, str],
    ) -> _Read:
        """Groups, busy rows, configuration rows and quantiles from a histogram of the
        distinct durations per (name, shape, device) in a temporary table (an upsert per
        launch), the busy union from a window query: the reader of launch shapes."""
        name_col, short_col, mangled_col, shape = cols
        with ThreadPoolExecutor(max_workers=1) as pool:
            # The busy and configuration scans run beside the histogram on a second
            # read-only connection (SQLite releases the GIL while it scans); a temporary
            # table lives on this connection only, so a selection runs them in turn.
            beside = None if source != s.KERNEL else pool.submit(_fetch_beside, self.path, (busy_sql, configs_sql))
            if beside is None:
                scans = (busy_sql, configs_sql)
                busy_rows, config_rows = self._named(rules, checked, lambda: [self.query(q) for q in scans])
            self.execute("DROP TABLE IF EXISTS temp.nsysdiff_hist")
            # An upsert per launch into the (small) histogram instead of GROUP BY, which
            # would sort every launch.
            self.execute(
                "CREATE TEMP TABLE nsysdiff_hist (name INTEGER, shape TEXT, dev INTEGER, dur INTEGER, "
                "n INTEGER, short INTEGER, mangled INTEGER, PRIMARY KEY (name, shape, dev, dur))"
            )
            self.execute(
                f"INSERT INTO temp.nsysdiff_hist SELECT coalesce({name_col}, -1), {shape}, coalesce(deviceId, -1), "
                f'"end" - start, 1, coalesce({short_col}, -1), {mangled_col} FROM {source} WHERE {where} '
                "ON CONFLICT (name, shape, dev, dur) DO UPDATE SET n = n + 1, short = min(short, excluded.short), "
                # Scalar min() is NULL when either side is: a launch without one keeps the other's.
                "mangled = coalesce(min(mangled, excluded.mangled), mangled, excluded.mangled)"
            )
            if beside is not None:
                busy_rows, config_rows = self._named(rules, checked, beside.result)
            # The busy scan checked every row; nothing below may meet an impossible one.
            busy_rows, checks = split_checks(busy_rows)
            self.verify(rules, checked, checks)
            groups = self.query(
                "SELECT name, shape, dev, min(short), sum(n), sum(n * dur), min(mangled) FROM temp.nsysdiff_hist "
                "GROUP BY name, shape, dev ORDER BY name, shape, dev"
            )
            quantiles = self._quantiles()
        return groups, busy_rows, config_rows, quantiles

    def _scanned(
        self, source: str, where: str, checked: str, rules: RowRules, busy_sql: str, configs_sql: str, name_col: str
    ) -> _Read:
        """The same from one chunked pass in rowid order (:mod:`nsysdiff.trace.kernel_scan`),
        with the configuration scan beside it."""
        with ThreadPoolExecutor(max_workers=1) as pool:
            beside = None if source != s.KERNEL else pool.submit(_fetch_beside, self.path, (configs_sql,))
            if beside is None:
                config_rows = self.query(configs_sql)
            with self.scanning(rules, checked):
                found = kernel_scan.scan(self.con, source, where, name_col)
            if beside is not None:
                (config_rows,) = beside.result()
        config_rows = self._raw_configs(config_rows)
        if source == s.KERNEL and where == "1":
            self._pairs = list(dict.fromkeys((r[_DEV], r[_PID]) for r in config_rows))
        # Short names: integer or NULL, as RowRules says; checked on the distinct rows.
        if not all(r[_SHORT] is None or type(r[_SHORT]) is int for r in config_rows):
            raise self.diagnose(rules, checked)
        names: dict[tuple[int, int], tuple[int, int | None]] = {}
        for r in config_rows:
            key = (int(r[0]), int(r[_DEV]))  # type: ignore[call-overload]
            short = -1 if r[_SHORT] is None else int(r[_SHORT])  # type: ignore[call-overload]
            m = r[_MANGLED]
            mangled = m if type(m) is int else None
            was = names.get(key)
            if was is not None:
                short = min(short, was[0])
                mangled = was[1] if mangled is None else mangled if was[1] is None else min(mangled, was[1])
            names[key] = (short, mangled)
        groups: _Rows = []
        for nm, dev, calls, total in zip(
            ints(found.names), ints(found.devices_of), ints(found.calls), ints(found.total_ns), strict=True
        ):
            short, mangled = names.get((nm, dev), (-1, None))
            groups.append((nm, "", dev, short, calls, total, mangled))
        if found.devices is not None:
            busy_rows: _Rows = [
                (d.device, d.kernels, d.kernel_ns, d.busy_ns, d.first_ns, d.last_ns) for d in found.devices
            ]
        else:  # launches out of start order on some device: the window query sorts them
            busy_rows, checks = split_checks(self._named(rules, checked, lambda: self.query(busy_sql)))
            self.verify(rules, checked, checks)
        quantiles = self._quantiles() if found.spilled else {(nm, ""): q for nm, q in found.quantiles.items()}
        return groups, busy_rows, config_rows, quantiles

    def _quantiles(self) -> dict[tuple[int, str], FloatArray]:
        """Exact per-name percentiles from the duration histogram, streamed in chunks.

        Rows arrive sorted by (name, duration); the order statistics that ``np.percentile``
        interpolates between are picked by their global rank as the stream passes them,
        so memory holds one chunk, however many distinct durations there are.
        """
        counts = self.query(
            "SELECT name, shape, sum(n) FROM temp.nsysdiff_hist GROUP BY name, shape ORDER BY name, shape"
        )
        if not counts:
            return {}
        names = [(int(c[0]), str(c[1])) for c in counts]  # type: ignore[call-overload]
        n = np.array([c[2] for c in counts], dtype=np.int64)
        first = np.concatenate(([0], np.cumsum(n)[:-1]))
        lo, hi, gamma = percentile_ranks(n)
        want = np.concatenate(((first[:, None] + lo).ravel(), (first[:, None] + hi).ravel()))
        order = np.argsort(want, kind="stable")
        got = np.empty(len(want), dtype=np.int64)
        done, seen = 0, 0
        cur = self.con.execute(
            "SELECT dur, sum(n) FROM temp.nsysdiff_hist GROUP BY name, shape, dur ORDER BY name, shape, dur"
        )
        try:
            while done < len(order):
                chunk = cur.fetchmany(_CHUNK)
                if not chunk:
                    break
                arr = np.array(chunk, dtype=np.int64)
                ends = seen + np.cumsum(arr[:, 1])
                stop = done + int(np.searchsorted(want[order[done:]], ends[-1], side="left"))
                idx = order[done:stop]
                got[idx] = arr[np.searchsorted(ends, want[idx], side="right"), 0]
                done, seen = stop, int(ends[-1])
        except s.DB_ERRORS as e:
            raise s.db_error(self.path, e) from None
        finally:
            cur.close()
        k = len(QUANTILE_GRID)
        a = got[: len(want) // 2].reshape(-1, k).astype(np.float64)
        b = got[len(want) // 2 :].reshape(-1, k).astype(np.float64)
        values = lerp(a, b, gamma)
        return {key: values[i] for i, key in enumerate(names)}

    def _busy_sql(self, source: str, where: str, name_col: str, short_col: str, rules: RowRules) -> str:
        # Launches in start order: each adds what reaches past the furthest end before it
        # (the union of intervals, computed in order by SQLite with bounded memory). The
        # same pass checks the rows (RowRules), on the columns under their own names.
        reach = (
            'max("end") OVER (PARTITION BY deviceId ORDER BY start ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING)'
        )
        names = ", ".join(dict.fromkeys((name_col, short_col)))
        return (
            'SELECT coalesce(deviceId, -1) AS dev, count(*), sum("end" - start), sum(max(0, gain)), '
            f'min(start), max("end"), {rules.sql()} FROM ('
            f'SELECT deviceId, start, "end", {names}, '
            f'"end" - max(start, coalesce({reach}, start)) AS gain FROM {source} WHERE {where}'
            ") GROUP BY dev ORDER BY dev"
        )

    def _configs_sql(
        self, name_col: str, where: str, source: str = s.KERNEL, names: tuple[str, str] | None = None
    ) -> str:
        cols = self.schema.tables[s.KERNEL]
        exprs = [f'coalesce("{c}", 0)' if c in cols else "0" for c in CONFIG_COLS]
        # The same pass answers "are any kernels graph nodes?", which would otherwise
        # cost a scan of its own (0 means "not a node" in pre-2022 NOT NULL columns).
        node = "coalesce(graphNodeId, 0) != 0" if "graphNodeId" in cols else "0"
        # DISTINCT builds a small b-tree of the few configs instead of sorting every row.
        # With ``names`` (the short and mangled name columns), each row also says the
        # device and those names: still a handful of distinct rows.
        if names is None:
            return f"SELECT DISTINCT coalesce({name_col}, -1), {', '.join(exprs)}, {node} FROM {source} WHERE {where}"
        # The raw columns, NULLs made 0 (-1 for ids) on the distinct rows by _raw_configs:
        # a coalesce() per column and launch costs more than the whole DISTINCT's b-tree.
        # The process id makes the (device, process) pairs of the ranks (kernel_pairs).
        raw = [f'"{c}"' if c in cols else "0" for c in CONFIG_COLS]
        pid = "globalPid" if "globalPid" in cols else "NULL"
        return (
            f"SELECT DISTINCT {name_col}, {', '.join(raw)}, {node}, deviceId, {names[0]}, {names[1]}, {pid} "
            f"FROM {source} WHERE {where}"
        )

    @staticmethod
    def _raw_configs(rows: _Rows) -> _Rows:
        """Rows of the raw configuration scan as the coalescing scan gives them (the name and
        device NULL as -1, the configuration NULL as 0), the names and process id after."""
        return [
            (
                -1 if r[0] is None else r[0],
                *(0 if v is None else v for v in r[_SHAPE]),
                r[_NODE],
                -1 if r[_DEV] is None else r[_DEV],
                *r[_SHORT:],
            )
            for r in rows
        ]

    def kernel_pairs(self) -> list[tuple[object, ...]] | None:
        """The distinct (device, globalPid) of the launches, when a whole-trace read has
        seen them (the device NULL as -1); None when none has."""
        return self._pairs

    def _configs(self, rows: list[tuple[object, ...]], whole: bool) -> tuple[tuple[str, LaunchConfig], ...]:
        if whole:
            self._node_mode = any(r[_NODE] for r in rows)
        strings = self.strings([r[0] for r in rows])  # type: ignore[misc]
        out = set()
        for r in rows:
            # A handful of distinct rows: checking them here costs nothing per launch.
            if not all(type(x) is int for x in r[_SHAPE]):
                raise TraceError(
                    s.one_line(
                        f"{self.path}: {s.KERNEL}: a launch configuration holds a non-integer value {r[_SHAPE]!r}"
                    )
                )
            out.add((strings[int(r[0])], _config([int(x) for x in r[_SHAPE]])))  # type: ignore[call-overload]
        return tuple(out)

    def _kernel_configs(
        self, rows: _Rows, whole: bool, calls: dict[str, int], scan: tuple[str, str, str], shapes: bool
    ) -> tuple[tuple[str, LaunchConfig], ...]:
        """The configurations of the kernels (by key) whose launches ``calls`` counts, each
        with its own launches counted."""
        configs = self._configs(rows, whole=whole)
        if shapes:
            # A configuration belongs to the kernel of its own shape.
            named = ((name + suffix(cfg.grid, cfg.block), cfg) for name, cfg in configs)
            configs = tuple(dict.fromkeys((k, cfg) for k, cfg in named if k in calls))
        return self._counted(configs, calls, scan, shapes)

    def _counted(
        self,
        configs: tuple[tuple[str, LaunchConfig], ...],
        calls: dict[str, int],
        scan: tuple[str, str, str],
        shapes: bool,
    ) -> tuple[tuple[str, LaunchConfig], ...]:
        """``configs`` with their launches counted. A kernel of one configuration had all
        its launches with it (the kernel scan counted them); only the kernels of several
        are counted again (:meth:`_count_several`)."""
        by_kernel: dict[str, list[LaunchConfig]] = {}
        for key, cfg in configs:
            by_kernel.setdefault(key, []).append(cfg)
        counted = {(key, cfg): calls.get(key, 0) for key, cfgs in by_kernel.items() if len(cfgs) == 1 for cfg in cfgs}
        if len(counted) < len(configs):
            counted.update(self._count_several(by_kernel, scan, shapes))
        return tuple((key, dataclasses.replace(cfg, calls=counted.get((key, cfg), 0))) for key, cfg in configs)

    def _count_several(
        self, by_kernel: dict[str, list[LaunchConfig]], scan: tuple[str, str, str], shapes: bool
    ) -> dict[tuple[str, LaunchConfig], int]:
        """The launches of each configuration of the kernels of several, from one pass over
        those kernels' launches on the columns that tell their configurations apart
        (:meth:`_tally`)."""

        def base(key: str, cfgs: list[LaunchConfig]) -> str:  # the name without the shape's suffix
            return key[: len(key) - len(suffix(cfgs[0].grid, cfgs[0].block))] if shapes else key

        several = {key: [_values(c) for c in cfgs] for key, cfgs in by_kernel.items() if len(cfgs) > 1}
        names = {base(key, by_kernel[key]) for key in several}
        # Every launch of these names has one of their configurations (the DISTINCT saw them
        # all, in the same selection), so these bounds hold every value the pass meets.
        seen = [_values(c) for key, cfgs in by_kernel.items() if base(key, cfgs) in names for c in cfgs]
        apart = self._apart(list(several.values()), shapes)
        strings = self.strings([])  # every configuration's name id was resolved by _configs
        ids = sorted(i for i, text in strings.items() if text in names)
        source, where, name_col = scan
        digits = [(f"coalesce({name_col}, -1)", ids[0], ids[-1])] + [
            (f'coalesce("{CONFIG_COLS[i]}", 0)', min(v[i] for v in seen), max(v[i] for v in seen)) for i in apart
        ]
        out: dict[tuple[str, LaunchConfig], int] = {}
        for name, *got, n in self._tally(source, where, digits, f"coalesce({name_col}, -1) IN ({_ints(ids)})"):
            at = dict(zip(apart, got, strict=True))
            key = strings[name] + (suffix((at[0], at[1], at[2]), (at[3], at[4], at[5])) if shapes else "")
            for cfg, values in zip(by_kernel.get(key, ()), several.get(key, ()), strict=False):
                if all(values[i] == v for i, v in at.items()):
                    out[(key, cfg)] = out.get((key, cfg), 0) + n
                    break
        return out

    def _apart(self, several: list[list[tuple[int, ...]]], shapes: bool) -> list[int]:
        """The CONFIG_COLS (by index) that differ within a kernel of ``several`` (their
        values); with ``shapes`` the grid and block name the kernel, so they count too."""
        have = self.schema.tables[s.KERNEL]
        differ = {i for values in several for i in range(len(CONFIG_COLS)) if len({v[i] for v in values}) > 1}
        return [i for i, c in enumerate(CONFIG_COLS) if c in have and (i in differ or (shapes and c in SHAPE_COLS))]

    def _tally(self, source: str, where: str, digits: list[tuple[str, int, int]], chosen: str) -> list[tuple[int, ...]]:
        """(the values of ``digits``' columns..., launches) of the launches ``chosen`` keeps.
        A GROUP BY sorts every row it reads (where the configuration scan's DISTINCT keeps a
        b-tree of its few rows): where the columns' ranges (``digits``: column, least, most)
        pack into one integer, a chunked pass counts that integer in numpy instead."""
        widths = [hi - lo + 1 for _, lo, hi in digits]
        if math.prod(widths) > 1 << 62 or self.without_rowid(s.KERNEL):
            cols = ", ".join(col for col, _, _ in digits)
            found = self.query(f"SELECT {cols}, count(*) FROM {source} WHERE ({where}) AND {chosen} GROUP BY {cols}")
            return [tuple(int(x) for x in r) for r in found]  # type: ignore[call-overload]
        packed = "0"
        for (col, lo, _), w in zip(digits, widths, strict=True):
            packed = f"({packed}) * {w} + ({col} - {lo})"
        counts: dict[int, int] = {}
        with self.scanning(RowRules(s.KERNEL), where):
            column = f"CASE WHEN {chosen} THEN {packed} ELSE -1 END"
            for (keys,), _ in text_scan.chunks(self.con, source, where, [column]):
                for k, n in zip(*(ints(a) for a in np.unique(keys[keys >= 0], return_counts=True)), strict=True):
                    counts[k] = counts.get(k, 0) + n
        return [(*_unpack(k, digits, widths), n) for k, n in counts.items()]

    def kernel_time_ns(self, sel: Selection = WHOLE) -> int:
        """Summed kernel duration of the selection (the denominator of coverage)."""
        if not self.schema.has(s.KERNEL, "start", "end"):
            return 0
        rules, where = RowRules(s.KERNEL), self._where(s.KERNEL, sel)
        # A scan of every launch also answers the metadata's "are any kernels graph nodes?",
        # which would otherwise cost one of its own (0 is "not a node" before 2022).
        learn = sel == WHOLE and self._node_mode is None and self.schema.has(s.KERNEL, "graphNodeId")
        node = "max(coalesce(graphNodeId, 0) != 0)" if learn else "NULL"
        ((v, nodes, *checks),) = self.query(
            f'SELECT coalesce(sum("end" - start), 0), {node}, {rules.sql()} FROM {s.KERNEL} WHERE {where}'
        )
        self.verify(rules, where, [checks])
        if learn:
            self._node_mode = bool(nodes)
        return int(v)  # type: ignore[call-overload, no-any-return]

    def graph_totals(self, sel: Selection = WHOLE) -> tuple[int, int]:
        """(launches, total ns) of whole-graph GRAPH_TRACE rows in the selection.

        A graph launch's runtime row shares its correlationId with the GRAPH_TRACE row;
        counting rows of this table alone counts every launch once.
        """
        if not self.schema.has(s.GRAPH_TRACE, "start", "end"):
            return 0, 0
        rules, where = RowRules(s.GRAPH_TRACE), self._where(s.GRAPH_TRACE, sel)
        ((n, total, *checks),) = self.query(
            f'SELECT count(*), coalesce(sum("end" - start), 0), {rules.sql()} FROM {s.GRAPH_TRACE} WHERE {where}'
        )
        self.verify(rules, where, [checks])
        return int(n), int(total)  # type: ignore[call-overload]

    def graph_launches(self) -> tuple[GraphStats, ...]:
        """Whole-graph launches per graph id (GRAPH_TRACE), by id: the only timing a
        graph-mode capture has of the work inside its graphs."""
        if not self.schema.has(s.GRAPH_TRACE, "start", "end", "graphId"):
            return ()
        rules = RowRules(s.GRAPH_TRACE, ids=("graphId",))
        where = self._where(s.GRAPH_TRACE, Selection())
        rows, checks = split_checks(
            self.query(
                f'SELECT graphId, count(*), coalesce(sum("end" - start), 0), {rules.sql()} FROM {s.GRAPH_TRACE} '
                f"WHERE {where} GROUP BY graphId ORDER BY graphId"
            )
        )
        self.verify(rules, where, checks)
        return tuple(GraphStats(int(g), int(n), int(t)) for g, n, t in rows)  # type: ignore[call-overload]

    def _graph_mode(self) -> tuple[GraphMode, int, int]:
        """How the capture recorded graph launches, with their count and time (for the metadata)."""
        launches = total = 0
        if self.schema.has(s.GRAPH_TRACE, "start", "end"):
            launches, total = self.graph_totals()
        node = bool(self._node_mode)
        if self._node_mode is None and self.schema.has(s.KERNEL, "graphNodeId"):
            # Before 2022 the column is NOT NULL with default 0, so 0 means "not a graph node".
            node = bool(
                self.query(f"SELECT 1 FROM {s.KERNEL} WHERE graphNodeId IS NOT NULL AND graphNodeId != 0 LIMIT 1")
            )
        if launches and node:
            return GraphMode.MIXED, launches, total
        if launches:
            return GraphMode.GRAPH, launches, total
        if node:
            # Node mode has no GRAPH_TRACE row: its graph launches are the host's calls and
            # its graph time the GPU time of the nodes, so a graph-mode side has a peer.
            return GraphMode.NODE, *self._node_totals()
        return GraphMode.NONE, launches, total

    def graph_work(self, mode: GraphMode, sel: Selection) -> tuple[int, int]:
        """(graph launches, their GPU ns) in the selection, as a capture of ``mode`` records
        them: GRAPH_TRACE rows, or in node mode (no such row) the work of the nodes."""
        return self._node_totals(sel) if mode is GraphMode.NODE else self.graph_totals(sel)

    def _node_totals(self, sel: Selection = WHOLE) -> tuple[int, int]:
        """(graph launches, GPU ns of graph-node kernels, copies and memsets) of a node-mode
        capture; only such a capture pays for these scans. The whole trace's launches are
        the host's graph launch calls; a scope's are those whose nodes ran in it (a graph's
        nodes carry its launch call's correlationId), as GRAPH_TRACE rows are in graph mode."""
        tables = [t for t in (s.KERNEL, s.MEMCPY, s.MEMSET) if self.schema.has(t, "start", "end", "graphNodeId")]
        nodes = [(t, f"graphNodeId IS NOT NULL AND graphNodeId != 0 AND {self._where(t, sel)}") for t in tables]
        total = 0
        for table, where in nodes:
            ((t,),) = self.query(f'SELECT coalesce(sum("end" - start), 0) FROM {table} WHERE {where}')
            total += int(t) if type(t) is int else 0
        if sel == WHOLE and self.schema.has(s.RUNTIME, "nameId") and self.schema.has("StringIds", "id", "value"):
            ((n,),) = self.query(
                f"SELECT count(*) FROM {s.RUNTIME} WHERE nameId IN (SELECT id FROM StringIds "
                "WHERE value LIKE 'cudaGraphLaunch%' OR value LIKE 'cuGraphLaunch%')"
            )
            return int(n), total  # type: ignore[call-overload]
        ids = [f"SELECT correlationId FROM {t} WHERE {w}" for t, w in nodes if self.schema.has(t, "correlationId")]
        if not ids:
            return 0, total
        ((n,),) = self.query(f"SELECT count(DISTINCT correlationId) FROM ({' UNION ALL '.join(ids)})")
        return int(n), total  # type: ignore[call-overload]

    def kernel_span_ns(self) -> tuple[int, int] | None:
        """(first kernel start, last kernel end) of the whole trace; None without kernels."""
        if not self.has_kernels():
            return None
        rules = RowRules(s.KERNEL)
        ((lo, hi, *checks),) = self.query(f'SELECT min(start), max("end"), {rules.sql()} FROM {s.KERNEL}')
        self.verify(rules, "1", [checks])
        return None if lo is None or hi is None else (int(lo), int(hi))  # type: ignore[call-overload]

    def first_kernel_ns(self) -> int | None:
        if not self.has_kernels():
            return None
        rules = RowRules(s.KERNEL)
        ((v, *checks),) = self.query(f"SELECT min(start), {rules.sql()} FROM {s.KERNEL}")
        self.verify(rules, "1", [checks])
        return None if v is None else int(v)  # type: ignore[call-overload]


def _config(v: Sequence[int]) -> LaunchConfig:
    """A configuration from its CONFIG_COLS values, its launches not yet counted."""
    return LaunchConfig((v[0], v[1], v[2]), (v[3], v[4], v[5]), v[6], v[7], v[8], v[9], v[10])


def _values(c: LaunchConfig) -> tuple[int, ...]:
    """A configuration's CONFIG_COLS values, as :func:`_config` was given them."""
    local = (c.local_mem_per_thread or 0, c.local_mem_total or 0)
    return (*c.grid, *c.block, c.registers, c.static_smem, c.dynamic_smem, *local)


def _ints(values: Sequence[int]) -> str:
    return ", ".join(str(v) for v in values)


def _unpack(key: int, digits: Sequence[tuple[str, int, int]], widths: Sequence[int]) -> list[int]:
    """The values :meth:`KernelReader._count_several` packed into ``key``, first first."""
    out = []
    for (_, lo, _), w in zip(reversed(digits), reversed(widths), strict=True):
        key, at = divmod(key, w)
        out.append(at + lo)
    return out[::-1]
