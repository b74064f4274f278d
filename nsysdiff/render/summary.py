"""The census of one trace: ``nsysdiff summary`` as rich tables or JSON."""

from __future__ import annotations

import io
from typing import Any

from rich.console import Console

from nsysdiff import units as u
from nsysdiff.fingerprint.model import Fingerprint, KernelStats, to_data
from nsysdiff.render import steps_summary
from nsysdiff.render.layout import grid, plain_console, wrap
from nsysdiff.render.names import Names, labels_of, mangled_of
from nsysdiff.safe import neutral

SUMMARY_FORMAT = "nsysdiff-summary"
SUMMARY_VERSION = 1


def _pct(part: float, whole: float) -> float:
    return 100.0 * part / whole if whole else 0.0


def kernel_data(k: KernelStats, kernel_ns: int) -> dict[str, Any]:
    return {
        "name": k.name,
        "demangled": k.demangled,
        "mangled": k.mangled,
        "family": k.family,
        "category": k.category,
        "calls": k.calls,
        "total_ns": k.total_ns,
        "mean_ns": k.mean_ns,
        "min_ns": k.min_ns,
        "p50_ns": k.p50_ns,
        "p90_ns": k.p90_ns,
        "p99_ns": k.p99_ns,
        "max_ns": k.max_ns,
        "pct_of_kernel_time": _pct(k.total_ns, kernel_ns),
        "devices": to_data(k.devices),
        "configs": to_data(k.configs),
    }


def summary_data(fp: Fingerprint) -> dict[str, Any]:
    kns = fp.kernel_ns
    span = sum(d.span_ns for d in fp.devices)
    return {
        "format": SUMMARY_FORMAT,
        "version": SUMMARY_VERSION,
        "meta": to_data(fp.meta),
        "scope": to_data(fp.scope),
        "totals": {
            "kernel_launches": fp.kernel_calls,
            "kernel_ns": kns,
            "busy_ns": fp.busy_ns,
            "span_ns": span,
            "idle_pct": 100.0 * (1 - fp.busy_ns / span) if span else 0.0,
            "devices": [{**to_data(d), "idle_pct": d.idle_pct} for d in fp.devices],
        },
        "kernels": [kernel_data(k, kns) for k in fp.kernels],
        "categories": [{**to_data(c), "pct_of_kernel_time": _pct(c.total_ns, kns)} for c in fp.categories],
        "memcpy": [{**to_data(c), "gbps": c.gbps} for c in fp.memcpy],
        "memset": [{**to_data(c), "gbps": c.gbps} for c in fp.memset],
        "sync": to_data(fp.sync),
        **({} if fp.api is None else {"api": [{**to_data(a), "mean_ns": a.mean_ns} for a in fp.api]}),
        "nvtx": to_data(fp.nvtx),
        **_ranks_data(fp),
        **({} if fp.steps is None else {"steps": steps_summary.steps_data(fp.steps)}),
    }


def _ranks_data(fp: Fingerprint) -> dict[str, Any]:
    """The rank view, only for a trace of several ranks (one-rank output stays as it was)."""
    from nsysdiff.compare.ranks import view
    from nsysdiff.render.ranks import view_data

    v = view(fp.ranks)
    return {} if v is None else {"ranks": view_data(v)}


def render_json(fp: Fingerprint) -> str:
    from nsysdiff.render.cells import finite

    return neutral.json_stream(finite(summary_data(fp)), allow_nan=False) + "\n"


def scope_lines(fp: Fingerprint) -> list[str]:
    """What part of the trace the figures cover, when not the whole capture."""
    from nsysdiff.fingerprint.scope import describe

    s = fp.scope
    if describe(s) == "the whole capture" and not fp.phases:
        return []
    out = [f"scope: {describe(s)}"]
    if s.steps:
        per_step = u.ns(fp.kernel_ns / s.steps)
        what = "steps found without a marker" if s.per == "auto" else f"{s.per} steps"
        out.append(f"{s.steps:,} {what} · kernel time per step (GPU-side TPOT) {per_step}")
    if fp.steps is not None:
        out += steps_summary.headline(fp.steps)
    if s.coverage is not None:
        out.append(f"coverage: {100 * s.coverage:.1f}% of the kernel time")
    for ph in fp.phases:
        out.append(
            f"phase {ph.name}: {u.plural(ph.ranges, 'range')} · {u.plural(ph.fingerprint.kernel_calls, 'launch')} · "
            f"kernel time {u.ns(ph.fingerprint.kernel_ns)}"
        )
    return out


