"""The Markdown report: a GitHub step summary or PR comment that fails loudly on line one.

Layout, most important first, so that the verdict, the failed rules and the outlier are
visible without scrolling: a one-line verdict with the exit status; failed rules; the
outlier table; categories with ratios and a Mermaid bar chart GitHub renders natively;
then copies, variant drift, top changes and the other findings in ``<details>`` blocks.

Every string that comes from a trace or a rule file (kernel names above all) goes
through :func:`cell` or :func:`code`, which neutralise what could break a table row or
inject markup: ``|``, ``<``, ``>``, ``&``, backticks, newlines and emphasis characters.

The plain-text verdict helpers here (:func:`status_word`, :func:`verdict_line`) are
shared with the text, GitHub and JUnit renderers; this module imports nothing heavy.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence

from nsysdiff import units as u
from nsysdiff.compare import comparability, notices
from nsysdiff.compare.diff import CopyDelta, Diff, Row, VariantDrift
from nsysdiff.render import runs
from nsysdiff.render import steps as step_lines
from nsysdiff.render.cells import attr, cell
from nsysdiff.render.devices import DEVICE_HEADER, device_rows
from nsysdiff.render.names import Names, labels, mangled_of
from nsysdiff.render.phrases import (
    COPY_HEADER,
    FACT_WORDS,
    api_title,
    attribution_line,
    basis_phrase,
    calls_pair,
    compared_ns,
    copy_figures,
    count,
    drift_totals,
    effect_cells,
    failed_rules,
    finding_counts_of,
    finding_mark,
    kernel_count_phrase,
    method_line,
    no_outlier_line,
    per_call_pair,
    scale_line,
    side_ns,
    status_word,
    steps_phrase,
    too_small,
    verdict_details,
)
from nsysdiff.rules.report import NO_RULES, Finding, Report
from nsysdiff.safe import neutral

NAME_WIDTH = 48  # characters of a kernel name shown in a table cell
TOP_CHANGES = 10
CHART_BARS = 12
CHART_LABEL = 14


def code(name: str, width: int = NAME_WIDTH, full: str | None = None) -> str:
    """A name as ``<code>``, shortened to ``width``; when the shown text is not the whole
    story (shortened, or ``full``, e.g. the demangled name, differs) the full name is the
    element's title, which GitHub shows as a tooltip."""
    short = u.shorten(name, width)
    whole = full if full is not None else name
    if short == whole and "\n" not in whole and "\r" not in whole:
        return f"<code>{cell(short)}</code>"
    return f'<code title="{attr(whole)}">{cell(short)}</code>'


def kernel_code(r: Row, label: str | None = None) -> str:
    """A kernel row's name (``label``: its short name unless told), with its demangled
    name (the row key) as the title. A label that tells colliding short names apart is
    shown whole: its distinguishing part is at its end."""
    if label is None or label == r.name:
        return code(r.name, full=r.key)
    return code(label, width=len(label), full=r.key)


def _label(text: str) -> str:
    """A Mermaid axis label: a short, quote-free, fence-free string."""
    clean = re.sub(r"[^0-9A-Za-z_.+/ -]", "", text).strip() or "?"
    return '"' + u.shorten(clean, CHART_LABEL) + '"'


# --- sections ------------------------------------------------------------------------------


def _table(header: Sequence[str], rows: Sequence[Sequence[str]], align: str) -> list[str]:
    marks = {"l": ":--", "r": "--:", "c": ":-:"}
    return [
        "| " + " | ".join(header) + " |",
        "|" + "|".join(marks[a] for a in align) + "|",
        *("| " + " | ".join(r) + " |" for r in rows),
    ]


def _findings_table(findings: Sequence[Finding]) -> list[str]:
    rows = [
        [
            finding_mark(f),
            f"<code>{cell(f.rule_id)}</code>",
            # Whole, never shortened: a subject pastes into a waiver.
            code(f.subject, width=neutral.NAME_LIMIT),
            cell(f.observed),
            cell(f.limit),
            cell(f.evidence) + (" · " + cell(f.waiver_reason) if f.waived and f.waiver_reason else ""),
        ]
        for f in findings
    ]
    table = _table(("level", "rule", "subject", "observed", "limit", "evidence"), rows, "llllll")
    if not any(not f.statistical for f in findings):
        return table
    # The one mark that is nsysdiff's own word, said under the table that shows it.
    return [*table, "", f"<sub>{FACT_WORDS}</sub>"]


