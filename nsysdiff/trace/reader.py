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
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

import numpy as np
import numpy.typing as npt

from nsysdiff.errors import TraceError
from nsysdiff.fingerprint.model import QUANTILE_GRID, GpuInfo, GraphMode, GraphStats, LaunchConfig
from nsysdiff.trace import schema as s
from nsysdiff.trace.checks import CHECKS, RowRules, diagnosis, fine
from nsysdiff.trace.schema import Schema

IntArray = npt.NDArray[np.int64]
_T = TypeVar("_T")
FloatArray = npt.NDArray[np.float64]

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
    """Kernel launches aggregated by (demangled name, device), all in SQLite.

    Group ``i`` is ``calls[i]`` launches of ``demangled[i]`` on ``device[i]`` taking
    ``total_ns[i]``; ``quantiles[i]`` are the per-call percentiles (on ``QUANTILE_GRID``)
    of that name over all its devices, exact, as ``np.percentile`` of every duration.
    """

    short: tuple[str, ...]
    demangled: tuple[str, ...]
    mangled: tuple[str | None, ...]  # None where the export has no mangledName (before 2022.1)
    device: IntArray
    calls: IntArray
    total_ns: IntArray
    quantiles: FloatArray  # shape (groups, len(QUANTILE_GRID))
    devices: tuple[DeviceRow, ...]
    configs: tuple[tuple[str, LaunchConfig], ...]  # distinct (demangled, config) pairs


@dataclass(frozen=True, slots=True)
class DeviceRow:
    """One device's launches: count, summed time, the union of their intervals, the span."""

    device: int
    kernels: int
    kernel_ns: int
    busy_ns: int
    first_ns: int
    last_ns: int


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
class RangeKey:
    """A distinct NVTX range name (cut at PyTorch's suffixes by SQL) in one domain."""

    sql_name: str
    domain_id: int
    domain: str
    count: int


@dataclass(frozen=True, slots=True)
class Attribution:
    """Which events a scope keeps (the rules are in ``nsysdiff/fingerprint/scope.py``).

    An event is kept when it lies inside a range of every mask in ``within`` (a mask is
    the codes given to :meth:`TraceReader.load_ranges`), starts at or after its process's
    cut (made by :meth:`TraceReader.make_cuts`) when ``cut``, and, for the events a window
    applies to, starts inside ``window``.
    """

    within: tuple[tuple[int, ...], ...] = ()
    window: Window | None = None
    cut: bool = False


_END = '"end"'  # a keyword in SQL: always quoted


# PyTorch's per-call suffixes make every range name unique; cutting them in SQL lets
# GROUP BY merge a million "aten::mm, seq = N, op_id = M" rows into one.
_NVTX_SUFFIXES = (", seq = ", ", op_id = ", ", sizes = ", ", stashed seq = ", ", input_op_ids = ")


def _fold_sql(expr: str) -> str:
    far = 1 << 30
    cuts = ", ".join(f"coalesce(nullif(instr({expr}, '{p}'), 0), {far})" for p in _NVTX_SUFFIXES)
    return f"substr({expr}, 1, min({cuts}) - 1)"


def _fetch_beside(path: Path, sqls: Sequence[str]) -> list[list[tuple[object, ...]]]:
    """Run queries on a connection of their own (for a worker thread)."""
    con = s.connect(path)
    try:
        _tune(con, path)
        return [con.execute(sql).fetchall() for sql in sqls]
    except s.DB_ERRORS as e:
        if "integer overflow" in str(e):
            raise TraceError(s.one_line(f"{path}: a sum of durations overflows int64")) from None
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
        if value.isascii() and len(value) > NAME_LIMIT:
            # A crafted name of megabytes: cut without decoding it all (one byte, one character).
            return _cut(value[:NAME_LIMIT].decode("ascii"), len(value), value)
        value = value.decode("utf-8", "replace")
    text = "" if value is None else str(value)
    if len(text) <= NAME_LIMIT:
        return text
    return _cut(text[:NAME_LIMIT], len(text), text.encode("utf-8", "surrogatepass"))


def _cut(head: str, length: int, utf8: bytes) -> str:
    """A long name's start ``head``, how many characters were cut from its ``length``, and
    the digest of all its ``utf8`` bytes."""
    digest = hashlib.sha256(utf8).hexdigest()[:16]
    return f"{head}…[{length - NAME_LIMIT:,} more characters cut; sha256 {digest}]"


# _fold_sql's cut, on UTF-8 bytes: the suffixes are ASCII, so a match in the bytes is a
# match in the text at a character boundary. One linear pass, whatever the text.
# (Each starts with ", ": written as one prefix, the search skips to its occurrences.)
_SUFFIX_BYTES = re.compile(b", (?:" + b"|".join(re.escape(p.encode()[2:]) for p in _NVTX_SUFFIXES) + b")")
_LONG_NAME = "nsysdiff_long_name"


def _long_name(raw: bytes) -> str:
    """The key of a range name of more than NAME_LIMIT bytes: folded as :func:`_fold_sql`
    folds, then cut as :func:`name_text` cuts. This is the final name: the readers of
    keys take it as it is (:func:`_key_name`)."""
    m = _SUFFIX_BYTES.search(raw)
    return name_text(raw if m is None else raw[: m.start()])