def gpu_line(fp: Fingerprint) -> str:
    """The GPUs, identical models counted once: ``8x NVIDIA H100 80GB HBM3 (#0-7)``."""
    groups: dict[str, list[int]] = {}
    for g in fp.meta.gpus:
        # Names as nsys records them can end in a space ("RTX 3060 Laptop "): one space apart.
        groups.setdefault(" ".join(g.name.split()), []).append(g.id)
    parts = []
    for name, ids in groups.items():
        ids.sort()
        run = ids == list(range(ids[0], ids[0] + len(ids)))
        where = f"#{ids[0]}-{ids[-1]}" if run and len(ids) > 2 else ", ".join(f"#{i}" for i in ids)
        parts.append(f"{len(ids)}x {name} ({where})" if len(ids) > 1 else f"{name} ({where})")
    return ", ".join(parts) or "not recorded"


def _recorded(ns: float | None) -> str:
    return "not recorded" if ns is None else u.ns(ns)


def header_lines(fp: Fingerprint) -> list[str]:
    """What the trace is, where it ran, and the totals."""
    m = fp.meta
    # Device ids, not a count: "#0" is the first GPU, and the count comes first.
    ids = ", ".join(f"#{d.device}" for d in fp.devices)
    devices = f"{len(fp.devices)} ({ids})" if fp.devices else "none"
    out = [
        m.source,
        f"nsys {m.nsys_version or 'unknown (no metadata table)'} · schema "
        f"{m.schema_version or 'unknown'} · GPUs: {gpu_line(fp)}",
        f"capture window {_recorded(m.capture_ns)} · devices with kernels: {devices} · "
        f"CUDA graphs: {m.graph_mode.value}",
        *scope_lines(fp),
    ]
    if not m.has_kernels:
        out.append("kernel data is absent from this trace (no kernel table)")
    else:
        span = sum(d.span_ns for d in fp.devices)
        idle = 100.0 * (1 - fp.busy_ns / span) if span else 0.0
        out.append(
            f"{u.plural(fp.kernel_calls, 'kernel launch')} · kernel time {u.ns(fp.kernel_ns)} · "
            f"GPU busy {u.ns(fp.busy_ns)} · idle {idle:.1f}% of the kernel span"
        )
    return out


Tables = list[tuple[str, tuple[str, ...], list[list[str]], tuple[int, ...]]]


