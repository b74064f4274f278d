"""A history store as DataFrames: one key's series, one row per commit, with the change
points found on it; and every step and drift of a scan, one row each.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from nsysdiff.frames.columns import COUNT, FLAG, NS, RATIO, TEXT, frame, ns, ratio
from nsysdiff.history.changes import Changes
from nsysdiff.history.trend import Trend

if TYPE_CHECKING:  # pandas loads when a frame is made (frames.columns.frame)
    import pandas as pd


def series(trend: Trend, changes: Changes | None = None) -> pd.DataFrame:
    """One row per commit of ``trend``, oldest first; with ``changes``, the commits where a
    step of this key starts carry its ratio, interval and p-value."""
    steps = {s.commit: s for s in (changes.steps if changes else ()) if s.key == trend.key and s.kind == trend.kind}
    ps = trend.points
    at = [steps.get(p.commit) for p in ps]
    return frame(
        {
            "Commit": (TEXT, [p.commit for p in ps]),
            "Runs": (COUNT, [p.runs for p in ps]),
            "Failed Runs": (COUNT, [p.failed for p in ps]),
            "Total Time (ns)": (NS, [ns(p.total_ns) for p in ps]),
            "Min Run (ns)": (NS, [p.low_ns for p in ps]),
            "Max Run (ns)": (NS, [p.high_ns for p in ps]),
            "Instances": (COUNT, [p.calls for p in ps]),
            "Avg (ns)": (NS, [ns(p.per_call_ns) for p in ps]),
            "Change Point": (FLAG, [s is not None for s in at]),
            "Step Ratio": (RATIO, [ratio(s.ratio) if s else None for s in at]),
            "Step CI Low": (RATIO, [ratio(s.ci_low) if s else None for s in at]),
            "Step CI High": (RATIO, [ratio(s.ci_high) if s else None for s in at]),
            "Step P Value": (RATIO, [ratio(s.p_value) if s else None for s in at]),
        }
    )


def changes(c: Changes) -> pd.DataFrame:
    """Every step and drift of a scan: steps first (in commit order), then drifts."""
    rows = [
        ("step", s.kind, s.key, s.commit, s.before_commit, s.ratio, s.ci_low, s.ci_high, s.p_value, s.returns_to)
        for s in c.steps
    ] + [
        ("drift", d.kind, d.key, d.last_commit, d.first_commit, d.overall, None, None, d.p_value, None)
        for d in c.drifts
    ]
    per_commit = [None] * len(c.steps) + [d.per_commit for d in c.drifts]
    return frame(
        {
            "Change": (TEXT, [r[0] for r in rows]),
            "Kind": (TEXT, [r[1] for r in rows]),
            "Key": (TEXT, [r[2] for r in rows]),
            "Commit": (TEXT, [r[3] for r in rows]),
            "Since Commit": (TEXT, [r[4] for r in rows]),
            "Ratio": (RATIO, [ratio(r[5]) for r in rows]),
            "CI Low": (RATIO, [ratio(r[6]) for r in rows]),
            "CI High": (RATIO, [ratio(r[7]) for r in rows]),
            "P Value": (RATIO, [ratio(r[8]) for r in rows]),
            "Per Commit": (RATIO, [ratio(x) for x in per_commit]),
            "Returns To": (TEXT, [r[9] for r in rows]),
        }
    )
