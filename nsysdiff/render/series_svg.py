"""A commit series written straight as SVG: the chart of each key's page of the history
dashboard (:mod:`nsysdiff.render.history_html`).

matplotlib took about half a second of CPU per chart, most of it laying out tick labels
and margins, and a site has a page per key: 200 pages of a 1,000-commit history took
minutes. This chart has one fixed shape (a band, a line, dashed change points, commit
labels, a legend), so it is written here directly, in milliseconds, with the colours of
:mod:`nsysdiff.render.charts`. Like those charts it is inline SVG with no script, no font
and no link; every text is escaped here, and the caller makes each one inert first.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from html import escape

WIDTH, HEIGHT = 720, 330  # px, scaled down by the page's CSS on a narrow screen
LEFT, RIGHT, TOP = 64, 16, 18  # margins: the y labels on the left, a change point's label on top
PLOT_HEIGHT = 190  # below it: the rotated commit labels, the axis title and the legend
MARKERS = 200  # points drawn as dots up to this many; a longer series is a line alone


@dataclass(frozen=True, slots=True)
class Mark:
    """A dashed vertical line before point ``at`` (a change point), labelled at the top."""

    at: int
    colour: str
    text: str


@dataclass(frozen=True, slots=True)
class Series:
    """What the chart shows: per point a low, a middle and a high value, and which points
    get a label on the x axis."""

    title: str
    low: Sequence[float]
    mid: Sequence[float]
    high: Sequence[float]
    ticks: Sequence[tuple[int, str]]  # (point, label)
    marks: Sequence[Mark]
    y_label: str
    x_label: str
    band_label: str
    line_label: str
    colour: str


def nice_ticks(lo: float, hi: float, most: int = 6) -> list[float]:
    """Round values spanning ``lo``..``hi`` (1, 2 or 5 times a power of ten apart)."""
    if not (math.isfinite(lo) and math.isfinite(hi)):
        return [0.0]
    if hi <= lo:
        hi = lo + (abs(lo) or 1.0)
    raw = (hi - lo) / max(1, most - 1)
    power = 10 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 5, 10) if m * power >= raw)
    first = math.floor(lo / step) * step
    count = math.ceil((hi - first) / step - 1e-9)
    return [round(first + i * step, 12) for i in range(count + 1)]


def _f(v: float) -> str:
    return f"{v:.1f}".removesuffix(".0")


def render(s: Series) -> str:
    """The chart as one ``<svg>`` element."""
    n = len(s.mid)
    ys = nice_ticks(min(s.low, default=0.0), max(s.high, default=1.0))
    y0, y1 = ys[0], ys[-1]
    width = WIDTH - LEFT - RIGHT

    def x(i: float) -> float:
        # Room of most of a point either side, so that the first and last points and a
        # change point before the first stay inside.
        return LEFT + (i + 0.8) / (max(n, 1) - 1 + 1.6) * width

    def y(v: float) -> float:
        return TOP + (1 - (v - y0) / ((y1 - y0) or 1.0)) * PLOT_HEIGHT

    bottom = TOP + PLOT_HEIGHT
    out = [
        f'<svg width="{WIDTH}" height="{HEIGHT}" viewBox="0 0 {WIDTH} {HEIGHT}" role="img" '
        'font-family="sans-serif" font-size="11">',
        f"<title>{escape(s.title)}</title>",
    ]
    for v in ys:
        out.append(f'<line x1="{LEFT}" x2="{WIDTH - RIGHT}" y1="{_f(y(v))}" y2="{_f(y(v))}" stroke="#dddddd"/>')
        out.append(f'<text x="{LEFT - 6}" y="{_f(y(v) + 4)}" text-anchor="end">{escape(f"{v:g}")}</text>')
    out.append(f'<line x1="{LEFT}" x2="{LEFT}" y1="{TOP}" y2="{bottom}" stroke="#000000"/>')
    out.append(f'<line x1="{LEFT}" x2="{WIDTH - RIGHT}" y1="{bottom}" y2="{bottom}" stroke="#000000"/>')
    if n:
        band = [f"{_f(x(i))},{_f(y(v))}" for i, v in enumerate(s.low)]
        band += [f"{_f(x(i))},{_f(y(v))}" for i, v in reversed(list(enumerate(s.high)))]
        out.append(f'<polygon points="{" ".join(band)}" fill="{s.colour}" fill-opacity="0.18"/>')
        line = " ".join(f"{_f(x(i))},{_f(y(v))}" for i, v in enumerate(s.mid))
        out.append(f'<polyline points="{line}" fill="none" stroke="{s.colour}" stroke-width="1.5"/>')
        if n <= MARKERS:
            out += [f'<circle cx="{_f(x(i))}" cy="{_f(y(v))}" r="2" fill="{s.colour}"/>' for i, v in enumerate(s.mid)]
    for m in s.marks:
        at = _f(x(m.at - 0.5))
        out.append(f'<line x1="{at}" x2="{at}" y1="{TOP}" y2="{bottom}" stroke="{m.colour}" stroke-dasharray="5,3"/>')
        out.append(f'<text x="{_f(x(m.at - 0.5) + 4)}" y="{TOP + 10}" font-size="10">{escape(m.text)}</text>')
    for i, text in s.ticks:
        tx = _f(x(i))
        out.append(f'<line x1="{tx}" x2="{tx}" y1="{bottom}" y2="{bottom + 4}" stroke="#000000"/>')
        out.append(
            f'<text transform="translate({tx},{bottom + 14}) rotate(-45)" text-anchor="end">{escape(text)}</text>'
        )
    middle = _f(LEFT + width / 2)
    out.append(f'<text x="{middle}" y="{bottom + 78}" text-anchor="middle">{escape(s.x_label)}</text>')
    out.append(
        f'<text transform="translate(14,{_f(TOP + PLOT_HEIGHT / 2)}) rotate(-90)" text-anchor="middle">'
        f"{escape(s.y_label)}</text>"
    )
    legend = HEIGHT - 14
    out.append(f'<rect x="{LEFT}" y="{legend - 9}" width="18" height="10" fill="{s.colour}" fill-opacity="0.18"/>')
    out.append(f'<text x="{LEFT + 24}" y="{legend}">{escape(s.band_label)}</text>')
    second = LEFT + width / 2
    out.append(
        f'<line x1="{_f(second)}" x2="{_f(second + 18)}" y1="{legend - 4}" y2="{legend - 4}" '
        f'stroke="{s.colour}" stroke-width="1.5"/>'
    )
    out.append(f'<text x="{_f(second + 24)}" y="{legend}">{escape(s.line_label)}</text>')
    out.append("</svg>")
    return "\n".join(out)
