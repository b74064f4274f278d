"""The steps of one trace: where each step's time goes, and the host calls it makes.

A step is one instance of an NVTX range (the rules are in ``docs/steps.md``). This scan
returns, per step, its range, the parts its in-range time splits into by what the GPU and
the host were doing, the kernel time it launched, and its host calls per family, with the
per-call tail of each family across the steps.

It runs in SQLite with bounded memory, whatever the trace size. The time split is one
sweep: every GPU interval (kernels, whole-graph launches, copies, memsets), every launch
and sync call, and every step boundary become start/end events in a temporary table; a
window function over them in time order carries the running count of each class, and the
length up to the next event is summed per step and per class, the class chosen by the
precedence compute > communication > copies > launch > sync > host. Calls find their step
with one index lookup among the step starts. Only the per-step sums (a few per step) and
the step ranges reach Python.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from nsysdiff.trace import schema as s
from nsysdiff.trace.checks import RowRules
from nsysdiff.trace.collectives import collective_op
from nsysdiff.trace.connection import CACHE_KIB, TraceConnection
from nsysdiff.trace.records import ApiStats, Attribution, CallTimes, HostFamily
from nsysdiff.trace.runtime import add_calls, call_stats

# The host families by the numbers the SQL below uses: their places in HostFamily.
_FAMILIES = tuple(HostFamily)
_LAUNCH, _SYNC, _H2D, _D2H, _D2D, _ALLOC, _MEMSET = (
    _FAMILIES.index(f)
    for f in (
        HostFamily.LAUNCH,
        HostFamily.SYNC,
        HostFamily.COPY_H2D,
        HostFamily.COPY_D2H,
        HostFamily.COPY_D2D,
        HostFamily.ALLOC,
        HostFamily.MEMSET,
    )
)
_COPY = -1  # a copy call until its copy's direction is known

_SUFFIX = r"(_v\d+|_ptsz|_ptds)*$"
# Runtime and driver entry points that enqueue a kernel or a graph.
_LAUNCH_API = re.compile(
    r"^(cudaLaunch(Cooperative)?Kernel\w*|cuLaunch(Cooperative)?Kernel\w*|cudaGraphLaunch|cuGraphLaunch)" + _SUFFIX
)
# Calls that block the calling thread until the GPU catches up (stream waits and queries
# don't block the host, so they are not here).
_SYNC_API = re.compile(r"^(cuda(Device|Stream|Event|Thread|Ctx)Synchronize|cu(Ctx|Stream|Event)Synchronize)" + _SUFFIX)
_COPY_API = re.compile(r"^(cudaMemcpy\w*|cuMemcpy\w*)" + _SUFFIX)
_ALLOC_API = re.compile(r"^(cudaMalloc\w*|cudaFree\w*|cuMemAlloc\w*|cuMemFree\w*)" + _SUFFIX)
_MEMSET_API = re.compile(r"^(cudaMemset\w*|cuMemset\w*)" + _SUFFIX)
# copyKind names (ENUM_CUDA_MEMCPY_OPER, without the CUDA_MEMCPY_KIND_ prefix) per family.
_DIRECTIONS = {"HTOD": _H2D, "DTOH": _D2H, "DTOD": _D2D, "PTOP": _D2D}
_DIRECTIONS_BUILTIN = {1: _H2D, 2: _D2H, 8: _D2D, 10: _D2D}  # before ENUM_CUDA_MEMCPY_OPER

# Classes of the sweep, in precedence order; 6 and 7 are the step counter and the
# in-range flag.
_COMPUTE, _COMM, _COPIES, _LAUNCHING, _SYNCING, _HOST, _STEP, _IN = range(8)
PARTS = 6  # compute, communication, copies, launch_bound, sync, host
_CHUNK = 1 << 16  # events per fetch: a few MB of numpy whatever the trace size
_SORT_KIB = 8 * 1024  # the sorter's budget for the events (below)


IntArray = npt.NDArray[np.int64]


@dataclass(frozen=True, slots=True)
class StepRows:
    """The steps of one thread's instances of a range, in start order (absolute times),
    one array row per step: a long capture has hundreds of thousands of steps."""

    start_ns: IntArray
    end_ns: IntArray
    # (n, 6): compute, communication, copies, launch-bound, sync, host, over the step's
    # in-range time [start, min(end, next start)).
    parts: IntArray
    kernel_ns: IntArray
    # The end of the last kernel each step launched (absolute; 0 where it launched none):
    # when the GPU finished the step, which an asynchronous loop's range doesn't show.
    gpu_end_ns: IntArray
    # (n, families, 3): calls, total ns and bytes of each family (HostFamily order).
    calls: IntArray
    times: tuple[CallTimes, ...]
    # The synchronising calls of the steps' periods by name, as the scope's are counted
    # (stream waits and queries too): what a sync budget per step judges.
    sync: tuple[ApiStats, ...] = ()


def _list(values: object) -> str:
    return ",".join(str(int(v)) for v in values) or "NULL"  # type: ignore[attr-defined]


class StepReader(TraceConnection):
    """The steps scan (``docs/steps.md``)."""

    if TYPE_CHECKING:
        # From NvtxReader: which events an attribution keeps, and the loaded ranges.
        def _kept(self, events: str, payload: tuple[str, ...], att: Attribution, windowed: bool) -> str: ...
        def _has_ranges_table(self) -> bool: ...

        # From RuntimeReader: the synchronising calls' names by string id.
        def _sync_ids(self) -> dict[int, str]: ...

    def steps(self, mask: tuple[int, ...], att: Attribution) -> StepRows | None:
        """The steps made by the mask's ranges that ``att`` keeps (None: no instance)."""
        if not self._has_ranges_table():
            return None
        events = f'SELECT start, "end", tid, pid, pp FROM temp.nsysdiff_r WHERE code IN ({_list(mask)})'
        kept = self._kept(events, ("pp",), att, windowed=True)
        owners = self.query(
            f"SELECT CASE WHEN pp THEN tid ELSE pid END AS who, pp, pid, count(*) AS n FROM ({kept}) "
            "GROUP BY who, pp ORDER BY n DESC, pp DESC, who"
        )
        if not owners:
            return None
        who, pp, pid, _ = (int(v) for v in owners[0])  # type: ignore[call-overload]
        key = "tid" if pp else "pid"
        ranges = np.array(
            self.query(f'SELECT start, "end" FROM ({kept}) WHERE pp = {pp} AND {key} = {who} ORDER BY start, "end"'),
            dtype=np.int64,
        ).reshape(-1, 2)
        starts, ends = ranges[:, 0].copy(), ranges[:, 1].copy()
        del ranges
        return self.scan_steps(starts, ends, pid, who if pp else None)

    def scan_steps(self, starts: IntArray, ends: IntArray, pid: int, tid: int | None = None) -> StepRows:
        """The scan of steps given by their boundaries (start order) in process ``pid``:
        an NVTX range's instances, or steps found without a marker. ``tid``: the thread
        whose launches count in a step's kernel time (None: every thread's)."""
        # A step's time inside its range stops at the next step's start (docs/steps.md).
        limits = np.concatenate((np.minimum(ends[:-1], starts[1:]), ends[-1:]))
        self._steps_table(starts, ends, limits)
        lo, hi = int(starts[0]), int(limits.max())
        families = self._family_ids()
        n = len(starts)
        parts = self._sweep(n, pid, lo, hi, families)
        calls_end = int(ends[-1])  # the last step's period is its duration
        self._calls_table(pid, lo, calls_end, families)
        kernel_ns, gpu_end = self._kernel_ns(n, pid, tid)
        calls, times = self._call_sums(n)
        sync = self._sync_calls(pid, lo, calls_end)
        return StepRows(starts, ends, parts, kernel_ns, gpu_end, calls, times, sync)

    def _sync_calls(self, pid: int, lo: int, hi: int) -> tuple[ApiStats, ...]:
        """The process's synchronising calls issued in [lo, hi) (the steps' periods), by
        name: a step's sync often lies between its range and the next (an ``.item()``)."""
        ids = self._sync_ids()
        totals: dict[str, tuple[int, int]] = {}
        if not ids:
            return ()
        for table in self._call_tables():
            pid_of = self._pid_of(table, "globalTid")
            where = f"nameId IN ({_list(ids)}) AND start >= {lo} AND start < {hi} AND {pid_of} = {pid}"
            self._check(table, where, ("nameId", "globalTid"))
            for nid, n, total in self.query(
                f'SELECT nameId, count(*), sum("end" - start) FROM {table} WHERE {where} GROUP BY nameId'
            ):
                add_calls(totals, ids[int(nid)], int(n), int(total))  # type: ignore[call-overload]
        return call_stats(totals)

    # -- tables -------------------------------------------------------------------------

    def _steps_table(self, starts: IntArray, ends: IntArray, limits: IntArray) -> None:
        self.execute("DROP TABLE IF EXISTS temp.nsysdiff_steps")
        self.execute(
            'CREATE TEMP TABLE nsysdiff_steps (i INTEGER PRIMARY KEY, start INTEGER, "end" INTEGER, lim INTEGER)'
        )
        self.con.executemany(
            "INSERT INTO temp.nsysdiff_steps VALUES (?, ?, ?, ?)",
            ((i, int(a), int(b), int(c)) for i, (a, b, c) in enumerate(zip(starts, ends, limits, strict=True))),
        )
        self.execute("CREATE INDEX temp.nsysdiff_steps_start ON nsysdiff_steps (start, i)")

    def _family_ids(self) -> dict[int, int]:
        """StringIds id -> family (``_COPY`` for copies) of the API names in a family."""
        if not self.schema.has("StringIds", "id", "value"):
            return {}
        out: dict[int, int] = {}
        rows = self.query("SELECT id, value FROM StringIds WHERE value LIKE 'cu%' AND typeof(id) = 'integer'")
        for i, v in rows:
            name = str(v)
            for family, pattern in (
                (_LAUNCH, _LAUNCH_API),
                (_SYNC, _SYNC_API),
                (_COPY, _COPY_API),
                (_ALLOC, _ALLOC_API),
                (_MEMSET, _MEMSET_API),
            ):
                if pattern.match(name):
                    out[int(i)] = family  # type: ignore[call-overload]
                    break
        return out

    def _call_tables(self) -> list[str]:
        return [t for t in (s.RUNTIME, s.DRIVER) if self.schema.has(t, "start", "end", "globalTid", "nameId")]

    def _pid_of(self, table: str, column: str) -> str:
        return f"(({column} >> 24) & 16777215)" if self.schema.has(table, column) else ""

    def _check(self, table: str, where: str, ids: tuple[str, ...] = ()) -> None:
        rules = RowRules(table, ids=ids)
        ((*checks,),) = self.query(f"SELECT {rules.sql()} FROM {table} WHERE {where}")
        self.verify(rules, where, [checks])

    def _collective_ids(self) -> str:
        if not self.schema.has("StringIds", "id", "value"):
            return "NULL"
        rows = self.query("SELECT id, value FROM StringIds WHERE (value LIKE 'nccl%' OR value LIKE 'void nccl%')")
        return _list(int(i) for i, v in rows if collective_op(str(v)) is not None)  # type: ignore[call-overload]

    def _sources(self, pid: int, lo: int, hi: int, families: dict[int, int]) -> list[str]:
        """SQL of (start, end, class) of every interval the split needs that overlaps [lo, hi].

        The kernel and runtime rows were checked by the scope's own scans (coverage and
        launch selection read every row), so only the small tables are checked here."""
        # Impossible rows (an end before the start) are left out of the sweep; the calls
        # among them are diagnosed by the calls scan, the rest by the scope's own scans.
        overlap = f'"end" > {lo} AND start < {hi} AND "end" >= start'
        out = []
        if self.schema.has(s.KERNEL, "start", "end"):
            name = next((c for c in ("shortName", "demangledName") if self.schema.has(s.KERNEL, c)), None)
            cls = str(_COMPUTE)
            if name:
                cls = f"CASE WHEN {name} IN ({self._collective_ids()}) THEN {_COMM} ELSE {_COMPUTE} END"
            out.append(f'SELECT start, "end", {cls} AS k FROM {s.KERNEL} WHERE {overlap}{self._and_pid(s.KERNEL, pid)}')
        for table, k in ((s.GRAPH_TRACE, _COMPUTE), (s.MEMCPY, _COPIES), (s.MEMSET, _COPIES)):
            if self.schema.has(table, "start", "end"):
                where = f"{overlap}{self._and_pid(table, pid)}"
                self._check(table, where)
                out.append(f'SELECT start, "end", {k} AS k FROM {table} WHERE {where}')
        waits = {i: f for i, f in families.items() if f in (_LAUNCH, _SYNC)}
        for table in self._call_tables() if waits else ():
            syncs = _list(i for i, f in waits.items() if f == _SYNC)
            cls = f"CASE WHEN nameId IN ({syncs}) THEN {_SYNCING} ELSE {_LAUNCHING} END"
            out.append(
                f'SELECT start, "end", {cls} AS k FROM {table} WHERE {overlap} AND nameId IN ({_list(waits)}) '
                f"AND ((globalTid >> 24) & 16777215) = {pid}"
            )
        return out

    def _and_pid(self, table: str, pid: int) -> str:
        col = self._pid_of(table, "globalPid")
        return f" AND {col} = {pid}" if col else ""

    def _sweep(self, n: int, pid: int, lo: int, hi: int, families: dict[int, int]) -> IntArray:
        """Per step, the in-range time of each class (precedence in class order).

        Every interval becomes two events, packed into one integer, time first:
        ``(t - lo) << 4 | class << 1 | is_start``. SQLite sorts them (in its bounded
        buffers, spilling to its temporary file); numpy walks them a chunk at a time,
        carrying the running count of each class from one chunk to the next. Between two
        consecutive events the state is constant: the time up to the next event goes to
        the step counter's step, in the class the counts give, when the in-range flag is up.
        """
        events = []
        for sql in self._sources(pid, lo, hi, families):
            # One scan per source, two events per row (CROSS JOIN keeps the source outermost).
            events.append(
                f"SELECT CASE e WHEN 1 THEN ((max(start, {lo}) - {lo}) << 4) | (k << 1) | 1 "
                f'ELSE ((min("end", {hi}) - {lo}) << 4) | (k << 1) END AS v '
                f"FROM ({sql}) CROSS JOIN (SELECT 1 AS e UNION ALL SELECT 0)"
            )
        steps = "temp.nsysdiff_steps"
        events.append(f"SELECT ((start - {lo}) << 4) | {_STEP << 1 | 1} AS v FROM {steps}")
        events.append(f"SELECT ((start - {lo}) << 4) | {_IN << 1 | 1} FROM {steps}")
        events.append(f"SELECT ((lim - {lo}) << 4) | {_IN << 1} FROM {steps}")
        acc = np.zeros(n * PARTS, dtype=np.int64)
        state = np.zeros(8, dtype=np.int64)
        prev_t: int | None = None
        last: int | None = None
        # Sorted into a temporary table whose rowids follow the order, then read back in
        # rowid ranges as text that numpy parses: no Python object per event.
        self.execute("DROP TABLE IF EXISTS temp.nsysdiff_step_ev")
        # SQLite's sorter holds up to the main cache size of records in memory, and a record
        # of one integer costs it about three times its bytes: 32 MB of budget was 104 MB of
        # RSS for the 60M events of a 10M-kernel capture. A smaller budget only merges more.
        self.execute(f"PRAGMA cache_size = -{_SORT_KIB}")
        try:
            union = " UNION ALL ".join(events)
            self.execute(f"CREATE TEMP TABLE nsysdiff_step_ev AS SELECT v FROM ({union}) ORDER BY v")
        finally:
            self.execute(f"PRAGMA cache_size = -{CACHE_KIB}")
        ((count,),) = self.query("SELECT max(rowid) FROM temp.nsysdiff_step_ev")
        for first in range(1, int(count or 0) + 1, _CHUNK):  # type: ignore[call-overload]
            ((text,),) = self.query(
                f"SELECT group_concat(v) FROM temp.nsysdiff_step_ev WHERE rowid >= {first} AND rowid < {first + _CHUNK}"
            )
            v = np.fromstring(str(text), dtype=np.int64, sep=",")
            if np.any(v[1:] < v[:-1]) or (last is not None and v[0] < last):
                raise RuntimeError("step events out of order")  # SQLite kept no order: a bug, exit 70
            last = int(v[-1])
            t = v >> 4
            delta = np.zeros((len(v), 8), dtype=np.int64)
            delta[np.arange(len(v)), (v >> 1) & 7] = (v & 1) * 2 - 1
            after = state + np.cumsum(delta, axis=0)  # the state after each event
            # Intervals [previous event, this event) carry the state after the previous.
            begin = np.concatenate(([t[0] if prev_t is None else prev_t], t[:-1]))
            held = np.vstack((state[None, :], after[:-1]))
            self._add(acc, t - begin, held)
            prev_t, state = int(t[-1]), after[-1].copy()
        self.execute("DROP TABLE temp.nsysdiff_step_ev")
        return acc.reshape(n, PARTS)

    @staticmethod
    def _add(acc: npt.NDArray[np.int64], length: npt.NDArray[np.int64], held: npt.NDArray[np.int64]) -> None:
        keep = (held[:, _IN] > 0) & (length > 0)
        if not keep.any():
            return
        busy = held[keep][:, :_HOST] > 0
        # The first busy class in precedence order, else host.
        cls = np.where(busy.any(axis=1), busy.argmax(axis=1), _HOST)
        np.add.at(acc, (held[keep][:, _STEP] - 1) * PARTS + cls, length[keep])

    def _calls_table(self, pid: int, lo: int, hi: int, families: dict[int, int]) -> None:
        """The process's family calls issued in [lo, hi), each with its step."""
        self.execute("DROP TABLE IF EXISTS temp.nsysdiff_step_fam")
        self.execute("CREATE TEMP TABLE nsysdiff_step_fam (nid INTEGER PRIMARY KEY, fam INTEGER)")
        self.con.executemany("INSERT INTO temp.nsysdiff_step_fam VALUES (?, ?)", sorted(families.items()))
        self.execute("DROP TABLE IF EXISTS temp.nsysdiff_step_calls")
        self.execute(
            "CREATE TEMP TABLE nsysdiff_step_calls (step INTEGER, fam INTEGER, dur INTEGER, bytes INTEGER, "
            'corr INTEGER, tid INTEGER, "end" INTEGER)'
        )
        for table in self._call_tables():
            where = f"c.start >= {lo} AND c.start < {hi} AND ((c.globalTid >> 24) & 16777215) = {pid}"
            corr = "c.correlationId" if self.schema.has(table, "correlationId") else "NULL"
            self.execute(
                "INSERT INTO temp.nsysdiff_step_calls SELECT (SELECT x.i FROM temp.nsysdiff_steps x "
                "WHERE x.start <= c.start ORDER BY x.start DESC, x.i DESC LIMIT 1), "
                f'f.fam, c."end" - c.start, 0, {corr}, c.globalTid, c."end" '
                f"FROM {table} c JOIN temp.nsysdiff_step_fam f ON f.nid = c.nameId WHERE {where}"
            )
            # The scope's scans checked the calls that launched something; a family call
            # without a correlation id is checked here, named by the table's own diagnosis.
            ((bad,),) = self.query(
                "SELECT count(*) FROM temp.nsysdiff_step_calls WHERE typeof(dur) != 'integer' OR dur < 0"
            )
            if bad:
                raise self.diagnose(RowRules(table, ids=("nameId", "globalTid")), where.replace("c.", ""))
        self.execute("CREATE INDEX temp.nsysdiff_step_calls_corr ON nsysdiff_step_calls (corr)")
        self._copy_directions(pid)

    def _copy_directions(self, pid: int) -> None:
        """A copy call's family is the direction of the copy it made; its bytes, the bytes
        moved. Copy calls without a copy row of a counted direction are dropped."""
        if self.schema.has(s.MEMCPY, "correlationId", "copyKind", "bytes"):
            enum = self._enum("ENUM_CUDA_MEMCPY_OPER")
            kinds = _DIRECTIONS_BUILTIN
            if enum:
                named = {k.removeprefix("CUDA_MEMCPY_KIND_"): v for k, v in enum.items()}
                kinds = {v: _DIRECTIONS[k] for k, v in named.items() if k in _DIRECTIONS}
            direction = " ".join(f"WHEN {k} THEN {f}" for k, f in sorted(kinds.items())) or "WHEN NULL THEN NULL"
            self.execute("DROP TABLE IF EXISTS temp.nsysdiff_step_dir")
            self.execute(
                "CREATE TEMP TABLE nsysdiff_step_dir AS SELECT correlationId AS corr, "
                f"min(CASE copyKind {direction} END) AS fam, sum(bytes) AS b FROM {s.MEMCPY} "
                f"WHERE correlationId IN (SELECT corr FROM temp.nsysdiff_step_calls WHERE fam = {_COPY})"
                f"{self._and_pid(s.MEMCPY, pid)} GROUP BY correlationId"
            )
            self.execute("CREATE INDEX temp.nsysdiff_step_dir_corr ON nsysdiff_step_dir (corr)")
            self.execute(
                "UPDATE temp.nsysdiff_step_calls SET "
                "bytes = coalesce((SELECT d.b FROM temp.nsysdiff_step_dir d "
                "WHERE d.corr = nsysdiff_step_calls.corr), 0), "
                "fam = (SELECT d.fam FROM temp.nsysdiff_step_dir d WHERE d.corr = nsysdiff_step_calls.corr) "
                f"WHERE fam = {_COPY}"
            )
        self.execute(f"DELETE FROM temp.nsysdiff_step_calls WHERE fam IS NULL OR fam = {_COPY}")

    def _kernel_ns(self, n: int, pid: int, tid: int | None) -> tuple[IntArray, IntArray]:
        """Per step, the GPU time of the kernels (and whole-graph launches) launched from
        inside its range (the attribution of ``--nvtx``, docs/scopes.md) and the end of the
        last of them."""
        out = np.zeros(n, dtype=np.int64)
        last = np.zeros(n, dtype=np.int64)
        inside = (
            "SELECT c.step, c.corr FROM temp.nsysdiff_step_calls c JOIN temp.nsysdiff_steps x ON x.i = c.step "
            f'WHERE c.fam = {_LAUNCH} AND c."end" <= x."end"' + ("" if tid is None else f" AND c.tid = {tid}")
        )
        self.execute("DROP TABLE IF EXISTS temp.nsysdiff_step_launch")
        self.execute(f"CREATE TEMP TABLE nsysdiff_step_launch AS {inside}")
        self.execute("CREATE INDEX temp.nsysdiff_step_launch_corr ON nsysdiff_step_launch (corr)")
        for table in (s.KERNEL, s.GRAPH_TRACE):
            if not self.schema.has(table, "start", "end", "correlationId"):
                continue
            rows = self.query(
                f'SELECT l.step, sum(k."end" - k.start), max(k."end") FROM {table} k JOIN temp.nsysdiff_step_launch l '
                f"ON l.corr = k.correlationId WHERE 1{self._and_pid(table, pid).replace('globalPid', 'k.globalPid')} "
                "GROUP BY l.step"
            )
            for step, total, end in rows:
                out[int(step)] += int(total)  # type: ignore[call-overload]
                last[int(step)] = max(int(last[int(step)]), int(end))  # type: ignore[call-overload]
        return out, last

    def _call_sums(self, n: int) -> tuple[IntArray, tuple[CallTimes, ...]]:
        per_step = np.zeros((n, len(_FAMILIES), 3), dtype=np.int64)
        cur = self.con.execute(
            "SELECT step, fam, count(*), sum(dur), sum(bytes) FROM temp.nsysdiff_step_calls GROUP BY step, fam"
        )
        try:
            while chunk := cur.fetchmany(_CHUNK):  # a few MB at a time, whatever the steps
                a = np.array(chunk, dtype=np.int64).reshape(-1, 5)
                per_step[a[:, 0], a[:, 1]] = a[:, 2:]
        except s.DB_ERRORS as e:
            raise s.db_error(self.path, e) from None
        finally:
            cur.close()
        sums = per_step.sum(axis=0)
        totals = {f: [int(v) for v in sums[f]] for f in range(len(_FAMILIES)) if sums[f, 0]}
        # Nearest rank: the p-th percentile is the ceil(p * m / 100)-th smallest of m
        # calls, read through an index on (family, duration): one sort, then a walk.
        self.execute("CREATE INDEX temp.nsysdiff_step_calls_dur ON nsysdiff_step_calls (fam, dur)")
        times = []
        for f, (m, total, nbytes) in sorted(totals.items()):
            at = {}
            for rank in {m, *((p * m + 99) // 100 for p in (50, 90, 99))}:
                ((dur,),) = self.query(
                    f"SELECT dur FROM temp.nsysdiff_step_calls WHERE fam = {f} ORDER BY dur LIMIT 1 OFFSET {rank - 1}"
                )
                at[rank] = int(dur)  # type: ignore[call-overload]
            p50, p90, p99 = (at[(p * m + 99) // 100] for p in (50, 90, 99))
            times.append(CallTimes(_FAMILIES[f], m, total, nbytes, p50, p90, p99, at[m]))
        return per_step, tuple(times)