def _key_sql(expr: str) -> str:
    """The key of the range name ``expr``: what :func:`_fold_sql` makes of it.

    A name of more than NAME_LIMIT bytes (a crafted file: megabytes per range) goes to
    :func:`_long_name` instead, which reads it once more: folded in SQL, it would be read
    six times, searched five times and stored in the keyed table at full length, per row.
    Real names pay one ``length`` call (5% of the NVTX pass; a subquery that computed the
    name once, as a co-routine, cost 30% more on them than the repeated reads it saves).
    The two ways give the same key for any name the limit keeps whole.
    """
    return (
        f"CASE WHEN length(CAST({expr} AS BLOB)) > {NAME_LIMIT} THEN {_LONG_NAME}(CAST({expr} AS BLOB)) "
        f"ELSE {_fold_sql(expr)} END"
    )


def _key_name(value: object) -> str:
    """A key made by :func:`_key_sql` as text: decoded when a BLOB, never cut again."""
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return str(value)


# Above this many keys, testing a name against each costs more than folding it.
_PREFILTER_KEYS = 8


def _key_prefilter(expr: str, keys: Sequence[str]) -> tuple[str, list[str]]:
    """SQL that holds for every name ``expr`` whose key (:func:`_key_sql`) is among
    ``keys``, and for few others, with its parameters: a name's key is the name itself
    or the part before a suffix, which starts with ", ". Comparing the name with a few
    strings costs less than folding it, so only the likely names are folded.
    """
    if not keys or len(keys) > _PREFILTER_KEYS:
        return "1", []
    short = [k for k in keys if len(k) <= NAME_LIMIT]
    # "k" itself, or "k, ..." (between "k, " and "k,!": "!" follows " " in every encoding).
    terms = [f"({expr} = ? OR ({expr} >= ? AND {expr} < ?))"] * len(short)
    if len(short) < len(keys):  # a cut name: the whole name is past the limit too
        terms.append(f"length(CAST({expr} AS BLOB)) > {NAME_LIMIT}")
    return "(" + " OR ".join(terms) + ")", [p for k in short for p in (k, k + ", ", k + ",!")]


# A launch's shape, as gpukernsum groups launches.
_SHAPE_COLS = ("gridX", "gridY", "gridZ", "blockX", "blockY", "blockZ")


def suffix(grid: tuple[int, ...], block: tuple[int, ...]) -> str:
    """What ``--by name+launch`` appends to a kernel's name."""
    return f" [grid {','.join(map(str, grid))}, block {','.join(map(str, block))}]"


def shape_suffix(shape: str) -> str:
    """:func:`suffix` of a shape key written by the kernel scan (``''``: no shape)."""
    if not shape:
        return ""
    v = shape.split(",")
    return suffix(tuple(int(x) for x in v[:3]), tuple(int(x) for x in v[3:]))


# Rows per fetch when a result is streamed into numpy: a few MB, whatever the trace size.
_CHUNK = 1 << 16
# SQLite's own memory: sorts and temporary tables spill to a temporary file beyond this,
# so no query holds more than a few tens of MB however many rows it sorts.
_CACHE_KIB = 32 * 1024


def _tune(con: sqlite3.Connection, path: Path) -> None:
    try:
        con.execute("PRAGMA temp_store = FILE")
        con.execute(f"PRAGMA cache_size = -{_CACHE_KIB}")
        con.execute(f"PRAGMA temp.cache_size = -{_CACHE_KIB}")
        # Temporary tables are scratch: a failed statement needs no rollback.
        con.execute("PRAGMA temp.journal_mode = OFF")
    except sqlite3.Error as e:
        raise s.db_error(path, e) from None


def split_checks(rows: Sequence[Sequence[object]]) -> tuple[list[tuple[object, ...]], list[tuple[object, ...]]]:
    """(data columns, check columns) of each row of a query that ends with ``RowRules.sql``."""
    return [tuple(r[:-CHECKS]) for r in rows], [tuple(r[-CHECKS:]) for r in rows]


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


def _lerp(a: FloatArray, b: FloatArray, t: FloatArray) -> FloatArray:
    """numpy's own interpolation (``numpy.lib._function_base_impl._lerp``), to the bit."""
    diff = b - a
    out: FloatArray = a + diff * t
    np.subtract(b, diff * (1 - t), out=out, where=t >= 0.5)
    return out


def _list(values: Iterable[int]) -> str:
    return ",".join(str(int(v)) for v in values)


