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
from nsysdiff.compare import comparability
from nsysdiff.compare.attribution import Contributor, Effects
from nsysdiff.compare.diff import MAX_SPREAD, MIN_COMMON, CopyDelta, Diff, Row, VariantDrift
from nsysdiff.render import runs
from nsysdiff.render import steps as step_lines
from nsysdiff.render.cells import attr, cell
from nsysdiff.render.devices import DEVICE_HEADER, device_rows
from nsysdiff.render.names import Names, labels, mangled_of
from nsysdiff.rules.report import Finding, Level, Outcome, Report, undecided_reason
from nsysdiff.safe import neutral

NAME_WIDTH = 48  # characters of a kernel name shown in a table cell
TOP_CHANGES = 10
CHART_BARS = 12
CHART_LABEL = 14

_STATUS = {
    Outcome.PASS: "PASS",
    Outcome.FAIL: "FAIL",
    Outcome.INCONCLUSIVE: "INCONCLUSIVE",
    Outcome.UNJUDGED: "NOT JUDGED",  # a plain word: "unjudged" stays in the JSON
}


# --- shared plain-text helpers -----------------------------------------------------------


def status_word(report: Report) -> str:
    """``PASS``, ``FAIL``, ``INCONCLUSIVE`` or ``NOT JUDGED``."""
    return _STATUS[report.outcome]


def count(x: float) -> str:
    """A count: ``1,234``, or a per-step average such as ``12.50``."""
    return f"{int(x):,}" if float(x).is_integer() else f"{x:,.2f}"


def plural(n: int, word: str, many: str | None = None) -> str:
    return f"{n:,} {word if n == 1 else (many or word + 's')}"


def plural_calls(x: float) -> str:
    """``1 call``, ``14 calls``, ``12.50 calls`` (per step)."""
    return f"{count(x)} {'call' if x == 1 else 'calls'}"


def failed_rules(report: Report) -> tuple[str, ...]:
    """Rule ids with at least one finding that decides a FAIL, in report order."""
    return tuple(dict.fromkeys(f.rule_id for f in report.failed))


def finding_counts(report: Report) -> str:
    """``2 errors, 1 warning, 1 waived`` (active findings by level, then waived)."""
    return finding_counts_of(report.findings) if report.findings else "no findings"


def finding_counts_of(findings: Sequence[Finding]) -> str:
    """The same count for any list of findings."""
    parts = []
    for level, word in ((Level.ERROR, "error"), (Level.WARNING, "warning")):
        n = sum(1 for f in findings if f.level is level and not f.waived)
        if n:
            parts.append(plural(n, word))
    n_info = sum(1 for f in findings if f.level is Level.INFO and not f.waived)
    if n_info:
        parts.append(f"{n_info:,} info")
    waived = sum(1 for f in findings if f.waived)
    if waived:
        parts.append(f"{waived:,} waived")
    return ", ".join(parts) or "none"


_BASIS_WORDS = {
    "kernels": ("family", "families", "kernel time"),
    "nvtx": ("NVTX range", "NVTX ranges", "NVTX range time"),
    "graphs": ("CUDA graph", "CUDA graphs", "graph time"),
}


def basis_phrase(diff: Diff) -> str | None:
    """What was compared instead of kernels, when there is no kernel data."""
    return {
        "nvtx": "NVTX ranges (no kernel data on either side)",
        "graphs": "whole-graph launches per graph id (graph-mode captures: kernels inside graphs not visible)",
    }.get(diff.headline.basis)