def _outliers(diff: Diff, kcode: Callable[[Row], str] = kernel_code) -> list[str]:
    rows = []
    for r in diff.outliers:
        b, c = side_ns(r)
        dist = r.distribution
        rows.append(
            [
                kcode(r),
                cell(r.category or "-"),
                f"{b} → {c}",
                f"**{u.ratio(r.ratio)}**",
                per_call_pair(r),
                calls_pair(r),
                " / ".join(effect_cells(r)),
                _vs_scale(diff, r),
                "-" if r.outlier_score is None else f"{r.outlier_score:+.1f}",
                "-" if dist is None else f"{100 * dist.prob_slower:.0f}% / {dist.ks_distance:.2f}",
            ]
        )
    header = (
        "kernel",
        "category",
        "base → candidate",
        "ratio",
        "per call",
        "calls",
        "count / per-call effect",
        "vs scale",
        "z",
        "candidate slower / KS distance",
    )
    return _table(header, rows, "llrrrrrrrr")


def _vs_scale(diff: Diff, r: Row) -> str:
    """The deviation from the scale; with several runs, its interval across them too."""
    dev = runs.deviation_of(diff, r)
    if dev is None or dev.spread.low is None:
        return u.ratio(r.deviation)
    return f"{u.ratio(r.deviation)}; runs {runs.spread_text(dev.spread)}"


def _runs(diff: Diff, named: Mapping[str, str]) -> list[str]:
    """The keys across runs that changed or can't be told, and the run counts."""
    r = diff.runs
    if r is None:
        return []
    header = ("kind", "key", "measure", "ratio [95% interval]", "q (BH)", "verdict")
    body = [cell(f"Runs: {runs.shown_phrase(r)}."), "", cell(f"Across runs: {runs.over_runs_phrase(r)}."), ""]
    rows = runs.markdown_rows(r, cell, named)
    partial = runs.partial_text(r)
    tail = ["", cell(partial[0].upper() + partial[1:] + ".")] if partial else []
    return _details(runs.title(r), body + (_table(header, rows, "lllrrl") if rows else []) + tail)


def _categories(diff: Diff) -> list[str]:
    rows = []
    for r in diff.categories:
        b, c = side_ns(r)
        rows.append(
            [
                cell(r.name),
                b,
                c,
                u.signed_ns(r.delta_ns),
                u.ratio(r.ratio),
                u.ratio(r.mean_ratio),
                u.ratio(r.deviation),
                ("**outlier**" if r.is_outlier else r.verdict.value),
            ]
        )
    header = ("category", "base", "candidate", "Δ", "ratio", "mean per call", "vs scale", "verdict")
    return _table(header, rows, "lrrrrrrl")


def _chart(diff: Diff) -> list[str]:
    bars = [r for r in diff.categories if r.ratio is not None][:CHART_BARS]
    if not bars:
        return []
    ratios = [r.ratio or 0.0 for r in bars]
    top = max(max(ratios), diff.headline.scale, 1.0)
    ceiling = round(top * 1.1 + 0.05, 1)
    labels = ", ".join(_label(r.name) for r in bars)
    return [
        "```mermaid",
        "xychart-beta",
        '    title "Kernel time by category, candidate / base (line: overall scale)"',
        f"    x-axis [{labels}]",
        f'    y-axis "ratio" 0 --> {ceiling}',
        "    bar [" + ", ".join(f"{x:.2f}" for x in ratios) + "]",
        "    line [" + ", ".join(f"{diff.headline.scale:.2f}" for _ in bars) + "]",
        "```",
    ]


