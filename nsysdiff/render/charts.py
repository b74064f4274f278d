"""The charts of the HTML report, drawn with matplotlib as inline SVG.

matplotlib is an optional extra (``pip install 'nsysdiff[html]'``): docs/html.md says why it
was chosen over Plotly and Vega-Lite. Each chart is a function from the diff to one
``<svg>`` element, with no script, no font and no link: the page opens offline.

Every label that comes from a trace is first made one inert line (:func:`neutral.text`) and
shortened; matplotlib then escapes it as SVG text, and mathtext is off, so a ``$`` in a
kernel name is a dollar sign, never a formula. The output is deterministic for one
matplotlib version (a fixed hash salt per chart, no date), so the report can be a golden
file.
"""

from __future__ import annotations

import io
import math
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from nsysdiff import units as u
from nsysdiff.compare.diff import Diff, Row
from nsysdiff.compare.runstats import RunVerdict
from nsysdiff.errors import UsageError
from nsysdiff.fingerprint.steps import StepPart
from nsysdiff.render.phrases import BASIS_WORDS
from nsysdiff.render.steps import PART_WORDS
from nsysdiff.safe import neutral

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

LABEL = 42  # characters of a name on an axis
BAND_ROWS = 40  # families drawn in the scale chart (the largest by time; the table has all)
TOP_KERNELS = 12  # kernels in the contributors chart

# Colours a reader with red-green colour blindness can still tell apart (Okabe-Ito).
BASE = "#0072B2"
CANDIDATE = "#E69F00"
WORSE = "#D55E00"
BETTER = "#009E73"
NEUTRAL = "#7f7f7f"
EFFECT_COLOURS = {"count": "#56B4E9", "per-call": "#D55E00", "new": "#CC79A7", "removed": "#009E73"}

INSTALL_HINT = "the HTML report draws its charts with matplotlib: pip install 'nsysdiff[html]'"


