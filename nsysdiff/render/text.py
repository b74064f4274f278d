"""The terminal report: one screen that answers "what changed, and what is abnormal?".

The first screen, always: the verdict line; why the traces can't be compared (if so); the
headline (totals, overall scale, launches, "same count, different kernels"), the slot of
the attribution; **outliers**, with the evidence that makes them the smoking gun; the
failed rules; and one line naming the sections left out. ``details=True`` prints every
section after it: all findings, categories, phases, memcpy/memset by kind, variant drift
per family, the top changes by absolute time, NVTX ranges, synchronising API calls,
per-device busy time, comparability and a footer with the method and its limits.

Rendered through rich with markup, emoji and highlighting off (kernel names are data, not
markup) and no colour, so the output is plain deterministic text fit for golden files.
Every line fits ``width``: prose wraps with a hanging indent, table name columns wrap,
numbers are never cut, and optional columns give way before the name column does.
"""

from __future__ import annotations

import io
import math
import textwrap
from collections.abc import Callable, Mapping, Sequence

from rich.console import Console
from rich.padding import Padding
from rich.table import Table
from rich.text import Text

from nsysdiff import units as u
from nsysdiff.compare import comparability, notices, stats
from nsysdiff.compare.diff import CopyDelta, Diff, Row, VariantDrift
from nsysdiff.render import phrases, runs
from nsysdiff.render import steps as st
from nsysdiff.render.devices import DEVICE_HEADER, device_rows
from nsysdiff.render.layout import MIN_NAME, grid, plain_console, wrap
from nsysdiff.render.names import Names, labels, mangled_of
from nsysdiff.rules.report import Finding, Report
from nsysdiff.safe import neutral

TOP_CHANGES = 10
TOP_RANGES = 10  # NVTX ranges and sync calls shown with --details
VARIANTS_SHOWN = 8  # per side and family
HANG = " " * 17  # continuation indent of a finding
FIRST_SCREEN_CONTRIBUTORS = 2  # top contributors to the change before --details

Label = Callable[[Row], str]


def _title(console: Console, text: str, width: int) -> None:
    console.print()
    wrap(console, text, width, bold=True)


def _side_label(fp_source: str, version: str | None) -> str:
    return f"{fp_source} (nsys {version or 'unknown'})"


def _headline(console: Console, report: Report, width: int, contributors: int | None, named: dict[str, str]) -> None:
    """The totals behind the verdict: where the attribution of the change goes, with its
    top ``contributors`` (None: all it names)."""
    d = report.diff
    h = d.headline
    bm, cm = d.base_meta, d.candidate_meta
    if bm.nsys_version == cm.nsys_version:
        # One line when one nsys wrote both: the first screen has 40 lines to spend.
        rows = [("traces", f"{bm.source} → {_side_label(cm.source, cm.nsys_version)}")]
    else:
        rows = [
            ("base", _side_label(bm.source, bm.nsys_version)),
            ("candidate", _side_label(cm.source, cm.nsys_version)),
        ]
    if d.steps is not None:
        # What a user waits per token leads: it is what a TPOT gate is about.
        rows += [("time/step" if i == 0 else "", line) for i, line in enumerate(st.first_lines(d.steps))]
    peers = comparability.graph_peers(d.base, d.candidate)
    if peers is not None:
        # A graph-mode side has no kernel rows: its "0 ns" of kernel time is no figure.
        rows.append(("graph time", phrases.kernel_time_phrase(d).removeprefix("graph-level GPU time ")))
    elif h.per is None:
        rows.append(
            (
                "kernel time",
                f"{u.ns(h.base_total_ns)} → {u.ns(h.candidate_total_ns)}  "
                f"{u.ratio(h.ratio)}  ({u.signed_ns(h.candidate_total_ns - h.base_total_ns)})",
            )
        )
    else:
        b, c = phrases.compared_ns(d)
        rows.append(("kernel time", f"{u.ns(h.base_total_ns)} → {u.ns(h.candidate_total_ns)} in the whole scope"))
        rows.append(("per step", f"{u.ns(b)} → {u.ns(c)}  {u.ratio(h.ratio)}  ({u.signed_ns(c - b)})"))
        rows.append(("steps", phrases.steps_phrase(d) or "-"))
    if d.runs is not None:
        rows.append(("runs", runs.shown_phrase(d.runs)))
    compared = phrases.basis_phrase(d)
    if compared:
        rows.append(("compared", compared))
    main, over = phrases.scale_parts(d)
    rows.append(("scale", main))
    if over:
        rows.append(("", over))
    if d.runs is not None:
        rows.append(("over runs", runs.over_runs_phrase(d.runs)))
    a = d.attribution
    if a.top:
        # The change split exactly by kind, then its top contributors, one a line.
        rows.append(
            (
                "change/step" if d.per_step else "change",
                f"{u.signed_ns(a.delta_ns)} = {phrases.effects_text(a.effects)}",
            )
        )
        rows += [("", phrases.contributor_text(c, _whole, named)) for c in a.top[:contributors]]
    # What the kernel rows hide: new or multiplied copies, tails grown under a held median.
    rows += [(n.label, n.text) for n in notices.notices(d, named)]
    rows.append(
        (
            "launches",
            f"{h.base_launches:,} → {h.candidate_launches:,}; distinct kernels "
            f"{h.base_kernels:,} → {h.candidate_kernels:,} ({h.common_kernels:,} common)",
        )
    )
    rows += comparability.scope_lines(d)
    for label, text in rows:
        wrap(console, f"{label:<12} {text}", width, hang=" " * 13)
    same = phrases.kernel_count_phrase(d)
    if same:
        wrap(console, same, width, bold=True)


