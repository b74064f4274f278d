"""The history dashboard: a static site (``nsysdiff history report STORE -o site/``) with an
index of a ref's change points and keys, and a page per key with its series, change
points and commits. Plain files, served from anywhere (GitHub Pages included), fetching
nothing: each page is a template with the HTML report's policy, style and script
(:mod:`nsysdiff.render.page`), and its chart is inline SVG (:mod:`nsysdiff.render.charts`).

Keys, commits and refs come from other jobs: the templates escape every one, and a key's
file name is made of its letters and digits and a hash, never of the key as it is.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from pathlib import PurePath

from nsysdiff import units as u
from nsysdiff.history.changes import FALSE_ALARM, Drift, Step
from nsysdiff.history.dashboard import Dashboard
from nsysdiff.history.trend import Trend
from nsysdiff.render import charts, page, series_svg
from nsysdiff.render.page import Cell, Column, Table, code, link, num, td
from nsysdiff.safe import neutral

SHA = 10  # characters of a commit shown
TICKS = 12  # commit labels on a chart's axis at most
COMMIT_ROWS = 100  # commits listed on a key's page, the newest (the chart shows every one)


def key_file(kind: str, key: str) -> str:
    """A key's page: letters, digits and dashes from its name, and a hash that keeps
    different keys apart (``kernel-nvjet-sm90-tst-...-1a2b3c4d5e.html``)."""
    slug = re.sub(r"[^A-Za-z0-9]+", "-", key).strip("-")[:48] or "key"
    digest = hashlib.sha256(f"{kind}\0{key}".encode()).hexdigest()[:10]
    return f"{re.sub(r'[^a-z]', '', kind)}-{slug}-{digest}.html"


def pages(d: Dashboard) -> dict[str, str]:
    """Every page of the site by file name: ``index.html`` and one per key."""
    page.require()
    d = neutral.scrub(d, neutral.text)
    out = {"index.html": _index(d)}
    for t in d.trends:
        steps = [s for s in d.changes.steps if (s.kind, s.key) == (t.kind, t.key)]
        drifts = [x for x in d.changes.drifts if (x.kind, x.key) == (t.kind, t.key)]
        out[key_file(t.kind, t.key)] = _key_page(d, t, steps, drifts)
    return out


def _sha(commit: str) -> str:
    return commit[:SHA]


def _link(kind: str, key: str, known: set[tuple[str, str]], label: str = "") -> Cell:
    """A key by its label (a kernel's short label), linking to its page where it has one."""
    text = label or key
    return link(key_file(kind, key), text, key) if (kind, key) in known else code(text, key)


def _interval(ratio: float, low: float | None, high: float | None) -> str:
    return u.ratio(ratio) if low is None or high is None else f"{u.ratio(ratio)} [{low:.3f}, {high:.3f}]"


def _index(d: Dashboard) -> str:
    c = d.changes
    known = {(t.kind, t.key) for t in d.trends}
    about = [
        ("store", PurePath(d.store).name),
        (
            "scanned",
            f"{len(c.commits):,} commits, {c.runs:,} runs, {c.keys:,} keys ({c.structural:,} not in every "
            "run: structural, not scanned, listed below)",
        ),
        ("found", f"{len(c.steps):,} change points, {len(c.drifts):,} drifts"),
        (
            "method",
            f"Apache Otava's E-Divisive over windows of {c.window} commits, a step kept under p = "
            f"{c.max_pvalue:g}; about {100 * FALSE_ALARM:.3f}% of steady keys get a false change point "
            "(docs/history.md)",
        ),
    ]
    # The "back to" column only where a step returns to an earlier level: else it is empty.
    returns = any(s.returns_to for s in c.steps)
    steps = [
        (
            "",
            [
                td(s.kind),
                _link(s.kind, s.key, known, s.label),
                code(_sha(s.commit), s.commit, "nowrap"),
                num(s.before_ns, u.ns(s.before_ns)),
                num(s.after_ns, u.ns(s.after_ns)),
                num(s.ratio, _interval(s.ratio, s.ci_low, s.ci_high)),
                num(s.p_value, u.pvalue(s.p_value)),
                *([td(f"back to {_sha(s.returns_to)}" if s.returns_to else "")] if returns else []),
            ],
        )
        for s in c.steps
    ]
    structures = [
        (
            "",
            [
                td(x.change if x.commit is not None else "comes and goes"),
                code(_sha(x.commit), x.commit, "nowrap") if x.commit is not None else td(""),
                td(x.kind),
                _link(x.kind, x.key, known, x.label),
                num(x.commits, f"{x.commits:,}"),
            ],
        )
        for x in c.structures
    ]
    drifts = [
        (
            "",
            [
                td(x.kind),
                _link(x.kind, x.key, known, x.label),
                td(f"{_sha(x.first_commit)} … {_sha(x.last_commit)}", "nowrap"),
                num(x.per_commit, _interval(x.per_commit, x.ci_low, x.ci_high)),
                num(x.overall, u.ratio(x.overall)),
            ],
        )
        for x in c.drifts
    ]
    keys = []
    for t in d.trends:
        first, newest = t.points[0], t.points[-1]
        n = sum((s.kind, s.key) == (t.kind, t.key) for s in c.steps)
        drifting = any((x.kind, x.key) == (t.kind, t.key) for x in c.drifts)
        cells = [
            td(t.kind),
            _link(t.kind, t.key, known, t.label),
            num(first.total_ns, u.ns(first.total_ns)),
            num(newest.total_ns, u.ns(newest.total_ns)),
            num(newest.total_ns / first.total_ns, u.ratio(newest.total_ns / first.total_ns)),
            num(len(t.points), f"{len(t.points):,}"),
            num(n, f"{n}, drifting" if drifting else str(n)),
        ]
        keys.append(("", cells))
    return page.render(
        "history_index.html",
        title=f"nsysdiff history: {d.ref}",
        ref=d.ref,
        about=about,
        steps=Table("steps", _STEP_COLUMNS[: len(_STEP_COLUMNS) - (not returns)], steps, "change points")
        if steps
        else None,
        structures=Table("structures", _STRUCTURE_COLUMNS, structures, "structural changes") if structures else None,
        drifts=Table("drifts", _DRIFT_COLUMNS, drifts, "drifts") if drifts else None,
        keys=Table("keys", _KEY_COLUMNS, keys, "keys"),
    )


_STEP_COLUMNS = (
    Column("kind"),
    Column("key"),
    Column("commit"),
    Column("before"),
    Column("after"),
    Column("ratio [95%]"),
    Column("p"),
    Column("returns"),
)
_STRUCTURE_COLUMNS = (
    Column("change"),
    Column("commit"),
    Column("kind"),
    Column("key"),
    Column("commits with it"),
)
_DRIFT_COLUMNS = (
    Column("kind"),
    Column("key"),
    Column("commits"),
    Column("per commit [95%]"),
    Column("overall"),
)
_KEY_COLUMNS = (
    Column("kind"),
    Column("key"),
    Column("first"),
    Column("newest"),
    Column("ratio"),
    Column("commits"),
    Column("change points"),
)
_COMMIT_COLUMNS = (
    Column("commit"),
    Column("runs"),
    Column("total (geometric mean)"),
    Column("fastest"),
    Column("slowest"),
    Column("calls"),
    Column("gate"),
)


def _key_page(d: Dashboard, t: Trend, steps: Sequence[Step], drifts: Sequence[Drift]) -> str:
    parts = [f"{len(t.points):,} commits on {d.ref}"]
    if t.missing:
        parts.append(f"{t.missing:,} without this key")
    parts += [
        f"step at {_sha(s.commit)}: {_interval(s.ratio, s.ci_low, s.ci_high)} (p {u.pvalue(s.p_value)})" for s in steps
    ]
    parts += [
        f"drift {_interval(x.per_commit, x.ci_low, x.ci_high)} per commit, {u.ratio(x.overall)} overall" for x in drifts
    ]
    stepped = {s.commit for s in steps}
    # A table row costs more than the chart's point: a long history's page lists its newest
    # commits and each change point's, and the chart draws them all.
    newest = {p.commit for p in t.points[-COMMIT_ROWS:]}
    listed = [p for p in reversed(t.points) if p.commit in newest or p.commit in stepped]
    heading = "Commits, newest first"
    if len(listed) < len(t.points):
        heading = f"The newest {len(newest):,} of {len(t.points):,} commits and the change points, newest first"
    rows = [
        (
            "outlier" if p.commit in stepped else "",
            [
                code(_sha(p.commit), p.commit, "nowrap"),
                num(p.runs, str(p.runs)),
                num(p.total_ns, u.ns(p.total_ns)),
                num(p.low_ns, u.ns(p.low_ns)),
                num(p.high_ns, u.ns(p.high_ns)),
                num(p.calls, f"{p.calls:,}"),
                td(f"{p.failed} failed" if p.failed else ""),
            ],
        )
        for p in listed
    ]
    return page.render(
        "history_key.html",
        title=f"nsysdiff history: {d.ref}: {u.shorten(t.label or t.key)}",
        kind=t.kind,
        key=t.label or t.key,
        signature=t.key if t.label and t.label != t.key else "",
        summary="; ".join(parts),
        chart=_trend_chart(t, steps, drifts),
        commits=Table("commits", _COMMIT_COLUMNS, rows, "commits"),
        commits_heading=heading,
    )


def _trend_chart(t: Trend, steps: Sequence[Step], drifts: Sequence[Drift]) -> charts.Chart:
    pts = t.points
    largest = max(p.high_ns for p in pts)
    unit, div = ("ms", 1e6) if largest >= 1e6 else ("us", 1e3) if largest >= 1e3 else ("ns", 1.0)
    index = {p.commit: i for i, p in enumerate(pts)}
    every = max(1, -(-len(pts) // TICKS))
    svg = series_svg.render(
        series_svg.Series(
            title=f"{t.kind} {charts.label(t.label or t.key)}",
            low=[p.low_ns / div for p in pts],
            mid=[p.total_ns / div for p in pts],
            high=[p.high_ns / div for p in pts],
            ticks=[(i, charts.label(p.commit[:7], 10)) for i, p in enumerate(pts)][::every],
            marks=[
                series_svg.Mark(
                    index[s.commit],
                    charts.WORSE if s.ratio > 1 else charts.BETTER,
                    f"{u.ratio(s.ratio)} at {_sha(s.commit)[:7]}",
                )
                for s in steps
                if s.commit in index
            ],
            y_label=f"total time ({unit})",
            x_label=f"commit on {charts.label(t.ref, 30)}, oldest first",
            band_label="fastest to slowest run",
            line_label="geometric mean of the runs",
            colour=charts.BASE,
        )
    )
    moved = f"; dashed: the {len(steps)} change point{'s' if len(steps) != 1 else ''}" if steps else ""
    drift = "; the series drifts" if drifts else ""
    return charts.Chart(
        "trend",
        "The series",
        svg,
        f"Total time per commit: the geometric mean of its runs, the shaded band from the fastest "
        f"to the slowest run{moved}{drift}.",
    )