def require() -> None:
    """Fail with one line saying what to install when matplotlib is missing."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        raise UsageError(INSTALL_HINT) from None


def version() -> str:
    import matplotlib

    return str(matplotlib.__version__)


def label(name: str, width: int = LABEL) -> str:
    """A trace string as an axis label: one inert, shortened line."""
    return u.shorten(neutral.text(name), width)


@contextmanager
def plot(key: str, title: str, width: float, height: float) -> Iterator[tuple[Axes, Callable[[str], Chart]]]:
    """A figure's axes in the house style, and what makes the finished chart of them
    (called inside the block, with the caption): the key and title are said once."""
    from matplotlib import rc_context
    from matplotlib.figure import Figure

    rc: Any = {
        "svg.fonttype": "none",  # text stays text: small, selectable, searchable
        "svg.hashsalt": f"nsysdiff-{key}",  # ids unique per chart, stable between runs
        "text.parse_math": False,  # a `$` in a kernel name is not mathtext
        "font.family": "sans-serif",
        "font.size": 9,
        "axes.spines.top": False,
        "axes.spines.right": False,
    }
    with rc_context(rc):
        fig = Figure(figsize=(width, height), layout="constrained")
        yield fig.add_subplot(), lambda caption: Chart(key, title, svg_text(fig, title), caption)


def svg_text(fig: Figure, title: str) -> str:
    buf = io.StringIO()
    fig.savefig(buf, format="svg", metadata={"Date": None, "Title": title})
    out = buf.getvalue()
    # Inline in HTML: no XML declaration or doctype, just the element, and no RDF metadata
    # (its namespace addresses look like links to a reader checking that nothing is fetched).
    out = _METADATA.sub("", out[out.index("<svg") :])
    return out.strip()


_METADATA = re.compile(r"\s*<metadata>.*?</metadata>", re.DOTALL)


def legend_below(ax: Axes, columns: int) -> None:
    """The axes' legend under the figure, centred on the figure, with the room it needs.

    A legend placed under the axes is centred on the axes: beside long y labels the axes
    sit on the right, and a wide legend ran out of the figure and was cut off. At the
    figure level, constrained layout makes room for it."""
    handles, labels = ax.get_legend_handles_labels()
    ax.figure.legend(handles, labels, loc="outside lower center", ncol=columns, frameon=False, fontsize=8)


@dataclass(frozen=True, slots=True)
class Chart:
    """One chart: its SVG and a sentence saying what it shows (the figure caption)."""

    key: str
    title: str
    svg: str
    caption: str


# --- the change as a waterfall --------------------------------------------------------------


def waterfall(diff: Diff) -> Chart | None:
    """Base kernel time, the four parts of the change, candidate kernel time."""
    a = diff.attribution
    h = diff.headline
    if h.basis != "kernels" or not diff.kernels:
        return None
    base = h.base_per_step_ns if diff.per_step and h.base_per_step_ns is not None else float(h.base_total_ns)
    e = a.effects
    steps = [("count", e.count_ns), ("per-call", e.per_call_ns), ("new", e.new_ns), ("removed", e.removed_ns)]
    with plot("waterfall", "Where the change went", 7.5, 3.2) as (ax, chart):
        level = base
        ax.bar(0, base / 1e6, color=BASE, width=0.6)
        ax.text(0, base / 1e6, u.ns(base), ha="center", va="bottom")
        for i, (name, value) in enumerate(steps, 1):
            bottom = level if value >= 0 else level + value
            ax.bar(i, abs(value) / 1e6, bottom=bottom / 1e6, color=EFFECT_COLOURS[name], width=0.6)
            ax.text(i, (max(level, level + value)) / 1e6, u.signed_ns(value), ha="center", va="bottom")
            ax.plot([i - 1.3, i + 0.3], [level / 1e6] * 2, color=NEUTRAL, lw=0.6, ls=":")
            level += value
        ax.plot([4.7, 5.3], [level / 1e6] * 2, color=NEUTRAL, lw=0.6, ls=":")
        ax.bar(5, level / 1e6, color=CANDIDATE, width=0.6)
        ax.text(5, level / 1e6, u.ns(level), ha="center", va="bottom")
        ax.set_xticks(
            range(6),
            ["base", "more/fewer\ncalls", "slower/faster\ncalls", "new\nkernels", "removed\nkernels", "candidate"],
        )
        ax.set_ylabel("kernel time per step (ms)" if diff.per_step else "kernel time (ms)")
        floor, top = waterfall_axis(base, [v for _, v in steps])
        ax.set_ylim(floor / 1e6, top / 1e6)
        cut = f" The axis starts at {u.ns(floor)}, not 0, so that the parts can be seen." if floor > 0 else ""
        return chart(
            f"{u.ns(base)} → {u.ns(level)}: the change split exactly into calls added or removed (at the "
            "base time per call), calls that got slower or faster, kernels only in the candidate and kernels "
            f"only in the base.{cut}",
        )


def waterfall_axis(base: float, parts: Sequence[float]) -> tuple[float, float]:
    """The waterfall's vertical range: from 0 while the parts are a visible share of the
    totals, else from just under the lowest level the bars step through (+80 us on a
    2.75 ms axis from 0 is a hairline)."""
    levels = [base]
    for value in parts:
        levels.append(levels[-1] + value)
    low, high = min(levels), max(levels)
    top = high * 1.15 if high > 0 else 1.0
    span = high - low
    if span <= 0 or span >= 0.2 * high:
        return 0.0, top
    floor = max(0.0, low - 1.5 * span)
    return floor, high + 0.6 * span


def contributors(diff: Diff, named: Mapping[str, str]) -> Chart | None:
    """The kernels that moved the most, each bar split into its four parts."""
    parts = [p for p in diff.attribution.kernels if p.effects.total_ns][:TOP_KERNELS]
    if not parts:
        return None
    names = {r.key: r.name for r in diff.kernels}
    with plot("contributors", "The kernels that moved the most", 7.5, 1.2 + 0.28 * len(parts)) as (ax, chart):
        ys = range(len(parts))
        for kind, field in (
            ("count", "count_ns"),
            ("per-call", "per_call_ns"),
            ("new", "new_ns"),
            ("removed", "removed_ns"),
        ):
            values = [getattr(p.effects, field) / 1e6 for p in parts]
            pos = [max(v, 0) for v in values]
            neg = [min(v, 0) for v in values]
            left_pos = [_stack(parts, field, positive=True)[i] for i in ys]
            left_neg = [_stack(parts, field, positive=False)[i] for i in ys]
            ax.barh(list(ys), pos, left=left_pos, color=EFFECT_COLOURS[kind], label=kind, height=0.7)
            ax.barh(list(ys), neg, left=left_neg, color=EFFECT_COLOURS[kind], height=0.7)
        ax.axvline(0, color="black", lw=0.6)
        ax.set_yticks(list(ys), [label(named.get(p.key, names.get(p.key, p.key))) for p in parts])
        ax.invert_yaxis()
        ax.set_xlabel("change in kernel time (ms)")
        right = max(sum(max(getattr(p.effects, f), 0) for f in _EFFECT_FIELDS) for p in parts) / 1e6
        left = min(sum(min(getattr(p.effects, f), 0) for f in _EFFECT_FIELDS) for p in parts) / 1e6
        pad = 0.06 * (right - left or 1.0)
        ax.set_xlim(left - pad, right + pad)
        legend_below(ax, 4)
        return chart(
            f"The {len(parts)} kernels with the largest change, each split into the same four parts.",
        )


_EFFECT_FIELDS = ("count_ns", "per_call_ns", "new_ns", "removed_ns")


def _stack(parts: Sequence[Any], upto: str, *, positive: bool) -> list[float]:
    """Where each bar's ``upto`` segment starts: the sum of the earlier parts of one sign."""
    order = _EFFECT_FIELDS
    out = []
    for p in parts:
        s = 0.0
        for f in order[: order.index(upto)]:
            v = getattr(p.effects, f) / 1e6
            s += max(v, 0) if positive else min(v, 0)
        out.append(s)
    return out