def scale_parts(diff: Diff) -> tuple[str, str | None]:
    """The scale with its uncertainty, and what it is measured over (None: no family on
    both sides); "none meaningful" when too little time is in common families."""
    i = diff.headline.scale_info
    one, many, time = _BASIS_WORDS[diff.headline.basis]
    if not i.families:
        return f"none: no {one} runs on both sides", None
    if f"{100 * i.base_share:.0f}" == f"{100 * i.candidate_share:.0f}" == "100":
        over = f"over {plural(i.families, one, many)} on both sides: all the {time}"
    else:
        over = (
            f"over {plural(i.families, one, many)} on both sides: "
            f"{100 * i.base_share:.0f}% of base, {100 * i.candidate_share:.0f}% of candidate {time}"
        )
    if not i.covered:
        return f"none meaningful (at least {MIN_COMMON:.0%} of each side needed)", over
    if i.scattered:
        return (
            f"none meaningful: {i.factor:.2f}x, but half the weight between {i.low:.2f}x and "
            f"{i.high:.2f}x (a spread over {MAX_SPREAD:g}x)"
        ), over
    return f"{i.factor:.2f}x (typical {one}), half the weight between {i.low:.2f}x and {i.high:.2f}x", over


def scale_line(diff: Diff) -> str:
    main, over = scale_parts(diff)
    return main if over is None else f"{main}, {over}"


_KIND_WORD = {"per-call": "slower calls", "count": "more calls"}


def effect_cells(r: Row) -> tuple[str, str]:
    """A row's count and per-call effects as two cells; a resized kernel's change in the
    second, after the word ``resized`` (nsysdiff.compare.attribution)."""
    if r.resized_ns:
        return "resized", u.signed_ns(r.resized_ns)
    return u.signed_ns(r.count_effect_ns), u.signed_ns(r.per_call_effect_ns)


def resized_phrase(base_calls: float, candidate_calls: float) -> str:
    """``1 call → 10,000 smaller calls``: the same work in calls of another size."""
    size = "smaller" if candidate_calls > base_calls else "larger"
    return f"{plural_calls(base_calls)} → {count(candidate_calls)} {size} calls"


def contributor_text(
    c: Contributor, name: Callable[[str], str] = u.shorten, labels: Mapping[str, str] | None = None
) -> str:
    """``new `X` +20.70 ms replaces `Y` -1.60 ms``, ```Z` +0.80 ms (slower calls)``.

    ``labels`` (key -> label, :func:`nsysdiff.render.names.labels`) tells apart kernels that
    share a short name: a fused kernel replaced by another of the same name."""
    label = labels or {}
    this = label.get(c.key, c.name)
    if c.kind == "replacement":
        old = label.get(c.replaces_key or "", c.replaces or "")
        return (
            f"new {name(this)} {u.signed_ns(c.delta_ns + (c.replaces_ns or 0))} replaces "
            f"{name(old)} {u.signed_ns(-(c.replaces_ns or 0))}"
        )
    if c.kind in ("new", "removed"):
        return f"{c.kind} {name(this)} {u.signed_ns(c.delta_ns)}"
    if c.kind == "resized" and c.calls is not None:
        return f"{name(this)} {u.signed_ns(c.delta_ns)} ({resized_phrase(*c.calls)})"
    word = _KIND_WORD[c.kind] if c.delta_ns > 0 else _KIND_WORD[c.kind].replace("slower", "faster")
    if c.kind == "count" and c.delta_ns < 0:
        word = "fewer calls"
    if c.waiting_ns * c.delta_ns > 0 and abs(c.waiting_ns) >= abs(c.delta_ns) / 2:
        # A collective that grew (or shrank) mostly by waiting for other ranks.
        word += f", {u.signed_ns(c.waiting_ns)} of it waiting for other ranks"
    return f"{name(this)} {u.signed_ns(c.delta_ns)} ({word})"


def no_outlier_line(diff: Diff) -> str:
    """What the outlier section says when it has nothing to show."""
    what = {"nvtx": "NVTX range", "graphs": "CUDA graph"}.get(diff.headline.basis, "kernel")
    if not diff.headline.scale_info.meaningful:
        return f"No outlier test: without a meaningful overall scale no {what} can be judged against the rest."
    return f"No outlier: no {what} scaled abnormally against the overall {diff.headline.scale:.2f}x."