def tables(fp: Fingerprint, top: int, names: Names = Names.short) -> Tables:
    """(title, header, rows, optional columns) per table, optional ones in the order they
    give way to a narrow width."""
    out: Tables = []
    if fp.meta.has_kernels and fp.kernels:
        shown = fp.kernels[:top]
        label = labels_of(((k.demangled, k.name) for k in fp.kernels), names, mangled_of(fp))
        rows = [
            [
                label[k.demangled],
                f"{k.calls:,}",
                u.ns(k.total_ns),
                u.ns(k.mean_ns),
                u.ns(k.p50_ns),
                u.ns(k.p90_ns),
                u.ns(k.max_ns),
                u.pct(_pct(k.total_ns, fp.kernel_ns)),
            ]
            for k in shown
        ]
        out.append(
            (
                f"Top kernels ({len(shown)} of {len(fp.kernels):,})",
                ("kernel", "calls", "total", "mean", "p50", "p90", "max", "%"),
                rows,
                (5, 4, 6, 3),
            )
        )
    if fp.categories:
        rows = [
            [g.name, f"{g.kernels:,}", f"{g.calls:,}", u.ns(g.total_ns), u.pct(_pct(g.total_ns, fp.kernel_ns))]
            for g in fp.categories
        ]
        out.append(("Categories", ("category", "kernels", "calls", "total", "%"), rows, (1,)))
    if fp.memcpy or fp.memset:
        rows = [
            [
                cp.kind,
                f"{cp.ops:,}",
                u.nbytes(cp.bytes),
                u.ns(cp.total_ns),
                "-" if cp.gbps is None else f"{cp.gbps:.2f}",
            ]
            for cp in (*fp.memcpy, *fp.memset)
        ]
        out.append(("Memory operations", ("kind", "ops", "bytes", "time", "GB/s"), rows, (4,)))
    if fp.sync:
        rows = [[a.name, f"{a.calls:,}", u.ns(a.total_ns)] for a in fp.sync]
        out.append(("Synchronising API calls", ("call", "calls", "total"), rows, ()))
    if fp.api:
        shown_a = fp.api[:top]
        rows = [
            [a.name, f"{a.calls:,}", u.ns(a.total_ns), *(u.ns(v) for v in (a.mean_ns, a.median_ns, a.min_ns, a.max_ns))]
            for a in shown_a
        ]
        header = ("call", "calls", "total", "mean", "median", "min", "max")
        out.append((f"Host API calls (top {len(shown_a)} of {len(fp.api):,})", header, rows, (3, 5, 6)))
    if fp.nvtx:
        shown_r = fp.nvtx[:top]
        rows = [[r.name, r.domain, f"{r.count:,}", u.ns(r.total_ns)] for r in shown_r]
        out.append(
            (f"NVTX ranges (top {len(shown_r)} of {len(fp.nvtx):,})", ("range", "domain", "count", "total"), rows, (1,))
        )
    return [*steps_summary.tables(fp), *out] if fp.steps is not None else out


def render_text(fp: Fingerprint, console: Console, top: int = 20, names: Names = Names.short) -> None:
    """The census on ``console``, at its width: names wrap, numbers never do."""
    # Every string from the trace is neutralised (neutral.text) and printed as Text, never
    # as markup: a name like "{ForeignNode[/ConstantOfShape_3_]}" is data.
    fp = neutral.scrub(fp, neutral.text)
    width = console.width
    for line in header_lines(fp):
        wrap(console, line, width, hang="  ")
    for title, header, rows, optional in tables(fp, top, names):
        console.print()
        console.print(grid(title, header, rows, width, optional=optional))
    _ranks_text(fp, console)


def _ranks_text(fp: Fingerprint, console: Console) -> None:
    from nsysdiff.compare.ranks import view
    from nsysdiff.render import ranks

    v = view(fp.ranks)
    if v is not None:
        ranks.render_text(v, console)


def render_plain(fp: Fingerprint, width: int, top: int = 20, names: Names = Names.short) -> str:
    """The census as plain text ``width`` columns wide."""
    buf = io.StringIO()
    render_text(fp, plain_console(buf, width), top=top, names=names)
    return neutral.lines("\n".join(line.rstrip() for line in buf.getvalue().splitlines()) + "\n")


def render_markdown(fp: Fingerprint, top: int = 20, names: Names = Names.short) -> str:
    """The census as GitHub Markdown: the header as a list, one table per section."""
    from nsysdiff.render.cells import cell

    fp = neutral.scrub(fp, neutral.text)
    head = header_lines(fp)
    out = [f"### <code>{cell(head[0])}</code>", ""]
    out += [f"- {cell(line)}" for line in head[1:]]
    for title, header, rows, _ in tables(fp, top, names):
        out += ["", f"#### {cell(title)}", ""]
        out.append("| " + " | ".join(header) + " |")
        out.append("|" + "|".join([":--", *("--:" for _ in header[1:])]) + "|")
        out += ["| " + " | ".join(cell(c) for c in r) + " |" for r in rows]
    out += _ranks_markdown(fp)
    return neutral.cap_markdown(neutral.lines("\n".join(out) + "\n"))


def _ranks_markdown(fp: Fingerprint) -> list[str]:
    from nsysdiff.compare.ranks import view
    from nsysdiff.render import ranks

    v = view(fp.ranks)
    return [] if v is None else ranks.markdown_lines(v)