# --- every family against the scale ---------------------------------------------------------


def _size(r: Row) -> float:
    """A row's larger side, in ns: what its marker's size weighs."""
    return max(r.base.total_ns if r.base else 0, r.candidate.total_ns if r.candidate else 0)


def _band_keys(rows: Sequence[tuple[str, Row, str]], factor: float) -> tuple[str, str]:
    """The legend's words for the marks the band shows: rings, and green triangles."""
    flagged = any(m == "family" for _, _, m in rows)
    faster = any(m == "outlier" and (r.ratio or 1.0) < factor for _, r, m in rows)
    return (
        "; rings: families flagged as a whole (red slower than the scale, green faster)" if flagged else "",
        "; green triangles: faster than the scale (an improvement)" if faster else "",
    )


def _band_point(ax: Any, r: Row, y: int, mark: str, weight: float, factor: float) -> str:
    """One row's marker on the band; its colour, for the annotation beside it. Faster than
    the scale is an improvement: green, and a marker of its own shape."""
    improved = (r.ratio or 1.0) < factor
    colour = BETTER if improved else WORSE
    if mark == "outlier":
        ax.scatter([r.ratio or 1.0], [y], s=70, marker="v" if improved else "D", color=colour, zorder=3)
    elif mark == "family":
        ax.scatter([r.ratio or 1.0], [y], s=12 + 80 * math.sqrt(weight), facecolors="none", edgecolors=colour, lw=1.5)
    else:
        ax.scatter([r.ratio or 1.0], [y], s=12 + 80 * math.sqrt(weight), color=NEUTRAL, zorder=3)
    return colour