def effects_text(e: Effects) -> str:
    """``count +1.00 ms · per-call +2.00 ms · new 0 · removed -0.50 ms``, with ``resized``
    after per-call when some kernel ran in calls of another size."""
    resized = f"resized {u.signed_ns(e.resized_ns)} · " if e.resized_ns else ""
    return (
        f"count {u.signed_ns(e.count_ns)} · per-call {u.signed_ns(e.per_call_ns)} · {resized}"
        f"new {u.signed_ns(e.new_ns)} · removed {u.signed_ns(e.removed_ns)}"
    )


def attribution_line(
    diff: Diff, name: Callable[[str], str] = u.shorten, labels: Mapping[str, str] | None = None
) -> str | None:
    """``+21.70 ms: new `X` +20.70 ms replaces `Y` -1.60 ms; ...``: the top contributors."""
    a = diff.attribution
    if not a.top:
        return None
    return f"{u.signed_ns(a.delta_ns)}: " + "; ".join(contributor_text(c, name, labels) for c in a.top)


def kernel_time_phrase(diff: Diff) -> str:
    """``kernel time 1.251 s → 1.372 s (1.10x)``, per step when the diff is per step."""
    h = diff.headline
    if h.basis == "graphs":
        b, c = diff.base_meta.graph_total_ns, diff.candidate_meta.graph_total_ns
        return f"graph time {u.ns(b)} → {u.ns(c)} ({u.ratio(c / b if b else None)})"
    if h.basis == "nvtx":
        return "NVTX ranges compared (no kernel data)"
    if h.per is not None:
        return (
            f"kernel time per {h.per} step {u.ns(h.base_per_step_ns)} → "
            f"{u.ns(h.candidate_per_step_ns)} ({u.ratio(h.ratio)})"
        )
    return (
        f"kernel time {u.ns(h.base_total_ns)} → {u.ns(h.candidate_total_ns)} ({u.ratio(h.ratio)})"
    )


def compared_ns(diff: Diff) -> tuple[float, float]:
    """The kernel times the headline ratio compares: per step when the diff is per step."""
    h = diff.headline
    if h.per is not None and h.base_per_step_ns is not None and h.candidate_per_step_ns is not None:
        return h.base_per_step_ns, h.candidate_per_step_ns
    return h.base_total_ns, h.candidate_total_ns


def steps_phrase(diff: Diff) -> str | None:
    """``per step of decode: 64 → 64 steps; figures below are per step``, when per step."""
    h = diff.headline
    if h.per is None:
        return None
    return (
        f"per step of {h.per}: {count(h.base_steps or 0)} → {count(h.candidate_steps or 0)} steps; "
        f"times, calls, copies and variants are per step"
    )


def kernel_count_phrase(diff: Diff) -> str | None:
    """The "same count, different kernels" call-out, when it applies."""
    h = diff.headline
    if not h.same_count_different_kernels:
        return None
    only_b = h.base_kernels - h.common_kernels
    only_c = h.candidate_kernels - h.common_kernels
    return (
        f"same launch count ({h.base_launches:,}), different kernels: "
        f"{only_b:,} base-only, {only_c:,} candidate-only"
    )


def _short_name(r: Row) -> str:
    return u.shorten(r.name)


def too_small(report: Report) -> bool:
    """Whether the outcome is inconclusive only because limits are within the measured
    noise (a noise profile was given), not because the sides can't be compared."""
    told = {undecided_reason(f) for f in report.undecided}
    return bool(told) and set(report.reasons) <= told


