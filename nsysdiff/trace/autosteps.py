"""Steps without markers: the decode steps of a trace that has no step range
(``--per auto``, docs/steps.md).

* **CUDA-graph loops.** One step per replay of the graph launched most often: the
  ``GRAPH_TRACE`` rows of one graph (graph-mode capture), or the kernels that share one
  replay's correlation id (node-mode capture).
* **Eager loops.** The kernel sequence of the busiest process, in launch order, is
  searched for the period that repeats it most; the loop is where it repeats, and each
  step starts at the kernel that follows the longest idle gap of the period.

A step starts when the host calls the launch of its first kernel (or graph), so the steps'
periods are those a marker placed around the loop body gives. When nothing stands out,
:class:`NoStepsError` says why: steps are never invented.

Bounded memory: the kernel sequence reaches Python as a few numpy arrays parsed from
SQLite's text (no Python object per kernel); the search compares the sequence with itself
shifted, once per candidate period.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from nsysdiff.errors import TraceError
from nsysdiff.trace import schema as s
from nsysdiff.trace.checks import RowRules, ints_ok
from nsysdiff.trace.connection import TraceConnection
from nsysdiff.trace.records import Window

IntArray = npt.NDArray[np.int64]

# A loop is at least this many steps: two repetitions are a coincidence as often as a loop.
MIN_STEPS = 3
# A period stands out when the sequence, shifted by it, matches itself at this share of
# its positions (prefill, warm-up and the rest of the trace included)...
MIN_MATCH = 0.5
# ...and no period that is not a multiple of it comes within this much of its match.
MARGIN = 0.05
# A decode step launches at least this many kernels and takes at least this long (the
# median step): a shorter sequence that repeats is a layer or an op inside a step.
MIN_STEP_KERNELS = 8
MIN_STEP_NS = 50_000
# The repetitions must tile the loop: at least this share of them one period apart.
MIN_TILED = 0.75
_CANDIDATES = 64  # distances between launches of one kernel tried as periods, by each ranking
_CHUNK = 1 << 16


class NoStepsError(TraceError):
    """No loop stands out in the trace: ``--per auto`` refuses (exit 2; 3 in a diff)."""


@dataclass(frozen=True, slots=True)
class FoundSteps:
    """Step boundaries found without a marker, for the step scan."""

    pid: int
    starts: IntArray
    ends: IntArray
    how: str  # "graph", "graph nodes" or "period"
    said: str  # how they were found, one phrase

    def __len__(self) -> int:
        return len(self.starts)


class AutoStepReader(TraceConnection):
    """The search for steps without markers."""

    def auto_steps(self, window: Window | None = None) -> FoundSteps:
        """The steps of the trace's decode loop; :class:`NoStepsError` when it has none."""
        found = self._auto_graph_steps(window)
        if found is not None:
            return found
        return self._auto_period_steps(window)

    # -- CUDA graphs ---------------------------------------------------------------------

    def _auto_in(self, window: Window | None, alias: str = "") -> str:
        a = f"{alias}." if alias else ""
        if window is None:
            return "1"
        return f"{a}start >= {int(window.start_ns)} AND {a}start < {int(window.end_ns)}"

    def _auto_graph_steps(self, window: Window | None) -> FoundSteps | None:
        """One step per replay of the graph replayed most often, if one was replayed."""
        rows: list[tuple[object, ...]] = []
        how = ""
        if self.schema.has(s.GRAPH_TRACE, "start", "end", "correlationId", "graphId"):
            # The ids this search groups and joins by are integers, as the whole read requires.
            rules = RowRules(s.GRAPH_TRACE, ids=("correlationId", "graphId", *self._auto_pid_col(s.GRAPH_TRACE)))
            self._auto_check(rules, self._auto_in(window))
            pid = self._auto_pid_sql(s.GRAPH_TRACE)
            rows = self.query(
                f"SELECT graphId, {pid}, count(*) AS n FROM {s.GRAPH_TRACE} WHERE {self._auto_in(window)} "
                "GROUP BY graphId, 2 ORDER BY n DESC, graphId LIMIT 2"
            )
            how = "graph"
        elif self.schema.has(s.KERNEL, "start", "end", "correlationId", "graphNodeId"):
            rules = RowRules(s.KERNEL, ids=("correlationId", "graphNodeId", *self._auto_pid_col(s.KERNEL)))
            self._auto_check(rules, f"graphNodeId IS NOT NULL AND {self._auto_in(window)}")
            # A replay's kernels share its launch's correlation id; one graph's replays
            # share their nodes, named by the first.
            self.execute("DROP TABLE IF EXISTS temp.nsysdiff_auto_replays")
            pid_sql = self._auto_pid_sql(s.KERNEL)
            self.execute(
                f"CREATE TEMP TABLE nsysdiff_auto_replays AS SELECT correlationId AS corr, {pid_sql} "
                'AS pid, min(graphNodeId) AS graph, min(start) AS start, max("end") AS "end" '
                f"FROM {s.KERNEL} WHERE graphNodeId IS NOT NULL AND graphNodeId != 0 AND {self._auto_in(window)} "
                "GROUP BY 1, 2"
            )
            rows = self.query(
                "SELECT graph, pid, count(*) AS n FROM temp.nsysdiff_auto_replays "
                "GROUP BY graph, pid ORDER BY n DESC, graph LIMIT 2"
            )
            how = "graph nodes"
        if not rows or int(rows[0][2]) < MIN_STEPS:  # type: ignore[call-overload]
            return None
        graph, pid, n = (int(v) for v in rows[0])  # type: ignore[call-overload]
        if len(rows) > 1 and int(rows[1][2]) == n:  # type: ignore[call-overload]
            raise NoStepsError(
                s.one_line(
                    f"{self.path}: --per auto: two CUDA graphs are replayed {n:,} times each, "
                    "so neither is the decode step; mark the step with an NVTX range and give --per NAME"
                )
            )
        if how == "graph":
            source = (
                f'SELECT correlationId AS corr, start, "end" FROM {s.GRAPH_TRACE} WHERE graphId = {graph} '
                f"AND {self._auto_pid_sql(s.GRAPH_TRACE)} = {pid} AND {self._auto_in(window)}"
            )
            said = f"{n:,} replays of CUDA graph {graph} (graph trace)"
        else:
            source = f'SELECT corr, start, "end" FROM temp.nsysdiff_auto_replays WHERE graph = {graph} AND pid = {pid}'
            said = f"{n:,} replays of one CUDA graph (node trace: kernels sharing a replay's launch)"
        corr, gpu_start, gpu_end = self._auto_columns(f"{source} ORDER BY start", 3)
        last = int(np.argmax(gpu_start))
        return self._auto_bounded(pid, corr, gpu_start, corr[last : last + 1], int(gpu_end[last]), how, said)

    # -- eager loops ---------------------------------------------------------------------

    def _auto_period_steps(self, window: Window | None) -> FoundSteps:
        if not self.schema.has(s.KERNEL, "start", "end", "correlationId", "shortName"):
            raise NoStepsError(s.one_line(f"{self.path}: --per auto: the trace has no kernel rows to find steps in"))
        pid_sql = self._auto_pid_sql(s.KERNEL) or "0"
        where = self._auto_in(window)
        # Types first, in one aggregate pass: a long text where an integer belongs is
        # refused before the text pass below would fetch it a chunk at a time.
        self._auto_check(RowRules(s.KERNEL, ids=("shortName", "correlationId", *self._auto_pid_col(s.KERNEL))), where)
        busiest = self.query(
            f"SELECT {pid_sql} AS p, count(*) AS n FROM {s.KERNEL} WHERE {where} GROUP BY p ORDER BY n DESC LIMIT 1"
        )
        if not busiest:
            raise NoStepsError(s.one_line(f"{self.path}: --per auto: no kernel in the scope to find steps in"))
        pid = int(busiest[0][0])  # type: ignore[call-overload]
        names, corr, start, end = self._auto_columns(
            f'SELECT shortName, correlationId, start, "end" FROM {s.KERNEL} '
            f"WHERE {where} AND {pid_sql} = {pid} ORDER BY correlationId, start",
            4,
        )
        # Only the order and the idle gaps are used: no sum that could overflow.
        if len(start) and (int(start.min()) < 0 or bool(np.any(end < start))):
            raise self.diagnose(RowRules(s.KERNEL, ids=("shortName", "correlationId")), where)
        idle = np.maximum(start[1:] - np.maximum.accumulate(end)[:-1], 0)
        idle = np.concatenate(([0], idle))
        # A run of one kernel launched back to back counts once: otherwise a batch of
        # identical launches would be a loop of period 1 that explains everything.
        runs = np.flatnonzero(np.concatenate(([True], names[1:] != names[:-1])))
        tokens = names[runs]
        period, share = _period(tokens, self.path)
        first, last = _loop(tokens, period, self.path)
        anchor = _anchor(tokens, idle[runs], first, last, period)
        at = first + np.flatnonzero(tokens[first:last] == tokens[anchor])
        at = at[at >= anchor]
        _check_tiled(at, period, self.path)
        pos = runs[at]  # back to launches
        stop = int(runs[last]) if last < len(runs) else len(names)
        _check_step_size(pos, start, self.path)
        said = (
            f"{len(at):,} repetitions of a {int(np.median(np.diff(pos))) if len(pos) > 1 else 0:,}-kernel sequence "
            f"(it repeats at {100 * share:.0f}% of the {len(names):,} launches; {int(pos[0]):,} launches "
            "before the loop left out)"
        )
        tail = corr[pos[-1] : stop]
        return self._auto_bounded(pid, corr[pos], start[pos], tail, int(end[pos[-1] : stop].max()), "period", said)

    # -- shared --------------------------------------------------------------------------

    def _auto_bounded(
        self, pid: int, corr: IntArray, gpu_start: IntArray, tail: IntArray, gpu_end: int, how: str, said: str
    ) -> FoundSteps:
        """Steps from their first launch's correlation ids: each starts at its launch call
        (its GPU start where the call is not in the trace) and ends where the next starts.
        The last ends with the last launch call of its work (``tail``), as a range around
        the loop body would: a host that runs ahead of the GPU (graph replays queued)
        would otherwise stretch it to the end of the queue. Without the calls, with its
        GPU work."""
        starts = gpu_start.copy()
        calls = self._auto_launch_starts(pid, corr)
        known = calls >= 0
        starts[known] = calls[known]
        order = np.argsort(starts, kind="stable")
        starts = starts[order]
        last_end = self._auto_last_call_end(pid, tail)
        ends = np.concatenate((starts[1:], [max(gpu_end if last_end is None else last_end, int(starts[-1]))]))
        return FoundSteps(pid, starts, ends, how, said)

    def _auto_launch_starts(self, pid: int, corr: IntArray) -> IntArray:
        """The start of the launch call of each correlation id (-1: none in the trace)."""
        out = np.full(len(corr), -1, dtype=np.int64)
        if not self.schema.has(s.RUNTIME, "start", "correlationId", "globalTid"):
            return out
        self.execute("DROP TABLE IF EXISTS temp.nsysdiff_auto_corr")
        self.execute("CREATE TEMP TABLE nsysdiff_auto_corr (corr INTEGER PRIMARY KEY, i INTEGER)")
        self.con.executemany(
            "INSERT OR IGNORE INTO temp.nsysdiff_auto_corr VALUES (?, ?)", ((int(c), i) for i, c in enumerate(corr))
        )
        rows = self.query(
            f"SELECT a.i, min(r.start) FROM {s.RUNTIME} r JOIN temp.nsysdiff_auto_corr a ON a.corr = r.correlationId "
            f"WHERE ((r.globalTid >> 24) & 16777215) = {pid} AND typeof(r.start) = 'integer' GROUP BY a.i"
        )
        for i, t in rows:
            out[int(i)] = int(t)  # type: ignore[call-overload]
        return out

    def _auto_last_call_end(self, pid: int, corr: IntArray) -> int | None:
        if not len(corr) or not self.schema.has(s.RUNTIME, "end", "correlationId", "globalTid"):
            return None
        ids = ",".join(str(int(c)) for c in corr)
        ((end,),) = self.query(
            f'SELECT max("end") FROM {s.RUNTIME} WHERE correlationId IN ({ids}) '
            f"AND ((globalTid >> 24) & 16777215) = {pid} AND typeof(\"end\") = 'integer'"
        )
        return None if end is None else int(end)  # type: ignore[call-overload]

    def _auto_pid_col(self, table: str) -> tuple[str, ...]:
        return ("globalPid",) if self.schema.has(table, "globalPid") else ()

    def _auto_pid_sql(self, table: str) -> str:
        return "((globalPid >> 24) & 16777215)" if self.schema.has(table, "globalPid") else "0"

    def _auto_check(self, rules: RowRules, where: str) -> None:
        ((*checks,),) = self.query(f"SELECT {rules.sql()} FROM {rules.table} WHERE {where}")
        self.verify(rules, where, [checks])

    def _auto_columns(self, sql: str, n: int) -> list[IntArray]:
        """The ``n`` integer columns of ``sql``'s rows, in its order, as numpy arrays: kept
        in a temporary table and read back as text a chunk at a time."""
        self.execute("DROP TABLE IF EXISTS temp.nsysdiff_auto_cols")
        self.execute(f"CREATE TEMP TABLE nsysdiff_auto_cols AS {sql}")
        cols = [c for _, c, *_ in self.query("PRAGMA temp.table_info(nsysdiff_auto_cols)")]
        ((count,),) = self.query("SELECT count(*) FROM temp.nsysdiff_auto_cols")
        total = int(count)  # type: ignore[call-overload]
        out = [np.empty(total, dtype=np.int64) for _ in range(n)]
        for lo in range(0, total, _CHUNK):
            hi = min(lo + _CHUNK, total)
            for j, col in enumerate(cols[:n]):
                ((text,),) = self.query(
                    f'SELECT group_concat("{col}") FROM temp.nsysdiff_auto_cols WHERE rowid > {lo} AND rowid <= {hi}'
                )
                if not ints_ok(text, hi - lo):  # type: ignore[arg-type]
                    raise TraceError(
                        s.one_line(f"{self.path}: --per auto: a NULL or non-integer {col} among the rows it reads")
                    )
                out[j][lo:hi] = np.fromstring(str(text), dtype=np.int64, sep=",")
        self.execute("DROP TABLE temp.nsysdiff_auto_cols")
        return out


