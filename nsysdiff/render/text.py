"""The terminal report: one screen that answers "what changed, and what is abnormal?".

Order: the verdict line; why the traces can't be compared (if so); the headline (totals,
overall scale, launches, "same count, different kernels"); **outliers first**, with the
evidence that makes them the smoking gun; findings (errors first, waived ones marked,
structure findings marked as facts); the category lineup; memcpy/memset by kind; variant
drift per family; the top changes by absolute time; a footer with the method, its
thresholds and what the numbers can't tell.

Rendered through rich with markup, emoji and highlighting off (kernel names are data, not
markup) and no colour, so the output is plain deterministic text fit for golden files.
"""

from __future__ import annotations

import functools
import io
import math
from collections.abc import Sequence

from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from nsysdiff import comparability, stats
from nsysdiff.diff import CopyDelta, Diff, VariantDrift
from nsysdiff.render import markdown as m
from nsysdiff.render import safe
from nsysdiff.render import units as u
from nsysdiff.report import Finding, Report

TOP_CHANGES = 10
MIN_NAME = 20
MAX_NAME = 70
VARIANTS_SHOWN = 8  # per side and family


def _grid(
    title: str,
    header: Sequence[str],
    rows: Sequence[Sequence[str]],
    width: int,
    optional: Sequence[int] = (),
) -> Table:
    """A table whose first column (a name) is shortened, keeping its start and end, to what
    the other columns leave of ``width``; ``optional`` columns are dropped, in order, when
    the name would get narrower than ``MIN_NAME``."""
    keep = list(range(len(header)))

    def name_room() -> int:
        others = sum(max(len(header[i]), *(len(r[i]) for r in rows)) for i in keep[1:])
        return width - others - 3 * (len(keep) - 1)

    needed = min(MIN_NAME, max(len(header[0]), *(len(r[0]) for r in rows)))
    for col in optional:
        if name_room() >= needed:
            break
        keep.remove(col)
    room = max(MIN_NAME, min(MAX_NAME, name_room()))
    t = Table(
        title=title, title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False, show_edge=False
    )
    for i in keep:
        t.add_column(header[i], justify="left" if i == 0 else "right", no_wrap=True)
    for r in rows:
        t.add_row(u.shorten(r[0], room), *(r[i] for i in keep[1:]))
    return t


def _title(console: Console, text: str) -> None:
    console.print()
    console.print(Text(text, style="bold"))


def _headline(console: Console, report: Report) -> None:
    d = report.diff
    h = d.headline
    bm, cm = d.base_meta, d.candidate_meta
    console.print(f"base       {bm.source} (nsys {bm.nsys_version or 'unknown'})")
    console.print(f"candidate  {cm.source} (nsys {cm.nsys_version or 'unknown'})")
    if h.per is None:
        console.print(
            f"kernel time  {u.ns(h.base_total_ns)} → {u.ns(h.candidate_total_ns)}  "
            f"{u.ratio(h.ratio)}  ({u.signed_ns(h.candidate_total_ns - h.base_total_ns)})"
        )
    else:
        b, c = m.compared_ns(d)
        console.print(
            f"kernel time  {u.ns(h.base_total_ns)} → {u.ns(h.candidate_total_ns)} "
            "in the whole scope"
        )
        console.print(
            f"per step     {u.ns(b)} → {u.ns(c)}  {u.ratio(h.ratio)}  ({u.signed_ns(c - b)})"
        )
        console.print(f"steps        {m.steps_phrase(d)}")
    compared = m.basis_phrase(d)
    if compared:
        console.print(f"compared     {compared}")
    main, over = m.scale_parts(d)
    console.print(f"scale        {main}")
    if over:
        console.print(f"             {over}")
    _attribution(console, d, console.width)
    console.print(
        f"launches     {h.base_launches:,} → {h.candidate_launches:,}; distinct kernels "
        f"{h.base_kernels:,} → {h.candidate_kernels:,} ({h.common_kernels:,} common)"
    )
    for label, text in comparability.scope_lines(d):
        console.print(f"{label:<12} {text}")
    same = m.kernel_count_phrase(d)
    if same:
        console.print(Text(same, style="bold"))