def _outlier_families(diff: Diff) -> list[str]:
    """Families whose variants together scaled abnormally."""
    fams = diff.outlier_families
    if not fams:
        return []
    rows = []
    for r in fams:
        b, c = side_ns(r)
        n = sum(1 for k in diff.kernels if k.family == r.key)
        z = "-" if r.outlier_score is None else f"{r.outlier_score:+.1f}"
        rows.append([code(r.key), str(n), f"{b} → {c}", f"**{u.ratio(r.ratio)}**", u.ratio(r.deviation), z])
    header = ("family", "variants", "base → candidate", "ratio", "vs scale", "z")
    title = (
        f"### Families flagged as a whole ({len(fams)}): variants together against the overall "
        f"{diff.headline.scale:.2f}x"
    )
    return [title, "", *_table(header, rows, "lrrrrr"), ""]


def _basis_rows(diff: Diff) -> list[str]:
    """Without kernel data: the NVTX ranges or graphs compared instead, largest change first."""
    if diff.headline.basis == "kernels" or not diff.scored:
        return []
    what = "NVTX ranges" if diff.headline.basis == "nvtx" else "CUDA graphs"
    rows = []
    for r in diff.scored[:TOP_CHANGES]:
        b, c = side_ns(r)
        verdict = "**outlier**" if r.is_outlier else r.verdict.value
        rows.append(
            [
                code(r.key),
                calls_pair(r),
                f"{b} → {c}",
                u.signed_ns(r.delta_ns),
                u.ratio(r.ratio),
                u.ratio(r.deviation),
                verdict,
            ]
        )
    header = (what, "count", "base → candidate", "Δ", "ratio", "vs scale", "verdict")
    return [f"### {what}", "", *_table(header, rows, "llrrrrl"), ""]


def _phases(diff: Diff) -> list[str]:
    rows = []
    for p in diff.phases:
        b, c = compared_ns(p.diff)
        top = p.diff.outliers
        rows.append(
            [
                cell(p.name),
                f"{p.base_ranges:,} → {p.candidate_ranges:,}",
                u.ns(b),
                u.ns(c),
                u.ratio(p.diff.headline.ratio),
                f"{p.diff.headline.scale:.2f}x",
                ", ".join(f"{kernel_code(r)} {u.ratio(r.ratio)}" for r in top[:3]) or "none",
            ]
        )
    header = ("phase", "ranges", "base", "candidate", "ratio", "scale", "outliers")
    return _table(header, rows, "lrrrrrl")


def _copies(deltas: Sequence[CopyDelta]) -> list[str]:
    rows = [[cell(d.kind), *copy_figures(d)] for d in deltas]
    return _table(COPY_HEADER, rows, "lrrrrrrl")


def _variants(drifts: Sequence[VariantDrift]) -> list[str]:
    out: list[str] = []
    for v in drifts:
        out.append(
            f"**{cell(v.family)}** ({cell(v.category)}): {drift_totals(v)}, {u.plural(len(v.kept), 'variant')} kept"
        )
        out.append("")
        rows = [
            [mark, code(x.name, full=x.demangled), count(x.calls), u.ns(x.total_ns)]
            for mark, variants in (("appeared", v.appeared), ("disappeared", v.disappeared))
            for x in variants
        ]
        out += _table(("", "variant", "calls", "time"), rows, "llrr")
        out.append("")
    return out


def _top_changes(diff: Diff, kcode: Callable[[Row], str] = kernel_code) -> list[str]:
    rows = []
    for r in diff.kernels[:TOP_CHANGES]:
        b, c = side_ns(r)
        rows.append(
            [
                kcode(r),
                b,
                c,
                u.signed_ns(r.delta_ns),
                u.ratio(r.ratio),
                calls_pair(r),
                " / ".join(effect_cells(r)),
                ("**outlier**" if r.is_outlier else r.verdict.value),
            ]
        )
    header = (
        "kernel",
        "base",
        "candidate",
        "Δ",
        "ratio",
        "calls",
        "count / per-call effect",
        "verdict",
    )
    return _table(header, rows, "lrrrrrrl")


def _details(summary: str, body: list[str]) -> list[str]:
    return ["<details>", f"<summary>{summary}</summary>", "", *body, "", "</details>", ""]


def render(report: Report, names: Names = Names.short) -> str:
    """The report, within GitHub's step-summary limit (see :func:`neutral.cap_markdown`)."""
    # Every string from a trace or a rule file becomes one inert line, cut at
    # neutral.NAME_LIMIT characters, before cell() escapes it for Markdown.
    return neutral.cap_markdown(neutral.lines(_render(neutral.scrub(report, neutral.text), names)))


