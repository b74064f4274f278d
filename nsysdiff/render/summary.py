"""The census of one trace: ``nsysdiff summary`` as rich tables or JSON."""

from __future__ import annotations

import json
from typing import Any

from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from nsysdiff.model import Fingerprint, KernelStats, to_data
from nsysdiff.render import safe
from nsysdiff.render import units as u

SUMMARY_FORMAT = "nsysdiff-summary"
SUMMARY_VERSION = 1


def _pct(part: float, whole: float) -> float:
    return 100.0 * part / whole if whole else 0.0


def kernel_data(k: KernelStats, kernel_ns: int) -> dict[str, Any]:
    return {
        "name": k.name,
        "demangled": k.demangled,
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
        "nvtx": to_data(fp.nvtx),
    }


def render_json(fp: Fingerprint) -> str:
    return safe.json_document(json.dumps(summary_data(fp), indent=1)) + "\n"


def scope_lines(fp: Fingerprint) -> list[str]:
    """What part of the trace the figures cover, when not the whole capture."""
    from nsysdiff.scope import describe

    s = fp.scope
    if describe(s) == "the whole capture" and not fp.phases:
        return []
    out = [f"scope: {describe(s)}"]
    if s.steps:
        per_step = u.ns(fp.kernel_ns / s.steps)
        out.append(f"{s.steps:,} {s.per} steps · kernel time per step (GPU-side TPOT) {per_step}")
    if s.coverage is not None:
        out.append(f"coverage: {100 * s.coverage:.1f}% of the kernel time")
    for ph in fp.phases:
        out.append(
            f"phase {ph.name}: {ph.ranges:,} ranges · {ph.fingerprint.kernel_calls:,} launches · "
            f"kernel time {u.ns(ph.fingerprint.kernel_ns)}"
        )
    return out


def render_text(fp: Fingerprint, console: Console, top: int = 20) -> None:
    # Every string from the trace is neutralised (safe.text) and printed as Text, never
    # as markup: a name like "{ForeignNode[/ConstantOfShape_3_]}" is data.
    fp = safe.scrub(fp, safe.text)
    m = fp.meta
    gpus = ", ".join(f"{g.name} (#{g.id})" for g in m.gpus) or "not recorded"
    console.print(Text(m.source, style="bold"))
    console.print(
        Text(
            f"nsys {m.nsys_version or 'unknown (no metadata table)'} · schema "
            f"{m.schema_version or 'unknown'} · GPUs: {gpus}"
        )
    )
    devices = ", ".join(str(d.device) for d in fp.devices) or "none"
    console.print(
        Text(
            f"capture window {u.ns(m.capture_ns)} · devices with kernels: {devices} · "
            f"CUDA graphs: {m.graph_mode.value}"
        )
    )
    for line in scope_lines(fp):
        console.print(Text(line))
    if not m.has_kernels:
        console.print(Text("kernel data is absent from this trace (no kernel table)", style="yellow"))
    else:
        span = sum(d.span_ns for d in fp.devices)
        idle = 100.0 * (1 - fp.busy_ns / span) if span else 0.0
        console.print(
            Text(
                f"{fp.kernel_calls:,} kernel launches · kernel time {u.ns(fp.kernel_ns)} · "
                f"GPU busy {u.ns(fp.busy_ns)} · idle {idle:.1f}% of the kernel span"
            )
        )
        t = Table(
            title=f"Top kernels ({min(top, len(fp.kernels))} of {len(fp.kernels)})", box=box.SIMPLE_HEAD, pad_edge=False
        )
        for col in ("kernel", "calls", "total", "mean", "p50", "p90", "max", "%"):
            # Numbers never wrap; the name gives way (shortened in the middle) first.
            t.add_column(
                col,
                justify="left" if col == "kernel" else "right",
                no_wrap=col != "kernel",
                min_width=16 if col == "kernel" else None,
                overflow="ellipsis",
            )
        for k in fp.kernels[:top]:
            t.add_row(
                Text(u.shorten(k.name, 50)), f"{k.calls:,}", u.ns(k.total_ns), u.ns(k.mean_ns),
                u.ns(k.p50_ns), u.ns(k.p90_ns), u.ns(k.max_ns), u.pct(_pct(k.total_ns, fp.kernel_ns)),
            )  # fmt: skip
        console.print(t)
        c = Table(title="Categories", box=box.SIMPLE_HEAD, pad_edge=False)
        for col in ("category", "kernels", "calls", "total", "%"):
            c.add_column(col, justify="left" if col == "category" else "right")
        for g in fp.categories:
            c.add_row(
                Text(g.name),
                str(g.kernels),
                f"{g.calls:,}",
                u.ns(g.total_ns),
                u.pct(_pct(g.total_ns, fp.kernel_ns)),
            )
        console.print(c)
    if fp.memcpy or fp.memset:
        t = Table(title="Memory operations", box=box.SIMPLE_HEAD, pad_edge=False)
        for col in ("kind", "ops", "bytes", "time", "GB/s"):
            t.add_column(col, justify="left" if col == "kind" else "right")
        for cp in (*fp.memcpy, *fp.memset):
            gbps = "-" if cp.gbps is None else f"{cp.gbps:.2f}"
            t.add_row(Text(cp.kind), f"{cp.ops:,}", u.nbytes(cp.bytes), u.ns(cp.total_ns), gbps)
        console.print(t)
    if fp.sync:
        t = Table(title="Synchronising API calls", box=box.SIMPLE_HEAD, pad_edge=False)
        for col in ("call", "calls", "total"):
            t.add_column(col, justify="left" if col == "call" else "right")
        for a in fp.sync:
            t.add_row(Text(a.name), f"{a.calls:,}", u.ns(a.total_ns))
        console.print(t)
    if fp.nvtx:
        t = Table(
            title=f"NVTX ranges (top {min(top, len(fp.nvtx))} of {len(fp.nvtx)})", box=box.SIMPLE_HEAD, pad_edge=False
        )
        for col in ("range", "domain", "count", "total"):
            t.add_column(col, justify="left" if col in ("range", "domain") else "right")
        for r in fp.nvtx[:top]:
            t.add_row(Text(u.shorten(r.name, 50)), Text(r.domain), f"{r.count:,}", u.ns(r.total_ns))
        console.print(t)
