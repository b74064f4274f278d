"""Several runs per side as DataFrames: per key and measure, the ratio with its interval,
p- and q-value and verdict; and every run's value in long form, for plots of the points.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from nsysdiff.compare.diff import Diff
from nsysdiff.fingerprint.runset import Measure
from nsysdiff.frames.columns import COUNT, NS, RATIO, TEXT, expect, frame, ns, ratio

if TYPE_CHECKING:  # pandas loads when a frame is made (frames.columns.frame)
    import pandas as pd


def runs_frame(d: Diff) -> pd.DataFrame:
    """One row per (kind, key, measure) tested across runs (empty with one run per side)."""
    expect(d, Diff, "runs_frame")
    keys = d.runs.keys if d.runs else ()
    rows = [(k.kind.value, k.key, m.value, c) for k in keys for m, c in k.measures]
    return frame(
        {
            "Kind": (TEXT, [r[0] for r in rows]),
            "Key": (TEXT, [r[1] for r in rows]),
            "Measure": (TEXT, [r[2] for r in rows]),
            "Base Runs": (COUNT, [len(r[3].base_values) for r in rows]),
            "Candidate Runs": (COUNT, [len(r[3].cand_values) for r in rows]),
            "Ratio": (RATIO, [ratio(r[3].ratio) for r in rows]),
            "Median Ratio": (RATIO, [ratio(r[3].median_ratio) for r in rows]),
            "CI Low": (RATIO, [ratio(r[3].ci_low) for r in rows]),
            "CI High": (RATIO, [ratio(r[3].ci_high) for r in rows]),
            "P Value": (RATIO, [ratio(r[3].p_value) for r in rows]),
            "Q Value": (RATIO, [ratio(r[3].q_value) for r in rows]),
            "Verdict": (TEXT, [r[3].verdict.value for r in rows]),
        }
    )


def run_values_frame(d: Diff) -> pd.DataFrame:
    """Every run's value of every tested key and measure: one row per (key, measure, side, run)."""
    expect(d, Diff, "run_values_frame")
    keys = d.runs.keys if d.runs else ()
    out: list[tuple[str, str, str, str, int, float]] = []
    # A run's value is in its measure's unit: nanoseconds for the total and the per-call mean
    # (integers, as everywhere), a count for calls (an average per step may be a fraction).
    for k in keys:
        for m, c in k.measures:
            out += [(k.kind.value, k.key, m.value, "base", i, v) for i, v in enumerate(c.base_values)]
            out += [(k.kind.value, k.key, m.value, "candidate", i, v) for i, v in enumerate(c.cand_values)]
    return frame(
        {
            "Kind": (TEXT, [r[0] for r in out]),
            "Key": (TEXT, [r[1] for r in out]),
            "Measure": (TEXT, [r[2] for r in out]),
            "Side": (TEXT, [r[3] for r in out]),
            "Run": (COUNT, [r[4] for r in out]),
            "Value (ns)": (NS, [None if r[2] == Measure.CALLS.value else ns(r[5]) for r in out]),
            "Calls": (RATIO, [r[5] if r[2] == Measure.CALLS.value else None for r in out]),
        }
    )