def verdict_details(report: Report, name: Callable[[Row], str] = _short_name) -> list[str]:
    """What follows ``FAIL (exit 1)`` on the verdict line: what decided it, the kernel
    time and the top outlier. ``name`` formats the outlier's row (its kernel name)."""
    parts = []
    if report.outcome is Outcome.UNJUDGED:
        parts.append("rules off (--no-rules)")
    elif report.outcome is Outcome.INCONCLUSIVE:
        what = "too small to tell: " if too_small(report) else "can't compare: "
        parts.append(what + "; ".join(report.reasons))
    else:
        parts.append(plural(len(failed_rules(report)), "failed rule"))
        parts.append(finding_counts(report))
    if report.diff.steps is not None:
        parts.append(step_lines.verdict_phrase(report.diff.steps))
    parts.append(kernel_time_phrase(report.diff))
    if report.diff.runs is not None:
        parts.append(runs.count_phrase(report.diff.runs))
    outliers = report.diff.outliers
    if outliers:
        top = outliers[0]
        faster = top.deviation is not None and top.deviation < 1
        parts.append(f"top {'improvement' if faster else 'outlier'} {name(top)} {u.ratio(top.ratio)}")
    elif report.diff.outlier_families:
        fam = report.diff.outlier_families[0]
        parts.append(f"outlier family {u.shorten(fam.name)} {u.ratio(fam.ratio)}")
    else:
        top_change = top_change_phrase(report.diff)
        if top_change is not None:
            parts.append(top_change)
    return parts


def top_change_phrase(diff: Diff) -> str | None:
    """``top change new X +20.68 ms replaces Y -1.60 ms (97% of +19.69 ms)``: what the
    verdict line names when no key stands out against the scale. None when nothing changed
    or the largest contributor went against the change (it is no cause of it)."""
    a = diff.attribution
    if not a.top or not a.delta_ns or a.top[0].delta_ns * a.delta_ns <= 0:
        return None
    share = f"{a.top[0].delta_ns / a.delta_ns:.0%} of {u.signed_ns(a.delta_ns)}"
    text = contributor_text(a.top[0])
    # "X -143.01 us (faster calls)" takes the share inside its parentheses.
    return f"top change {text[:-1]}; {share})" if text.endswith(")") else f"top change {text} ({share})"


def verdict_line(report: Report, name: Callable[[Row], str] = _short_name) -> str:
    """``FAIL (exit 1) · 1 failed rule · 2 errors · kernel time ... · top outlier ...``."""
    head = f"{status_word(report)} (exit {int(report.exit_code)})"
    return " · ".join([head, *verdict_details(report, name)])


def finding_text(f: Finding) -> str:
    """``observed vs limit — evidence``: the one-line body of a finding."""
    body = f"{f.observed} vs {f.limit}" if f.limit else f.observed
    return f"{body} — {f.evidence}" if f.evidence else body


def per_call_pair(r: Row) -> str:
    """``5.15x mean / 5.14x p50``."""
    return f"{u.ratio(r.mean_ratio)} mean / {u.ratio(r.p50_ratio)} p50"


def calls_pair(r: Row) -> str:
    b = count(r.base.calls) if r.base else "-"
    c = count(r.candidate.calls) if r.candidate else "-"
    return f"{b} → {c}"


def side_ns(r: Row) -> tuple[str, str]:
    return (
        u.ns(r.base.total_ns) if r.base else "-",
        u.ns(r.candidate.total_ns) if r.candidate else "-",
    )


def copy_pair(d: CopyDelta, field: str, fmt: Callable[[float], str]) -> str:
    b = fmt(getattr(d.base, field)) if d.base else "-"
    c = fmt(getattr(d.candidate, field)) if d.candidate else "-"
    return f"{b} → {c}"


def drift_totals(v: VariantDrift) -> str:
    """``7 appeared (88.00 ms), 7 disappeared (18.00 ms)``."""
    return (
        f"{len(v.appeared):,} appeared ({u.ns(v.appeared_ns)}), "
        f"{len(v.disappeared):,} disappeared ({u.ns(v.disappeared_ns)})"
    )