def _named_rows(rows: Sequence[Row]) -> list[str]:
    """NVTX ranges or sync calls: the columns and verdicts of the kernel table."""
    out = []
    for r in rows[:TOP_CHANGES]:
        b, c = side_ns(r)
        out.append(
            [
                code(r.key),
                b,
                c,
                u.signed_ns(r.delta_ns),
                u.ratio(r.ratio),
                calls_pair(r),
                " / ".join(effect_cells(r)),
                "**outlier**" if r.is_outlier else r.verdict.value,
            ]
        )
    header = ("name", "base", "candidate", "Δ", "ratio", "calls", "count / per-call effect", "verdict")
    return _table(header, out, "lrrrrrrl")


def _steps(diff: Diff) -> list[str]:
    sd = diff.steps
    if sd is None:
        return []
    body = _table(step_lines.STAT_HEADER, [[cell(c) for c in r] for r in step_lines.stat_rows(sd)], "lrrrrr")
    body += ["", *_table(step_lines.PART_HEADER, step_lines.part_rows(sd), "lrrr")]
    if sd.families:
        body += ["", *_table(step_lines.FAMILY_HEADER, step_lines.family_rows(sd, fractions=False), "lrrrrr")]
    body += ["", f"<sub>{cell(step_lines.METHOD)}</sub>"]
    return _details(cell(step_lines.title(sd)), body)


def _devices(diff: Diff) -> list[str]:
    return _table(DEVICE_HEADER, device_rows(diff), "lrrrrrl")


def _ranks(diff: Diff) -> list[str]:
    from nsysdiff.compare.ranks import compare
    from nsysdiff.render import ranks

    rd = compare(diff.base.ranks, diff.candidate.ranks)
    if rd is None:
        return []
    return _details(
        f"Ranks: per-rank time and collective skew ({len(rd.base.ranks):,} → {len(rd.candidate.ranks):,})",
        ranks.diff_markdown(rd),
    )


def _api_details(d: Diff) -> list[str]:
    if not d.api:
        return []
    return _details(f"{api_title(d)} ({min(TOP_CHANGES, len(d.api))} of {len(d.api):,})", _named_rows(d.api))


def _render(report: Report, names: Names = Names.short) -> str:
    d = report.diff
    named = labels(d.kernels, names, mangled_of(d.base, d.candidate))

    def kcode(r: Row) -> str:
        return kernel_code(r, named.get(r.key))

    def short_code(r: Row) -> str:
        # The first line is the Action's log line and a notification's preview: the label
        # alone, never the demangled signature as a title (600 characters of one template).
        return f"<code>{cell(named.get(r.key, r.name))}</code>"

    out = _verdict(report, short_code)
    out += _context(d, named)
    if report.notes:
        out += [f"- {cell(n)}" for n in report.notes]
        out.append("")
    lines = comparability.compared_lines(d)
    out += ["<sub>" + " · ".join(f"{k}: {cell(v)}" for k, v in lines) + "</sub>", ""]
    out += _judged(report, kcode)
    out += _folded(report, kcode)
    out += _ranks(d)
    out += _runs(d, named)
    out.append(f"<sub>{method_line(d, cell, distribution=True)}</sub>")
    return "\n".join(out) + "\n"


def _verdict(report: Report, kcode: Callable[[Row], str]) -> list[str]:
    """The verdict line and, under it, why nothing or too little could be judged."""
    first = f"**nsysdiff: {status_word(report)}** (exit {int(report.exit_code)})"
    # The reasons are listed once, in the warning under the line.
    out = [" · ".join([first, *verdict_details(report, kcode, reasons_below=True)]), ""]
    if report.reasons:
        if any(r.startswith(NO_RULES) for r in report.reasons):
            why = "> Nothing was judged:"
        elif too_small(report):
            why = "> Too small to tell: a limit is within the measured noise:"
        else:
            why = "> The traces can't be compared meaningfully:"
        out += ["> [!WARNING]", why]
        out += [f"> - {cell(r)}" for r in report.reasons]
        out.append("")
    return out


