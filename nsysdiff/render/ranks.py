"""The multi-rank section: per-rank figures and the collective skew, in text, Markdown and JSON.

Shared by ``nsysdiff summary`` (one multi-GPU trace, or several traces given as the ranks
of one job) and the diff (both sides' ranks, paired by number).
"""

from __future__ import annotations

import io
import json
from collections.abc import Callable
from typing import Any

from rich.console import Console

from nsysdiff import units as u
from nsysdiff.compare.ranks import RankDiff, RankView, Spread
from nsysdiff.fingerprint.model import to_data
from nsysdiff.render.layout import grid, plain_console, wrap
from nsysdiff.render.sides import paired
from nsysdiff.safe import neutral
from nsysdiff.trace.collectives import label as label_of
from nsysdiff.trace.records import RankStats

JOB_FORMAT = "nsysdiff-ranks"
JOB_VERSION = 1

RANK_HEADER = ("rank", "launches", "kernel", "compute", "NCCL", "busy", "idle of span")
OP_HEADER = ("collective", "calls", "min", "median", "max", "longest on")
DIFF_HEADER = ("rank", "compute base → candidate", "NCCL", "kernel")

Tables = list[tuple[str, tuple[str, ...], list[list[str]], tuple[int, ...]]]


def name(r: RankStats) -> str:
    return f"#{r.rank} {r.label}"


def rank_rows(v: RankView) -> list[list[str]]:
    return [
        [
            name(r),
            f"{r.kernels:,}",
            u.ns(r.kernel_ns),
            u.ns(r.compute_ns),
            u.ns(r.collective_ns),
            u.ns(r.busy_ns),
            u.pct(r.idle_pct),
        ]
        for r in v.ranks
    ]


def op_rows(v: RankView) -> list[list[str]]:
    return [
        [
            s.op,
            f"{s.calls:,}",
            u.ns(s.time.min_ns),
            u.ns(s.time.median_ns),
            u.ns(s.time.max_ns),
            f"#{s.time.most}" if s.time.spread_ns else "all alike",
        ]
        for s in v.ops
    ]


def _spread_text(v: RankView, s: Spread) -> str:
    return (
        f"min {u.ns(s.min_ns)} ({name(v.rank(s.least))}) · median {u.ns(s.median_ns)} · "
        f"max {u.ns(s.max_ns)} ({name(v.rank(s.most))})"
    )


def _slowest_text(v: RankView) -> str:
    if not v.compute.spread_ns:
        return "no rank is slowest: every rank's compute takes the same time"
    if v.collective is None:
        return f"slowest rank: {name(v.slowest)} (the most compute)"
    return f"slowest rank: {name(v.slowest)} (the most compute; the other ranks wait for it in collectives)"


def _slowest(v: RankView) -> str:
    return name(v.slowest) if v.compute.spread_ns else "none (equal compute)"


def skew_lines(v: RankView) -> list[str]:
    """What the skew means, in words: the slowest rank, the compute spread, and how much of
    the fastest rank's collective time is waiting."""
    out = [
        f"compute (kernel time outside collectives) per rank: {_spread_text(v, v.compute)}; "
        f"spread {u.ns(v.compute.spread_ns)}",
        _slowest_text(v),
    ]
    if v.collective is None:
        out.append("no collective (NCCL) kernels: nothing makes the ranks wait for each other on the GPU")
        return out
    out.append(f"NCCL time per rank: {_spread_text(v, v.collective)}")
    if v.waiting_ns > 0:
        out.append(
            f"NCCL time on the fastest-compute rank ({name(v.fastest)}) is {u.ns(v.waiting_ns)} above the "
            f"least any rank spends in NCCL: mostly waiting for the slowest rank, not transfer"
        )
    else:
        out.append(
            f"the fastest-compute rank ({name(v.fastest)}) spends the least in NCCL: its collective time is "
            "not waiting for the slowest rank's compute (look at CPU-side launch gaps instead)"
        )
    return out


