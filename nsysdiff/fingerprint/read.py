"""One read of a trace: the tables a fingerprint is made of, read by one function for the
whole trace (the empty :class:`Part`) and for any part a scope selects.

:func:`read` reads them in the order their checks need (a scope's host API census before
the launches it attributes, the kernels before the metadata that learns the graph mode
from them); :func:`~nsysdiff.fingerprint.reduce.assemble` turns the :class:`Tables` into a
fingerprint. A whole read adds the ranks of a multi-GPU trace and a graph-mode capture's
graphs (:func:`whole`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from nsysdiff.fingerprint.model import Fingerprint
from nsysdiff.fingerprint.reduce import assemble, per_device
from nsysdiff.trace import ranks as trace_ranks
from nsysdiff.trace.progress import Step, silent
from nsysdiff.trace.reader import TraceReader, open_trace
from nsysdiff.trace.records import (
    Attribution,
    GraphMode,
    HostApiStats,
    Metadata,
    RangeRow,
    RankStats,
    Selection,
    Tables,
    Window,
)


@dataclass(frozen=True, slots=True)
class Part:
    """The part of a trace one read covers; ``Part()`` is the whole trace.

    ``window``: the GPU work, host calls and ranges that start in it (None: all).
    ``calls``: keep the GPU work these calls launched, and these calls (None: all of the window).
    ``ranges``: with ``calls``, the NVTX ranges listed. ``table``: the temporary table of the
    kept launches. ``census``: whether the part has a host API census (a phase has none),
    over ``census_window`` (a scope's window, wider than the steps found inside it).
    """

    window: Window | None = None
    calls: Attribution | None = None
    ranges: Attribution | None = None
    table: str = "nsysdiff_scope"
    census: bool = True
    census_window: Window | None = None

    @property
    def whole(self) -> bool:
        return self == Part()


def read(
    r: TraceReader,
    part: Part = Part(),
    *,
    meta: Callable[[], Metadata] | None = None,
    shapes: bool = False,
    grouped: bool = False,
    progress: Step = silent,
    side: str = "",
) -> Tables:
    """The tables of ``part`` of an open trace. ``meta``: where the metadata comes from (a
    scope keeps it), asked after the kernels, which learn the graph mode it reports; ``shapes``: a
    kernel per (name, grid, block); ``grouped``: the NVTX ranges were grouped already (the
    search for a step range does it), so the whole read's summary reuses that pass."""
    # The NVTX table is often the largest: a whole read groups it on a connection of its
    # own beside the kernel scans (SQLite releases the GIL while it works).
    with ThreadPoolExecutor(max_workers=1) as pool:
        beside = pool.submit(_nvtx_summary, r.path) if part.whole and not grouped else None
        # A scope's census is read first: its pass checks the calls that a selection
        # attributes the GPU work through.
        api = _census(r, part, progress, side) if not part.whole else None
        sel = Selection(window=part.window) if part.calls is None else r.select_launches(part.calls, name=part.table)
        progress(side, "kernels")
        groups = r.kernels(sel, shapes=shapes)
        progress(side, "metadata")
        metadata = (meta or r.metadata)()
        if not part.whole:
            launches, graph_ns = r.graph_work(metadata.graph_mode, sel)
            metadata = dataclasses.replace(metadata, graph_launches=launches, graph_total_ns=graph_ns)
        has = r.has_kernels()
        progress(side, "memcpy")
        memcpy = r.memcpy(sel)
        progress(side, "memset")
        memset = r.memset(sel)
        if part.whole:
            progress(side, "host API calls")
            api = r.api_census()
            sync = r.sync_of(api)
        elif part.calls is not None:
            sync = r.sync_calls_in(part.calls)
        else:
            sync = r.sync_calls(part.window)
        progress(side, "NVTX ranges")
        if beside is not None:
            nvtx = beside.result()
        elif part.calls is not None and part.ranges is not None:
            nvtx = r.nvtx_summary_in(part.ranges)
        else:
            nvtx = r.nvtx_summary(part.window)
        # A read keyed by name and shape (--by name+launch) keeps no tail counts.
        progress(side, "kernel tails")
        tails = None if shapes else r.kernel_tails(sel)
    return Tables(metadata, groups, has, memcpy, memset, sync, nvtx, api, tails)


def _census(r: TraceReader, part: Part, progress: Step, side: str) -> tuple[HostApiStats, ...] | None:
    if not part.census:
        return None
    progress(side, "host API calls")
    return r.api_census(part.census_window, launches=part.calls is not None)


def whole(r: TraceReader, *, shapes: bool, grouped: bool, progress: Step, side: str) -> Fingerprint:
    """The fingerprint of a whole trace, with the ranks of a multi-GPU trace and the graphs
    of a graph-mode capture."""
    tables = read(r, shapes=shapes, grouped=grouped, progress=progress, side=side)
    progress(side, "reducing to a fingerprint")
    fp = assemble(r.path, tables)
    if len(tables.groups.devices) > 1:
        # Several GPUs in one trace: its (process, device) pairs are the ranks of a job.
        progress(side, "ranks")
        fp = dataclasses.replace(fp, ranks=_ranks(r, fp))
    if tables.meta.graph_mode in (GraphMode.GRAPH, GraphMode.MIXED):
        # Graph-mode replays have no kernel rows: their launches are what can be compared.
        progress(side, "graph launches")
        fp = dataclasses.replace(fp, graphs=r.graph_launches())
    return fp


def _ranks(r: TraceReader, fp: Fingerprint) -> tuple[RankStats, ...]:
    """The ranks of a multi-GPU trace. One process per device (the usual shape) needs only
    the pairs: the figures are the devices'; else each pair is scanned for its own."""
    pairs = trace_ranks.pairs(r)
    pids = dict(pairs)
    if len(pids) == len(pairs):
        return per_device(fp, pids)
    return trace_ranks.read(r)


def _nvtx_summary(path: Path) -> tuple[RangeRow, ...]:
    with open_trace(path) as r:
        return r.nvtx_summary()