def _whole(name: str) -> str:
    """A name as it is: the text report wraps names rather than shortening them."""
    return name


def _comparability(console: Console, d: Diff, width: int) -> None:
    # After the changes: it qualifies them, and the smoking gun comes first.
    _title(console, "Comparability", width)
    for label, text in comparability.fact_lines(d):
        wrap(console, f"  {label:<15} {text}", width, hang=" " * 18)


def _outliers(console: Console, d: Diff, width: int, label: Label, details: bool) -> None:
    outliers = d.outliers
    if not outliers and d.outlier_families:
        return  # the families flagged as a whole follow
    if not outliers:
        console.print()
        wrap(console, phrases.no_outlier_line(d), width)
        return
    _title(
        console,
        f"Outliers ({len(outliers)}): scaled abnormally against the overall {d.headline.scale:.2f}x",
        width,
    )
    for i, r in enumerate(outliers, 1):
        b, c = phrases.side_ns(r)
        mark = "  improvement" if r.deviation is not None and r.deviation < 1 else ""
        wrap(console, f"{i:>2}. {label(r)}  [{r.category or '-'}]{mark}", width, hang="    ", bold=True)
        wrap(
            console,
            f"{b} → {c}  {u.ratio(r.ratio)} total · per call {phrases.per_call_pair(r)} · "
            f"calls {phrases.calls_pair(r)} ({u.ratio(r.calls_ratio)})",
            width,
            indent="    ",
        )
        # The first screen says the call distributions in a few words; --details in full.
        dist = phrases.distribution_phrase(r) if details else phrases.slower_phrase(r)
        split = (
            f"resized {u.signed_ns(r.resized_ns)} ({phrases.resized_phrase(r.base.calls, r.candidate.calls)})"
            if r.resized_ns and r.base and r.candidate
            else f"count effect {u.signed_ns(r.count_effect_ns)} / per-call effect {u.signed_ns(r.per_call_effect_ns)}"
        )
        effects = f"{split} · {phrases.deviation_phrase(r)}"
        # On the first screen the call distributions run on after the deviation; --details
        # gives them a line of their own.
        if dist is not None and not details:
            effects, dist = f"{effects} · {dist}", None
        wrap(console, effects, width, indent="    ")
        if dist is not None:
            wrap(console, f"distribution: {dist}", width, indent="    ")
        across = runs.outlier_phrase(d, r)
        if across is not None:
            wrap(console, across, width, indent="    ")