def scale_band(diff: Diff, named: Mapping[str, str]) -> Chart | None:
    """Every family's ratio on a log axis, the scale and its band, the outlier thresholds,
    and the outlier kernels marked: abnormal, not merely large, at a glance."""
    i = diff.headline.scale_info
    if not i.families or not i.meaningful:
        return None
    words = BASIS_WORDS[diff.headline.basis]
    one, many, what = words.unit, u.many(words.unit), words.outliers
    # The scale is over families, or over the NVTX ranges or graphs compared instead.
    kernels = diff.headline.basis == "kernels"
    pool = diff.families if kernels else diff.scored
    fams = [r for r in pool if r.ratio and r.base and r.candidate]
    fams.sort(key=lambda r: -max(r.base.total_ns if r.base else 0, r.candidate.total_ns if r.candidate else 0))
    fams = sorted(fams[:BAND_ROWS], key=lambda r: r.ratio or 1.0)
    drawn = {r.name: r for r in fams}
    # An outlier kernel gets a row of its own unless its family is that kernel alone.
    outliers = [r for r in diff.outliers if kernels and r.ratio and not _same(drawn.get(r.family or ""), r)]
    # Each row's mark: an outlier (a kernel, or an NVTX range or graph of the basis), a
    # family flagged as a whole (its change spread over light variants), or none.
    rows: list[tuple[str, Row, str]] = [
        (label(r.name), r, _mark(r, diff.outliers) if kernels else ("outlier" if r.is_outlier else "")) for r in fams
    ]
    rows += [(label(named.get(r.key, r.name)) + "  (kernel)", r, "outlier") for r in outliers]
    s = diff.settings
    lo_thr, hi_thr = i.factor / s.min_deviation, i.factor * s.min_deviation
    ratios = [r.ratio for _, r, _ in rows if r.ratio] + [lo_thr, hi_thr]
    flagged, faster = _band_keys(rows, i.factor)
    shown = (
        f"the {len(fams)} largest of {len(pool)} {many}"
        if len(fams) < len(pool)
        else (f"all {len(fams)} {many} on both sides")
    )
    with plot("scale", f"Every {one} against the scale", 7.5, 1.0 + 0.26 * len(rows)) as (ax, chart):
        ax.set_xscale("log")
        ax.axvspan(i.low, i.high, color=BASE, alpha=0.15, lw=0, label=f"band {i.low:.2f}x–{i.high:.2f}x")
        ax.axvline(i.factor, color=BASE, lw=1.2, label=f"scale {i.factor:.2f}x")
        for x in (lo_thr, hi_thr):
            ax.axvline(x, color=WORSE, lw=0.8, ls="--")
        ax.axvline(1.0, color="black", lw=0.6, ls=":")
        total = max((_size(r) for _, r, _ in rows), default=1) or 1
        for y, (_, r, mark) in enumerate(rows):
            colour = _band_point(ax, r, y, mark, _size(r) / total, i.factor)
            if mark:
                ax.annotate(
                    f"{'outlier' if mark == 'outlier' else 'outlier family'} {u.ratio(r.ratio)}",
                    (r.ratio or 1.0, y),
                    xytext=(6, -3),
                    textcoords="offset points",
                    color=colour,
                    fontsize=8,
                )
        ax.set_yticks(range(len(rows)), [name for name, _, _ in rows])
        for tick, (_, row, mark) in zip(ax.get_yticklabels(), rows, strict=True):
            if mark:
                tick.set_color(BETTER if (row.ratio or 1.0) < i.factor else WORSE)
        low, high = min(ratios) / 1.3, max(ratios) * 1.6
        ax.set_xlim(low, high)
        _ratio_ticks(ax, low, high)
        ax.set_xlabel("ratio candidate / base (log scale)")
        ax.plot([], [], color=WORSE, lw=0.8, ls="--", label=f"outlier thresholds ÷/× {s.min_deviation:g}")
        legend_below(ax, 3)
        ax.grid(axis="x", which="both", color="#dddddd", lw=0.5)
        return chart(
            f"Each dot is {_article(one)} {one}'s total-time ratio ({shown}; dot size: time). The blue line "
            f"is the overall scale {i.factor:.2f}x, the shaded band holds half the weight; the dashed lines "
            f"are {s.min_deviation:g}x beyond it, where an outlier must lie. Red diamonds: outlier "
            f"{what} slower than the scale{faster}{flagged}."
        )


def _mark(family: Row, outliers: Sequence[Row]) -> str:
    """How the scale chart marks a family: as the outlier kernel it is alone, as a family
    flagged as a whole, or not at all."""
    if _same(family, *outliers):
        return "outlier"
    return "family" if family.is_outlier else ""


def _article(word: str) -> str:
    return "an" if word.startswith("NVTX") else "a"  # "an NVTX range", "a family", "a CUDA graph"


