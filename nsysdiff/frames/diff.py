"""A diff as DataFrames: one row per key with both sides, the ratios, the verdict and the
outlier score; the copies; the attribution of the change to count, per-call, new and
removed parts.

Columns are named as ``--format csv`` names them (docs/csv.md), so a frame and a CSV of
one diff line up column for column; the frames add the outlier score and deviation.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from nsysdiff.compare.attribution import Part
from nsysdiff.compare.diff import CopyDelta, CopySide, Diff, Row, Side
from nsysdiff.compare.labels import short_labels
from nsysdiff.frames.columns import COUNT, FLAG, NS, RATIO, TEXT, expect, frame, ns, ratio
from nsysdiff.rules.report import Report

if TYPE_CHECKING:  # pandas loads when a frame is made (frames.columns.frame)
    import pandas as pd

TABLES = ("kernels", "families", "categories", "nvtx", "sync", "api", "graphs")
_FIRST = {
    "kernels": "Demangled Name",
    "families": "Family",
    "categories": "Category",
    "nvtx": "Range",
    "sync": "Call",
    "api": "Call",
    "graphs": "Graph",
}


def _side(rows: Sequence[Row], which: str, per_step: bool) -> dict[str, tuple[str, Sequence[object]]]:
    sides: list[Side | None] = [getattr(r, which) for r in rows]
    label = "Base" if which == "base" else "Candidate"
    # Per step, a call count is an average (a fraction): the one column that may be a float.
    calls = [None if s is None else (float(s.calls) if per_step else int(s.calls)) for s in sides]
    return {
        f"{label} Total Time (ns)": (NS, [None if s is None else ns(s.total_ns) for s in sides]),
        f"{label} Instances": (RATIO if per_step else COUNT, calls),
        f"{label} Avg (ns)": (NS, [None if s is None else ns(s.mean_ns) for s in sides]),
    }


def diff_frame(d: Diff, table: str = "kernels") -> pd.DataFrame:
    """One row per key of one of the diff's tables (``TABLES``), in the report's order."""
    expect(d, Diff, "diff_frame")
    if table not in TABLES:
        raise ValueError(f"unknown table {table!r}: one of {', '.join(TABLES)}")
    rs: tuple[Row, ...] = getattr(d, table)
    names: dict[str, tuple[str, Sequence[object]]] = {_FIRST[table]: (TEXT, [r.key for r in rs])}
    if table == "kernels":
        # The CSV's and the text's label: a short name told apart from its namesakes.
        label = short_labels((r.key, r.name) for r in rs)
        names = {
            "Name": (TEXT, [label[r.key] for r in rs]),
            **names,
            "Category": (TEXT, [r.category for r in rs]),
            "Family": (TEXT, [r.family for r in rs]),
        }
    return frame(
        {
            **names,
            **_side(rs, "base", d.per_step),
            **_side(rs, "candidate", d.per_step),
            "Delta (ns)": (NS, [ns(r.delta_ns) for r in rs]),
            "Ratio": (RATIO, [ratio(r.ratio) for r in rs]),
            "Calls Ratio": (RATIO, [ratio(r.calls_ratio) for r in rs]),
            "Avg Ratio": (RATIO, [ratio(r.mean_ratio) for r in rs]),
            "Count Effect (ns)": (NS, [ns(r.count_effect_ns) for r in rs]),
            "Per-call Effect (ns)": (NS, [ns(r.per_call_effect_ns) for r in rs]),
            "Resized Effect (ns)": (NS, [ns(r.resized_ns) for r in rs]),
            "Verdict": (TEXT, ["outlier" if r.is_outlier else r.verdict.value for r in rs]),
            "Outlier": (FLAG, [r.is_outlier for r in rs]),
            "Outlier Score": (RATIO, [ratio(r.outlier_score) for r in rs]),
            "Deviation": (RATIO, [ratio(r.deviation) for r in rs]),
        }
    )


def _copy_col(xs: Sequence[CopyDelta], which: str, field: str) -> list[float | None]:
    sides: list[CopySide | None] = [getattr(x, which) for x in xs]
    return [None if s is None else getattr(s, field) for s in sides]


def diff_copies_frame(d: Diff) -> pd.DataFrame:
    """One row per memory operation kind (memcpy kinds, then ``memset``)."""
    expect(d, Diff, "diff_copies_frame")
    xs = (*d.memcpy, *d.memset)
    as_int = COUNT if not d.per_step else RATIO
    return frame(
        {
            "Operation": (TEXT, [x.kind for x in xs]),
            "Base Count": (as_int, _copy_col(xs, "base", "ops")),
            "Candidate Count": (as_int, _copy_col(xs, "candidate", "ops")),
            "Base Total (bytes)": (as_int, _copy_col(xs, "base", "bytes")),
            "Candidate Total (bytes)": (as_int, _copy_col(xs, "candidate", "bytes")),
            "Base Total Time (ns)": (NS, [ns(v) for v in _copy_col(xs, "base", "total_ns")]),
            "Candidate Total Time (ns)": (NS, [ns(v) for v in _copy_col(xs, "candidate", "total_ns")]),
            "Ratio": (RATIO, [ratio(x.ratio) for x in xs]),
            "Count Ratio": (RATIO, [ratio(x.ops_ratio) for x in xs]),
            "Bytes Ratio": (RATIO, [ratio(x.bytes_ratio) for x in xs]),
            "Verdict": (TEXT, [x.verdict.value for x in xs]),
        }
    )


def attribution_frame(d: Diff, by: str = "kernels") -> pd.DataFrame:
    """The change split exactly into count, per-call, resized, new and removed parts, per kernel,
    family, category or phase (``by``); per kernel, the parts of all rows add up to the
    total change (``Diff.attribution.delta_ns``)."""
    expect(d, Diff, "attribution_frame")
    parts: tuple[Part, ...] = getattr(d.attribution, by)
    first = {"kernels": "Demangled Name", "families": "Family", "categories": "Category", "phases": "Phase"}[by]
    names: dict[str, tuple[str, Sequence[object]]] = {first: (TEXT, [p.key for p in parts])}
    if by == "kernels":
        short = short_labels((r.key, r.name) for r in d.kernels)
        names = {"Name": (TEXT, [short.get(p.key, p.key) for p in parts]), **names}
    return frame(
        {
            **names,
            "Delta (ns)": (NS, [ns(p.effects.total_ns) for p in parts]),
            "Count Effect (ns)": (NS, [ns(p.effects.count_ns) for p in parts]),
            "Per-call Effect (ns)": (NS, [ns(p.effects.per_call_ns) for p in parts]),
            "Resized (ns)": (NS, [ns(p.effects.resized_ns) for p in parts]),
            "New (ns)": (NS, [ns(p.effects.new_ns) for p in parts]),
            "Removed (ns)": (NS, [ns(p.effects.removed_ns) for p in parts]),
        }
    )


def findings_frame(report: Report) -> pd.DataFrame:
    """One row per finding, in the report's order (errors first), as ``--format csv``'s findings."""
    expect(report, Report, "findings_frame")
    fs = report.findings
    failing = set(report.failed)
    return frame(
        {
            "Level": (TEXT, [f.level.value for f in fs]),
            "Rule": (TEXT, [f.rule_id for f in fs]),
            "Kind": (TEXT, [f.kind for f in fs]),
            "Subject": (TEXT, [f.subject for f in fs]),
            "Observed": (TEXT, [f.observed for f in fs]),
            "Limit": (TEXT, [f.limit for f in fs]),
            "Evidence": (TEXT, [f.evidence for f in fs]),
            "Waived": (FLAG, [f.waived for f in fs]),
            "Fails": (FLAG, [f in failing for f in fs]),
        }
    )