def _runs(console: Console, d: Diff, width: int, details: bool, named: Mapping[str, str]) -> None:
    """The keys that changed across runs, or that the runs can't tell (all with --details)."""
    if d.runs is None:
        return
    _title(console, runs.title(d.runs), width)
    keys = runs.listed(d.runs)
    shown = keys if details else keys[: runs.FIRST_SCREEN_KEYS]
    for k in shown:
        wrap(console, f"  {runs.kind_word(k)} {runs.key_text(k, named)}", width, hang="    ")
        wrap(console, runs.measures_text(k), width, indent="    ")
    if len(shown) < len(keys):
        wrap(console, f"  ({len(keys) - len(shown):,} more with --details)", width)
    partial = runs.partial_text(d.runs)
    if partial is not None and details:
        wrap(console, f"  {partial}", width, hang="    ")


def _outlier_families(console: Console, d: Diff, width: int) -> None:
    """Families whose variants together scaled abnormally (none of them may on its own)."""
    fams = d.outlier_families
    if not fams:
        return
    _title(
        console,
        f"Families flagged as a whole ({len(fams)}): variants together against the overall {d.headline.scale:.2f}x",
        width,
    )
    for r in fams:
        b, c = phrases.side_ns(r)
        n = sum(1 for k in d.kernels if k.family == r.key)
        mark = "  improvement" if r.deviation is not None and r.deviation < 1 else ""
        wrap(console, f" - {r.name}  [{n} variants]{mark}", width, hang="   ", bold=True)
        wrap(
            console,
            f"{b} → {c}  {u.ratio(r.ratio)} total · calls {phrases.calls_pair(r)} · {phrases.deviation_phrase(r)}",
            width,
            indent="   ",
        )


def _basis_rows(console: Console, d: Diff, width: int) -> None:
    """Without kernel data: the NVTX ranges or graphs that were compared instead."""
    if d.headline.basis == "kernels" or not d.scored:
        return
    shown = d.scored[:TOP_CHANGES]
    rows = []
    for r in shown:
        b, c = phrases.side_ns(r)
        rows.append(
            [
                r.key,
                phrases.calls_pair(r),
                b,
                c,
                u.signed_ns(r.delta_ns),
                u.ratio(r.ratio),
                u.ratio(r.mean_ratio),
                u.ratio(r.deviation),
                _verdict_cell(r),
            ]
        )
    what = "NVTX ranges" if d.headline.basis == "nvtx" else "CUDA graphs"
    header = (what, "count", "base", "candidate", "Δ", "ratio", "mean", "vs scale", "verdict")
    title = f"{what} by absolute change ({len(shown)} of {len(d.scored):,})"
    console.print()
    console.print(grid(title, header, rows, width, optional=(6, 7, 1, 4)))


def _findings(
    console: Console,
    title: str,
    findings: Sequence[Finding],
    failing: set[Finding],
    width: int,
    evidence: bool = True,
) -> None:
    """Findings with their subject in full (it pastes into a waiver), wrapped; the first
    screen (``evidence=False``) keeps what was observed against the limit, which names the
    cause, and leaves the evidence behind it to --details."""
    if not findings:
        return
    _title(console, title, width)
    if evidence:  # with --details there is room to say what the marks mean
        wrap(console, f"  ({phrases.marks_legend(findings)})", width, hang="   ")
    for f in findings:
        mark = phrases.finding_mark(f).upper() if f in failing else phrases.finding_mark(f)
        _subject(console, f"  {mark:<14} {f.rule_id} · ", f.subject, width, bold=f in failing)
        wrap(console, f.observed + (f" vs limit {f.limit}" if f.limit else ""), width, indent=HANG)
        if f.evidence and evidence:
            wrap(console, f.evidence, width, indent=HANG)
        if f.waived:
            wrap(console, f"waived: {f.waiver_reason or 'no reason given'}", width, indent=HANG)


def _subject(console: Console, head: str, subject: str, width: int, bold: bool) -> None:
    """A finding's head and its subject, no name in it ever broken (a name pastes into a
    waiver as it is): after the head when it fits, else on a line of its own under the
    finding's text; a subject of several words too long for that line wraps between its
    words (a CI log is read for this line), a single name from the margin, running past
    the line only if it is longer than the line."""
    style = "bold" if bold else ""
    if len(head) + len(subject) <= width:
        console.print(Text(head + subject, style=style))
        return
    wrap(console, head.rstrip(), width, hang=HANG, bold=bold)
    if len(HANG) + len(subject) <= width:
        console.print(Text(HANG + subject, style=style))
        return
    if " " in subject.strip():
        # From the margin where a word of it would not fit beside the finding's indent.
        indent = HANG if max(map(len, subject.split())) <= width - len(HANG) else "  "
        lines = textwrap.wrap(
            subject,
            width,
            initial_indent=indent,
            subsequent_indent=indent,
            break_long_words=False,
            break_on_hyphens=False,
        )
        for line in lines:
            console.print(Text(line, style=style), soft_wrap=True)
        return
    console.print(Text("  " + subject, style=style), soft_wrap=True)