def _same(family: Row | None, *kernels: Row) -> bool:
    """Whether a family's row is one of ``kernels`` by its figures (a one-kernel family)."""
    if family is None:
        return False
    return any(k.family == family.name and k.ratio == family.ratio and k.delta_ns == family.delta_ns for k in kernels)


_NICE = (0.05, 0.1, 0.2, 0.3, 0.5, 0.7, 1, 1.5, 2, 3, 5, 7, 10, 20, 30, 50, 100)


def _ratio_ticks(ax: Axes, low: float, high: float) -> None:
    """Ratio ticks a reader can read on a log axis: ``0.5x``, ``1x``, ``2x``, never ``10^0``."""
    from matplotlib.ticker import FixedLocator, FuncFormatter, NullFormatter, NullLocator

    ticks = [t for t in _NICE if low <= t <= high] or [low, high]
    if len(ticks) > 9:
        ticks = ticks[:: math.ceil(len(ticks) / 9)]
    ax.xaxis.set_major_locator(FixedLocator(ticks))
    ax.xaxis.set_major_formatter(FuncFormatter(lambda x, _: f"{x:g}x"))
    ax.xaxis.set_minor_locator(NullLocator())
    ax.xaxis.set_minor_formatter(NullFormatter())


# --- several runs per side --------------------------------------------------------------------


def forest(diff: Diff, named: Mapping[str, str]) -> Chart | None:
    """The keys judged across runs: each ratio with its interval, the scale as a line."""
    r = diff.runs
    if r is None or not r.intervals:
        return None
    items = [k for k in r.keys if k.total.ci_low is not None and k.total.ci_high is not None]
    items.sort(key=lambda k: -abs(math.log(k.total.ratio)) if k.total.ratio > 0 else 0)
    items = items[:30]
    if not items:
        return None
    with plot("forest", "Intervals across runs", 7.5, 1.0 + 0.26 * len(items)) as (ax, chart):
        ax.set_xscale("log")
        for y, k in enumerate(items):
            c = k.total
            lo, hi = c.ci_low or c.ratio, c.ci_high or c.ratio
            colour = NEUTRAL if c.verdict is not RunVerdict.CHANGED else WORSE if c.ratio > 1 else BETTER
            ax.plot([lo, hi], [y, y], color=colour, lw=1.6)
            ax.scatter([c.ratio], [y], color=colour, s=20, zorder=3)
        ax.axvline(1.0, color="black", lw=0.6, ls=":")
        if r.scale is not None:
            ax.axvline(r.scale.ratio, color=BASE, lw=1.0, label=f"scale {r.scale.ratio:.2f}x")
            ax.legend(loc="lower right", frameon=False, fontsize=8)
        ax.set_yticks(range(len(items)), [label(named.get(k.key, k.key)) + f"  ({k.kind.value})" for k in items])
        ax.invert_yaxis()
        _ratio_ticks(ax, *ax.get_xlim())
        ax.set_xlabel(f"total-time ratio with its {100 * r.confidence:g}% interval (log scale)")
        return chart(
            f"The {len(items)} keys that moved most across {r.base_runs} base and {r.cand_runs} candidate "
            "runs: each ratio with its interval; red slower, green faster, grey within the noise.",
        )