def _period(names: IntArray, path: object) -> tuple[int, float]:
    """The period (in launches) that stands out, and the share of positions it matches."""
    n = len(names)
    if n < 2 * MIN_STEPS:
        raise NoStepsError(
            s.one_line(f"{path}: --per auto: {n} kernel launch(es) are too few to repeat {MIN_STEPS} times")
        )
    order = np.argsort(names, kind="stable")
    same = names[order][1:] == names[order][:-1]
    gaps = (order[1:] - order[:-1])[same]
    if not len(gaps):
        raise NoStepsError(s.one_line(f"{path}: --per auto: no kernel recurs after another kernel, so nothing repeats"))
    values, counts = np.unique(gaps, return_counts=True)
    # The most frequent distances are those of the innermost loop (the layers of a step);
    # the step's own period is the distance of the kernels launched once per step, rarer
    # but spanning the loop: ranked by count times distance, it is among the candidates.
    by_count = values[np.argsort(-counts, kind="stable")[:_CANDIDATES]]
    by_span = values[np.argsort(-(counts * values), kind="stable")[:_CANDIDATES]]
    top = np.union1d(by_count, by_span)
    # Periods that repeat only twice compete too: a loop too short to count must not leave
    # the field to a loop inside its step (the layers of one token).
    top = top[(top > 0) & (top * 2 <= n)]
    if not len(top):
        raise NoStepsError(s.one_line(f"{path}: --per auto: the trace is too short to hold {MIN_STEPS} repetitions"))
    share = {int(p): float(np.mean(names[:-p] == names[p:])) for p in top}
    best = max(share.values())
    period = min(p for p, m in share.items() if m >= best - MARGIN / 5)
    if share[period] < MIN_MATCH:
        raise NoStepsError(
            s.one_line(
                f"{path}: --per auto: no period stands out in the kernel sequence (the best, {period:,} "
                f"launches, repeats at {100 * share[period]:.0f}% of the positions; {100 * MIN_MATCH:.0f}% "
                "is needed); mark the step with an NVTX range and give --per NAME"
            )
        )
    # A shorter period that matches less is a loop inside the step (its layers), not a rival.
    rivals = [
        p
        for p, m in share.items()
        if p % period and period % p and m >= share[period] - MARGIN and not (p < period and m < share[period])
    ]
    if rivals:
        other = min(rivals)
        raise NoStepsError(
            s.one_line(
                f"{path}: --per auto: two periods stand out ({period:,} and {other:,} launches, repeating at "
                f"{100 * share[period]:.0f}% and {100 * share[other]:.0f}%): two loops interleave; "
                "mark the step with an NVTX range and give --per NAME"
            )
        )
    return period, share[period]