def _verdict_cell(r: Row) -> str:
    return "OUTLIER" if r.is_outlier else r.verdict.value


def _categories(console: Console, d: Diff, width: int) -> None:
    if not d.categories:
        return
    rows = []
    for r in d.categories:
        b, c = phrases.side_ns(r)
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
                _verdict_cell(r),
            ]
        )
    header = ("category", "base", "candidate", "Δ", "ratio", "calls", "mean/call", "vs scale", "verdict")
    console.print()
    console.print(grid("Categories", header, rows, width, optional=(5, 7, 3)))


def _phases(console: Console, d: Diff, width: int) -> None:
    if not d.phases:
        return
    rows = []
    for p in d.phases:
        b, c = phrases.compared_ns(p.diff)
        rows.append(
            [
                p.name,
                f"{p.base_ranges:,} → {p.candidate_ranges:,}",
                u.ns(b),
                u.ns(c),
                u.ratio(p.diff.headline.ratio),
                f"{p.diff.headline.scale:.2f}x",
                f"{len(p.diff.outliers):,}",
            ]
        )
    header = ("phase", "ranges", "base", "candidate", "ratio", "scale", "outliers")
    console.print()
    # Numbers only, as every table: the phase name wraps, and each phase's top outlier
    # (a name of any length) gets a line of its own below.
    console.print(grid("Phases", header, rows, width, optional=(1, 5)))
    for p in d.phases:
        top = p.diff.outliers
        if top:
            label = p.diff.kernel_label(top[0])
            wrap(console, f"  {p.name}: top outlier {label} {u.ratio(top[0].ratio)}", width, hang="    ")


def _steps(console: Console, d: Diff, width: int) -> None:
    """The Steps section: period and range across steps, the parts, host calls per step."""
    sd = d.steps
    if sd is None:
        return
    console.print()
    console.print(grid(st.title(sd), st.STAT_HEADER, st.stat_rows(sd), width))
    console.print()
    console.print(grid("Where each step's time goes (mean per step)", st.PART_HEADER, st.part_rows(sd), width))
    if sd.families:
        console.print()
        console.print(grid("Host calls per step", st.FAMILY_HEADER, st.family_rows(sd), width, optional=(5, 4)))
    console.print()
    wrap(console, st.METHOD, width)


def _copies(console: Console, deltas: Sequence[CopyDelta], width: int) -> None:
    if not deltas:
        return
    rows = [[x.kind, *phrases.copy_figures(x)] for x in deltas]
    console.print()
    # The ratios give way before the bytes: "same bytes, more time" is the finding.
    console.print(grid("Memory operations", phrases.COPY_HEADER, rows, width, optional=(4, 5, 6, 1)))


def _variants(console: Console, drifts: Sequence[VariantDrift], width: int, named: dict[str, str]) -> None:
    if not drifts:
        return
    appeared = sum(len(v.appeared) for v in drifts)
    gone = sum(len(v.disappeared) for v in drifts)
    _title(
        console,
        f"Variant drift: {u.plural(len(drifts), 'family')}, "
        f"{appeared:,} appeared ({u.ns(sum(v.appeared_ns for v in drifts))}), "
        f"{gone:,} disappeared ({u.ns(sum(v.disappeared_ns for v in drifts))})",
        width,
    )
    for v in drifts:
        wrap(
            console,
            f"  {v.family} [{v.category}]: {phrases.drift_totals(v)}, {u.plural(len(v.kept), 'variant')} kept",
            width,
            hang="    ",
        )
        rows = []
        for sign, variants in (("+", v.appeared), ("-", v.disappeared)):
            rows += [
                [f"{sign} {named.get(x.demangled, x.name)}", phrases.plural_calls(x.calls), u.ns(x.total_ns)]
                for x in variants[:VARIANTS_SHOWN]
            ]
            if len(variants) > VARIANTS_SHOWN:
                rest = variants[VARIANTS_SHOWN:]
                rows.append([f"{sign} … and {len(rest):,} more", "", u.ns(sum(x.total_ns for x in rest))])
        if rows:
            t = Table(box=None, show_header=False, pad_edge=False, show_edge=False)
            t.add_column(overflow="fold", min_width=min(MIN_NAME, width - 30))
            t.add_column(justify="right", no_wrap=True)
            t.add_column(justify="right", no_wrap=True)
            for row in rows:
                t.add_row(Text(row[0]), row[1], row[2])
            console.print(Padding(t, (0, 0, 0, 4)))


