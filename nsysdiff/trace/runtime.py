"""The CUDA runtime side of an export: its metadata and GPUs, memcpy and memset activity,
and the runtime and driver calls that wait for the GPU.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING

import numpy as np

from nsysdiff.errors import TraceError
from nsysdiff.trace import api_scan, text_scan
from nsysdiff.trace import schema as s
from nsysdiff.trace.checks import CALL_IDS, INT64_MAX, LAUNCHING, BadRows, RowRules
from nsysdiff.trace.connection import TraceConnection, split_checks
from nsysdiff.trace.kernel_scan import fold_rows, ints
from nsysdiff.trace.names import name_text
from nsysdiff.trace.records import (
    WHOLE,
    ApiStats,
    CopyStats,
    GpuInfo,
    GraphMode,
    HostApiStats,
    IntArray,
    Metadata,
    Selection,
    Window,
)

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

# Runtime and driver calls that make the CPU (or a stream) wait for the GPU.
_SYNC_API = re.compile(
    r"^(cuda(Device|Stream|Event|Thread|Ctx)Synchronize|cudaStreamWaitEvent|cudaStreamQuery|"
    r"cu(Ctx|Stream|Event)Synchronize|cuStreamWaitEvent)(_v\d+|_ptsz|_ptds)*$"
)
_WINDOW_KEY = "DERIVED_WINDOW_NS"
_WINDOW_TEXT = re.compile(r"(\d{1,19})-(\d{1,19})")
_VERSION_SUFFIX = re.compile(r"(_v\d+|_ptsz|_ptds)+$")
# A float sum of at most this stays far enough from int64's end (2^63) that its rounding
# can't hide an overflow of the exact sum.
_SAFE_SUM = float(1 << 62)


class RuntimeReader(TraceConnection):
    """Metadata, GPUs, memory copies and sets, synchronising calls."""

    # The text of each census name that names a call by its id as well (see api_census).
    _census_texts: Mapping[str, str] = MappingProxyType({})

    if TYPE_CHECKING:
        # The graph mode is learnt from the kernel table (KernelReader).
        def _graph_mode(self) -> tuple[GraphMode, int, int]: ...

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
            window=self._export_window(meta),
        )

    def _export_window(self, meta: dict[str, str]) -> tuple[int, int] | None:
        """The window the export was cut to, from its own metadata (``DERIVED_WINDOW_NS``:
        ``START-END`` in ns, written by tools that cut a window from a longer capture).
        A whole capture says nothing: it is never a window."""
        text = meta.get(_WINDOW_KEY)
        if text is None:
            return None
        m = _WINDOW_TEXT.fullmatch(text.strip())
        start, end = (int(m.group(1)), int(m.group(2))) if m else (0, -1)
        if not m or end <= start or end >= 1 << 63:
            raise TraceError(
                s.one_line(f"{self.path}: metadata {_WINDOW_KEY} {text[:80]!r} is not a START-END range in ns")
            )
        return start, end

    def capture_origin(self, meta: Metadata) -> int | None:
        """The capture start on the clock of the trace's events; None without one.

        ``ANALYSIS_DETAILS.startTime`` is on that clock in some exports: their events lie in
        ``[startTime, stopTime]`` (nsys 2026's windows cut from long runs). In most, the events
        count from the capture start and ``startTime`` is on another clock: nsys 2025.3's
        H100 captures say 24.4 s while their events run from 12 ms to 969 ms of a 995 ms
        capture. There the origin is 0. Probed on each file, never assumed."""
        start, stop = meta.capture_start_ns, meta.capture_end_ns
        if start is None or stop is None:
            return None
        span = self._event_span()
        if span is None or (start <= span[0] and span[1] <= stop):
            return start
        return 0

    def _event_span(self) -> tuple[int, int] | None:
        """The first start and the last end of the GPU work, host calls and NVTX ranges
        (integer times only: the scans that read a row check it)."""
        lo: int | None = None
        hi: int | None = None
        for table in (s.KERNEL, s.MEMCPY, s.MEMSET, s.GRAPH_TRACE, s.RUNTIME, s.DRIVER, s.NVTX):
            if not self.schema.has(table, "start", "end"):
                continue
            ((a, b),) = self.query(
                f'SELECT min(start), max("end") FROM {table} '
                "WHERE typeof(start) = 'integer' AND typeof(\"end\") = 'integer'"
            )
            if isinstance(a, int) and isinstance(b, int):
                lo, hi = (a, b) if lo is None or hi is None else (min(lo, a), max(hi, b))
        return None if lo is None or hi is None else (lo, hi)

    def gpus(self) -> tuple[GpuInfo, ...]:
        """The GPUs of the export, from its GPU table (empty when it has none)."""
        return self._gpus()

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

    def memcpy(self, sel: Selection = WHOLE) -> tuple[CopyStats, ...]:
        if not self.schema.has(s.MEMCPY, "start", "end", "copyKind", "bytes"):
            return ()
        enum = {v: k for k, v in self._enum("ENUM_CUDA_MEMCPY_OPER").items()} or _COPY_KINDS_BUILTIN
        rows = self._copies(s.MEMCPY, "copyKind") if sel == WHOLE else None
        if rows is None:
            rules = RowRules(s.MEMCPY, ids=("copyKind",), sizes=("bytes",))
            where = self._where(s.MEMCPY, sel)
            rows, checks = split_checks(
                self.query(
                    f'SELECT copyKind, count(*), coalesce(sum(bytes), 0), sum("end" - start), {rules.sql()} '
                    f"FROM {s.MEMCPY} WHERE {where} GROUP BY copyKind"
                )
            )
            self.verify(rules, where, checks)
        out: dict[str, CopyStats] = {}
        for kind, ops, nbytes, total in rows:
            name = enum.get(int(kind), f"CUDA_MEMCPY_KIND_{kind}")  # type: ignore[call-overload]
            label = _COPY_LABELS.get(name.removeprefix("CUDA_MEMCPY_KIND_"), name)
            prev = out.get(label, CopyStats(label, 0, 0, 0))
            out[label] = CopyStats(label, prev.ops + int(ops), prev.bytes + int(nbytes), prev.total_ns + int(total))  # type: ignore[call-overload]
        return tuple(sorted(out.values(), key=lambda r: r.kind))

    def memset(self, sel: Selection = WHOLE) -> tuple[CopyStats, ...]:
        if not self.schema.has(s.MEMSET, "start", "end", "bytes"):
            return ()
        rows = self._copies(s.MEMSET) if sel == WHOLE else None
        if rows is not None:
            ((_, ops, nbytes, total),) = rows or [(0, 0, 0, 0)]
        else:
            rules = RowRules(s.MEMSET, sizes=("bytes",))
            where = self._where(s.MEMSET, sel)
            ((ops, nbytes, total, *checks),) = self.query(
                f'SELECT count(*), coalesce(sum(bytes), 0), coalesce(sum("end" - start), 0), '
                f"{rules.sql()} FROM {s.MEMSET} WHERE {where}"
            )
            self.verify(rules, where, [checks])
        if not ops:
            return ()
        return (CopyStats("memset", int(ops), int(nbytes), int(total)),)  # type: ignore[call-overload]

    def _copies(self, table: str, kind: str | None = None) -> list[tuple[object, ...]] | None:
        """(kind, operations, bytes, ns) of every row of ``table`` by ``kind`` (a column;
        all rows one kind 0 without it), sorted by kind: a pass in chunks through numpy
        (:mod:`nsysdiff.trace.text_scan`), whose checks cost a third of the ``typeof``
        tests a ``GROUP BY`` makes (and the ``GROUP BY`` sorts every row).

        None where the pass can't vouch for the figures (a bad row, a sum near the int64
        range, a damaged file, a table without rowids): the caller's query then gives
        them, or the error it always gave.
        """
        if self.without_rowid(table):
            return None
        # Any value but a NULL, TEXT or BLOB kind passes the guard; a REAL shows in the text.
        columns = ([f"CASE WHEN {kind} <= {INT64_MAX} THEN {kind} END"] if kind else []) + [
            text_scan.non_negative("bytes"),
            text_scan.duration(),
        ]
        keys: list[IntArray] = [np.empty(0, np.int64)]
        sums: list[IntArray] = [np.empty(0, np.int64)] * 3
        fbytes = fns = 0.0
        try:
            for values, _ in text_scan.chunks(self.con, table, "1", columns):
                *kinds, nbytes, ns = values
                fbytes += float(np.sum(nbytes, dtype=np.float64))
                fns += float(np.sum(ns, dtype=np.float64))
                if max(fbytes, fns) > _SAFE_SUM:  # SQLite's sums say whether int64 holds them
                    return None
                k = kinds[0] if kinds else np.zeros(len(ns), dtype=np.int64)
                ck, cv = fold_rows([k], [np.ones(len(ns), dtype=np.int64), nbytes, ns])
                keys, sums = fold_rows(
                    [np.concatenate((keys[0], ck[0]))],
                    [np.concatenate(p) for p in zip(sums, cv, strict=True)],
                    runs=True,
                )
        except (BadRows, *s.DB_ERRORS):
            return None
        return [tuple(r) for r in zip(ints(keys[0]), *(ints(v) for v in sums), strict=True)]

    def _sync_ids(self) -> dict[int, str]:
        if not self.schema.has("StringIds", "id", "value"):
            return {}
        return {
            int(i): _VERSION_SUFFIX.sub("", str(v))  # type: ignore[call-overload]
            for i, v in self.query("SELECT id, value FROM StringIds WHERE value LIKE 'cu%' AND typeof(id) = 'integer'")
            if _SYNC_API.match(str(v))
        }

    def sync_calls(self, window: Window | None = None) -> tuple[ApiStats, ...]:
        """The synchronising calls (starting in ``window``) of the runtime and driver tables."""
        return call_stats(self._sync_totals((s.RUNTIME, s.DRIVER), window))

    def _sync_totals(self, tables: tuple[str, ...], window: Window | None = None) -> dict[str, tuple[int, int]]:
        """(calls, ns) per synchronising call name in ``tables``."""
        totals: dict[str, tuple[int, int]] = {}
        ids = self._sync_ids()
        if not ids:
            return totals
        marks = ",".join(str(i) for i in ids)
        cond = ""
        if window is not None:
            cond = f" AND start >= {int(window.start_ns)} AND start < {int(window.end_ns)}"
        for table in tables:
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
                add_calls(totals, ids[int(nid)], int(calls), int(total))  # type: ignore[call-overload]
        return totals

    def api_census(self, window: Window | None = None, *, launches: bool = False) -> tuple[HostApiStats, ...]:
        """Every host API name's calls in the runtime table (calls starting in ``window``),
        equal to ``nsys stats --report cuda_api_sum``: one chunked pass in rowid order
        (:mod:`nsysdiff.trace.api_scan`); one row per name reaches Python. Sorted by total
        time, then name.

        With ``launches`` (a read about to attribute GPU work through the calls) a whole
        census also checks the launching calls' ids in its pass, which has checked every
        call's times: the attribution then needs no check scan of the runtime table (it
        cost more than the census)."""
        if not self.schema.has(s.RUNTIME, "nameId", "start", "end"):
            return ()
        rules = RowRules(s.RUNTIME, ids=("nameId",))
        where = "1" if window is None else f"start >= {int(window.start_ns)} AND start < {int(window.end_ns)}"
        source = s.RUNTIME
        if self.without_rowid(s.RUNTIME):
            # A hand-made table without rowids has no order to page through: a copy has.
            self.execute("DROP TABLE IF EXISTS temp.nsysdiff_api_rows")
            self.execute(f'CREATE TEMP TABLE nsysdiff_api_rows AS SELECT nameId, start, "end" FROM {s.RUNTIME}')
            source = "temp.nsysdiff_api_rows"
        ids = launches and where == "1" and source == s.RUNTIME and self.schema.has(s.RUNTIME, *CALL_IDS)
        wrong = " OR ".join(f"typeof({c}) != 'integer'" for c in CALL_IDS)
        try:
            with self.scanning(rules, where):
                rows, flagged = api_scan.scan(
                    self.con, source, where, f"CASE WHEN {LAUNCHING} THEN {wrong} END" if ids else "0"
                )
            if ids and not flagged:
                # What NvtxReader._check_calls would find: every time (the pass above) and id fine.
                self.checked.add((RowRules(s.RUNTIME, ids=CALL_IDS), LAUNCHING))
        finally:
            self.execute("DROP TABLE IF EXISTS temp.nsysdiff_api_rows")
        out: dict[str, HostApiStats] = {}
        texts: dict[str, str] = {}
        names = self.strings([n for n, *_ in rows])
        for n, calls, total, median, lo, hi in rows:  # by name id
            # Two ids with one text are two rows, each with its own median, as nsys stats
            # lists them: the later id is named by its id too (a name is the census's key).
            name = names[n]
            while name in out:
                name = f"{name} (name id {n})"
            if name != names[n]:
                texts[name] = names[n]
            out[name] = HostApiStats(name, calls, total, median, lo, hi)
        self._census_texts = texts
        return tuple(sorted(out.values(), key=lambda a: (-a.total_ns, a.name)))

    def sync_of(self, census: tuple[HostApiStats, ...]) -> tuple[ApiStats, ...]:
        """The synchronising calls of a whole trace, as :meth:`sync_calls` counts them:
        the runtime table's from its census (so that a whole read scans it once), the
        driver table's (``cuCtxSynchronize`` and the like) by a scan of their own."""
        totals = self._sync_totals((s.DRIVER,))
        for a in census:
            text = self._census_texts.get(a.name, a.name)
            if _SYNC_API.match(text):
                add_calls(totals, _VERSION_SUFFIX.sub("", text), a.calls, a.total_ns)
        return call_stats(totals)


def add_calls(totals: dict[str, tuple[int, int]], name: str, calls: int, ns: int) -> None:
    """Count ``calls`` taking ``ns`` to ``name`` (several ids, or tables, share a name)."""
    c, t = totals.get(name, (0, 0))
    totals[name] = (c + calls, t + ns)


def call_stats(totals: dict[str, tuple[int, int]]) -> tuple[ApiStats, ...]:
    return tuple(ApiStats(n, c, t) for n, (c, t) in sorted(totals.items()))
