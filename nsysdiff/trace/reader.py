"""Read an export: the only module that writes SQL against a trace.

Everything is aggregated in SQLite or moved into numpy arrays in bulk: per kernel the
launch intervals arrive as one ``group_concat`` string per (kernel, device) and are
parsed by numpy in C, so no Python object is made per row and a million-kernel trace
reads in about the time of a bare ``GROUP BY`` scan.
"""

from __future__ import annotations

import hashlib
import re
import sqlite3
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt

from nsysdiff.errors import TraceError
from nsysdiff.model import GpuInfo, GraphMode, GraphStats, LaunchConfig
from nsysdiff.trace import schema as s
from nsysdiff.trace.checks import CHECKS, INT64_MAX, RowRules, diagnosis, fine, intervals_ok, ints_ok
from nsysdiff.trace.schema import Schema

IntArray = npt.NDArray[np.int64]

# copyKind ids for exports that have no ENUM_CUDA_MEMCPY_OPER table (before 2022.4).
_COPY_KINDS_BUILTIN = {
    0: "CUDA_MEMCPY_KIND_UNKNOWN",
    1: "CUDA_MEMCPY_KIND_HTOD",
    2: "CUDA_MEMCPY_KIND_DTOH",
    3: "CUDA_MEMCPY_KIND_HTOA",
    4: "CUDA_MEMCPY_KIND_ATOH",
    5: "CUDA_MEMCPY_KIND_ATOA",
    6: "CUDA_MEMCPY_KIND_ATOD",
    7: "CUDA_MEMCPY_KIND_DTOA",
    8: "CUDA_MEMCPY_KIND_DTOD",
    9: "CUDA_MEMCPY_KIND_HTOH",
    10: "CUDA_MEMCPY_KIND_PTOP",
    11: "CUDA_MEMCPY_KIND_UVM_HTOD",
    12: "CUDA_MEMCPY_KIND_UVM_DTOH",
    13: "CUDA_MEMCPY_KIND_UVM_DTOD",
}
# The labels nsys stats prints ("[CUDA memcpy DtoH]").
_COPY_LABELS = {
    "UNKNOWN": "Unknown",
    "HTOD": "HtoD",
    "DTOH": "DtoH",
    "HTOA": "HtoA",
    "ATOH": "AtoH",
    "ATOA": "AtoA",
    "ATOD": "AtoD",
    "DTOA": "DtoA",
    "DTOD": "DtoD",
    "HTOH": "HtoH",
    "PTOP": "PtoP",
    "UVM_HTOD": "Unified HtoD",
    "UVM_DTOH": "Unified DtoH",
    "UVM_DTOD": "Unified DtoD",
}

# NVTX event types when ENUM_NSYS_EVENT_TYPE is absent (values from the export docs).
_NVTX_RANGE_TYPES_BUILTIN = {
    "NvtxPushPopRange": 59,
    "NvtxStartEndRange": 60,
    "NvtxtPushPopRange": 70,
    "NvtxtStartEndRange": 71,
}
_NVTX_DOMAIN_CREATE_BUILTIN = 75

# Runtime and driver calls that make the CPU (or a stream) wait for the GPU.
_SYNC_API = re.compile(
    r"^(cuda(Device|Stream|Event|Thread|Ctx)Synchronize|cudaStreamWaitEvent|cudaStreamQuery|"
    r"cu(Ctx|Stream|Event)Synchronize|cuStreamWaitEvent)(_v\d+|_ptsz|_ptds)*$"
)
_VERSION_SUFFIX = re.compile(r"(_v\d+|_ptsz|_ptds)+$")


@dataclass(frozen=True, slots=True)
class Window:
    """Absolute session-clock bounds: keep GPU work that starts in ``[start, end)``."""

    start_ns: int
    end_ns: int


@dataclass(frozen=True, slots=True)
class Selection:
    """What part of a trace to read. Empty: everything."""

    window: Window | None = None
    # A temp table ``(pid INTEGER, corr INTEGER)`` of the launches to keep, made by
    # :meth:`TraceReader.select_launches`; correlation ids are unique only per process.
    launches_table: str | None = None


@dataclass(frozen=True, slots=True)
class KernelGroups:
    """Kernel launch intervals grouped by (demangled name, device).

    Group ``i`` owns ``start[offsets[i]:offsets[i+1]]`` (and ``end`` likewise).
    """

    short: tuple[str, ...]
    demangled: tuple[str, ...]
    device: IntArray
    offsets: IntArray
    start: IntArray
    end: IntArray
    configs: tuple[tuple[str, LaunchConfig], ...]  # distinct (demangled, config) pairs


@dataclass(frozen=True, slots=True)
class CopyRow:
    kind: str
    ops: int
    bytes: int
    total_ns: int


@dataclass(frozen=True, slots=True)
class ApiRow:
    name: str
    calls: int
    total_ns: int