def _check_tiled(at: IntArray, period: int, path: object) -> None:
    """Refuse repetitions too few, or too far from one period apart, to be a loop's steps."""
    if len(at) < MIN_STEPS:
        raise NoStepsError(
            s.one_line(
                f"{path}: --per auto: the kernel sequence repeats every {period:,} launches only "
                f"{len(at)} times; a loop needs {MIN_STEPS}"
            )
        )
    tiled = float(np.mean(np.diff(at) == period))
    if tiled < MIN_TILED:
        raise NoStepsError(
            s.one_line(
                f"{path}: --per auto: the repetitions of a {period:,}-launch period do not tile the loop "
                f"({100 * tiled:.0f}% of them one period apart; {100 * MIN_TILED:.0f}% is needed); "
                "mark the step with an NVTX range and give --per NAME"
            )
        )


def _check_step_size(pos: IntArray, start: IntArray, path: object) -> None:
    """Refuse a period too short to be a decode step: a layer or an op that repeats."""
    kernels = int(np.median(np.diff(pos)))
    span = int(np.median(np.diff(start[pos])))
    if kernels < MIN_STEP_KERNELS or span < MIN_STEP_NS:
        raise NoStepsError(
            s.one_line(
                f"{path}: --per auto: the sequence that repeats ({kernels:,} kernels, {span / 1000:,.1f} us per "
                f"repetition) is too small to be a step (a step has at least {MIN_STEP_KERNELS} kernels and "
                f"takes {MIN_STEP_NS / 1000:,.0f} us); it is a layer or an op inside one; "
                "mark the step with an NVTX range and give --per NAME"
            )
        )