def finding_mark(f: Finding) -> str:
    """The level, with ``waived`` and ``fact`` marks."""
    marks = [f.level.value]
    if not f.statistical:
        marks.append("fact")
    if f.waived:
        marks.append("waived")
    if f.inconclusive:
        marks.append("inconclusive")
    return ", ".join(marks)


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
            cell(f.evidence)
            + (" · " + cell(f.waiver_reason) if f.waived and f.waiver_reason else ""),
        ]
        for f in findings
    ]
    return _table(("level", "rule", "subject", "observed", "limit", "evidence"), rows, "llllll")


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
                "-" if r.outlier_score is None else f"{r.outlier_score:.1f}",
                "-" if dist is None else f"{dist.prob_slower:.2f} / {dist.ks_distance:.2f}",
            ]
        )
    header = (
        "kernel", "category", "base → candidate", "ratio", "per call", "calls",
        "count / per-call effect", "vs scale", "score", "P(slower) / KS",
    )  # fmt: skip
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
        score = "-" if r.outlier_score is None else f"{r.outlier_score:.1f}"
        rows.append([code(r.key), str(n), f"{b} → {c}", f"**{u.ratio(r.ratio)}**", u.ratio(r.deviation), score])
    header = ("family", "variants", "base → candidate", "ratio", "vs scale", "score")
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
        rows.append([code(r.key), calls_pair(r), f"{b} → {c}", u.signed_ns(r.delta_ns), u.ratio(r.ratio),
                     u.ratio(r.deviation), verdict])  # fmt: skip
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
    rows = [
        [
            cell(d.kind),
            copy_pair(d, "ops", count),
            copy_pair(d, "bytes", u.nbytes),
            copy_pair(d, "total_ns", u.ns),
            u.ratio(d.ops_ratio),
            u.ratio(d.bytes_ratio),
            u.ratio(d.ratio),
            d.verdict.value,
        ]
        for d in deltas
    ]
    header = ("kind", "ops", "bytes", "time", "ops ratio", "bytes ratio", "time ratio", "verdict")
    return _table(header, rows, "lrrrrrrl")


def _variants(drifts: Sequence[VariantDrift]) -> list[str]:
    out: list[str] = []
    for v in drifts:
        out.append(
            f"**{cell(v.family)}** ({cell(v.category)}): {drift_totals(v)}, "
            f"{plural(len(v.kept), 'variant')} kept"
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
            [code(r.key), b, c, u.signed_ns(r.delta_ns), u.ratio(r.ratio), calls_pair(r),
             " / ".join(effect_cells(r)),
             "**outlier**" if r.is_outlier else r.verdict.value]
        )  # fmt: skip
    header = ("name", "base", "candidate", "Δ", "ratio", "calls", "count / per-call effect",
              "verdict")  # fmt: skip
    return _table(header, out, "lrrrrrrl")


def _steps(diff: Diff) -> list[str]:
    sd = diff.steps
    if sd is None:
        return []
    body = _table(step_lines.STAT_HEADER, [[cell(c) for c in r] for r in step_lines.stat_rows(sd)], "lrrrrr")
    body += ["", *_table(step_lines.PART_HEADER, step_lines.part_rows(sd), "lrrr")]
    if sd.families:
        body += ["", *_table(step_lines.FAMILY_HEADER, step_lines.family_rows(sd), "lrrrrr")]
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
    return _details(f"Ranks: per-rank time and collective skew ({len(rd.base.ranks):,} → "
                    f"{len(rd.candidate.ranks):,})", ranks.diff_markdown(rd))  # fmt: skip