@dataclass(frozen=True, slots=True)
class RangeRow:
    name: str
    domain: str
    count: int
    total_ns: int


@dataclass(frozen=True, slots=True)
class Metadata:
    nsys_version: str | None
    schema_version: str | None
    gpus: tuple[GpuInfo, ...]
    capture_start_ns: int | None
    capture_end_ns: int | None
    graph_mode: GraphMode
    graph_launches: int
    graph_total_ns: int


@dataclass(frozen=True, slots=True)
class NvtxRanges:
    """Raw NVTX range instances (push/pop and start/end), names unfolded."""

    name: tuple[str, ...]
    domain: tuple[str, ...]
    push_pop: npt.NDArray[np.bool_]
    start: IntArray
    end: IntArray
    tid: IntArray  # the thread that opened the range (globalTid)


@dataclass(frozen=True, slots=True)
class RuntimeCalls:
    """Runtime API calls that launched GPU work: when, on which thread, which launch."""

    start: IntArray
    end: IntArray
    tid: IntArray
    pid: IntArray
    corr: IntArray


@dataclass(frozen=True, slots=True)
class SyncCalls:
    """Every synchronising API call: ``names[code[i]]`` is call ``i``'s name, suffix stripped."""

    names: tuple[str, ...]
    code: IntArray
    start: IntArray
    end: IntArray
    tid: IntArray


_END = '"end"'  # a keyword in SQL: always quoted


# PyTorch's per-call suffixes make every range name unique; cutting them in SQL lets
# GROUP BY merge a million "aten::mm, seq = N, op_id = M" rows into one.
_NVTX_SUFFIXES = (", seq = ", ", op_id = ", ", sizes = ", ", stashed seq = ", ", input_op_ids = ")


def _fold(name: str) -> str:
    """:func:`_fold_sql` in Python, for registered strings resolved after the query."""
    cuts = [i for p in _NVTX_SUFFIXES if (i := name.find(p)) >= 0]
    return name[: min(cuts)] if cuts else name


def _fold_sql(expr: str) -> str:
    far = 1 << 30
    cuts = ", ".join(f"coalesce(nullif(instr({expr}, '{p}'), 0), {far})" for p in _NVTX_SUFFIXES)
    return f"substr({expr}, 1, min({cuts}) - 1)"


def _fetch_beside(path: Path, sql: str) -> list[tuple[object, ...]]:
    """Run one query on a connection of its own (for a worker thread)."""
    con = s.connect(path)
    try:
        return con.execute(sql).fetchall()
    except s.DB_ERRORS as e:
        raise s.db_error(path, e) from None
    finally:
        con.close()


# Longest name kept whole. Real demangled C++ names reach a few KiB; a name of megabytes
# is an attack on every regex and table that meets it (categories, families, rules).
NAME_LIMIT = 65_536


def name_text(value: object) -> str:
    """A name as the reader hands it on: text (a BLOB decoded), at most ~NAME_LIMIT characters.

    A longer name keeps its start and a digest of the whole, so that two long names that
    differ only past the limit stay two names.
    """
    if isinstance(value, bytes):
        value = value.decode("utf-8", "replace")
    text = "" if value is None else str(value)
    if len(text) <= NAME_LIMIT:
        return text
    digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:16]
    return f"{text[:NAME_LIMIT]}…[{len(text) - NAME_LIMIT:,} more characters cut; sha256 {digest}]"


def _blob(expr: str) -> str:
    """``group_concat`` as bytes: skips decoding megabytes of digits into a str."""
    return f"CAST(group_concat({expr}) AS BLOB)"


def _split_checks(rows: Sequence[Sequence[object]]) -> tuple[list[tuple[object, ...]], list[tuple[object, ...]]]:
    """(data columns, check columns) of each row of a query that ends with ``RowRules.sql``."""
    return [tuple(r[:-CHECKS]) for r in rows], [tuple(r[-CHECKS:]) for r in rows]


def _ints(text: str | bytes | None) -> IntArray:
    if not text:
        return np.empty(0, dtype=np.int64)
    return np.fromstring(text, sep=",", dtype=np.int64)