def _kernel_rows(rows: Sequence[Row], label: Label) -> list[list[str]]:
    out = []
    for r in rows:
        b, c = phrases.side_ns(r)
        out.append(
            [
                label(r),
                b,
                c,
                u.signed_ns(r.delta_ns),
                u.ratio(r.ratio),
                phrases.calls_pair(r),
                *phrases.effect_cells(r),
                _verdict_cell(r),
            ]
        )
    return out


_CHANGE_HEADER = ("base", "candidate", "Δ", "ratio", "calls", "count effect", "per-call effect", "verdict")


def _top_changes(console: Console, d: Diff, width: int, label: Label) -> None:
    if not d.kernels:
        return
    shown = d.kernels[:TOP_CHANGES]
    title = f"Top changes by absolute time ({len(shown)} of {u.plural(len(d.kernels), 'kernel')})"
    console.print()
    console.print(
        grid(title, ("kernel", *_CHANGE_HEADER), _kernel_rows(shown, label), width, optional=(6, 7, 5, 4, 1, 2))
    )


def _named_changes(console: Console, what: str, head: str, rows: Sequence[Row], width: int) -> None:
    """NVTX ranges or sync calls, with the same columns and verdicts as kernels."""
    if not rows:
        return
    shown = rows[:TOP_RANGES]
    title = f"{what} by absolute time ({len(shown)} of {len(rows):,})"
    console.print()
    console.print(
        grid(title, (head, *_CHANGE_HEADER), _kernel_rows(shown, lambda r: r.key), width, optional=(6, 7, 5, 4, 1, 2))
    )


def _devices(console: Console, d: Diff, width: int) -> None:
    rows = device_rows(d)
    if not rows:
        return
    console.print()
    console.print(grid("Devices (whole scope)", DEVICE_HEADER, rows, width, optional=(5, 1)))


def _rank_count(d: Diff) -> int:
    """Ranks on the larger side, when both sides have several (else no rank section)."""
    from nsysdiff.compare.ranks import compare

    return 0 if compare(d.base.ranks, d.candidate.ranks) is None else max(len(d.base.ranks), len(d.candidate.ranks))


def _ranks(console: Console, d: Diff) -> None:
    from nsysdiff.compare.ranks import compare
    from nsysdiff.render import ranks

    rd = compare(d.base.ranks, d.candidate.ranks)
    if rd is not None:
        ranks.render_diff_text(rd, console)


def _footer(console: Console, d: Diff, width: int) -> None:
    s = d.settings
    console.print()
    wrap(
        console,
        f"Method: overall scale = weighted median of per-family log ratios (families on both "
        f"sides, no family over a fifth of the weight; spread with the same weights). "
        f"Outlier = |modified z| ≥ {s.z_threshold:g} "
        f"(MAD floor {u.ratio(math.exp(s.mad_floor))}), "
        f"≥ {s.min_deviation:g}x beyond the scale either way, ≥ {100 * s.min_share:g}% of either "
        f"side's kernel time. Unchanged within {s.noise:g}x. Count effect = Δcalls × base mean; "
        f"per-call effect = the rest of a kernel's change. Distribution: {stats.DISTRIBUTION_METHOD}.",
        width,
    )
    if d.runs is not None:
        wrap(console, runs.method_text(d.runs), width)
    variance = (
        ""
        if d.runs is not None
        else ("run-to-run variance (one trace per side, so a ratio is not a confidence interval); ")
    )
    wrap(
        console,
        f"Not measured: {variance}end-to-end latency (kernel time ignores overlap, idle gaps and CPU time); "
        "why a kernel changed (input sizes, launch configurations and code paths need the trace).",
        width,
    )