def _context(d: Diff, named: Mapping[str, str]) -> list[str]:
    """What was compared, the steps and where the change went."""
    h = d.headline
    context = [
        f"base <code>{cell(d.base_meta.source)}</code> → candidate <code>{cell(d.candidate_meta.source)}</code>",
        *([cell(basis_phrase(d) or "")] if basis_phrase(d) else []),
        cell(scale_line(d)),
        *([cell(f"across {runs.count_phrase(d.runs)}: {runs.over_runs_phrase(d.runs)}")] if d.runs else []),
        f"launches {h.base_launches:,} → {h.candidate_launches:,}",
        f"distinct kernels {h.base_kernels:,} → {h.candidate_kernels:,} ({h.common_kernels:,} common)",
    ]
    same = kernel_count_phrase(d)
    if same:
        context.append(f"**{same}**")
    steps = steps_phrase(d)
    if steps:
        context.append(cell(steps))
    out = [" · ".join(context), ""]
    if d.steps is not None:
        out += [
            f"**Steps** {cell(line)}" if i == 0 else f"<br>{cell(line)}"
            for i, line in enumerate(step_lines.first_lines(d.steps))
        ]
        out.append("")
    change = attribution_line(d, lambda n: code(n), named)
    if change:
        out += [f"**Change** {change}", ""]
    extra = notices.notices(d, named)
    if extra:
        out += [f"**{n.label}** {cell(n.text)}" if n.label else f"<br>{cell(n.text)}" for n in extra]
        out.append("")
    return out


def _judged(report: Report, kcode: Callable[[Row], str]) -> list[str]:
    """The failed rules, the outliers, the tables by key, categories, steps and phases."""
    d = report.diff
    out = []
    if report.failed:
        out += [f"### Failed rules ({len(failed_rules(report))})", ""]
        out += _findings_table(report.failed)
        out.append("")
    if d.outliers:
        out += [
            f"### Outliers ({len(d.outliers)}): scaled abnormally against the overall {d.headline.scale:.2f}x",
            "",
        ]
        out += _outliers(d, kcode)
        out.append("")
    elif not d.outlier_families:
        out += [no_outlier_line(d), ""]
    out += _outlier_families(d)
    out += _basis_rows(d)
    if d.categories:
        out += ["### Categories", ""]
        out += _categories(d)
        out.append("")
        out += _chart(d)
        out.append("")
    out += _steps(d)
    if d.phases:
        out += ["### Phases", ""]
        out += _phases(d)
        out.append("")
    return out


def _folded(report: Report, kcode: Callable[[Row], str]) -> list[str]:
    """What a reader opens when they need it, each in its ``<details>``."""
    d = report.diff
    out = []
    others = [f for failing in [set(report.failed)] for f in report.findings if f not in failing]  # one set: linear
    if others:
        out += _details(f"Other findings ({finding_counts_of(others)})", _findings_table(others))
    if d.memcpy or d.memset:
        kinds = len(d.memcpy) + len(d.memset)
        out += _details(f"Memory copies and memset ({u.plural(kinds, 'kind')})", _copies((*d.memcpy, *d.memset)))
    if d.variants:
        appeared = sum(len(v.appeared) for v in d.variants)
        gone = sum(len(v.disappeared) for v in d.variants)
        out += _details(
            f"Variant drift: {u.plural(len(d.variants), 'family')}, "
            f"{u.plural(appeared, 'variant')} appeared, {gone:,} disappeared",
            _variants(d.variants),
        )
    if d.kernels:
        out += _details(
            f"Top changes by absolute time ({min(TOP_CHANGES, len(d.kernels))} of {len(d.kernels):,} kernels)",
            _top_changes(d, kcode),
        )
    if d.nvtx and d.headline.basis != "nvtx":  # else the compared ranges are above
        out += _details(f"NVTX ranges ({min(TOP_CHANGES, len(d.nvtx))} of {len(d.nvtx):,})", _named_rows(d.nvtx))
    if d.sync:
        out += _details(
            f"Synchronising API calls ({min(TOP_CHANGES, len(d.sync))} of {len(d.sync):,})",
            _named_rows(d.sync),
        )
    out += _api_details(d)
    if d.base.devices or d.candidate.devices:
        out += _details("Devices: busy time and idle share of the kernel span", _devices(d))
    return out