def _render(report: Report, names: Names = Names.short) -> str:
    d = report.diff
    h = d.headline
    named = labels(d.kernels, names, mangled_of(d.base, d.candidate))

    def kcode(r: Row) -> str:
        return kernel_code(r, named.get(r.key))

    first = f"**nsysdiff: {status_word(report)}** (exit {int(report.exit_code)})"
    out = [" · ".join([first, *verdict_details(report, kcode)]), ""]
    if report.reasons:
        out += ["> [!WARNING]", "> Too small to tell: a limit is within the measured noise:" if too_small(report)
                else "> The traces can't be compared meaningfully:"]  # fmt: skip
        out += [f"> - {cell(r)}" for r in report.reasons]
        out.append("")
    context = [
        f"base <code>{cell(d.base_meta.source)}</code> → "
        f"candidate <code>{cell(d.candidate_meta.source)}</code>",
        *([cell(basis_phrase(d) or "")] if basis_phrase(d) else []),
        cell(scale_line(d)),
        *([cell(f"across {runs.count_phrase(d.runs)}: {runs.over_runs_phrase(d.runs)}")] if d.runs else []),
        f"launches {h.base_launches:,} → {h.candidate_launches:,}",
        f"distinct kernels {h.base_kernels:,} → {h.candidate_kernels:,} "
        f"({h.common_kernels:,} common)",
    ]
    same = kernel_count_phrase(d)
    if same:
        context.append(f"**{same}**")
    steps = steps_phrase(d)
    if steps:
        context.append(cell(steps))
    out += [" · ".join(context), ""]
    if d.steps is not None:
        out += [f"**Steps** {cell(line)}" if i == 0 else f"<br>{cell(line)}"
                for i, line in enumerate(step_lines.first_lines(d.steps))]  # fmt: skip
        out.append("")
    change = attribution_line(d, lambda n: code(n), named)
    if change:
        out += [f"**Change** {change}", ""]
    if report.notes:
        out += [f"- {cell(n)}" for n in report.notes]
        out.append("")
    lines = (*comparability.scope_lines(d), *comparability.fact_lines(d))
    out += ["<sub>" + " · ".join(f"{k}: {cell(v)}" for k, v in lines) + "</sub>", ""]

    failed = report.failed
    if failed:
        out += [f"### Failed rules ({len(failed_rules(report))})", ""]
        out += _findings_table(failed)
        out.append("")
    if d.outliers:
        out += [
            f"### Outliers ({len(d.outliers)}): scaled abnormally against the overall "
            f"{h.scale:.2f}x",
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
    others = [f for f in report.findings if f not in failed]
    if others:
        out += _details(f"Other findings ({finding_counts_of(others)})", _findings_table(others))
    if d.memcpy or d.memset:
        kinds = len(d.memcpy) + len(d.memset)
        out += _details(
            f"Memory copies and memset ({plural(kinds, 'kind')})", _copies((*d.memcpy, *d.memset))
        )
    if d.variants:
        appeared = sum(len(v.appeared) for v in d.variants)
        gone = sum(len(v.disappeared) for v in d.variants)
        out += _details(
            f"Variant drift: {plural(len(d.variants), 'family', 'families')}, "
            f"{plural(appeared, 'variant')} appeared, {gone:,} disappeared",
            _variants(d.variants),
        )
    if d.kernels:
        out += _details(
            f"Top changes by absolute time ({min(TOP_CHANGES, len(d.kernels))} of "
            f"{len(d.kernels):,} kernels)",
            _top_changes(d, kcode),
        )
    if d.nvtx and d.headline.basis != "nvtx":  # else the compared ranges are above
        out += _details(
            f"NVTX ranges ({min(TOP_CHANGES, len(d.nvtx))} of {len(d.nvtx):,})", _named_rows(d.nvtx)
        )
    if d.sync:
        out += _details(
            f"Synchronising API calls ({min(TOP_CHANGES, len(d.sync))} of {len(d.sync):,})",
            _named_rows(d.sync),
        )
    if d.base.devices or d.candidate.devices:
        out += _details("Devices: busy time and idle share of the kernel span", _devices(d))
    out += _ranks(d)
    out += _runs(d, named)
    s = d.settings
    out.append(
        f"<sub>Outlier: |modified z| ≥ {s.z_threshold:g} of the log ratio around the overall scale "
        f"(weighted median of family ratios, no family over a fifth of the weight), "
        f"≥ {s.min_deviation:g}x beyond it, ≥ {100 * s.min_share:g}% of "
        f"either side's kernel time; unchanged within {s.noise:g}x. "
        + ("One trace per side: ratios are not confidence intervals." if d.runs is None
           else cell(runs.method_text(d.runs)))
        + "</sub>"
    )  # fmt: skip
    return "\n".join(out) + "\n"