def _loop(names: IntArray, period: int, path: object) -> tuple[int, int]:
    """[first, last) of the loop: the positions that repeat one period before or after,
    runs of at least a period, joined across breaks shorter than three periods (a step
    that took another path); the largest such group."""
    match = names[:-period] == names[period:]
    inloop = np.zeros(len(names), dtype=bool)
    inloop[:-period] |= match
    inloop[period:] |= match
    edges = np.flatnonzero(np.diff(np.concatenate(([0], inloop.view(np.int8), [0]))))
    pairs = edges.reshape(-1, 2)
    runs = pairs[pairs[:, 1] - pairs[:, 0] >= period]
    groups: list[list[int]] = []
    for a, b in runs:
        if groups and a - groups[-1][1] < 3 * period:
            groups[-1][1] = int(b)
            groups[-1][2] += int(b - a)
        else:
            groups.append([int(a), int(b), int(b - a)])
    if not groups:
        raise NoStepsError(
            s.one_line(
                f"{path}: --per auto: the kernel sequence repeats every {period:,} launches only in runs "
                "shorter than one period, which is no loop; mark the step with an NVTX range and give --per NAME"
            )
        )
    first, last, _ = max(groups, key=lambda g: g[2])
    return first, last


def _anchor(names: IntArray, idle: IntArray, first: int, last: int, period: int) -> int:
    """The position, in the loop's first period, where a step starts: of the kernels
    launched once per period, the one after the longest idle GPU gap (median across the
    repetitions), where the host turns from one token to the next."""
    reps = (last - first) // period
    span = names[first : first + reps * period].reshape(reps, period)
    gaps = idle[first : first + reps * period].reshape(reps, period)
    template = span[reps // 2]
    ids, counts = np.unique(template, return_counts=True)
    once = np.isin(template, ids[counts == 1])
    score = np.where(once, np.median(gaps, axis=0), -1.0)
    return first + int(np.argmax(score))