def tables(v: RankView, how: str) -> Tables:
    out: Tables = [(f"Ranks ({len(v.ranks):,}, {how})", RANK_HEADER, rank_rows(v), (6, 5, 1, 2))]
    if v.ops:
        out.append(("Collectives per rank", OP_HEADER, op_rows(v), (1, 3, 5)))
    return out


def how(v: RankView) -> str:
    """How the ranks were told apart."""
    if all(r.device is not None and r.pid is not None for r in v.ranks):
        return "one per process and device"
    return "one per trace or device"


def render_text(v: RankView, console: Console, how_told: str | None = None) -> None:
    width = console.width
    for title, header, rows, optional in tables(v, how_told or how(v)):
        console.print()
        console.print(grid(title, header, rows, width, optional=optional))
    console.print()
    for line in skew_lines(v):
        wrap(console, line, width, hang="  ")


def markdown_lines(v: RankView, how_told: str | None = None) -> list[str]:
    from nsysdiff.render.cells import cell

    out: list[str] = []
    for title, header, rows, _ in tables(v, how_told or how(v)):
        out += ["", f"#### {cell(title)}", ""]
        out.append("| " + " | ".join(header) + " |")
        out.append("|" + "|".join([":--", *("--:" for _ in header[1:])]) + "|")
        out += ["| " + " | ".join(cell(c) for c in r) + " |" for r in rows]
    out.append("")
    out += [f"- {cell(line)}" for line in skew_lines(v)]
    return out


def _spread_data(s: Spread | None) -> dict[str, Any] | None:
    if s is None:
        return None
    return {
        "min_ns": s.min_ns,
        "median_ns": s.median_ns,
        "max_ns": s.max_ns,
        "least_rank": s.least,
        "most_rank": s.most,
    }


def view_data(v: RankView) -> dict[str, Any]:
    """The view as plain data (docs/json.md, "Ranks")."""
    return {
        "ranks": [
            {**to_data(r), "compute_ns": r.compute_ns, "collective_ns": r.collective_ns, "idle_pct": r.idle_pct}
            for r in v.ranks
        ],
        "kernel": _spread_data(v.kernel),
        "compute": _spread_data(v.compute),
        "collective": _spread_data(v.collective),
        "collectives": [{"op": s.op, "calls": s.calls, **(_spread_data(s.time) or {})} for s in v.ops],
        "slowest_rank": v.slowest.rank,
        "fastest_rank": v.fastest.rank,
        "waiting_ns": v.waiting_ns,
    }


# --- the job: several traces given to `summary` as ranks ---------------------------------


def render_job_plain(v: RankView, sources: list[str], width: int) -> str:
    buf = io.StringIO()
    console = plain_console(buf, width)
    v = neutral.scrub(v, neutral.text)
    wrap(
        console,
        f"{len(sources):,} traces as the ranks of one job: {', '.join(neutral.text(s) for s in sources)}",
        width,
        hang="  ",
    )
    wrap(
        console,
        f"{u.plural(sum(r.kernels for r in v.ranks), 'kernel launch')} · kernel time "
        f"{u.ns(sum(r.kernel_ns for r in v.ranks))} over {u.plural(len(v.ranks), 'rank')}",
        width,
        hang="  ",
    )
    render_text(v, console, "in the order given")
    return neutral.lines("\n".join(line.rstrip() for line in buf.getvalue().splitlines()) + "\n")


def render_job_markdown(v: RankView, sources: list[str]) -> str:
    from nsysdiff.render.cells import cell

    v = neutral.scrub(v, neutral.text)
    out = [f"### {len(sources):,} traces as the ranks of one job", ""]
    out += [f"- <code>{cell(s)}</code>" for s in sources]
    out += markdown_lines(v, "in the order given")
    return neutral.cap_markdown(neutral.lines("\n".join(out) + "\n"))


def render_job_json(v: RankView, sources: list[str]) -> str:
    from nsysdiff.render.cells import finite

    doc = {"format": JOB_FORMAT, "version": JOB_VERSION, "sources": sources, **view_data(v)}
    return neutral.json_document(json.dumps(finite(doc), indent=1, allow_nan=False)) + "\n"


