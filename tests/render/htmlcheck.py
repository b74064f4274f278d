"""Reading an HTML report in tests: its charts, and a form of it that survives another
matplotlib release (the charts' paths change between releases, their words don't)."""

from __future__ import annotations

import re

_SVG = re.compile(r"<svg\b.*?</svg>", re.DOTALL)
_TEXT = re.compile(r"<text\b[^>]*>(.*?)</text>", re.DOTALL)
_GENERATOR = re.compile(r'<meta name="generator" content="nsysdiff [^,]*, matplotlib ([^"]*)">')


def svgs(document: str) -> list[str]:
    """Every inline ``<svg>`` element of the report."""
    return _SVG.findall(document)


def svg_texts(svg: str) -> list[str]:
    """The words of one chart, in document order."""
    return [t.strip() for t in _TEXT.findall(svg)]


def matplotlib_of(document: str) -> str | None:
    """The matplotlib release that drew the report's charts."""
    m = _GENERATOR.search(document)
    return m.group(1) if m else None


def comparable(document: str) -> str:
    """The report with each chart reduced to its words, and no matplotlib release named."""
    out = _SVG.sub(lambda m: "<svg>" + " | ".join(svg_texts(m.group(0))) + "</svg>", document)
    return _GENERATOR.sub('<meta name="generator">', out)


def same_report(expected: str, actual: str) -> bool:
    """Equal byte for byte when one matplotlib release drew both; else equal but for the
    charts' drawing (their words must still be the same)."""
    if matplotlib_of(expected) == matplotlib_of(actual):
        return expected == actual
    return comparable(expected) == comparable(actual)
