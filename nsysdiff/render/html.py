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

import base64
import hashlib
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import nsysdiff
from nsysdiff import units as u
from nsysdiff.compare import comparability
from nsysdiff.compare.diff import CopyDelta, Diff, Row, VariantDrift
from nsysdiff.render import charts, runs
from nsysdiff.render.devices import DEVICE_HEADER, device_rows
from nsysdiff.render.markdown import (
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
from nsysdiff.render.names import Names, labels, mangled_of
from nsysdiff.rules.report import Finding, Outcome, Report
from nsysdiff.safe import neutral

esc = neutral.html

_STATUS_CLASS = {Outcome.PASS: "pass", Outcome.FAIL: "fail", Outcome.INCONCLUSIVE: "inconclusive",
                 Outcome.UNJUDGED: "unjudged"}  # fmt: skip

# Sorting and filtering: a click on a header sorts by that column (numbers by their
# data-v value), typing in a table's filter box hides the rows that don't contain it.
SCRIPT = """\
"use strict";
document.querySelectorAll("table.sortable").forEach(function (table) {
  var body = table.tBodies[0];
  table.querySelectorAll("th").forEach(function (th, col) {
    th.tabIndex = 0;
    function sort() {
      var down = th.getAttribute("aria-sort") !== "descending";
      table.querySelectorAll("th").forEach(function (h) { h.removeAttribute("aria-sort"); });
      th.setAttribute("aria-sort", down ? "descending" : "ascending");
      var rows = Array.prototype.slice.call(body.rows);
      rows.sort(function (a, b) {
        var x = a.cells[col], y = b.cells[col];
        var nx = parseFloat(x.dataset.v), ny = parseFloat(y.dataset.v);
        if (x.dataset.v !== undefined) {
          // A number column: a row without a value (one side only) goes last either way.
          if (!isFinite(nx) || !isFinite(ny)) { return isFinite(nx) ? -1 : isFinite(ny) ? 1 : 0; }
          return down ? ny - nx : nx - ny;
        }
        var r = x.textContent.localeCompare(y.textContent);
        return down ? -r : r;
      });
      rows.forEach(function (r) { body.appendChild(r); });
    }
    th.addEventListener("click", sort);
    th.addEventListener("keydown", function (e) { if (e.key === "Enter") { sort(); } });
  });
});
document.querySelectorAll("input.filter").forEach(function (input) {
  var table = document.getElementById(input.dataset.table);
  input.addEventListener("input", function () {
    var q = input.value.toLowerCase();
    Array.prototype.forEach.call(table.tBodies[0].rows, function (row) {
      row.hidden = q !== "" && row.textContent.toLowerCase().indexOf(q) < 0;
    });
  });
});
"""

# Exactly what stands between <script> and </script>: the policy allows it by its hash.
_SCRIPT_BODY = "\n" + SCRIPT

STYLE = """\
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; color: #1f2328; margin: 0 auto;
  max-width: 1100px; padding: 16px 24px 48px; }
h1 { font-size: 22px; margin: 8px 0 4px; }
h2 { font-size: 18px; margin: 28px 0 8px; border-bottom: 1px solid #d0d7de; padding-bottom: 4px; }
.verdict { padding: 10px 14px; border-radius: 6px; border-left: 6px solid; }
.verdict.fail { background: #ffebe9; border-color: #cf222e; }
.verdict.pass { background: #dafbe1; border-color: #1a7f37; }
.verdict.inconclusive { background: #fff8c5; border-color: #9a6700; }
.verdict.unjudged { background: #f6f8fa; border-color: #8c959f; }
.verdict .word { font-weight: 700; }
dl.facts { display: grid; grid-template-columns: max-content 1fr; gap: 2px 16px; margin: 12px 0; }
dl.facts dt { color: #59636e; }
dl.facts dd { margin: 0; }
table { border-collapse: collapse; margin: 8px 0; font-size: 13px; }
th, td { border: 1px solid #d0d7de; padding: 3px 8px; vertical-align: top; }
th { background: #f6f8fa; text-align: left; cursor: pointer; white-space: nowrap; }
th[aria-sort="descending"]:after { content: " \\25BC"; }
th[aria-sort="ascending"]:after { content: " \\25B2"; }
td.n { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
.scroll { overflow-x: auto; }
td code, li code { overflow-wrap: anywhere; }
td.subject { min-width: 16em; }
td.name { min-width: 20em; }
td.wide { min-width: 22em; overflow-wrap: anywhere; }
tr.outlier td { background: #fff1e5; }
tr.error td:first-child { color: #cf222e; font-weight: 600; }
tr.warning td:first-child { color: #9a6700; font-weight: 600; }
figure { margin: 8px 0 16px; }
figure svg { max-width: 100%; height: auto; }
figcaption { color: #59636e; font-size: 13px; }
input.filter { font: inherit; padding: 3px 6px; width: 24em; margin-top: 4px; }
details > summary { cursor: pointer; font-weight: 600; margin: 8px 0; }
.nowrap { white-space: nowrap; }
.note { color: #59636e; font-size: 12px; }
"""

FILTER_ROWS = 12


@dataclass(frozen=True, slots=True)
class Column:
    title: str
    numeric: bool = False


def _csp(script: str) -> str:
    digest = base64.b64encode(hashlib.sha256(script.encode("utf-8")).digest()).decode("ascii")
    # No request of any kind; the one script by its hash; styles inline (SVG uses attributes).
    return f"default-src 'none'; script-src 'sha256-{digest}'; style-src 'unsafe-inline'; img-src data:"


def render(report: Report, names: Names = Names.short) -> str:
    """The whole report as one HTML document."""
    charts.require()
    return neutral.html_document(_render(neutral.scrub(report, neutral.text), names))


def _num(value: float | None, text: str) -> str:
    """A numeric cell: sorted by ``value``, shown as ``text``."""
    v = "" if value is None or not math.isfinite(value) else f"{value:.6g}"
    return f'<td class="n" data-v="{v}">{text}</td>'


def _table(tid: str, columns: Sequence[Column], rows: Sequence[tuple[str, Sequence[str]]], what: str) -> str:
    """A sortable table with a filter box; each row is (its class, its ``<td>`` cells)."""
    head = "".join(f"<th>{esc(c.title)}</th>" for c in columns)
    # A filter box only where there are rows enough to need one.
    box = (f'<input class="filter" type="search" data-table="{tid}" placeholder="filter {esc(what)}" '
           f'aria-label="filter {esc(what)}">\n') if len(rows) >= FILTER_ROWS else ""  # fmt: skip
    body = "\n".join(f'<tr class="{cls}">{"".join(cells)}</tr>' if cls else f"<tr>{''.join(cells)}</tr>"
                     for cls, cells in rows)  # fmt: skip
    return (
        f'{box}<div class="scroll"><table class="sortable" id="{tid}"><thead><tr>{head}</tr></thead>\n<tbody>\n{body}\n'
        "</tbody></table></div>"
    )


def _td(text: str) -> str:
    return f"<td>{esc(text)}</td>"


def _code(text: str, title: str | None = None, cls: str = "") -> str:
    t = f' title="{esc(title)}"' if title and title != text else ""
    c = f' class="{cls}"' if cls else ""
    return f"<td{c}><code{t}>{esc(text)}</code></td>"


def _findings(findings: Sequence[Finding], tid: str) -> str:
    rows = []
    for f in findings:
        evidence = f.evidence + (f" · waived: {f.waiver_reason}" if f.waived and f.waiver_reason else "")
        rows.append((f.level.value, [f'<td class="nowrap">{esc(finding_mark(f))}</td>',
                                     f'<td class="nowrap"><code>{esc(f.rule_id)}</code></td>',
                                     f'<td class="subject"><code>{esc(f.subject)}</code></td>', _td(f.observed),
                                     _td(f.limit), f'<td class="wide">{esc(evidence)}</td>']))  # fmt: skip
    cols = [Column(c) for c in ("level", "rule", "subject", "observed", "limit", "evidence")]
    return _table(tid, cols, rows, "findings")


def _rows_table(tid: str, rows: Sequence[Row], first: str, label: Callable[[Row], str], what: str) -> str:
    """Kernels, families, categories, NVTX ranges or sync calls: one row each."""
    out = []
    for r in rows:
        b = r.base.total_ns if r.base else None
        c = r.candidate.total_ns if r.candidate else None
        cells = [
            _code(label(r), r.key, "name"),
            _td(r.category or "-") if first == "kernel" else "",
            _num(b, u.ns(b) if b is not None else "-"),
            _num(c, u.ns(c) if c is not None else "-"),
            _num(r.delta_ns, u.signed_ns(r.delta_ns)),
            _num(r.ratio, u.ratio(r.ratio)),
            _num(r.deviation, u.ratio(r.deviation)),
            f'<td class="nowrap">{esc(calls_pair(r))}</td>',
            _num(r.count_effect_ns, u.signed_ns(r.count_effect_ns)),
            _num(r.per_call_effect_ns, u.signed_ns(r.per_call_effect_ns)),
            _td("outlier" if r.is_outlier else r.verdict.value),
        ]
        out.append(("outlier" if r.is_outlier else "", [c for c in cells if c]))
    cols = [Column(first), *([Column("category")] if first == "kernel" else []),
            *(Column(t, True) for t in ("base", "candidate", "Δ", "ratio", "vs scale")), Column("calls"),
            Column("count effect", True), Column("per-call effect", True), Column("verdict")]  # fmt: skip
    return _table(tid, cols, out, what)


def _copies(items: Sequence[CopyDelta]) -> str:
    rows = []
    for d in items:
        b, c = d.base, d.candidate
        rows.append(("", [_code(d.kind),
                          _num(b.total_ns if b else None, u.ns(b.total_ns) if b else "-"),
                          _num(c.total_ns if c else None, u.ns(c.total_ns) if c else "-"),
                          _num(d.ratio, u.ratio(d.ratio)),
                          _td(f"{count(b.ops) if b else '-'} → {count(c.ops) if c else '-'}"),
                          _td(f"{u.nbytes(b.bytes) if b else '-'} → {u.nbytes(c.bytes) if c else '-'}"),
                          _td(d.verdict.value)]))  # fmt: skip
    cols = [Column("kind"), Column("base", True), Column("candidate", True), Column("ratio", True),
            Column("operations"), Column("bytes"), Column("verdict")]  # fmt: skip
    return _table("copies", cols, rows, "copy kinds")


# Charts whose section heading already says what they are: no title repeated above them.
_HEADED = {"waterfall", "scale"}


def _variants(drifts: Sequence[VariantDrift]) -> str:
    rows = []
    for v in drifts:
        for mark, variants in (("appeared", v.appeared), ("disappeared", v.disappeared)):
            for x in variants:
                rows.append(("", [_code(v.family), _td(mark), _code(x.name, x.demangled),
                                  _num(x.calls, count(x.calls)), _num(x.total_ns, u.ns(x.total_ns))]))  # fmt: skip
    cols = [Column("family"), Column(""), Column("variant"), Column("calls", True), Column("time", True)]
    return _table("variants", cols, rows, "variants")


def _figure(c: charts.Chart) -> str:
    title = "" if c.key in _HEADED else f"<b>{esc(c.title)}.</b> "
    return (f'<figure id="chart-{c.key}" class="chart"><figcaption>{title}{esc(c.caption)}'
            f"</figcaption>\n{c.svg}\n</figure>")  # fmt: skip


def _render(report: Report, names: Names) -> str:
    d = report.diff
    named = labels(d.kernels, names, mangled_of(d.base, d.candidate))

    def label(r: Row) -> str:
        return named.get(r.key, r.name)

    made = {c.key: c for c in charts.charts(d, named)}
    status = status_word(report)
    title = f"nsysdiff: {status} · {d.base_meta.source} → {d.candidate_meta.source}"
    out = [
        "<!DOCTYPE html>",
        '<html lang="en">',
        "<head>",
        '<meta charset="utf-8">',
        f'<meta http-equiv="Content-Security-Policy" content="{_csp(_SCRIPT_BODY)}">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f'<meta name="generator" content="nsysdiff {esc(nsysdiff.__version__)}, matplotlib '
        f'{esc(charts.version())}">',
        f"<title>{esc(title)}</title>",
        f"<style>\n{STYLE}</style>",
        "</head>",
        "<body>",
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
        out += [f"<h2>Failed rules ({len(dict.fromkeys(f.rule_id for f in failed))})</h2>",
                _findings(failed, "failed")]  # fmt: skip
    out += ["<h2>Where the change went</h2>"]
    for key in ("waterfall", "contributors"):
        if key in made:
            out.append(_figure(made[key]))
    out += _contributors(d, named)
    out += ["<h2>Abnormal, not merely large: every family against the scale</h2>"]
    out.append(f"<p>{esc(scale_line(d))}</p>")
    if "scale" in made:
        out.append(_figure(made["scale"]))
    if d.outliers:
        out += [f"<h3>Outliers ({len(d.outliers)})</h3>",
                _rows_table("outliers", d.outliers, "kernel", label, "outliers")]  # fmt: skip
    elif not d.outlier_families:
        out.append(f"<p>{esc(no_outlier_line(d))}</p>")
    if d.outlier_families:
        out += [f"<h3>Outlier families ({len(d.outlier_families)})</h3>",
                _rows_table("outlier-families", d.outlier_families, "family", lambda r: r.name, "families")]
    if d.runs is not None:
        out += _runs(d, made, named)
    others = [f for f in report.findings if f not in failed]
    if others:
        out += [f"<h2>Other findings ({esc(finding_counts_of(others))})</h2>", _findings(others, "findings")]
    out += ["<h2>Tables</h2>"]
    sections: list[tuple[str, str]] = []
    if d.kernels:
        sections.append((f"Kernels ({len(d.kernels):,})", _rows_table("kernels", d.kernels, "kernel", label,
                                                                      "kernels")))  # fmt: skip
    if d.families:
        sections.append((f"Families ({len(d.families):,})",
                         _rows_table("families", d.families, "family", lambda r: r.name, "families")))
    if d.categories:
        sections.append((f"Categories ({len(d.categories):,})",
                         _rows_table("categories", d.categories, "category", lambda r: r.name, "categories")))
    if d.memcpy or d.memset:
        sections.append((f"Memory copies and memset ({len(d.memcpy) + len(d.memset)})",
                         _copies((*d.memcpy, *d.memset))))  # fmt: skip
    if d.variants:
        sections.append((f"Variant drift ({len(d.variants)} {'family' if len(d.variants) == 1 else 'families'})",
                         _variants(d.variants)))  # fmt: skip
    if d.nvtx:
        sections.append((f"NVTX ranges ({len(d.nvtx):,})",
                         _rows_table("nvtx", d.nvtx, "range", lambda r: r.key, "NVTX ranges")))
    if d.sync:
        sections.append((f"Synchronising API calls ({len(d.sync):,})",
                         _rows_table("sync", d.sync, "call", lambda r: r.key, "calls")))
    if d.base.devices or d.candidate.devices:
        rows = [("", [_td(c) for c in row]) for row in device_rows(d)]
        sections.append(("Devices: busy time and idle share of the kernel span",
                         _table("devices", [Column(h) for h in DEVICE_HEADER], rows, "devices")))  # fmt: skip
    for i, (summary, body) in enumerate(sections):
        out.append(f"<details{' open' if i == 0 else ''}><summary>{esc(summary)}</summary>\n{body}\n</details>")
    out += _method(d)
    out += [f"<script>{_SCRIPT_BODY}</script>", "</body>", "</html>"]
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
    facts.append(("launches", f"{h.base_launches:,} → {h.candidate_launches:,}; distinct kernels "
                              f"{h.base_kernels:,} → {h.candidate_kernels:,} ({h.common_kernels:,} common)"))
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
        '<dl class="facts">', *(f"<dt>{esc(k)}</dt><dd>{esc(v)}</dd>" for k, v in facts), "</dl>",
        "<details><summary>Comparability: " + esc(", ".join(k for k, _ in compared)) + "</summary>",
        '<dl class="facts">', *(f"<dt>{esc(k)}</dt><dd>{esc(v)}</dd>" for k, v in compared), "</dl></details>",
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
        rows = [("", [_code(u.shorten(named.get(p.new, p.new_name))), _num(p.new_ns, u.ns(p.new_ns)),
                      _code(u.shorten(named.get(p.removed, p.removed_name))), _num(p.removed_ns, u.ns(p.removed_ns)),
                      _num(p.delta_ns, u.signed_ns(p.delta_ns)), _td(p.why)])
                for p in a.replacements]  # fmt: skip
        cols = [Column("new kernel"), Column("its time", True), Column("replaces"), Column("its base time", True),
                Column("Δ", True), Column("why paired")]  # fmt: skip
        out += [f"<details><summary>Replacements ({len(a.replacements)})</summary>",
                _table("replacements", cols, rows, "replacements"), "</details>"]  # fmt: skip
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
        rows.append(("", [_code(runs.key_text(k, named)), _td(runs.kind_word(k)),
                          _num(c.ratio, u.ratio(c.ratio)),
                          _td(runs.interval(c.ratio, c.ci_low, c.ci_high)),
                          _num(c.q_value, "-" if c.q_value is None else f"{c.q_value:.3g}"),
                          _td(runs.measures_text(k))]))  # fmt: skip
    if rows:
        cols = [Column("key"), Column("kind"), Column("ratio", True), Column("interval"), Column("q", True),
                Column("measures")]  # fmt: skip
        out.append(_table("runs", cols, rows, "keys"))
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
        + ("One trace per side: ratios are not confidence intervals." if d.runs is None
           else runs.method_text(d.runs))
    )  # fmt: skip
    return ["<h2>Method</h2>", f'<p class="note">{esc(text)}</p>']