class TraceReader:
    """Read-only access to one export, through its probed schema."""

    def __init__(self, path: Path, con: sqlite3.Connection, schema: Schema) -> None:
        self.path = path
        self.con = con
        self.schema = schema
        self._strings: dict[int, str] = {}
        self._short: bool | None = None  # whether no StringIds value is past NAME_LIMIT
        self._node_mode: bool | None = None  # learnt while reading configs, when it was
        # (range kind, codes) -> its temporary table of range reaches (_reach_tables).
        self._reach: dict[tuple[int, str], str] = {}
        self._folds: dict[tuple[str, str], list[tuple[object, ...]]] = {}  # _fold_groups(whole=True)
        con.create_function(_LONG_NAME, 1, _long_name, deterministic=True)

    # --- plumbing ------------------------------------------------------------------

    def query(self, sql: str, params: Sequence[object] = ()) -> list[tuple[object, ...]]:
        try:
            return self.con.execute(sql, params).fetchall()
        except s.DB_ERRORS as e:
            if "integer overflow" in str(e):
                # sum() refuses to wrap; only impossible values get there.
                raise TraceError(
                    s.one_line(f"{self.path}: a sum of durations or sizes overflows int64; the export is damaged")
                ) from None
            raise s.db_error(self.path, e) from None

    def verify(self, rules: RowRules, where: str, checks: Sequence[Sequence[object]]) -> None:
        """Raise on the impossible rows that a scan's ``RowRules.sql`` values show."""
        if not fine(checks):
            raise self.diagnose(rules, where)

    def diagnose(self, rules: RowRules, where: str) -> TraceError:
        (row,) = self.query(rules.diagnosis_sql(where))
        return diagnosis(self.path, rules, row)

    def strings(self, ids: Sequence[int]) -> dict[int, str]:
        """Resolve StringIds ids, fetching each at most once."""
        missing = sorted({int(i) for i in ids if i is not None} - self._strings.keys())
        if missing and self.schema.has("StringIds", "id", "value"):
            for chunk in range(0, len(missing), 500):
                part = missing[chunk : chunk + 500]
                marks = ",".join("?" * len(part))
                for key, value in self.query(
                    f"SELECT id, value FROM StringIds WHERE id IN ({marks})", part
                ):
                    self._strings[int(key)] = name_text(value)  # type: ignore[call-overload]
        for i in missing:
            self._strings.setdefault(i, f"<string {i}>")
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
        rows = self.query(f"SELECT id, name FROM {table} WHERE typeof(id) = 'integer'")
        return {str(n): int(i) for i, n in rows}  # type: ignore[call-overload]

    # --- metadata ------------------------------------------------------------------

    def metadata(self) -> Metadata:
        meta: dict[str, str] = {}
        for table in ("META_DATA_EXPORT", "EXPORT_META_DATA"):
            if self.schema.has(table, "name", "value"):
                meta.update({name_text(k): name_text(v) for k, v in self.query(f"SELECT name, value FROM {table}")})
                break
        start = end = None
        if self.schema.has("ANALYSIS_DETAILS", "startTime", "stopTime"):
            rules = RowRules("ANALYSIS_DETAILS", ids=("startTime", "stopTime"), times=False)
            ((lo, hi, *checks),) = self.query(
                f"SELECT min(startTime), max(stopTime), {rules.sql()} FROM ANALYSIS_DETAILS"
            )
            self.verify(rules, "1", [checks])
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
            ((*checks,),) = self.query(f"SELECT {rules.sql()} FROM {table}")
            self.verify(rules, "1", [checks])
            rows = self.query(f"SELECT DISTINCT {key}, name, {sm_sql} FROM {table} ORDER BY {key}")
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
                self.query(f"SELECT 1 FROM {s.KERNEL} WHERE graphNodeId IS NOT NULL AND graphNodeId != 0 LIMIT 1")
            )
        if launches and node:
            return GraphMode.MIXED, launches, total
        if launches:
            return GraphMode.GRAPH, launches, total
        return (GraphMode.NODE if node else GraphMode.NONE), launches, total

    # --- GPU activity --------------------------------------------------------------

    def has_kernels(self) -> bool:
        return self.schema.has(s.KERNEL, "start", "end")

    def kernels(self, sel: Selection = Selection(), *, shapes: bool = False) -> KernelGroups:
        """Kernel launches of ``sel``, aggregated without holding one value per launch.

        With ``shapes``, each (name, grid, block) is a kernel of its own, as ``nsys stats``'
        ``gpukernsum`` groups them: its name gets ``[grid X,Y,Z, block X,Y,Z]`` appended.

        Three scans, each bounded in memory whatever the row count: a histogram of the
        distinct durations per (name, device) in a temporary table (counts, totals and exact
        quantiles come from it), a window query for the busy union per device, and the
        distinct launch configurations.
        """
        if not self.schema.has(s.KERNEL, "start", "end", "deviceId"):
            e = np.empty(0, dtype=np.int64)
            return KernelGroups((), (), (), e, e, e, np.empty((0, len(QUANTILE_GRID))), (), ())
        cols = self.schema.tables[s.KERNEL]
        name_col = "demangledName" if "demangledName" in cols else "shortName"
        short_col = "shortName" if "shortName" in cols else name_col
        # Exports from nsys 2022.1 on carry the mangled name; one per demangled name is
        # taken in the histogram scan itself (the least id), never in a scan of its own.
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
            shape = " || ',' || ".join(f'coalesce("{c}", 0)' if c in cols else "0" for c in _SHAPE_COLS)
        busy_sql = self._busy_sql(source, where, name_col, short_col, rules)
        configs_sql = self._configs_sql(name_col, where, source)
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
        keys = [(int(g[0]), str(g[1])) for g in groups]  # type: ignore[call-overload]
        shorts = [int(g[3]) for g in groups]  # type: ignore[call-overload]
        mangled_ids = [None if g[6] is None else int(g[6]) for g in groups]  # type: ignore[call-overload]
        strings = self.strings([k[0] for k in keys] + shorts + [i for i in mangled_ids if i is not None])
        demangled = tuple(strings[n] + shape_suffix(sh) for n, sh in keys)
        configs = self._configs(config_rows, whole=sel == Selection())
        if shapes:
            # A configuration belongs to the kernel of its own shape.
            known = set(demangled)
            named = ((name + suffix(cfg.grid, cfg.block), cfg) for name, cfg in configs)
            configs = tuple(dict.fromkeys((k, cfg) for k, cfg in named if k in known))
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

    def _named(self, rules: RowRules, where: str, scans: Callable[[], _T]) -> _T:
        """Run ``scans``; a sum that overflowed (only impossible rows get there) becomes the
        diagnosis that names the table and the rows."""
        try:
            return scans()
        except TraceError as e:
            if "overflow" in str(e):
                raise self.diagnose(rules, where) from None
            raise

    def execute(self, sql: str) -> None:
        self.query(sql)

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
        values = _lerp(a, b, gamma)
        return {key: values[i] for i, key in enumerate(names)}

    def _busy_sql(self, source: str, where: str, name_col: str, short_col: str, rules: RowRules) -> str:
        # Launches in start order: each adds what reaches past the furthest end before it
        # (the union of intervals, computed in order by SQLite with bounded memory). The
        # same pass checks the rows (RowRules), on the columns under their own names.
        reach = (
            'max("end") OVER (PARTITION BY deviceId ORDER BY start '
            "ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING)"
        )
        names = ", ".join(dict.fromkeys((name_col, short_col)))
        return (
            'SELECT coalesce(deviceId, -1) AS dev, count(*), sum("end" - start), sum(max(0, gain)), '
            f'min(start), max("end"), {rules.sql()} FROM ('
            f'SELECT deviceId, start, "end", {names}, '
            f'"end" - max(start, coalesce({reach}, start)) AS gain FROM {source} WHERE {where}'
            ") GROUP BY dev ORDER BY dev"
        )

    def _configs_sql(self, name_col: str, where: str, source: str = s.KERNEL) -> str:
        cols = self.schema.tables[s.KERNEL]
        wanted = ("gridX", "gridY", "gridZ", "blockX", "blockY", "blockZ",
                  "registersPerThread", "staticSharedMemory", "dynamicSharedMemory")  # fmt: skip
        exprs = [f'coalesce("{c}", 0)' if c in cols else "0" for c in wanted]
        # The same pass answers "are any kernels graph nodes?", which would otherwise
        # cost a scan of its own (0 means "not a node" in pre-2022 NOT NULL columns).
        node = "coalesce(graphNodeId, 0) != 0" if "graphNodeId" in cols else "0"
        # DISTINCT builds a small b-tree of the few configs instead of sorting every row.
        return f"SELECT DISTINCT coalesce({name_col}, -1), {', '.join(exprs)}, {node} FROM {source} WHERE {where}"

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
        rules = RowRules(s.MEMCPY, ids=("copyKind",), sizes=("bytes",))
        where = self._where(s.MEMCPY, sel)
        rows, checks = split_checks(
            self.query(
                f'SELECT copyKind, count(*), coalesce(sum(bytes), 0), sum("end" - start), {rules.sql()} '
                f"FROM {s.MEMCPY} WHERE {where} GROUP BY copyKind"
            )
        )
        self.verify(rules, where, checks)
        out: dict[str, CopyRow] = {}
        for kind, ops, nbytes, total in rows:
            name = enum.get(int(kind), f"CUDA_MEMCPY_KIND_{kind}")  # type: ignore[call-overload]
            label = _COPY_LABELS.get(name.removeprefix("CUDA_MEMCPY_KIND_"), name)
            prev = out.get(label, CopyRow(label, 0, 0, 0))
            out[label] = CopyRow(label, prev.ops + int(ops), prev.bytes + int(nbytes), prev.total_ns + int(total))  # type: ignore[call-overload]
        return tuple(sorted(out.values(), key=lambda r: r.kind))

    def memset(self, sel: Selection = Selection()) -> tuple[CopyRow, ...]:
        if not self.schema.has(s.MEMSET, "start", "end", "bytes"):
            return ()
        rules = RowRules(s.MEMSET, sizes=("bytes",))
        where = self._where(s.MEMSET, sel)
        (ops, nbytes, total, *checks), = self.query(
            f'SELECT count(*), coalesce(sum(bytes), 0), coalesce(sum("end" - start), 0), '
            f"{rules.sql()} FROM {s.MEMSET} WHERE {where}"
        )
        self.verify(rules, where, [checks])
        if not ops:
            return ()
        return (CopyRow("memset", int(ops), int(nbytes), int(total)),)  # type: ignore[call-overload]

    def _sync_ids(self) -> dict[int, str]:
        if not self.schema.has("StringIds", "id", "value"):
            return {}
        return {
            int(i): _VERSION_SUFFIX.sub("", str(v))  # type: ignore[call-overload]
            for i, v in self.query(
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
            rows, checks = split_checks(
                self.query(
                    f'SELECT nameId, count(*), sum("end" - start), {rules.sql()} FROM {table} '
                    f"WHERE {where} GROUP BY nameId"
                )
            )
            self.verify(rules, where, checks)
            for nid, calls, total in rows:
                name = ids[int(nid)]  # type: ignore[call-overload]
                c, t = totals.get(name, (0, 0))
                totals[name] = (c + int(calls), t + int(total))  # type: ignore[call-overload]
        return tuple(ApiRow(n, c, t) for n, (c, t) in sorted(totals.items()))

    def kernel_time_ns(self, sel: Selection = Selection()) -> int:
        """Summed kernel duration of the selection (the denominator of coverage)."""
        if not self.schema.has(s.KERNEL, "start", "end"):
            return 0
        rules, where = RowRules(s.KERNEL), self._where(s.KERNEL, sel)
        (v, *checks), = self.query(
            f'SELECT coalesce(sum("end" - start), 0), {rules.sql()} FROM {s.KERNEL} WHERE {where}'
        )
        self.verify(rules, where, [checks])
        return int(v)  # type: ignore[call-overload, no-any-return]

    def graph_totals(self, sel: Selection = Selection()) -> tuple[int, int]:
        """(launches, total ns) of whole-graph GRAPH_TRACE rows in the selection.

        A graph launch's runtime row shares its correlationId with the GRAPH_TRACE row;
        counting rows of this table alone counts every launch once.
        """
        if not self.schema.has(s.GRAPH_TRACE, "start", "end"):
            return 0, 0
        rules, where = RowRules(s.GRAPH_TRACE), self._where(s.GRAPH_TRACE, sel)
        (n, total, *checks), = self.query(
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

    # --- NVTX ----------------------------------------------------------------------

    def _nvtx_types(self) -> tuple[dict[str, int], int]:
        enum = self._enum("ENUM_NSYS_EVENT_TYPE")
        types = {n: enum.get(n, v) for n, v in _NVTX_RANGE_TYPES_BUILTIN.items()}
        return types, enum.get("NvtxDomainCreate", _NVTX_DOMAIN_CREATE_BUILTIN)

    def _nvtx_name_sql(self) -> tuple[str, str]:
        cols = self.schema.tables[s.NVTX]
        if "textId" in cols and self.schema.has("StringIds", "id", "value"):
            return "coalesce(n.text, st.value, '')", f" LEFT JOIN {self._nvtx_strings()} st ON st.id = n.textId"
        return "coalesce(n.text, '')", ""

    def _nvtx_strings(self) -> str:
        """The table registered NVTX strings are joined from, per range.

        ``StringIds`` itself in every real export. When a string is longer than
        ``NAME_LIMIT`` (a crafted file), a temporary copy with such strings cut as
        :func:`name_text` cuts them: joined per row, one string of megabytes would be
        copied and folded once for every range that uses it.
        """
        if self._short is None:
            (longest,) = self.query("SELECT coalesce(max(length(value)), 0) FROM StringIds")[0]
            self._short = int(longest) <= NAME_LIMIT  # type: ignore[call-overload]
            if not self._short:
                self.execute("CREATE TEMP TABLE IF NOT EXISTS nsysdiff_str (id, value TEXT)")
                self.execute(
                    f"INSERT INTO temp.nsysdiff_str SELECT id, value FROM StringIds WHERE length(value) <= {NAME_LIMIT}"
                )
                cur = self.con.execute(f"SELECT id, value FROM StringIds WHERE length(value) > {NAME_LIMIT}")
                try:
                    for key, value in cur:  # one long string in memory at a time
                        self.con.execute("INSERT INTO temp.nsysdiff_str VALUES (?, ?)", (key, name_text(value)))
                except s.DB_ERRORS as e:
                    raise s.db_error(self.path, e) from None
                finally:
                    cur.close()
                self.execute("CREATE INDEX temp.nsysdiff_str_id ON nsysdiff_str (id)")
        return "StringIds" if self._short else "temp.nsysdiff_str"

    def _nvtx_domains(self, create: int) -> dict[int, str]:
        if not self.schema.has(s.NVTX, "domainId"):
            return {}
        name, join = self._nvtx_name_sql()
        return {
            int(d): name_text(t)  # type: ignore[call-overload]
            for d, t in self.query(
                f"SELECT n.domainId, {name} FROM {s.NVTX} n{join} "
                "WHERE n.eventType = ? AND typeof(n.domainId) = 'integer'",
                (create,),
            )
        }

    def _nvtx_rules(self) -> RowRules:
        """Closed NVTX ranges (marks and open ranges have no end, and are not used)."""
        nullable = tuple(c for c in ("domainId", "globalTid") if self.schema.has(s.NVTX, c))
        return RowRules(s.NVTX, nullable=nullable, alias="n")

    def nvtx_summary(self, window: Window | None = None) -> tuple[RangeRow, ...]:
        """Range instances grouped by raw name and domain (SQL does the grouping)."""
        if not self.schema.has(s.NVTX, "start", "end", "eventType"):
            return ()
        types, create = self._nvtx_types()
        name, join = self._nvtx_name_sql()
        cond = ""
        if window is not None:
            cond = f" AND n.start >= {int(window.start_ns)} AND n.start < {int(window.end_ns)}"
        where = f"n.eventType IN ({','.join(str(t) for t in types.values())}) AND n.\"end\" IS NOT NULL{cond}"
        rows = self._fold_groups(f"FROM {s.NVTX} n{join} WHERE {where}", name, where, whole=True)
        return self._range_rows(rows, create)

    def _fold_groups(
        self, from_where: str, name: str, checked: str, *, whole: bool = False
    ) -> list[tuple[object, ...]]:
        """(SQL-folded name, domain id, count, total ns) of the NVTX rows (alias ``n``) that
        ``from_where`` selects; ``checked`` (conditions on ``n`` alone) finds the rows for
        the diagnosis when one of them is impossible.

        An upsert into a small keyed table costs one probe of a few-page b-tree per row;
        GROUP BY would sort every row (many rows, few folded names). The rows' checks
        accumulate beside the counts.

        ``whole``: ``from_where`` reads the trace alone (no temporary table), so the result
        is kept for the next call that asks the same (a scope's census of range names and
        its unscoped NVTX summary are one pass).
        """
        if whole and (from_where, name) in self._folds:
            return self._folds[(from_where, name)]
        rules = self._nvtx_rules()
        bad, dur = rules.row_sql()
        self.execute("DROP TABLE IF EXISTS temp.nsysdiff_names")
        self.execute(
            "CREATE TEMP TABLE nsysdiff_names (name TEXT, dom INTEGER, n INTEGER, total INTEGER, "
            "bad INTEGER, ftotal REAL, PRIMARY KEY (name, dom))"
        )
        self.execute(
            f"INSERT INTO temp.nsysdiff_names SELECT {_key_sql(name)}, {self._nvtx_dom()}, 1, "
            f'coalesce(n."end" - n.start, 0), {bad}, {dur} {from_where} '
            "ON CONFLICT (name, dom) DO UPDATE SET n = n + 1, total = total + excluded.total, "
            "bad = bad + excluded.bad, ftotal = ftotal + excluded.ftotal"
        )
        checks = self.query("SELECT coalesce(sum(bad), 0), total(ftotal) FROM temp.nsysdiff_names")
        self.verify(rules, checked, checks)
        rows = self.query("SELECT name, dom, n, total FROM temp.nsysdiff_names ORDER BY name, dom")
        if whole:
            self._folds[(from_where, name)] = rows
        return rows

    def _range_rows(self, rows: list[tuple[object, ...]], create: int) -> tuple[RangeRow, ...]:
        """(name, domain id, count, total) rows with their domains named."""
        domains = self._nvtx_domains(create)
        return tuple(
            RangeRow(_key_name(n), domains.get(int(d), ""), int(c), int(t))  # type: ignore[call-overload]
            for n, d, c, t in rows
        )

    # --- attribution (scopes) -------------------------------------------------------
    #
    # Everything below runs in SQLite: the ranges a scope names go into a temporary table
    # (a temporary file, never the input), and "inside a range" is one ordered sweep per
    # range kind with a running maximum of range ends, so no query holds more than
    # SQLite's page cache, however many ranges and calls the trace has.

    def nvtx_keys(self) -> tuple[RangeKey, ...]:
        """The distinct closed range names (SQL-folded) and domains, with their counts."""
        if not self.schema.has(s.NVTX, "start", "end", "eventType", "globalTid"):
            return ()
        types, create = self._nvtx_types()
        name, join = self._nvtx_name_sql()
        where = self._nvtx_ranges_where(types)
        rows = self._fold_groups(f"FROM {s.NVTX} n{join} WHERE {where}", name, where, whole=True)
        domains = self._nvtx_domains(create)
        return tuple(
            RangeKey(str(n), int(d), domains.get(int(d), ""), int(c))  # type: ignore[call-overload]
            for n, d, c, _ in rows
        )

    def _nvtx_dom(self) -> str:
        return "coalesce(n.domainId, 0)" if self.schema.has(s.NVTX, "domainId") else "0"

    def _nvtx_ranges_where(self, types: dict[str, int]) -> str:
        kinds = ",".join(str(t) for t in types.values())
        return f'n.eventType IN ({kinds}) AND n."end" IS NOT NULL'

    def load_ranges(self, codes: Sequence[tuple[RangeKey, int]]) -> None:
        """Copy the instances of the given keys into ``temp.nsysdiff_r``, each with its code."""
        self.execute("DROP TABLE IF EXISTS temp.nsysdiff_codes")
        self.execute("DROP TABLE IF EXISTS temp.nsysdiff_r")
        for table in self._reach.values():
            self.execute(f"DROP TABLE IF EXISTS temp.{table}")
        self._reach.clear()
        self.execute("CREATE TEMP TABLE nsysdiff_codes (name TEXT, dom INTEGER, code INTEGER, PRIMARY KEY (name, dom))")
        self.con.executemany(
            "INSERT OR IGNORE INTO temp.nsysdiff_codes VALUES (?, ?, ?)",
            [(k.sql_name, k.domain_id, c) for k, c in codes],
        )
        types, _ = self._nvtx_types()
        push = {types["NvtxPushPopRange"], types["NvtxtPushPopRange"]}
        name, join = self._nvtx_name_sql()
        likely, params = _key_prefilter(name, sorted({k.sql_name for k, _ in codes}))
        self.query(
            "CREATE TEMP TABLE nsysdiff_r AS SELECT c.code AS code, "
            f"n.eventType IN ({','.join(str(t) for t in push)}) AS pp, n.start AS start, "
            'n."end" AS "end", coalesce(n.globalTid, 0) AS tid, '
            "(coalesce(n.globalTid, 0) >> 24) & 16777215 AS pid "
            f"FROM {s.NVTX} n{join} JOIN temp.nsysdiff_codes c "
            f"ON c.name = {_key_sql(name)} AND c.dom = {self._nvtx_dom()} "
            f"WHERE {self._nvtx_ranges_where(types)} AND {likely}",
            params,
        )

    def make_cuts(self, mask: Sequence[int], skip: int) -> int:
        """Per process, the start of the (skip+1)-th instance of the mask's ranges, in
        ``temp.nsysdiff_cut``; processes with fewer instances are cut entirely. Returns
        how many processes keep something."""
        never = np.iinfo(np.int64).max
        self.execute("DROP TABLE IF EXISTS temp.nsysdiff_cut")
        self.execute(
            "CREATE TEMP TABLE nsysdiff_cut AS SELECT pid, "
            f"coalesce(max(CASE WHEN rn = {int(skip) + 1} THEN start END), {never}) AS cut FROM ("
            "SELECT pid, start, row_number() OVER (PARTITION BY pid ORDER BY start) AS rn "
            f"FROM temp.nsysdiff_r WHERE code IN ({_list(mask)})) GROUP BY pid"
        )
        self.execute("CREATE UNIQUE INDEX temp.nsysdiff_cut_pid ON nsysdiff_cut (pid)")
        ((kept,),) = self.query(f"SELECT count(*) FROM temp.nsysdiff_cut WHERE cut != {never}")
        return int(kept)  # type: ignore[call-overload,no-any-return]

    def _kept(self, events: str, payload: Sequence[str], att: Attribution, windowed: bool) -> str:
        """SQL of the ``events`` (start, end, tid, pid, *payload) that ``att`` keeps."""
        conds = []
        if windowed and att.window is not None:
            conds.append(f"e.start >= {int(att.window.start_ns)} AND e.start < {int(att.window.end_ns)}")
        join = ""
        if att.cut:
            # A process without an instance of the range is not cut at all.
            join = " LEFT JOIN temp.nsysdiff_cut c ON c.pid = e.pid"
            conds.append(f"e.start >= coalesce(c.cut, {np.iinfo(np.int64).min})")
        cols = ", ".join(["start", '"end"', "tid", "pid", *payload])
        sql = f"SELECT {', '.join('e.' + c for c in cols.split(', '))} FROM ({events}) e{join}"
        if conds:
            sql += " WHERE " + " AND ".join(conds)
        for mask in att.within:
            inside = [
                # The last range to start at or before the event, of the event's thread
                # (push/pop ranges) or process (start/end ranges): the furthest end of
                # all the ranges up to it must reach the event's end.
                f"(SELECT x.reach FROM temp.{table} x WHERE x.key = e.{'tid' if pp else 'pid'} "
                f'AND x.start <= e.start ORDER BY x.start DESC LIMIT 1) >= e."end"'
                for pp, table in self._reach_tables(mask)
            ]
            picked = ", ".join("e." + c for c in cols.split(", "))
            sql = f"SELECT {picked} FROM ({sql}) e WHERE {' OR '.join(inside) or '0'}"
        return sql

    def _reach_tables(self, mask: Sequence[int]) -> list[tuple[int, str]]:
        """Per range kind of the mask (1 push/pop, 0 start/end), a temporary table of its
        ranges' starts per thread or process, each with the furthest end of the ranges
        that start at or before it: ``(key, start, reach)``, keyed by (key, start).

        An event lies inside some range of the kind exactly when the last of these rows
        at or before its start reaches its end (nesting and overlap need no special case),
        so each event costs one index lookup among the ranges instead of a sort of every
        event with them.
        """
        if not mask or not self._has_ranges_table():
            return []
        codes = _list(sorted(set(mask)))
        out = []
        for (pp,) in self.query(f"SELECT DISTINCT pp FROM temp.nsysdiff_r WHERE code IN ({codes}) ORDER BY pp DESC"):
            kind = int(pp)  # type: ignore[call-overload]
            table = self._reach.get((kind, codes))
            if table is None:
                table = self._reach[(kind, codes)] = f"nsysdiff_reach{len(self._reach)}"
                self.execute(f"CREATE TEMP TABLE {table} (key INTEGER, start INTEGER, reach INTEGER, "
                           "PRIMARY KEY (key, start)) WITHOUT ROWID")  # fmt: skip
                self.execute(
                    f"INSERT INTO temp.{table} SELECT key, start, max(e) OVER (PARTITION BY key ORDER BY start "
                    f'ROWS UNBOUNDED PRECEDING) FROM (SELECT {"tid" if kind else "pid"} AS key, start, '
                    f'max("end") AS e FROM temp.nsysdiff_r WHERE pp = {kind} AND code IN ({codes}) '
                    "GROUP BY key, start)"
                )
            out.append((kind, table))
        return out

    def select_launches(self, att: Attribution, name: str = "nsysdiff_sel") -> Selection:
        """The (process, correlationId) of the runtime/driver calls ``att`` keeps, in a
        temporary table through which the GPU work they launched is found."""
        self.execute(f"DROP TABLE IF EXISTS temp.{name}")
        self.execute(f"CREATE TEMP TABLE {name} (pid INTEGER, corr INTEGER, PRIMARY KEY (pid, corr)) WITHOUT ROWID")
        where = "correlationId IS NOT NULL AND correlationId != 0"
        tables = [t for t in (s.RUNTIME, s.DRIVER) if self.schema.has(t, "start", "end", "globalTid", "correlationId")]
        self._check_calls(tables, ("globalTid", "correlationId"), where)
        parts = [
            f'SELECT start, "end", globalTid AS tid, (globalTid >> 24) & 16777215 AS pid, correlationId AS corr '
            f"FROM {table} WHERE {where}"
            for table in tables
        ]
        if parts:
            kept = self._kept(" UNION ALL ".join(parts), ("corr",), att, windowed=False)
            self.execute(f"INSERT OR IGNORE INTO temp.{name} SELECT pid, corr FROM ({kept})")
        return Selection(window=att.window, launches_table=name)

    def _check_calls(self, tables: Sequence[str], ids: tuple[str, ...], where: str) -> None:
        """Refuse impossible rows among the calls a sweep is about to order (one aggregate scan)."""
        for table in tables:
            rules = RowRules(table, ids=ids)
            ((*checks,),) = self.query(f"SELECT {rules.sql()} FROM {table} WHERE {where}")
            self.verify(rules, where, [checks])

    def count_ranges(self, mask: Sequence[int], att: Attribution) -> int:
        """Instances of the mask's ranges that ``att`` keeps."""
        if not self._has_ranges_table():
            return 0
        events = f'SELECT start, "end", tid, pid FROM temp.nsysdiff_r WHERE code IN ({_list(mask)})'
        ((n,),) = self.query(f"SELECT count(*) FROM ({self._kept(events, (), att, windowed=True)})")
        return int(n)  # type: ignore[call-overload,no-any-return]

    def _has_ranges_table(self) -> bool:
        return bool(self.query("SELECT 1 FROM sqlite_temp_master WHERE name = 'nsysdiff_r'"))

    def sync_calls_in(self, att: Attribution) -> tuple[ApiRow, ...]:
        """Synchronising calls that ``att`` keeps, by name."""
        ids = self._sync_ids()
        where = f"nameId IN ({_list(ids)})"
        tables = [t for t in (s.RUNTIME, s.DRIVER) if ids and self.schema.has(t, "nameId", "start", "end", "globalTid")]
        self._check_calls(tables, ("nameId", "globalTid"), where)
        parts = [
            f'SELECT start, "end", globalTid AS tid, (globalTid >> 24) & 16777215 AS pid, nameId AS nid '
            f"FROM {table} WHERE {where}"
            for table in tables
        ]
        if not parts:
            return ()
        kept = self._kept(" UNION ALL ".join(parts), ("nid",), att, windowed=True)
        totals: dict[str, tuple[int, int]] = {}
        for nid, calls, total in self.query(f'SELECT nid, count(*), sum("end" - start) FROM ({kept}) GROUP BY nid'):
            name = ids[int(nid)]  # type: ignore[call-overload]
            c, t = totals.get(name, (0, 0))
            totals[name] = (c + int(calls), t + int(total))  # type: ignore[call-overload]
        return tuple(ApiRow(n, c, t) for n, (c, t) in sorted(totals.items()))

    def nvtx_summary_in(self, att: Attribution) -> tuple[RangeRow, ...]:
        """Range instances that ``att`` keeps, grouped like :meth:`nvtx_summary`."""
        if not self.schema.has(s.NVTX, "start", "end", "eventType", "globalTid"):
            return ()
        types, create = self._nvtx_types()
        name, join = self._nvtx_name_sql()
        events = (
            'SELECT n.start AS start, n."end" AS "end", coalesce(n.globalTid, 0) AS tid, '
            "(coalesce(n.globalTid, 0) >> 24) & 16777215 AS pid, n.rowid AS rid "
            f"FROM {s.NVTX} n WHERE {self._nvtx_ranges_where(types)}"
        )
        kept = self._kept(events, ("rid",), att, windowed=True)
        rows = self._fold_groups(
            f"FROM ({kept}) k JOIN {s.NVTX} n ON n.rowid = k.rid{join} WHERE 1", name, self._nvtx_ranges_where(types)
        )
        return self._range_rows(rows, create)

    def first_kernel_ns(self) -> int | None:
        if not self.has_kernels():
            return None
        rules = RowRules(s.KERNEL)
        (v, *checks), = self.query(f"SELECT min(start), {rules.sql()} FROM {s.KERNEL}")
        self.verify(rules, "1", [checks])
        return None if v is None else int(v)  # type: ignore[call-overload]


@contextmanager
def open_trace(path: str | Path) -> Iterator[TraceReader]:
    p = Path(path)
    con = s.connect(p)
    try:
        schema = s.probe(con, p)
        _tune(con, p)
        yield TraceReader(p, con, schema)
    finally:
        con.close()