def hidden_sections(report: Report) -> list[str]:
    """The sections the first screen leaves out, each with its size."""
    d = report.diff
    shown_ranges = min(TOP_CHANGES, len(d.scored)) if d.headline.basis == "nvtx" else 0
    failing = set(report.failed)  # once: a set per finding made this quadratic
    others = [f for f in report.findings if f not in failing]
    parts = [
        (len(others), "other finding"),
        (1 if d.steps is not None else 0, "steps table"),
        (len(d.categories), "category"),
        (len(d.phases), "phase"),
        (len(d.memcpy) + len(d.memset), "copy kind"),
        (len(d.variants), "drifting family"),
        (len(d.kernels), "kernel"),
        (len(d.nvtx) - shown_ranges, "more NVTX range" if shown_ranges else "NVTX range"),
        (len(d.sync), "sync call"),
        (len(d.api), "host API call"),
        (len({x.device for x in (*d.base.devices, *d.candidate.devices)}), "device"),
        (_rank_count(d), "rank"),
    ]
    return [u.plural(n, word) for n, word in parts if n]


def _more(console: Console, report: Report, width: int) -> None:
    hidden = hidden_sections(report)
    if not hidden:
        return
    console.print()
    wrap(console, f"More with --details: {', '.join(hidden)}, comparability, method.", width)


def render(report: Report, *, width: int = 120, details: bool = False, names: Names = Names.short) -> str:
    # Names from traces and rule files arrive as one inert line each (neutral.text), and the
    # finished document is checked once more (neutral.lines): no line a GitHub runner would
    # read as a workflow command, no terminal control sequence.
    report = neutral.scrub(report, neutral.text)
    buf = io.StringIO()
    console = plain_console(buf, width)
    d = report.diff
    named = labels(d.kernels, names, mangled_of(d.base, d.candidate))

    def label(r: Row) -> str:
        return named.get(r.key, r.name)

    wrap(console, f"nsysdiff: {phrases.verdict_line(report, label, reasons_below=True)}", width, hang="  ", bold=True)
    for reason in report.reasons:
        wrap(console, f"  inconclusive: {reason}", width, hang="    ")
    for note in report.notes:
        wrap(console, f"  note: {note}", width, hang="    ")
    console.print()
    _headline(console, report, width, None if details else FIRST_SCREEN_CONTRIBUTORS, named)
    _outliers(console, d, width, label, details)
    _outlier_families(console, d, width)
    # Without kernel data, what was compared instead belongs on the first screen.
    _basis_rows(console, d, width)
    _runs(console, d, width, details, named)
    failing = set(report.failed)
    if not details:
        failed = report.failed
        title = (
            f"Failed rules ({u.plural(len(phrases.failed_rules(report)), 'rule')}, "
            f"{u.plural(len(failed), 'finding')}"
            # The one mark that is nsysdiff's own word, said where it is first seen.
            + (f"; {phrases.FACT_MEANS})" if any(not f.statistical for f in failed) else ")")
        )
        _findings(console, title, failed, failing, width, evidence=False)
        _more(console, report, width)
    else:
        _findings(console, f"Findings ({phrases.finding_counts_of(report.findings)})", report.findings, failing, width)
        _steps(console, d, width)
        _categories(console, d, width)
        _phases(console, d, width)
        _copies(console, (*d.memcpy, *d.memset), width)
        _variants(console, d.variants, width, named)
        _top_changes(console, d, width, label)
        if d.headline.basis != "nvtx":  # else the compared ranges are above
            _named_changes(console, "NVTX ranges", "range", d.nvtx, width)
        _named_changes(console, "Synchronising API calls", "call", d.sync, width)
        _named_changes(console, phrases.api_title(d), "call", d.api, width)
        _devices(console, d, width)
        _ranks(console, d)
        _comparability(console, d, width)
        _footer(console, d, width)
    return neutral.lines("\n".join(line.rstrip() for line in buf.getvalue().splitlines()) + "\n")
