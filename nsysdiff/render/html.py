"""The HTML report: one self-contained file, the pictures first.

What the Markdown report says, laid out for a browser: the verdict and the failed rules,
then the change as a waterfall, every family against the scale with the outliers marked,
the intervals across runs where there are several, and every table sortable and
filterable. Charts are inline SVG (:mod:`nsysdiff.render.charts`, matplotlib); the few
lines of script that sort and filter are inline too. Nothing is fetched when the page is
opened: its Content-Security-Policy forbids every request, and allows only the one script
whose hash it names.

This module gathers what the report shows, as plain strings, tables and charts; the
template ``templates/report.html`` lays it out (:mod:`nsysdiff.render.page`), escaping
every string it writes, each first made one inert line (:func:`neutral.text`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from nsysdiff import units as u
from nsysdiff.compare import comparability
from nsysdiff.compare.diff import CopyDelta, Diff, Row, VariantDrift
from nsysdiff.render import charts, page, phrases, runs, steps
from nsysdiff.render.devices import DEVICE_HEADER, device_rows
from nsysdiff.render.names import Names, labels, mangled_of
from nsysdiff.render.page import Cell, Column, Table, code, columns, num, td
from nsysdiff.rules.report import Finding, Outcome, Report
from nsysdiff.safe import neutral

# Kernel rows in the table at most: a trace of tens of thousands of kernels keeps a page a
# browser opens at once (the kernels are ordered by the size of their change).
TABLE_ROWS = 2000

_STATUS_CLASS = {
    Outcome.PASS: "pass",
    Outcome.FAIL: "fail",
    Outcome.INCONCLUSIVE: "inconclusive",
    Outcome.UNJUDGED: "unjudged",
}


@dataclass(frozen=True, slots=True)
class Section:
    """A part of the report under its own heading: paragraphs, charts, tables, and a last
    paragraph."""

    title: str
    lines: Sequence[str]
    figures: Sequence[charts.Chart]
    tables: Sequence[Table]
    last: str = ""
    last_class: str = ""


@dataclass(frozen=True, slots=True)
class Folded:
    """A table behind a ``<details>`` summary, with a note under it."""

    summary: str
    table: Table
    note: str = ""


def render(report: Report, names: Names = Names.short) -> str:
    """The whole report as one HTML document."""
    page.require()
    return page.render("report.html", **_context(neutral.scrub(report, neutral.text), names))


def _context(report: Report, names: Names) -> dict[str, Any]:
    d = report.diff
    named = labels(d.kernels, names, mangled_of(d.base, d.candidate))

    def label(r: Row) -> str:
        return named.get(r.key, r.name)

    made = {c.key: c for c in charts.charts(d, named)}
    status = phrases.status_word(report)
    failed = report.failed
    others = [f for f in report.findings if f not in failed]
    compared = comparability.compared_lines(d)
    return {
        "title": f"nsysdiff: {status} · {d.base_meta.source} → {d.candidate_meta.source}",
        "base": d.base_meta.source,
        "candidate": d.candidate_meta.source,
        "status": status,
        "verdict_class": _STATUS_CLASS[report.outcome],
        "exit_code": int(report.exit_code),
        "details": phrases.verdict_details(report, lambda r: u.shorten(label(r)), reasons_below=True),
        "reasons": report.reasons,
        "headline": _facts(report, named),
        "compared": compared,
        "compared_keys": ", ".join(k for k, _ in compared),
        "notes": report.notes,
        "failed": _findings(failed, "failed") if failed else None,
        "failed_rules": len(phrases.failed_rules(report)),
        "steps": _steps(d, made),
        "made": made,
        "top": [phrases.contributor_text(c, u.shorten, named) for c in d.attribution.top],
        "replacements": _replacements(d, named),
        "basis": phrases.BASIS_WORDS[d.headline.basis].unit,
        "scale_line": phrases.scale_line(d),
        "outliers": _rows_table("outliers", d.outliers, "kernel", label, "outliers") if d.outliers else None,
        "outlier_families": (
            _rows_table("outlier-families", d.outlier_families, "family", _name, "families")
            if d.outlier_families
            else None
        ),
        "no_outlier": phrases.no_outlier_line(d),
        "runs": _runs(d, made, named),
        "others": _findings(others, "findings") if others else None,
        "other_counts": phrases.finding_counts_of(others),
        "folded": _folded(d, label),
        "method": phrases.method_line(d),
    }


def _name(r: Row) -> str:
    return r.name


def _key(r: Row) -> str:
    return r.key


def _findings(findings: Sequence[Finding], tid: str) -> Table:
    rows = []
    for f in findings:
        evidence = f.evidence + (f" · waived: {f.waiver_reason}" if f.waived and f.waiver_reason else "")
        cells = [
            td(phrases.finding_mark(f), "nowrap"),
            code(f.rule_id, cls="nowrap"),
            code(f.subject, cls="subject"),
            td(f.observed),
            td(f.limit),
            td(evidence, "wide"),
        ]
        rows.append((f.level.value, cells))
    return Table(tid, columns("level", "rule", "subject", "observed", "limit", "evidence"), rows, "findings")


def _rows_table(tid: str, rows: Sequence[Row], first: str, label: Callable[[Row], str], what: str) -> Table:
    """Kernels, families, categories, NVTX ranges or sync calls: one row each."""
    kernels = first == "kernel"
    out = []
    for r in rows:
        b = r.base.total_ns if r.base else None
        c = r.candidate.total_ns if r.candidate else None
        cells = [
            code(label(r), r.key, "name"),
            *([td(r.category or "-")] if kernels else []),
            num(b, u.ns(b) if b is not None else "-"),
            num(c, u.ns(c) if c is not None else "-"),
            num(r.delta_ns, u.signed_ns(r.delta_ns)),
            num(r.ratio, u.ratio(r.ratio)),
            num(r.deviation, u.ratio(r.deviation)),
            td(phrases.calls_pair(r), "nowrap"),
            num(r.count_effect_ns, u.signed_ns(r.count_effect_ns)),
            num(r.per_call_effect_ns, u.signed_ns(r.per_call_effect_ns)),
            td("outlier" if r.is_outlier else r.verdict.value),
        ]
        out.append(("outlier" if r.is_outlier else "", cells))
    cols = [
        Column(first),
        *([Column("category")] if kernels else []),
        *(Column(t) for t in ("base", "candidate", "Δ", "ratio", "vs scale")),
        Column("calls"),
        Column("count effect"),
        Column("per-call effect"),
        Column("verdict"),
    ]
    return Table(tid, cols, out, what)


def _copies(items: Sequence[CopyDelta]) -> Table:
    rows = []
    for d in items:
        b, c = d.base, d.candidate
        cells = [
            code(d.kind),
            num(b.total_ns if b else None, u.ns(b.total_ns) if b else "-"),
            num(c.total_ns if c else None, u.ns(c.total_ns) if c else "-"),
            num(d.ratio, u.ratio(d.ratio)),
            td(f"{phrases.count(b.ops) if b else '-'} → {phrases.count(c.ops) if c else '-'}"),
            td(f"{u.nbytes(b.bytes) if b else '-'} → {u.nbytes(c.bytes) if c else '-'}"),
            td(d.verdict.value),
        ]
        rows.append(("", cells))
    cols = [
        Column("kind"),
        Column("base"),
        Column("candidate"),
        Column("ratio"),
        Column("operations"),
        Column("bytes"),
        Column("verdict"),
    ]
    return Table("copies", cols, rows, "copy kinds")


def _variants(drifts: Sequence[VariantDrift]) -> Table:
    rows: list[tuple[str, Sequence[Cell]]] = []
    for v in drifts:
        for mark, variants in (("appeared", v.appeared), ("disappeared", v.disappeared)):
            rows += [
                (
                    "",
                    [
                        code(v.family),
                        td(mark),
                        code(x.name, x.demangled),
                        num(x.calls, phrases.count(x.calls)),
                        num(x.total_ns, u.ns(x.total_ns)),
                    ],
                )
                for x in variants
            ]
    cols = [Column("family"), Column(""), Column("variant"), Column("calls"), Column("time")]
    return Table("variants", cols, rows, "variants")


def _folded(d: Diff, label: Callable[[Row], str]) -> list[Folded]:
    """The tables at the end, each behind its summary."""
    out = []
    if d.kernels:
        shown = d.kernels[:TABLE_ROWS]
        more = (
            f"The {len(shown):,} largest changes of {len(d.kernels):,} kernels; the JSON report (--format json) "
            "has every one."
            if len(shown) < len(d.kernels)
            else ""
        )
        out.append(
            Folded(f"Kernels ({len(d.kernels):,})", _rows_table("kernels", shown, "kernel", label, "kernels"), more)
        )
    out += _fold("Families", "families", d.families, "family", _name)
    out += _fold("Categories", "categories", d.categories, "category", _name)
    if d.memcpy or d.memset:
        out.append(
            Folded(f"Memory copies and memset ({len(d.memcpy) + len(d.memset)})", _copies((*d.memcpy, *d.memset)))
        )
    if d.variants:
        families = "family" if len(d.variants) == 1 else "families"
        out.append(Folded(f"Variant drift ({len(d.variants)} {families})", _variants(d.variants)))
    out += _fold("CUDA graphs", "graphs", d.graphs, "graph", _name)
    out += _fold("NVTX ranges", "nvtx", d.nvtx, "range", _key, "NVTX ranges")
    out += _fold("Synchronising API calls", "sync", d.sync, "call", _key, "calls")
    out += _fold(phrases.api_title(d), "api", d.api, "call", _key, "calls")
    if d.base.devices or d.candidate.devices:
        rows = [("", [td(c) for c in row]) for row in device_rows(d)]
        devices = Table("devices", [Column(h) for h in DEVICE_HEADER], rows, "devices")
        out.append(Folded("Devices: busy time and idle share of the kernel span", devices))
    return out


def _fold(
    title: str, tid: str, rows: Sequence[Row], first: str, label: Callable[[Row], str], what: str = ""
) -> list[Folded]:
    """One table of rows behind its summary, where there are rows; ``what`` a row is defaults to ``tid``."""
    return [Folded(f"{title} ({len(rows):,})", _rows_table(tid, rows, first, label, what or tid))] if rows else []


def _facts(report: Report, named: Mapping[str, str]) -> list[tuple[str, str]]:
    d = report.diff
    h = d.headline
    facts = [("traces", f"{d.base_meta.source} → {d.candidate_meta.source}")]
    if phrases.basis_phrase(d):
        facts.append(("compared", phrases.basis_phrase(d) or ""))
    facts.append(("scale", phrases.scale_line(d)))
    change = phrases.attribution_line(d, u.shorten, named)
    if change:
        facts.append(("change", change))
    facts.append(
        (
            "launches",
            f"{h.base_launches:,} → {h.candidate_launches:,}; distinct kernels "
            f"{h.base_kernels:,} → {h.candidate_kernels:,} ({h.common_kernels:,} common)",
        )
    )
    same = phrases.kernel_count_phrase(d)
    if same:
        facts.append(("kernels", same))
    steps = phrases.steps_phrase(d)
    if steps:
        facts.append(("steps", steps))
    if d.runs is not None:
        facts.append(("runs", f"{runs.count_phrase(d.runs)}: {runs.over_runs_phrase(d.runs)}"))
    return facts


def _replacements(d: Diff, named: Mapping[str, str]) -> Table | None:
    a = d.attribution
    if not a.replacements:
        return None
    rows = [
        (
            "",
            [
                code(u.shorten(named.get(p.new, p.new_name))),
                num(p.new_ns, u.ns(p.new_ns)),
                code(u.shorten(named.get(p.removed, p.removed_name))),
                num(p.removed_ns, u.ns(p.removed_ns)),
                num(p.delta_ns, u.signed_ns(p.delta_ns)),
                td(p.why),
            ],
        )
        for p in a.replacements
    ]
    cols = [
        Column("new kernel"),
        Column("its time"),
        Column("replaces"),
        Column("its base time"),
        Column("Δ"),
        Column("why paired"),
    ]
    return Table("replacements", cols, rows, "replacements")


def _drawn(made: Mapping[str, charts.Chart], *keys: str) -> list[charts.Chart]:
    return [made[k] for k in keys if k in made]


def _steps(d: Diff, made: Mapping[str, charts.Chart]) -> Section | None:
    """The time per step: its parts base beside candidate, the steps in order, the tables."""
    sd = d.steps
    if sd is None:
        return None
    tables = [
        Table(
            tid,
            [Column(h) for h in header],
            [("", [td(c) if i == 0 else td(c, "n") for i, c in enumerate(r)]) for r in rows],
            "rows",
        )
        for tid, header, rows in (
            ("step-parts", steps.PART_HEADER, steps.part_rows(sd)),
            ("step-stats", steps.STAT_HEADER, steps.stat_rows(sd)),
            ("step-calls", steps.FAMILY_HEADER, steps.family_rows(sd)),
        )
        if rows
    ]
    return Section(
        steps.title(sd), steps.first_lines(sd), _drawn(made, "steps", "series"), tables, steps.METHOD, "note"
    )


def _runs(d: Diff, made: Mapping[str, charts.Chart], named: Mapping[str, str]) -> Section | None:
    r = d.runs
    if r is None:
        return None
    rows = []
    for k in runs.listed(r):
        c = k.total
        cells = [
            code(runs.key_text(k, named)),
            td(runs.kind_word(k)),
            num(c.ratio, u.ratio(c.ratio)),
            td(runs.interval(c.ratio, c.ci_low, c.ci_high)),
            num(c.q_value, "-" if c.q_value is None else f"{c.q_value:.3g}"),
            td(runs.measures_text(k)),
        ]
        rows.append(("", cells))
    cols = [
        Column("key"),
        Column("kind"),
        Column("ratio"),
        Column("interval"),
        Column("q"),
        Column("measures"),
    ]
    tables = [Table("runs", cols, rows, "keys")] if rows else []
    return Section(runs.title(r), [runs.tally(r)], _drawn(made, "runs", "forest"), tables, runs.partial_text(r) or "")
