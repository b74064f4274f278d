"""What every HTML page of nsysdiff shares: the style, the sorting and filtering script
allowed by its hash, the head that forbids every request, and the table cells.

Used by the HTML report (:mod:`nsysdiff.render.html`) and the history dashboard. Every
``text`` given to a cell is untrusted and escaped here (:func:`neutral.html`).
"""

from __future__ import annotations

import base64
import hashlib
import math
from collections.abc import Sequence
from dataclasses import dataclass

import nsysdiff
from nsysdiff.safe import neutral

esc = neutral.html

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
SCRIPT_BODY = "\n" + SCRIPT

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


def csp(script: str) -> str:
    digest = base64.b64encode(hashlib.sha256(script.encode("utf-8")).digest()).decode("ascii")
    # No request of any kind; the one script by its hash; styles inline (SVG uses attributes).
    return f"default-src 'none'; script-src 'sha256-{digest}'; style-src 'unsafe-inline'; img-src data:"


def head(title: str, generator: str = "") -> list[str]:
    """The document up to ``<body>``: the policy that forbids every request, the style."""
    gen = f", {generator}" if generator else ""
    return [
        "<!DOCTYPE html>",
        '<html lang="en">',
        "<head>",
        '<meta charset="utf-8">',
        f'<meta http-equiv="Content-Security-Policy" content="{csp(SCRIPT_BODY)}">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f'<meta name="generator" content="nsysdiff {esc(nsysdiff.__version__)}{esc(gen)}">',
        f"<title>{esc(title)}</title>",
        f"<style>\n{STYLE}</style>",
        "</head>",
        "<body>",
    ]


def tail() -> list[str]:
    """The script and the end of the document."""
    return [f"<script>{SCRIPT_BODY}</script>", "</body>", "</html>"]


def num(value: float | None, text: str) -> str:
    """A numeric cell: sorted by ``value``, shown as ``text``."""
    v = "" if value is None or not math.isfinite(value) else f"{value:.6g}"
    return f'<td class="n" data-v="{v}">{text}</td>'


def table(tid: str, columns: Sequence[Column], rows: Sequence[tuple[str, Sequence[str]]], what: str) -> str:
    """A sortable table with a filter box; each row is (its class, its ``<td>`` cells)."""
    head = "".join(f"<th>{esc(c.title)}</th>" for c in columns)
    # A filter box only where there are rows enough to need one.
    box = (
        (
            f'<input class="filter" type="search" data-table="{tid}" placeholder="filter {esc(what)}" '
            f'aria-label="filter {esc(what)}">\n'
        )
        if len(rows) >= FILTER_ROWS
        else ""
    )
    body = "\n".join(
        f'<tr class="{cls}">{"".join(cells)}</tr>' if cls else f"<tr>{''.join(cells)}</tr>" for cls, cells in rows
    )
    return (
        f'{box}<div class="scroll"><table class="sortable" id="{tid}"><thead><tr>{head}</tr></thead>\n<tbody>\n{body}\n'
        "</tbody></table></div>"
    )


def td(text: str) -> str:
    return f"<td>{esc(text)}</td>"


def code(text: str, title: str | None = None, cls: str = "") -> str:
    t = f' title="{esc(title)}"' if title and title != text else ""
    c = f' class="{cls}"' if cls else ""
    return f"<td{c}><code{t}>{esc(text)}</code></td>"