# --- the diff ----------------------------------------------------------------------------


def _pair(b: RankStats | None, c: RankStats | None, figure: Callable[[RankStats], int]) -> str:
    """One figure of a rank, base → candidate (``-`` on the side without the rank)."""
    return f"{u.ns(None if b is None else figure(b))} → {u.ns(None if c is None else figure(c))}"


def _pair_label(b: RankStats | None, c: RankStats | None) -> str:
    """One label for a rank of both sides: ``GPU 0 · pid 144 → 148`` when only the process
    id changed (it does between runs), else both labels."""
    if b is None or c is None:
        only = b if b is not None else c
        return "" if only is None else only.label
    if b.label == c.label:
        return b.label
    if b.device is not None and b.device == c.device and b.pid is not None and c.pid is not None:
        return f"{label_of(b.device, b.pid)} → {c.pid}"
    return f"{b.label} → {c.label}"


def diff_rows(rd: RankDiff) -> list[list[str]]:
    """Per rank number: kernel, compute and NCCL time, base → candidate."""
    out = []
    for n, b, c in paired(rd.base.ranks, rd.candidate.ranks, lambda r: r.rank):
        out.append(
            [
                f"#{n} {_pair_label(b, c)}",
                _pair(b, c, lambda r: r.compute_ns),
                _pair(b, c, lambda r: r.collective_ns),
                _pair(b, c, lambda r: r.kernel_ns),
            ]
        )
    return out


def _max_median(s: Spread | None) -> str:
    return "none" if s is None else f"{u.ns(s.max_ns)} / {u.ns(s.median_ns)}"


def diff_lines(rd: RankDiff) -> list[str]:
    """The skew change in words: the slowest rank, the compute spread, NCCL max/median."""
    b, c = rd.base, rd.candidate
    out = []
    if not rd.paired:
        out.append(f"rank counts differ ({len(b.ranks):,} → {len(c.ranks):,}): ranks are paired by number")
    out += [
        f"slowest rank (most compute): {_slowest(b)} → {_slowest(c)}",
        f"compute spread across ranks: {u.ns(b.compute.spread_ns)} → {u.ns(c.compute.spread_ns)}",
        f"NCCL time per rank, max / median: {_max_median(b.collective)} → {_max_median(c.collective)}",
    ]
    ops = {s.op: s for s in b.ops}
    for s in c.ops:
        before = ops.get(s.op)
        out.append(f"{s.op} max / median: {_max_median(before.time if before else None)} → {_max_median(s.time)}")
    for s in b.ops:
        if s.op not in {x.op for x in c.ops}:
            out.append(f"{s.op} max / median: {_max_median(s.time)} → none")
    if b.waiting_ns or c.waiting_ns:
        out.append(
            f"NCCL time of the fastest-compute rank above the least (waiting for the slowest rank): "
            f"{u.ns(b.waiting_ns)} → {u.ns(c.waiting_ns)}"
        )
    return out


def render_diff_text(rd: RankDiff, console: Console) -> None:
    width = console.width
    console.print()
    console.print(
        grid(
            f"Ranks ({len(rd.base.ranks):,} → {len(rd.candidate.ranks):,})",
            DIFF_HEADER,
            diff_rows(rd),
            width,
            optional=(3, 1),
        )
    )
    console.print()
    for line in diff_lines(rd):
        wrap(console, line, width, hang="  ")


def diff_markdown(rd: RankDiff) -> list[str]:
    from nsysdiff.render.cells import cell

    out = ["| " + " | ".join(DIFF_HEADER) + " |", "|:--|--:|--:|--:|"]
    out += ["| " + " | ".join(cell(x) for x in r) + " |" for r in diff_rows(rd)]
    out.append("")
    out += [f"- {cell(line)}" for line in diff_lines(rd)]
    return out


def diff_data(rd: RankDiff) -> dict[str, Any]:
    return {"paired": rd.paired, "base": view_data(rd.base), "candidate": view_data(rd.candidate)}
