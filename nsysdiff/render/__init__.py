"""One module per output format; :func:`render` maps every :class:`Format` to its renderer."""

from __future__ import annotations

import enum
from pathlib import Path

from nsysdiff.errors import UsageError
from nsysdiff.render.names import Names
from nsysdiff.rules.report import Report


class Format(str, enum.Enum):
    text = "text"
    markdown = "markdown"
    json = "json"
    github = "github"
    junit = "junit"
    csv = "csv"
    html = "html"


_BY_SUFFIX = {
    ".txt": Format.text,
    ".md": Format.markdown,
    ".markdown": Format.markdown,
    ".json": Format.json,
    ".xml": Format.junit,
    ".csv": Format.csv,
    ".html": Format.html,
    ".htm": Format.html,
}


def format_for(path: Path) -> Format:
    """The format an ``--output`` file gets from its extension."""
    try:
        return _BY_SUFFIX[path.suffix.lower()]
    except KeyError:
        known = ", ".join(sorted(_BY_SUFFIX))
        raise UsageError(
            f"{path}: can't tell the output format from {path.suffix or 'no extension'!r} (use one of {known})"
        ) from None


def render(
    report: Report,
    fmt: Format,
    *,
    width: int = 120,
    details: bool = False,
    names: Names = Names.short,
) -> str:
    """``report`` in ``fmt``. ``width`` and ``details`` shape the text report (the other
    formats always carry every section); ``names`` picks how kernels are named."""
    # Imported here so that one format's dependencies never slow down another's.
    if fmt is Format.text:
        from nsysdiff.render import text

        return text.render(report, width=width, details=details, names=names)
    if fmt is Format.markdown:
        from nsysdiff.render import markdown

        return markdown.render(report, names=names)
    if fmt is Format.csv:
        from nsysdiff.render import csv_report

        return csv_report.render(report, names=names)
    if fmt is Format.json:
        from nsysdiff.render import json_report

        return json_report.render(report)
    if fmt is Format.github:
        from nsysdiff.render import github

        return github.render(report)
    if fmt is Format.junit:
        from nsysdiff.render import junit

        return junit.render(report)
    if fmt is Format.html:
        from nsysdiff.render import html

        return html.render(report, names=names)
    raise AssertionError(f"unhandled format {fmt}")


def require(fmt: Format) -> None:
    """Fail with one line, before any trace is read, when ``fmt`` needs an optional extra
    that is not installed (HTML: matplotlib and Jinja2)."""
    if fmt is Format.html:
        from nsysdiff.render import page

        page.require()
