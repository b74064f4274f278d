"""What every HTML page of nsysdiff shares: the Jinja2 templates that write them, the table
cells they are filled with, and the check that the HTML extra is installed.

Used by the HTML report (:mod:`nsysdiff.render.html`) and the history dashboard
(:mod:`nsysdiff.render.history_html`). The pages are templates under ``templates/``, shipped
in the package and rendered with autoescaping on: every value a template writes is
HTML-escaped unless a template marks it safe, and before that every string is made one
inert line (:func:`neutral.text`), so no caller has to remember to escape a name.
"""

from __future__ import annotations

import base64
import hashlib
import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING, Any

import nsysdiff
from nsysdiff.errors import UsageError
from nsysdiff.render import charts
from nsysdiff.safe import neutral

if TYPE_CHECKING:
    from jinja2 import Environment

INSTALL_HINT = "the HTML report is written through Jinja2 templates: pip install 'nsysdiff[html]'"
FILTER_ROWS = 12  # rows from which a table gets a filter box


@dataclass(frozen=True, slots=True)
class Column:
    title: str


@dataclass(frozen=True, slots=True)
class Cell:
    """One ``<td>``. Its strings are plain text: the template escapes them."""

    text: str
    cls: str = ""
    sort: str | None = None  # the data-v a click sorts the column by ("" for no value)
    code: bool = False  # the text is a name, set in <code>
    title: str = ""  # shown on hover: the full name behind a short one
    href: str = ""  # a page of the same site


@dataclass(frozen=True, slots=True)
class Table:
    """A sortable table with a filter box once it has rows enough to need one; each row is
    (its class, its cells)."""

    tid: str
    columns: Sequence[Column]
    rows: Sequence[tuple[str, Sequence[Cell]]]
    what: str  # what a row is, for the filter box: "kernels"


def td(text: str, cls: str = "") -> Cell:
    return Cell(text, cls)


def code(text: str, title: str | None = None, cls: str = "") -> Cell:
    """A name in ``<code>``; ``title`` (the full name) on hover where it says more."""
    return Cell(text, cls, code=True, title=title if title and title != text else "")


def num(value: float | None, text: str) -> Cell:
    """A numeric cell: sorted by ``value``, shown as ``text``."""
    return Cell(text, "n", sort="" if value is None or not math.isfinite(value) else f"{value:.6g}")


def link(href: str, text: str) -> Cell:
    """A name linking to another page of the same site."""
    return Cell(text, code=True, href=href)


def columns(*titles: str) -> list[Column]:
    return [Column(t) for t in titles]


def require() -> None:
    """Fail with one line saying what to install when the HTML extra is missing: the charts'
    matplotlib, or the templates' Jinja2."""
    charts.require()
    try:
        import jinja2  # noqa: F401
    except ImportError:
        raise UsageError(INSTALL_HINT) from None


def render(template: str, **context: Any) -> str:
    """The page ``template`` filled with ``context``, made inert for a CI log as well
    (:func:`neutral.html_document`): printed to stdout, it starts no workflow command."""
    return neutral.html_document(_environment().get_template(template).render(**context))


@cache
def _environment() -> Environment:
    from jinja2 import Environment, PackageLoader, StrictUndefined

    env = Environment(
        # Only templates shipped in the package, by the names the renderers give: a loader
        # that refuses any name leading out of its folder, never a template from an input.
        loader=PackageLoader("nsysdiff.render", "templates"),
        autoescape=True,
        finalize=_inert,
        undefined=StrictUndefined,  # a misspelt name fails the test, never renders as ""
        # A tag on a line of its own leaves no empty line behind, and a file's last newline
        # stays (the style's, the script's): a page's lines are its template's lines.
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
    env.filters["sha256"] = _sha256
    env.filters["count"] = "{:,}".format
    env.globals.update(version=nsysdiff.__version__, matplotlib=charts.version(), filter_rows=FILTER_ROWS)
    return env


def _inert(value: Any) -> Any:
    # A string a template writes is untrusted until shown otherwise: one inert line first,
    # as in every other format, then escaped by the autoescape. Markup (what has __html__)
    # is what the templates made (a macro's output, a block) or marked safe: kept as it is.
    if isinstance(value, str) and not hasattr(value, "__html__"):
        return neutral.text(value)
    return value


def _sha256(text: str) -> str:
    """The base64 SHA-256 a Content-Security-Policy allows a script by."""
    return base64.b64encode(hashlib.sha256(str(text).encode("utf-8")).digest()).decode("ascii")