class TraceReader:
    """Read-only access to one export, through its probed schema."""

    def __init__(self, path: Path, con: sqlite3.Connection, schema: Schema) -> None:
        self.path = path
        self.con = con
        self.schema = schema
        self._strings: dict[int, str] = {}
        self._missing_strings: set[int] = set()
        self._short: bool | None = None
        self._node_mode: bool | None = None  # learnt while reading configs, when it was

    # --- plumbing ------------------------------------------------------------------

    def _query(self, sql: str, params: Sequence[object] = ()) -> list[tuple[object, ...]]:
        try:
            return self.con.execute(sql, params).fetchall()
        except s.DB_ERRORS as e:
            if "integer overflow" in str(e):
                # sum() refuses to wrap; only impossible values get there.
                raise TraceError(
                    s.one_line(f"{self.path}: a sum of durations or sizes overflows int64; the export is damaged")
                ) from None
            raise s.db_error(self.path, e) from None

    def _verify(self, rules: RowRules, where: str, checks: Sequence[Sequence[object]]) -> None:
        """Raise on the impossible rows that a scan's ``RowRules.sql`` values show."""
        if not fine(checks):
            raise self._diagnose(rules, where)

    def _diagnose(self, rules: RowRules, where: str) -> TraceError:
        (row,) = self._query(rules.diagnosis_sql(where))
        return diagnosis(self.path, rules, row)

    def strings(self, ids: Sequence[int]) -> dict[int, str]:
        """Resolve StringIds ids, fetching each at most once."""
        missing = sorted({int(i) for i in ids if i is not None} - self._strings.keys())
        if missing and self.schema.has("StringIds", "id", "value"):
            for chunk in range(0, len(missing), 500):
                part = missing[chunk : chunk + 500]
                marks = ",".join("?" * len(part))
                for key, value in self._query(
                    f"SELECT id, value FROM StringIds WHERE id IN ({marks})", part
                ):
                    self._strings[int(key)] = name_text(value)  # type: ignore[call-overload]
        for i in missing:
            if i not in self._strings:
                self._strings[i] = f"<string {i}>"
                self._missing_strings.add(i)
        return self._strings

    def _where(self, table: str, sel: Selection, alias: str = "") -> str:
        """SQL conditions that apply ``sel`` to an activity table (kernel, memcpy...)."""
        a = f"{alias}." if alias else ""
        # No "start IS NOT NULL": a NULL time is an impossible row that check_sql counts.
        conds = ["1"]
        if sel.window is not None:
            conds.append(f"{a}start >= {int(sel.window.start_ns)}")
            conds.append(f"{a}start < {int(sel.window.end_ns)}")
        if sel.launches_table is not None and self.schema.has(table, "correlationId", "globalPid"):
            conds.append(
                f"(({a}globalPid >> 24) & 16777215, {a}correlationId) IN "
                f"(SELECT pid, corr FROM temp.{sel.launches_table})"
            )
        return " AND ".join(conds)

    def _enum(self, table: str) -> dict[str, int]:
        if not self.schema.has(table, "id", "name"):
            return {}
        rows = self._query(f"SELECT id, name FROM {table} WHERE typeof(id) = 'integer'")
        return {str(n): int(i) for i, n in rows}  # type: ignore[call-overload]

    # --- metadata ------------------------------------------------------------------

    def metadata(self) -> Metadata:
        meta: dict[str, str] = {}
        for table in ("META_DATA_EXPORT", "EXPORT_META_DATA"):
            if self.schema.has(table, "name", "value"):
                meta.update({name_text(k): name_text(v) for k, v in self._query(f"SELECT name, value FROM {table}")})
                break
        start = end = None
        if self.schema.has("ANALYSIS_DETAILS", "startTime", "stopTime"):
            rules = RowRules("ANALYSIS_DETAILS", ids=("startTime", "stopTime"), times=False)
            ((lo, hi, *checks),) = self._query(
                f"SELECT min(startTime), max(stopTime), {rules.sql()} FROM ANALYSIS_DETAILS"
            )
            self._verify(rules, "1", [checks])
            if lo is not None:
                start, end = int(lo), int(hi)  # type: ignore[call-overload]
                if start < 0 or end < start:
                    raise TraceError(
                        s.one_line(f"{self.path}: ANALYSIS_DETAILS: capture window [{start}, {end}] is impossible")
                    )
        mode, launches, total = self._graph_mode()
        return Metadata(
            nsys_version=meta.get("EXPORT_PRODUCT_VERSION"),
            schema_version=meta.get("EXPORT_SCHEMA_VERSION"),
            gpus=self._gpus(),
            capture_start_ns=start,
            capture_end_ns=end,
            graph_mode=mode,
            graph_launches=launches,
            graph_total_ns=total,
        )

    def _gpus(self) -> tuple[GpuInfo, ...]:
        for table in ("TARGET_INFO_GPU", "TARGET_INFO_CUDA_GPU"):
            cols = self.schema.tables.get(table)
            if not cols or "name" not in cols:
                continue
            key = next((c for c in ("id", "deviceId", "cudaId") if c in cols), None)
            sms = next((c for c in ("smCount", "numMultiprocessors", "multiProcessorCount") if c in cols), None)
            if key is None:
                continue
            sm_sql = sms if sms else "NULL"
            rules = RowRules(table, ids=(key,), nullable=(sms,) if sms else (), times=False)
            ((*checks,),) = self._query(f"SELECT {rules.sql()} FROM {table}")
            self._verify(rules, "1", [checks])
            rows = self._query(f"SELECT DISTINCT {key}, name, {sm_sql} FROM {table} ORDER BY {key}")
            seen: dict[int, GpuInfo] = {}
            for gid, name, sm in rows:
                seen.setdefault(int(gid), GpuInfo(int(gid), name_text(name), None if sm is None else int(sm)))  # type: ignore[call-overload]
            return tuple(seen.values())
        return ()

    def _graph_mode(self) -> tuple[GraphMode, int, int]:
        launches = total = 0
        if self.schema.has(s.GRAPH_TRACE, "start", "end"):
            launches, total = self.graph_totals()
        node = bool(self._node_mode)
        if self._node_mode is None and self.schema.has(s.KERNEL, "graphNodeId"):
            # Before 2022 the column is NOT NULL with default 0, so 0 means "not a graph node".
            node = bool(
                self._query(f"SELECT 1 FROM {s.KERNEL} WHERE graphNodeId IS NOT NULL AND graphNodeId != 0 LIMIT 1")
            )
        if launches and node:
            return GraphMode.MIXED, launches, total
        if launches:
            return GraphMode.GRAPH, launches, total
        return (GraphMode.NODE if node else GraphMode.NONE), launches, total

    # --- GPU activity --------------------------------------------------------------

    def has_kernels(self) -> bool:
        return self.schema.has(s.KERNEL, "start", "end")

    def kernels(self, sel: Selection = Selection()) -> KernelGroups:
        if not self.schema.has(s.KERNEL, "start", "end", "deviceId"):
            empty = np.empty(0, dtype=np.int64)
            return KernelGroups((), (), empty, np.zeros(1, dtype=np.int64), empty, empty, ())
        cols = self.schema.tables[s.KERNEL]
        name_col = "demangledName" if "demangledName" in cols else "shortName"
        short_col = "shortName" if "shortName" in cols else name_col
        where = self._where(s.KERNEL, sel)
        configs_sql = self._configs_sql(name_col, where)
        # The configs scan runs beside the interval scan on a second read-only connection
        # (SQLite releases the GIL while it scans). A temp table of selected launches
        # lives on this connection only, so a selection by launches scans in turn.
        with ThreadPoolExecutor(max_workers=1) as pool:
            pending = None if sel.launches_table else pool.submit(_fetch_beside, self.path, configs_sql)
            # One pass with no GROUP BY (SQLite would sort every row for it): each column
            # arrives as one comma-separated string, parsed by numpy, grouped by argsort.
            # coalesce keeps a missing name from shifting the columns (group_concat skips
            # NULLs); a NULL anywhere else is an impossible row, caught by the checks.
            ((count, *blobs),) = self._query(
                f"SELECT count(*), {_blob(f'coalesce({name_col}, -1)')}, {_blob(f'coalesce({short_col}, -1)')}, "
                f"{_blob('deviceId')}, {_blob('start')}, {_blob(_END)} FROM {s.KERNEL} WHERE {where}"
            )
            rules = RowRules(s.KERNEL, ids=("deviceId",), nullable=(name_col, short_col))
            names, shorts, devs, start, end = self._parse(rules, where, count, blobs, (3, 4))
            order = np.lexsort((devs, names))
            names, shorts, devs, start, end = names[order], shorts[order], devs[order], start[order], end[order]
            first = (
                np.flatnonzero(np.concatenate(([True], (names[1:] != names[:-1]) | (devs[1:] != devs[:-1]))))
                if len(names)
                else np.empty(0, dtype=np.int64)
            )
            strings = self.strings([int(x) for x in names[first]] + [int(x) for x in shorts[first]])
            config_rows = pending.result() if pending else self._query(configs_sql)
        return KernelGroups(
            short=tuple(strings[int(x)] for x in shorts[first]),
            demangled=tuple(strings[int(x)] for x in names[first]),
            device=devs[first].astype(np.int64),
            offsets=np.append(first, len(names)).astype(np.int64),
            start=start,
            end=end,
            configs=self._configs(config_rows, whole=where == self._where(s.KERNEL, Selection())),
        )

    def _configs_sql(self, name_col: str, where: str) -> str:
        cols = self.schema.tables[s.KERNEL]
        wanted = ("gridX", "gridY", "gridZ", "blockX", "blockY", "blockZ",
                  "registersPerThread", "staticSharedMemory", "dynamicSharedMemory")  # fmt: skip
        exprs = [f'coalesce("{c}", 0)' if c in cols else "0" for c in wanted]
        # The same pass answers "are any kernels graph nodes?", which would otherwise
        # cost a scan of its own (0 means "not a node" in pre-2022 NOT NULL columns).
        node = "coalesce(graphNodeId, 0) != 0" if "graphNodeId" in cols else "0"
        # DISTINCT builds a small b-tree of the few configs instead of sorting every row.
        return f"SELECT DISTINCT coalesce({name_col}, -1), {', '.join(exprs)}, {node} FROM {s.KERNEL} WHERE {where}"

    def _configs(self, rows: list[tuple[object, ...]], whole: bool) -> tuple[tuple[str, LaunchConfig], ...]:
        if whole:
            self._node_mode = any(r[-1] for r in rows)
        strings = self.strings([r[0] for r in rows])  # type: ignore[misc]
        out = set()
        for r in rows:
            # A handful of distinct rows: checking them here costs nothing per launch.
            if not all(type(x) is int for x in r[1:-1]):
                raise TraceError(
                    s.one_line(f"{self.path}: {s.KERNEL}: a launch configuration holds a non-integer value {r[1:-1]!r}")
                )
            v = [int(x) for x in r[1:-1]]  # type: ignore[call-overload]
            out.add((strings[int(r[0])], LaunchConfig((v[0], v[1], v[2]), (v[3], v[4], v[5]), v[6], v[7], v[8])))  # type: ignore[call-overload]
        return tuple(out)

    def memcpy(self, sel: Selection = Selection()) -> tuple[CopyRow, ...]:
        if not self.schema.has(s.MEMCPY, "start", "end", "copyKind", "bytes"):
            return ()
        enum = {v: k for k, v in self._enum("ENUM_CUDA_MEMCPY_OPER").items()} or _COPY_KINDS_BUILTIN
        out: dict[str, CopyRow] = {}
        for kind, ops, nbytes, total in self._copy_sums(s.MEMCPY, "copyKind", sel):
            name = enum.get(kind, f"CUDA_MEMCPY_KIND_{kind}")
            label = _COPY_LABELS.get(name.removeprefix("CUDA_MEMCPY_KIND_"), name)
            prev = out.get(label, CopyRow(label, 0, 0, 0))
            out[label] = CopyRow(label, prev.ops + ops, prev.bytes + nbytes, prev.total_ns + total)
        return tuple(sorted(out.values(), key=lambda r: r.kind))

    def memset(self, sel: Selection = Selection()) -> tuple[CopyRow, ...]:
        if not self.schema.has(s.MEMSET, "start", "end", "bytes"):
            return ()
        sums = self._copy_sums(s.MEMSET, None, sel)
        return tuple(CopyRow("memset", ops, nbytes, total) for _, ops, nbytes, total in sums)

    def _copy_sums(self, table: str, key: str | None, sel: Selection) -> list[tuple[int, int, int, int]]:
        """(key, ops, bytes, ns) per distinct ``key`` (or for all rows) of a copy table's selection.

        One bulk scan parsed by numpy, as for kernels: a GROUP BY carrying the checks of
        ``RowRules.sql`` costs twice as much on a quarter of a million copies.
        """
        where = self._where(table, sel)
        rules = RowRules(table, ids=(key,) if key else (), sizes=("bytes",))
        cols = ([key] if key else []) + ["bytes", "start", _END]
        ((count, *blobs),) = self._query(
            f"SELECT count(*), {', '.join(_blob(c) for c in cols)} FROM {table} WHERE {where}"
        )
        arrays = self._parse(rules, where, count, blobs, (len(cols) - 2, len(cols) - 1))
        nbytes, dur = arrays[-3], arrays[-1] - arrays[-2]
        if len(nbytes) and int(nbytes.min()) < 0:
            raise self._diagnose(rules, where)
        if float(np.sum(nbytes, dtype=np.float64)) > INT64_MAX:
            raise TraceError(s.one_line(f"{self.path}: {table}: bytes sum past the int64 range; the export is damaged"))
        keys = arrays[0] if key else np.zeros(len(nbytes), dtype=np.int64)
        uniq, inverse = np.unique(keys, return_inverse=True)
        ops = np.bincount(inverse, minlength=len(uniq))
        sizes = np.zeros(len(uniq), dtype=np.int64)
        np.add.at(sizes, inverse, nbytes)
        times = np.zeros(len(uniq), dtype=np.int64)
        np.add.at(times, inverse, dur)
        return [(int(k), int(o), int(b), int(ns)) for k, o, b, ns in zip(uniq, ops, sizes, times, strict=True)]

    def _sync_ids(self) -> dict[int, str]:
        """StringIds ids of synchronising API names -> the name, version suffix stripped."""
        if not self.schema.has("StringIds", "id", "value"):
            return {}
        return {
            int(i): _VERSION_SUFFIX.sub("", str(v))  # type: ignore[call-overload]
            for i, v in self._query(
                "SELECT id, value FROM StringIds WHERE value LIKE 'cu%' AND typeof(id) = 'integer'"
            )
            if _SYNC_API.match(str(v))
        }

    def sync_calls(self, window: Window | None = None) -> tuple[ApiRow, ...]:
        ids = self._sync_ids()
        if not ids:
            return ()
        totals: dict[str, tuple[int, int]] = {}
        marks = ",".join(str(i) for i in ids)
        cond = ""
        if window is not None:
            cond = f" AND start >= {int(window.start_ns)} AND start < {int(window.end_ns)}"
        for table in (s.RUNTIME, s.DRIVER):
            if not self.schema.has(table, "nameId", "start", "end"):
                continue
            rules = RowRules(table)
            where = f"nameId IN ({marks}){cond}"
            rows, checks = _split_checks(
                self._query(
                    f'SELECT nameId, count(*), sum("end" - start), {rules.sql()} FROM {table} '
                    f"WHERE {where} GROUP BY nameId"
                )
            )
            self._verify(rules, where, checks)
            for nid, calls, total in rows:
                name = ids[int(nid)]  # type: ignore[call-overload]
                c, t = totals.get(name, (0, 0))
                totals[name] = (c + int(calls), t + int(total))  # type: ignore[call-overload]
        return tuple(ApiRow(n, c, t) for n, (c, t) in sorted(totals.items()))

    def sync_events(self) -> SyncCalls:
        """The individual synchronising calls, for scoping them like launches."""
        e = np.empty(0, dtype=np.int64)
        ids = self._sync_ids()
        tables = [t for t in (s.RUNTIME, s.DRIVER) if ids and self.schema.has(t, "nameId", "start", "end", "globalTid")]
        if not tables:
            return SyncCalls((), e, e, e, e)
        nid, start, end, tid = self._columns(
            tables, ("nameId", "start", _END, "globalTid"), f"nameId IN ({','.join(str(i) for i in ids)})"
        )
        names = tuple(sorted(set(ids.values())))
        lookup = {i: names.index(n) for i, n in ids.items()}
        uniq, inverse = np.unique(nid, return_inverse=True)
        code = np.array([lookup[int(i)] for i in uniq], dtype=np.int64)[inverse]
        return SyncCalls(names, code, start, end, tid)

    def kernel_time_ns(self, sel: Selection = Selection()) -> int:
        """Summed kernel duration of the selection (the denominator of coverage)."""
        if not self.schema.has(s.KERNEL, "start", "end"):
            return 0
        rules, where = RowRules(s.KERNEL), self._where(s.KERNEL, sel)
        (v, *checks), = self._query(
            f'SELECT coalesce(sum("end" - start), 0), {rules.sql()} FROM {s.KERNEL} WHERE {where}'
        )
        self._verify(rules, where, [checks])
        return int(v)  # type: ignore[call-overload, no-any-return]

    def graph_totals(self, sel: Selection = Selection()) -> tuple[int, int]:
        """(launches, total ns) of whole-graph GRAPH_TRACE rows in the selection.

        A graph launch's runtime row shares its correlationId with the GRAPH_TRACE row;
        counting rows of this table alone counts every launch once.
        """
        if not self.schema.has(s.GRAPH_TRACE, "start", "end"):
            return 0, 0
        rules, where = RowRules(s.GRAPH_TRACE), self._where(s.GRAPH_TRACE, sel)
        (n, total, *checks), = self._query(
            f'SELECT count(*), coalesce(sum("end" - start), 0), {rules.sql()} FROM {s.GRAPH_TRACE} WHERE {where}'
        )
        self._verify(rules, where, [checks])
        return int(n), int(total)  # type: ignore[call-overload]

    def graph_launches(self) -> tuple[GraphStats, ...]:
        """Whole-graph launches per graph id (GRAPH_TRACE), by id: the only timing a
        graph-mode capture has of the work inside its graphs."""
        if not self.schema.has(s.GRAPH_TRACE, "start", "end", "graphId"):
            return ()
        rows = self._query(
            f'SELECT graphId, count(*), coalesce(sum("end" - start), 0) FROM {s.GRAPH_TRACE} '
            f"WHERE {self._where(s.GRAPH_TRACE, Selection())} GROUP BY graphId ORDER BY graphId"
        )
        return tuple(GraphStats(int(g), int(n), int(t)) for g, n, t in rows)  # type: ignore[call-overload]

    # --- NVTX ----------------------------------------------------------------------

    def _nvtx_types(self) -> tuple[dict[str, int], int]:
        enum = self._enum("ENUM_NSYS_EVENT_TYPE")
        types = {n: enum.get(n, v) for n, v in _NVTX_RANGE_TYPES_BUILTIN.items()}
        return types, enum.get("NvtxDomainCreate", _NVTX_DOMAIN_CREATE_BUILTIN)

    def _nvtx_name_sql(self) -> tuple[str, str]:
        """SQL for a range's explicit text and its registered string id (NULL when absent).

        Registered strings are resolved in Python, once per id, rather than joined per row:
        a join would copy a string into every range that uses it, and fold it per row.
        """
        cols = self.schema.tables[s.NVTX]
        text = "n.text" if "text" in cols else "NULL"
        if "textId" not in cols or not self.schema.has("StringIds", "id", "value"):
            return text, "NULL"
        return text, f"CASE WHEN {text} IS NULL AND typeof(n.textId) = 'integer' THEN n.textId END"

    def _nvtx_namer(self, text_ids: Sequence[object]) -> Callable[[object, object], str]:
        """A function giving a range's name: its text, else its registered string, else ''.

        Every id in ``text_ids`` is resolved up front, in one batch of queries.
        """
        strings = self.strings([int(i) for i in set(text_ids) if i is not None])  # type: ignore[call-overload]
        missing = self._missing_strings

        def name(text: object, text_id: object) -> str:
            if text is not None:
                return name_text(text)
            if text_id is None or text_id in missing:
                return ""
            return strings[text_id]  # type: ignore[index]

        return name

    def _short_strings(self) -> bool:
        """Whether no StringIds value is longer than NAME_LIMIT (one pass over the strings)."""
        if self._short is None:
            (longest,) = self._query("SELECT coalesce(max(length(value)), 0) FROM StringIds")[0]
            self._short = int(longest) <= NAME_LIMIT  # type: ignore[call-overload]
        return self._short

    def _nvtx_domains(self, create: int) -> dict[int, str]:
        if not self.schema.has(s.NVTX, "domainId"):
            return {}
        text, text_id = self._nvtx_name_sql()
        rows = self._query(
            f"SELECT n.domainId, {text}, {text_id} FROM {s.NVTX} n "
            "WHERE n.eventType = ? AND typeof(n.domainId) = 'integer'",
            (create,),
        )
        name = self._nvtx_namer([r[2] for r in rows])
        return {int(d): name(t, i) for d, t, i in rows}  # type: ignore[call-overload]

    def _nvtx_rules(self) -> RowRules:
        """Closed NVTX ranges (marks and open ranges have no end, and are not used)."""
        nullable = tuple(c for c in ("domainId", "globalTid") if self.schema.has(s.NVTX, c))
        return RowRules(s.NVTX, nullable=nullable, alias="n")

    def nvtx_summary(self, window: Window | None = None) -> tuple[RangeRow, ...]:
        """Range instances grouped by raw name and domain (SQL does the grouping)."""
        if not self.schema.has(s.NVTX, "start", "end", "eventType"):
            return ()
        types, create = self._nvtx_types()
        text, text_id = self._nvtx_name_sql()
        join = ""
        if text_id != "NULL" and self._short_strings():
            # Every real export: join the strings and fold them in SQL, so that GROUP BY
            # merges PyTorch's per-call registered names as it does explicit text.
            text, text_id, join = f"coalesce({text}, st.value)", "NULL", " LEFT JOIN StringIds st ON st.id = n.textId"
        dom = "n.domainId" if self.schema.has(s.NVTX, "domainId") else "0"
        cond = ""
        if window is not None:
            cond = f" AND n.start >= {int(window.start_ns)} AND n.start < {int(window.end_ns)}"
        rules = self._nvtx_rules()
        where = f"n.eventType IN ({','.join(str(t) for t in types.values())}) AND n.\"end\" IS NOT NULL{cond}"
        folded = _fold_sql(f"coalesce({text}, '')")
        rows, checks = _split_checks(
            self._query(
                f"SELECT {folded}, {text_id}, coalesce({dom}, 0), count(*), "
                f'sum(n."end" - n.start), {rules.sql()} FROM {s.NVTX} n{join} WHERE {where} GROUP BY 1, 2, 3'
            )
        )
        self._verify(rules, where, checks)
        domains = self._nvtx_domains(create)
        merged: dict[tuple[str, str], tuple[int, int]] = {}
        namer = self._nvtx_namer([r[1] for r in rows])
        for cut, sid, d, c, total in rows:
            # A string id is there only when the text is not: it is looked up and folded
            # here, once per id; explicit text was folded in SQL.
            name = _fold(namer(None, sid)) if sid is not None else name_text(cut)
            key = (name, domains.get(int(d), ""))  # type: ignore[call-overload]
            calls, ns = merged.get(key, (0, 0))
            merged[key] = (calls + int(c), ns + int(total))  # type: ignore[call-overload]
        return tuple(RangeRow(n, d, c, ns) for (n, d), (c, ns) in merged.items())

    def nvtx_ranges(self) -> NvtxRanges:
        """Every closed range instance, for attribution of GPU work to ranges."""
        if not self.schema.has(s.NVTX, "start", "end", "eventType", "globalTid"):
            e = np.empty(0, dtype=np.int64)
            return NvtxRanges((), (), np.empty(0, dtype=np.bool_), e, e, e)
        types, create = self._nvtx_types()
        text, text_id = self._nvtx_name_sql()
        dom = "n.domainId" if self.schema.has(s.NVTX, "domainId") else "0"
        push = {types["NvtxPushPopRange"], types["NvtxtPushPopRange"]}
        where = f"n.eventType IN ({','.join(str(t) for t in types.values())}) AND n.\"end\" IS NOT NULL"
        rules = self._nvtx_rules()
        ((*checks,),) = self._query(f"SELECT {rules.sql()} FROM {s.NVTX} n WHERE {where}")
        self._verify(rules, where, [checks])
        rows = self._query(
            f'SELECT {text}, coalesce({dom}, 0), n.eventType, n.start, n."end", coalesce(n.globalTid, 0), {text_id} '
            f"FROM {s.NVTX} n WHERE {where} ORDER BY n.start"
        )
        domains = self._nvtx_domains(create)
        namer = self._nvtx_namer([r[6] for r in rows])
        return NvtxRanges(
            name=tuple(namer(r[0], r[6]) for r in rows),
            domain=tuple(domains.get(int(r[1]), "") for r in rows),  # type: ignore[call-overload]
            push_pop=np.array([int(r[2]) in push for r in rows], dtype=np.bool_),  # type: ignore[call-overload]
            start=np.array([r[3] for r in rows], dtype=np.int64),
            end=np.array([r[4] for r in rows], dtype=np.int64),
            tid=np.array([r[5] for r in rows], dtype=np.int64),
        )

    def launch_calls(self) -> RuntimeCalls:
        """Runtime/driver calls that carry a correlation id to GPU work."""
        tables = [t for t in (s.RUNTIME, s.DRIVER) if self.schema.has(t, "start", "end", "globalTid", "correlationId")]
        if not tables:
            e = np.empty(0, dtype=np.int64)
            return RuntimeCalls(e, e, e, e, e)
        start, end, tid, corr = self._columns(
            tables, ("start", _END, "globalTid", "correlationId"), "correlationId IS NOT NULL AND correlationId != 0"
        )
        return RuntimeCalls(start, end, tid, (tid >> 24) & 0xFFFFFF, corr)

    def _columns(self, tables: Sequence[str], cols: Sequence[str], where: str) -> list[IntArray]:
        """Integer columns of the rows of ``tables`` matching ``where``, each as one array."""
        parts: list[list[IntArray]] = [[] for _ in cols]
        for table in tables:
            ((count, *blobs),) = self._query(
                f"SELECT count(*), {', '.join(_blob(c) for c in cols)} FROM {table} WHERE {where}"
            )
            rules = RowRules(table, ids=tuple(c for c in cols if c not in ("start", _END)))
            arrays = self._parse(rules, where, count, blobs, (cols.index("start"), cols.index(_END)))
            for part, values in zip(parts, arrays, strict=True):
                part.append(values)
        return [np.concatenate(p) for p in parts]

    def _parse(
        self, rules: RowRules, where: str, count: object, blobs: Sequence[object], times: tuple[int, int]
    ) -> list[IntArray]:
        """The ``group_concat`` columns of a bulk scan as arrays, checked as ``rules`` say.

        ``times`` are the indexes of the start and end columns in ``blobs``.
        """
        if not all(ints_ok(b, int(count)) for b in blobs):  # type: ignore[arg-type, call-overload]
            raise self._diagnose(rules, where)
        arrays = [_ints(b) for b in blobs]  # type: ignore[arg-type]
        if not intervals_ok(arrays[times[0]], arrays[times[1]]):
            raise self._diagnose(rules, where)
        return arrays

    def select_launches(self, pids: IntArray, corrs: IntArray, name: str = "nsysdiff_sel") -> Selection:
        """Load (pid, correlationId) pairs into a temp table (in memory, not beside the file)."""
        self.con.execute("PRAGMA temp_store = MEMORY")
        self.con.execute(f"DROP TABLE IF EXISTS temp.{name}")
        self.con.execute(f"CREATE TEMP TABLE {name} (pid INTEGER, corr INTEGER, PRIMARY KEY (pid, corr))")
        self.con.executemany(
            f"INSERT OR IGNORE INTO temp.{name} VALUES (?, ?)",
            zip(pids.tolist(), corrs.tolist(), strict=True),
        )
        return Selection(launches_table=name)

    def first_kernel_ns(self) -> int | None:
        if not self.has_kernels():
            return None
        rules = RowRules(s.KERNEL)
        (v, *checks), = self._query(f"SELECT min(start), {rules.sql()} FROM {s.KERNEL}")
        self._verify(rules, "1", [checks])
        return None if v is None else int(v)  # type: ignore[call-overload]


@contextmanager
def open_trace(path: str | Path) -> Iterator[TraceReader]:
    p = Path(path)
    con = s.connect(p)
    try:
        yield TraceReader(p, con, s.probe(con, p))
    finally:
        con.close()