def run_points(diff: Diff) -> Chart | None:
    """The kernel time of every run, base beside candidate."""
    r = diff.runs
    if r is None or r.kernel_time is None:
        return None
    k = r.kernel_time
    with plot("runs", "Kernel time of every run", 5.0, 2.6) as (ax, chart):
        for x, values, colour in ((0, k.base_values, BASE), (1, k.cand_values, CANDIDATE)):
            n = len(values)
            xs = [x + (j - (n - 1) / 2) * 0.04 for j in range(n)]
            ax.scatter(xs, [v / 1e6 for v in values], color=colour, s=22, zorder=3)
            if values:
                mid = sorted(values)[n // 2]
                ax.plot([x - 0.2, x + 0.2], [mid / 1e6] * 2, color="black", lw=0.8)
        ax.set_xticks([0, 1], [f"base ({len(k.base_values)} runs)", f"candidate ({len(k.cand_values)} runs)"])
        ax.set_xlim(-0.6, 1.6)
        ax.set_ylabel("kernel time (ms)")
        return chart(
            "Each dot is one run; the line is the median run, whose figures the report shows.",
        )


# --- steps: the time per token ---------------------------------------------------------------

PART_COLOURS = {
    StepPart.COMPUTE: "#0072B2",
    StepPart.COMMUNICATION: "#56B4E9",
    StepPart.COPIES: "#009E73",
    StepPart.LAUNCH_BOUND: "#D55E00",
    StepPart.SYNC: "#CC79A7",
    StepPart.HOST: "#E69F00",
    StepPart.BETWEEN: "#999999",
}


def _time_unit(largest: float) -> tuple[str, float]:
    """The unit a time axis reads best in, and its nanoseconds."""
    return ("ms", 1e6) if largest >= 1e6 else ("us", 1e3) if largest >= 1e3 else ("ns", 1.0)


def step_parts(diff: Diff) -> Chart | None:
    """The mean time per step, base above candidate, each split exactly into its parts."""
    s = diff.steps
    if s is None or not s.base.steps or not s.candidate.steps:
        return None
    unit, div = _time_unit(max(s.base.period.mean, s.candidate.period.mean))
    with plot("steps", "Where each step's time goes", 7.5, 2.6) as (ax, chart):
        left = [0.0, 0.0]
        for p in StepPart:
            values = [s.candidate.part(p) / div, s.base.part(p) / div]
            if not any(values):
                continue
            ax.barh([0, 1], values, left=left, color=PART_COLOURS[p], label=PART_WORDS[p], height=0.6)
            left = [a + b for a, b in zip(left, values, strict=True)]
        for y, side in ((1, s.base), (0, s.candidate)):
            ax.text(side.period.mean / div, y, " " + u.ns(side.period.mean), va="center")
        ax.set_yticks([1, 0], [f"base ({side_steps(s.base.steps)})", f"candidate ({side_steps(s.candidate.steps)})"])
        ax.set_xlim(0, max(left) * 1.18)
        ax.set_xlabel(f"mean time per step of {label(s.name, 30)} ({unit})")
        legend_below(ax, 4)
        return chart(
            f"{u.ns(s.base.period.mean)} → {u.ns(s.candidate.period.mean)} per step: the mean period (a "
            "step's start to the next step's start), split exactly into what the GPU and the host were "
            "doing.",
        )


def side_steps(n: int) -> str:
    return f"{n:,} step" if n == 1 else f"{n:,} steps"


def step_series(diff: Diff) -> Chart | None:
    """Every step's period in order, base and candidate: warm-up, drift and tails show."""
    b, c = diff.base.steps, diff.candidate.steps
    if b is None or c is None or not b.steps or not c.steps:
        return None
    unit, div = _time_unit(max(x.period_ns for x in (*b.steps, *c.steps)))
    last = " (the last step's period is its range's duration: no step follows it)" if b.last_period_is_duration else ""
    with plot("series", "The steps in order", 7.5, 2.8) as (ax, chart):
        for steps, colour, name in ((b, BASE, "base"), (c, CANDIDATE, "candidate")):
            xs = [i + 1 + steps.skipped for i in range(len(steps.steps))]
            ax.plot(
                xs,
                [x.period_ns / div for x in steps.steps],
                color=colour,
                marker="o",
                ms=3,
                lw=1.2,
                label=f"{name} ({side_steps(len(steps.steps))})",
            )
        ax.set_ylim(bottom=0)
        ax.set_xlabel(f"step of {label(b.name, 30)}")
        ax.set_ylabel(f"period ({unit})")
        ax.legend(loc="lower right", frameon=False, fontsize=8)
        ax.grid(axis="y", color="#dddddd", lw=0.5)
        return chart(f"Each step's period, from its start to the next step's start{last}.")


def charts(diff: Diff, named: Mapping[str, str]) -> tuple[Chart, ...]:
    """Every chart that applies to ``diff``, in the order the report shows them."""
    made = (
        waterfall(diff),
        contributors(diff, named),
        scale_band(diff, named),
        step_parts(diff),
        step_series(diff),
        forest(diff, named),
        run_points(diff),
    )
    return tuple(c for c in made if c is not None)
