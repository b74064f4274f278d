"""The HTML report: one self-contained file, the pictures first.

What the Markdown report says, laid out for a browser: the verdict and the failed rules,
then the change as a waterfall, every family against the scale with the outliers marked,
the intervals across runs where there are several, and every table sortable and
filterable. Charts are inline SVG (:mod:`nsysdiff.render.charts`, matplotlib); the few
lines of script that sort and filter are inline too. Nothing is fetched when the page is
opened: its Content-Security-Policy forbids every request, and allows only the one script
whose hash it names.

Every string from a trace or a rule file is one inert line (:func:`neutral.text`) and then
HTML-escaped (:func:`neutral.html`); the whole document passes :func:`neutral.html_document`,
so printed to a CI log it starts no workflow command either.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from nsysdiff import units as u
from nsysdiff.compare import comparability
from nsysdiff.compare.diff import CopyDelta, Diff, Row, VariantDrift
from nsysdiff.render import charts, page, runs, steps
from nsysdiff.render.devices import DEVICE_HEADER, device_rows
from nsysdiff.render.names import Names, labels, mangled_of
from nsysdiff.render.page import Column, code, num, table, td
from nsysdiff.render.phrases import (
    attribution_line,
    basis_phrase,
    calls_pair,
    contributor_text,
    count,
    finding_counts_of,
    finding_mark,
    kernel_count_phrase,
    no_outlier_line,
    scale_line,
    status_word,
    steps_phrase,
    verdict_details,
)
from nsysdiff.rules.report import Finding, Outcome, Report
from nsysdiff.safe import neutral

esc = page.esc
# Kernel rows in the table at most: a trace of tens of thousands of kernels keeps a page a
# browser opens at once (the kernels are ordered by the size of their change).
TABLE_ROWS = 2000

_STATUS_CLASS = {
    Outcome.PASS: "pass",
    Outcome.FAIL: "fail",
    Outcome.INCONCLUSIVE: "inconclusive",
    Outcome.UNJUDGED: "unjudged",
}


def render(report: Report, names: Names = Names.short) -> str:
    """The whole report as one HTML document."""
    charts.require()
    return neutral.html_document(_render(neutral.scrub(report, neutral.text), names))


def _findings(findings: Sequence[Finding], tid: str) -> str:
    rows = []
    for f in findings:
        evidence = f.evidence + (f" · waived: {f.waiver_reason}" if f.waived and f.waiver_reason else "")
        rows.append(
            (
                f.level.value,
                [
                    f'<td class="nowrap">{esc(finding_mark(f))}</td>',
                    f'<td class="nowrap"><code>{esc(f.rule_id)}</code></td>',
                    f'<td class="subject"><code>{esc(f.subject)}</code></td>',
                    td(f.observed),
                    td(f.limit),
                    f'<td class="wide">{esc(evidence)}</td>',
                ],
            )
        )
    cols = [Column(c) for c in ("level", "rule", "subject", "observed", "limit", "evidence")]
    return table(tid, cols, rows, "findings")


def _rows_table(tid: str, rows: Sequence[Row], first: str, label: Callable[[Row], str], what: str) -> str:
    """Kernels, families, categories, NVTX ranges or sync calls: one row each."""
    out = []
    for r in rows:
        b = r.base.total_ns if r.base else None
        c = r.candidate.total_ns if r.candidate else None
        cells = [
            code(label(r), r.key, "name"),
            td(r.category or "-") if first == "kernel" else "",
            num(b, u.ns(b) if b is not None else "-"),
            num(c, u.ns(c) if c is not None else "-"),
            num(r.delta_ns, u.signed_ns(r.delta_ns)),
            num(r.ratio, u.ratio(r.ratio)),
            num(r.deviation, u.ratio(r.deviation)),
            f'<td class="nowrap">{esc(calls_pair(r))}</td>',
            num(r.count_effect_ns, u.signed_ns(r.count_effect_ns)),
            num(r.per_call_effect_ns, u.signed_ns(r.per_call_effect_ns)),
            td("outlier" if r.is_outlier else r.verdict.value),
        ]
        out.append(("outlier" if r.is_outlier else "", [c for c in cells if c]))
    cols = [
        Column(first),
        *([Column("category")] if first == "kernel" else []),
        *(Column(t, True) for t in ("base", "candidate", "Δ", "ratio", "vs scale")),
        Column("calls"),
        Column("count effect", True),
        Column("per-call effect", True),
        Column("verdict"),
    ]
    return table(tid, cols, out, what)


def _copies(items: Sequence[CopyDelta]) -> str:
    rows = []
    for d in items:
        b, c = d.base, d.candidate
        rows.append(
            (
                "",
                [
                    code(d.kind),
                    num(b.total_ns if b else None, u.ns(b.total_ns) if b else "-"),
                    num(c.total_ns if c else None, u.ns(c.total_ns) if c else "-"),
                    num(d.ratio, u.ratio(d.ratio)),
                    td(f"{count(b.ops) if b else '-'} → {count(c.ops) if c else '-'}"),
                    td(f"{u.nbytes(b.bytes) if b else '-'} → {u.nbytes(c.bytes) if c else '-'}"),
                    td(d.verdict.value),
                ],
            )
        )
    cols = [
        Column("kind"),
        Column("base", True),
        Column("candidate", True),
        Column("ratio", True),
        Column("operations"),
        Column("bytes"),
        Column("verdict"),
    ]
    return table("copies", cols, rows, "copy kinds")


def _variants(drifts: Sequence[VariantDrift]) -> str:
    rows = []
    for v in drifts:
        for mark, variants in (("appeared", v.appeared), ("disappeared", v.disappeared)):
            for x in variants:
                rows.append(
                    (
                        "",
                        [
                            code(v.family),
                            td(mark),
                            code(x.name, x.demangled),
                            num(x.calls, count(x.calls)),
                            num(x.total_ns, u.ns(x.total_ns)),
                        ],
                    )
                )
    cols = [Column("family"), Column(""), Column("variant"), Column("calls", True), Column("time", True)]
    return table("variants", cols, rows, "variants")


# Charts whose section heading already says what they are: no title repeated above them.
_HEADED = {"waterfall", "scale"}


def _figure(c: charts.Chart) -> str:
    title = "" if c.key in _HEADED else f"<b>{esc(c.title)}.</b> "
    return (
        f'<figure id="chart-{c.key}" class="chart"><figcaption>{title}{esc(c.caption)}</figcaption>\n{c.svg}\n</figure>'
    )


def _api_sections(d: Diff) -> list[tuple[str, str]]:
    if not d.api:
        return []
    return [(f"Host API calls ({len(d.api):,})", _rows_table("api", d.api, "call", lambda r: r.key, "calls"))]


def _render(report: Report, names: Names) -> str:
    d = report.diff
    named = labels(d.kernels, names, mangled_of(d.base, d.candidate))

    def label(r: Row) -> str:
        return named.get(r.key, r.name)

    made = {c.key: c for c in charts.charts(d, named)}
    status = status_word(report)
    title = f"nsysdiff: {status} · {d.base_meta.source} → {d.candidate_meta.source}"
    out = [
        *page.head(title, f"matplotlib {charts.version()}"),
        f"<h1>nsysdiff: {esc(d.base_meta.source)} → {esc(d.candidate_meta.source)}</h1>",
        f'<p class="verdict {_STATUS_CLASS[report.outcome]}"><span class="word">{esc(status)}</span> '
        f"(exit {int(report.exit_code)}) · "
        + " · ".join(esc(p) for p in verdict_details(report, lambda r: u.shorten(label(r))))
        + "</p>",
    ]
    if report.reasons:
        out.append("<ul>" + "".join(f"<li>{esc(r)}</li>" for r in report.reasons) + "</ul>")
    out += _facts(report, named)
    if report.notes:
        out.append("<ul>" + "".join(f"<li>{esc(n)}</li>" for n in report.notes) + "</ul>")

    failed = report.failed
    if failed:
        out += [f"<h2>Failed rules ({len(dict.fromkeys(f.rule_id for f in failed))})</h2>", _findings(failed, "failed")]
    # The time per step first, as every format puts it: it is what a user waits per token.
    out += _steps(d, made)
    change = [_figure(made[k]) for k in ("waterfall", "contributors") if k in made] + _contributors(d, named)
    if change:
        out += ["<h2>Where the change went</h2>", *change]
    out += [f"<h2>Abnormal, not merely large: every {charts.BASIS_WORDS[d.headline.basis][0]} against the scale</h2>"]
    out.append(f"<p>{esc(scale_line(d))}</p>")
    if "scale" in made:
        out.append(_figure(made["scale"]))
    if d.outliers:
        out += [
            f"<h3>Outliers ({len(d.outliers)})</h3>",
            _rows_table("outliers", d.outliers, "kernel", label, "outliers"),
        ]
    elif not d.outlier_families:
        out.append(f"<p>{esc(no_outlier_line(d))}</p>")
    if d.outlier_families:
        out += [
            f"<h3>Outlier families ({len(d.outlier_families)})</h3>",
            _rows_table("outlier-families", d.outlier_families, "family", lambda r: r.name, "families"),
        ]
    if d.runs is not None:
        out += _runs(d, made, named)
    others = [f for f in report.findings if f not in failed]
    if others:
        out += [f"<h2>Other findings ({esc(finding_counts_of(others))})</h2>", _findings(others, "findings")]
    out += ["<h2>Tables</h2>"]
    sections: list[tuple[str, str]] = []
    if d.kernels:
        shown = d.kernels[:TABLE_ROWS]
        more = (
            (
                f'<p class="note">The {len(shown):,} largest changes of {len(d.kernels):,} kernels; the JSON report '
                "(--format json) has every one.</p>"
            )
            if len(shown) < len(d.kernels)
            else ""
        )
        sections.append(
            (f"Kernels ({len(d.kernels):,})", _rows_table("kernels", shown, "kernel", label, "kernels") + more)
        )
    if d.families:
        sections.append(
            (
                f"Families ({len(d.families):,})",
                _rows_table("families", d.families, "family", lambda r: r.name, "families"),
            )
        )
    if d.categories:
        sections.append(
            (
                f"Categories ({len(d.categories):,})",
                _rows_table("categories", d.categories, "category", lambda r: r.name, "categories"),
            )
        )
    if d.memcpy or d.memset:
        sections.append(
            (f"Memory copies and memset ({len(d.memcpy) + len(d.memset)})", _copies((*d.memcpy, *d.memset)))
        )
    if d.variants:
        sections.append(
            (
                f"Variant drift ({len(d.variants)} {'family' if len(d.variants) == 1 else 'families'})",
                _variants(d.variants),
            )
        )
    if d.graphs:
        sections.append(
            (f"CUDA graphs ({len(d.graphs):,})", _rows_table("graphs", d.graphs, "graph", lambda r: r.name, "graphs"))
        )
    if d.nvtx:
        sections.append(
            (f"NVTX ranges ({len(d.nvtx):,})", _rows_table("nvtx", d.nvtx, "range", lambda r: r.key, "NVTX ranges"))
        )
    if d.sync:
        sections.append(
            (
                f"Synchronising API calls ({len(d.sync):,})",
                _rows_table("sync", d.sync, "call", lambda r: r.key, "calls"),
            )
        )
    sections += _api_sections(d)
    if d.base.devices or d.candidate.devices:
        rows = [("", [td(c) for c in row]) for row in device_rows(d)]
        sections.append(
            (
                "Devices: busy time and idle share of the kernel span",
                table("devices", [Column(h) for h in DEVICE_HEADER], rows, "devices"),
            )
        )
    for i, (summary, body) in enumerate(sections):
        out.append(f"<details{' open' if i == 0 else ''}><summary>{esc(summary)}</summary>\n{body}\n</details>")
    out += _method(d)
    out += page.tail()
    return "\n".join(out) + "\n"


def _facts(report: Report, named: Mapping[str, str]) -> list[str]:
    d = report.diff
    h = d.headline
    facts = [("traces", f"{d.base_meta.source} → {d.candidate_meta.source}")]
    if basis_phrase(d):
        facts.append(("compared", basis_phrase(d) or ""))
    facts.append(("scale", scale_line(d)))
    change = attribution_line(d, u.shorten, named)
    if change:
        facts.append(("change", change))
    facts.append(
        (
            "launches",
            f"{h.base_launches:,} → {h.candidate_launches:,}; distinct kernels "
            f"{h.base_kernels:,} → {h.candidate_kernels:,} ({h.common_kernels:,} common)",
        )
    )
    same = kernel_count_phrase(d)
    if same:
        facts.append(("kernels", same))
    steps = steps_phrase(d)
    if steps:
        facts.append(("steps", steps))
    if d.runs is not None:
        facts.append(("runs", f"{runs.count_phrase(d.runs)}: {runs.over_runs_phrase(d.runs)}"))
    # What makes the sides comparable matters when something is off; it waits one click away.
    compared = (*comparability.scope_lines(d), *comparability.fact_lines(d))
    return [
        '<dl class="facts">',
        *(f"<dt>{esc(k)}</dt><dd>{esc(v)}</dd>" for k, v in facts),
        "</dl>",
        "<details><summary>Comparability: " + esc(", ".join(k for k, _ in compared)) + "</summary>",
        '<dl class="facts">',
        *(f"<dt>{esc(k)}</dt><dd>{esc(v)}</dd>" for k, v in compared),
        "</dl></details>",
    ]


def _contributors(d: Diff, named: Mapping[str, str]) -> list[str]:
    a = d.attribution
    if not a.top and not a.replacements:
        return []
    out = ["<p>Top contributors:</p>", "<ul>"]
    for c in a.top:
        out.append(f"<li>{esc(contributor_text(c, u.shorten, named))}</li>")
    out.append("</ul>")
    if a.replacements:
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
            Column("its time", True),
            Column("replaces"),
            Column("its base time", True),
            Column("Δ", True),
            Column("why paired"),
        ]
        out += [
            f"<details><summary>Replacements ({len(a.replacements)})</summary>",
            table("replacements", cols, rows, "replacements"),
            "</details>",
        ]
    return out


def _steps(d: Diff, made: Mapping[str, charts.Chart]) -> list[str]:
    """The time per step: its parts base beside candidate, the steps in order, the tables."""
    sd = d.steps
    if sd is None:
        return []
    out = [f"<h2>{esc(steps.title(sd))}</h2>", *(f"<p>{esc(line)}</p>" for line in steps.first_lines(sd))]
    for key in ("steps", "series"):
        if key in made:
            out.append(_figure(made[key]))
    tables = (
        ("step-parts", steps.PART_HEADER, steps.part_rows(sd)),
        ("step-stats", steps.STAT_HEADER, steps.stat_rows(sd)),
        ("step-calls", steps.FAMILY_HEADER, steps.family_rows(sd)),
    )
    for tid, header, rows in tables:
        if rows:
            out.append(
                table(
                    tid,
                    [Column(h) for h in header],
                    [
                        ("", [td(c) if i == 0 else f'<td class="n">{esc(c)}</td>' for i, c in enumerate(r)])
                        for r in rows
                    ],
                    "rows",
                )
            )
    out.append(f'<p class="note">{esc(steps.METHOD)}</p>')
    return out


def _runs(d: Diff, made: Mapping[str, charts.Chart], named: Mapping[str, str]) -> list[str]:
    r = d.runs
    if r is None:
        return []
    out = [f"<h2>{esc(runs.title(r))}</h2>", f"<p>{esc(runs.tally(r))}</p>"]
    for key in ("runs", "forest"):
        if key in made:
            out.append(_figure(made[key]))
    rows = []
    for k in runs.listed(r):
        c = k.total
        rows.append(
            (
                "",
                [
                    code(runs.key_text(k, named)),
                    td(runs.kind_word(k)),
                    num(c.ratio, u.ratio(c.ratio)),
                    td(runs.interval(c.ratio, c.ci_low, c.ci_high)),
                    num(c.q_value, "-" if c.q_value is None else f"{c.q_value:.3g}"),
                    td(runs.measures_text(k)),
                ],
            )
        )
    if rows:
        cols = [
            Column("key"),
            Column("kind"),
            Column("ratio", True),
            Column("interval"),
            Column("q", True),
            Column("measures"),
        ]
        out.append(table("runs", cols, rows, "keys"))
    partial = runs.partial_text(r)
    if partial:
        out.append(f"<p>{esc(partial)}</p>")
    return out


def _method(d: Diff) -> list[str]:
    s = d.settings
    text = (
        f"Outlier: |modified z| ≥ {s.z_threshold:g} of the log ratio around the overall scale (weighted median "
        f"of family ratios, no family over a fifth of the weight), ≥ {s.min_deviation:g}x beyond it, "
        f"≥ {100 * s.min_share:g}% of either side's kernel time; unchanged within {s.noise:g}x. "
        + ("One trace per side: ratios are not confidence intervals." if d.runs is None else runs.method_text(d.runs))
    )
    return ["<h2>Method</h2>", f'<p class="note">{esc(text)}</p>']
