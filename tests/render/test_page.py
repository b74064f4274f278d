"""What every HTML page shares: the templates escape every value by default, make every
string one inert line first, mark only the charts' SVG safe, and load nothing from outside
the package."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from jinja2 import TemplateNotFound

import nsysdiff.render
from nsysdiff.render import page
from nsysdiff.render.page import Column, Table, code, link, num, td

RENDER = Path(nsysdiff.render.__file__).parent
TEMPLATES = RENDER / "templates"


def _table(t: Table) -> str:
    return str(page._environment().get_template("macros.html").module.table(t))  # type: ignore[attr-defined]


def test_every_value_is_escaped_and_one_inert_line() -> None:
    name = "<b a=\"1\" b='2'>&</b>\n::error::x\x1b[31m\u202e"
    rows = [("", [code(name, title=f"void {name}()"), td(name), num(1.5, name), link("k.html", name)])]
    out = _table(Table("t", [Column(name)], rows, name))
    text = "&lt;b a=&#34;1&#34; b=&#39;2&#39;&gt;&amp;&lt;/b&gt;\\x0a::error::x\\x1b[31m\\u202e"
    assert out == (
        f'<div class="scroll"><table class="sortable" id="t"><thead><tr><th>{text}</th></tr></thead>\n<tbody>\n'
        f'<tr><td><code title="void {text}()">{text}</code></td><td>{text}</td>'
        f'<td class="n" data-v="1.5">{text}</td><td><a href="k.html"><code>{text}</code></a></td></tr>\n'
        "</tbody></table></div>"
    )


def test_a_filter_box_once_there_are_rows_enough() -> None:
    rows = [("", [td("x")])] * page.FILTER_ROWS
    assert not _table(Table("t", [Column("a")], rows[1:], "rows")).startswith("<input")
    assert _table(Table("t", [Column("a")], rows, "rows <x>")).startswith(
        '<input class="filter" type="search" data-table="t" placeholder="filter rows &lt;x&gt;" '
        'aria-label="filter rows &lt;x&gt;">\n<div class="scroll">'
    )


def test_only_the_charts_svg_is_marked_safe() -> None:
    """Escaping is the default: one template marks one thing safe (the SVG matplotlib wrote
    and escaped), and no renderer escapes by hand or makes Markup."""
    marks = {
        p.name: len(re.findall(r"\|\s*safe\b|autoescape\s+false", p.read_text(encoding="utf-8")))
        for p in TEMPLATES.iterdir()
    }
    assert {k: v for k, v in marks.items() if v} == {"macros.html": 1}
    assert "{{ c.svg|safe }}" in (TEMPLATES / "macros.html").read_text(encoding="utf-8")
    for module in ("page.py", "html.py", "history_html.py", "charts.py"):
        source = (RENDER / module).read_text(encoding="utf-8")
        assert not re.search(r"\bMarkup\(|\bescape\(|neutral\.html\(", source), module


@pytest.mark.parametrize("name", ["../html.py", "../../safe/neutral.py", "/etc/passwd", "templates/../page.py"])
def test_no_template_from_outside_the_package(name: str) -> None:
    with pytest.raises(TemplateNotFound):
        page._environment().get_template(name)