def _attribution(console: Console, d: Diff, width: int) -> None:
    """The change split exactly by kind, then its top contributors, one a line."""
    a = d.attribution
    if not a.top:
        return
    label = "change/step" if d.per_step else "change"
    console.print(f"{label:<12} {u.signed_ns(a.delta_ns)} = {m.effects_text(a.effects)}")
    for c in a.top:
        # One name a line gets the room of the line; a replacement shares it between two.
        room = max(MIN_NAME, (width - 50) // 2 if c.kind == "replacement" else width - 45)
        console.print(f"             {m.contributor_text(c, functools.partial(u.shorten, width=room))}")


def _comparability(console: Console, d: Diff) -> None:
    # After the changes: it qualifies them, and the smoking gun comes first.
    _title(console, "Comparability")
    for label, text in comparability.fact_lines(d):
        console.print(f"  {label:<15} {text}")


def _outliers(console: Console, d: Diff, width: int) -> None:
    outliers = d.outliers
    if not outliers and d.outlier_families:
        return  # the families flagged as a whole follow
    if not outliers:
        console.print()
        console.print(m.no_outlier_line(d))
        return
    _title(
        console,
        f"Outliers ({len(outliers)}): scaled abnormally against the overall "
        f"{d.headline.scale:.2f}x",
    )
    for i, r in enumerate(outliers, 1):
        b, c = m.side_ns(r)
        console.print(
            Text(
                f"{i:>2}. {u.shorten(r.name, max(MIN_NAME, width - 38))}  [{r.category or '-'}]"
                + ("  improvement" if r.deviation is not None and r.deviation < 1 else ""),
                style="bold",
            )
        )
        console.print(
            f"    {b} → {c}  {u.ratio(r.ratio)} total · per call {m.per_call_pair(r)} · "
            f"calls {m.calls_pair(r)} ({u.ratio(r.calls_ratio)})"
        )
        score = "-" if r.outlier_score is None else f"{r.outlier_score:.1f}"
        console.print(
            f"    count effect {u.signed_ns(r.count_effect_ns)} / per-call effect "
            f"{u.signed_ns(r.per_call_effect_ns)} · {u.ratio(r.deviation)} vs the overall scale · "
            f"score {score}"
        )
        if r.distribution is not None:
            console.print(
                f"    distribution: P(candidate call slower) {r.distribution.prob_slower:.2f}, "
                f"KS {r.distribution.ks_distance:.2f}"
            )


def _outlier_families(console: Console, d: Diff, width: int) -> None:
    """Families whose variants together scaled abnormally (none of them may on its own)."""
    fams = d.outlier_families
    if not fams:
        return
    _title(console, f"Families flagged as a whole ({len(fams)}): variants together against the overall "
           f"{d.headline.scale:.2f}x")  # fmt: skip
    for r in fams:
        b, c = m.side_ns(r)
        n = sum(1 for k in d.kernels if k.family == r.key)
        mark = "  improvement" if r.deviation is not None and r.deviation < 1 else ""
        console.print(Text(f" - {u.shorten(r.name, max(MIN_NAME, width - 40))}  [{n} variants]{mark}", style="bold"))
        score = "-" if r.outlier_score is None else f"{r.outlier_score:.1f}"
        console.print(
            f"   {b} → {c}  {u.ratio(r.ratio)} total · calls {m.calls_pair(r)} · "
            f"{u.ratio(r.deviation)} vs the overall scale · score {score}"
        )


def _findings(console: Console, findings: Sequence[Finding], failing: set[Finding]) -> None:
    if not findings:
        return
    _title(console, f"Findings ({m.finding_counts_of(findings)})")
    for f in findings:
        mark = m.finding_mark(f).upper() if f in failing else m.finding_mark(f)
        console.print(
            Text(
                f"  {mark:<14} {f.rule_id} · {u.shorten(f.subject, 80)}",
                style="bold" if f in failing else "",
            )
        )
        console.print(f"  {'':<14} {f.observed}" + (f" vs limit {f.limit}" if f.limit else ""))
        if f.evidence:
            console.print(f"  {'':<14} {f.evidence}")
        if f.waived:
            console.print(f"  {'':<14} waived: {f.waiver_reason or 'no reason given'}")


def _categories(console: Console, d: Diff, width: int) -> None:
    if not d.categories:
        return
    rows = []
    for r in d.categories:
        b, c = m.side_ns(r)
        rows.append(
            [
                r.name,
                b,
                c,
                u.signed_ns(r.delta_ns),
                u.ratio(r.ratio),
                u.ratio(r.calls_ratio),
                u.ratio(r.mean_ratio),
                u.ratio(r.deviation),
                "OUTLIER" if r.is_outlier else r.verdict.value,
            ]
        )
    header = (
        "category",
        "base",
        "candidate",
        "Δ",
        "ratio",
        "calls",
        "mean/call",
        "vs scale",
        "verdict",
    )
    console.print()
    console.print(_grid("Categories", header, rows, width, optional=(5, 7, 3)))


def _basis_rows(console: Console, d: Diff, width: int) -> None:
    """Without kernel data: the NVTX ranges or graphs that were compared instead."""
    if d.headline.basis == "kernels" or not d.scored:
        return
    shown = d.scored[:TOP_CHANGES]
    rows = []
    for r in shown:
        b, c = m.side_ns(r)
        rows.append(
            [
                r.key,
                m.calls_pair(r),
                b,
                c,
                u.signed_ns(r.delta_ns),
                u.ratio(r.ratio),
                u.ratio(r.mean_ratio),
                u.ratio(r.deviation),
                "OUTLIER" if r.is_outlier else r.verdict.value,
            ]
        )
    what = "NVTX ranges" if d.headline.basis == "nvtx" else "CUDA graphs"
    header = (what, "count", "base", "candidate", "Δ", "ratio", "mean", "vs scale", "verdict")
    title = f"{what} by absolute change ({len(shown)} of {len(d.scored):,})"
    console.print()
    console.print(_grid(title, header, rows, width, optional=(6, 7, 1)))


def _phases(console: Console, d: Diff, width: int) -> None:
    if not d.phases:
        return
    rows = []
    for p in d.phases:
        b, c = m.compared_ns(p.diff)
        top = p.diff.outliers
        rows.append(
            [
                p.name,
                f"{p.base_ranges:,} → {p.candidate_ranges:,}",
                u.ns(b),
                u.ns(c),
                u.ratio(p.diff.headline.ratio),
                f"{p.diff.headline.scale:.2f}x",
                f"{len(top)}"
                + (f" (top {u.shorten(top[0].name, 30)} {u.ratio(top[0].ratio)})" if top else ""),
            ]
        )
    header = ("phase", "ranges", "base", "candidate", "ratio", "scale", "outliers")
    console.print()
    console.print(_grid("Phases", header, rows, width, optional=(1, 5)))


def _copies(console: Console, deltas: Sequence[CopyDelta], width: int) -> None:
    if not deltas:
        return
    rows = [
        [
            x.kind,
            m.copy_pair(x, "ops", m.count),
            m.copy_pair(x, "bytes", u.nbytes),
            m.copy_pair(x, "total_ns", u.ns),
            u.ratio(x.ops_ratio),
            u.ratio(x.bytes_ratio),
            u.ratio(x.ratio),
            x.verdict.value,
        ]
        for x in deltas
    ]
    header = ("kind", "ops", "bytes", "time", "ops ratio", "bytes ratio", "time ratio", "verdict")
    console.print()
    console.print(_grid("Memory operations", header, rows, width, optional=(4, 5, 2, 6)))


def _variants(console: Console, drifts: Sequence[VariantDrift], width: int) -> None:
    if not drifts:
        return
    appeared = sum(len(v.appeared) for v in drifts)
    gone = sum(len(v.disappeared) for v in drifts)
    _title(
        console,
        f"Variant drift: {m.plural(len(drifts), 'family', 'families')}, "
        f"{appeared:,} appeared ({u.ns(sum(v.appeared_ns for v in drifts))}), "
        f"{gone:,} disappeared ({u.ns(sum(v.disappeared_ns for v in drifts))})",
    )
    for v in drifts:
        console.print(
            f"  {v.family} [{v.category}]: {m.drift_totals(v)}, "
            f"{m.plural(len(v.kept), 'variant')} kept"
        )
        for sign, variants in (("+", v.appeared), ("-", v.disappeared)):
            room = max(MIN_NAME, min(MAX_NAME, width - 32))
            for x in variants[:VARIANTS_SHOWN]:
                console.print(
                    f"    {sign} {u.shorten(x.name, room):<{room}} "
                    f"{m.count(x.calls):>7} calls {u.ns(x.total_ns):>11}"
                )
            if len(variants) > VARIANTS_SHOWN:
                rest = variants[VARIANTS_SHOWN:]
                console.print(
                    f"    {sign} … and {len(rest):,} more ({u.ns(sum(x.total_ns for x in rest))})"
                )


def _top_changes(console: Console, d: Diff, width: int) -> None:
    if not d.kernels:
        return
    shown = d.kernels[:TOP_CHANGES]
    rows = []
    for r in shown:
        b, c = m.side_ns(r)
        rows.append(
            [
                r.name,
                b,
                c,
                u.signed_ns(r.delta_ns),
                u.ratio(r.ratio),
                m.calls_pair(r),
                u.signed_ns(r.count_effect_ns),
                u.signed_ns(r.per_call_effect_ns),
                "OUTLIER" if r.is_outlier else r.verdict.value,
            ]
        )
    header = (
        "kernel",
        "base",
        "candidate",
        "Δ",
        "ratio",
        "calls",
        "count effect",
        "per-call effect",
        "verdict",
    )
    title = f"Top changes by absolute time ({len(shown)} of {len(d.kernels):,} kernels)"
    console.print()
    console.print(_grid(title, header, rows, width, optional=(6, 7, 5, 1, 2)))


def _footer(console: Console, d: Diff) -> None:
    s = d.settings
    console.print()
    console.print(
        f"Method: overall scale = weighted median of per-family log ratios (families on both "
        f"sides, no family over a fifth of the weight; spread with the same weights). "
        f"Outlier = |modified z| ≥ {s.z_threshold:g} "
        f"(MAD floor {u.ratio(math.exp(s.mad_floor))}), "
        f"≥ {s.min_deviation:g}x beyond the scale either way, ≥ {100 * s.min_share:g}% of either "
        f"side's kernel time. Unchanged within {s.noise:g}x. Count effect = Δcalls × base mean; "
        f"per-call effect = the rest of a kernel's change. Distribution: {stats.DISTRIBUTION_METHOD}."
    )
    console.print(
        "Not measured: run-to-run variance (one trace per side, so a ratio is not a confidence "
        "interval); end-to-end latency (kernel time ignores overlap, idle gaps and CPU time); "
        "why a kernel changed (input sizes, launch configurations and code paths need the trace)."
    )


def render(report: Report, *, width: int = 120) -> str:
    # Names from traces and rule files arrive as one inert line each (safe.text), and the
    # finished document is checked once more (safe.lines): no line a GitHub runner would
    # read as a workflow command, no terminal control sequence.
    report = safe.scrub(report, safe.text)
    buf = io.StringIO()
    console = Console(
        file=buf,
        width=width,
        color_system=None,
        force_terminal=False,
        markup=False,
        emoji=False,
        highlight=False,
        soft_wrap=False,
    )
    d = report.diff
    console.print(Text(f"nsysdiff: {m.verdict_line(report)}", style="bold"))
    for reason in report.reasons:
        console.print(f"  inconclusive: {reason}")
    for note in report.notes:
        console.print(f"  note: {note}")
    console.print()
    _headline(console, report)
    _outliers(console, d, width)
    _outlier_families(console, d, width)
    _findings(console, report.findings, set(report.failed))
    _basis_rows(console, d, width)
    _categories(console, d, width)
    _phases(console, d, width)
    _copies(console, (*d.memcpy, *d.memset), width)
    _variants(console, d.variants, width)
    _top_changes(console, d, width)
    _comparability(console, d)
    _footer(console, d)
    return safe.lines("\n".join(line.rstrip() for line in buf.getvalue().splitlines()) + "\n")
