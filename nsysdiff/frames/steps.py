"""Steps as DataFrames: one row per step (its period split into parts, its host calls), and
one row per host-call family with the time per call across steps.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from nsysdiff.fingerprint.model import Fingerprint
from nsysdiff.fingerprint.steps import StepPart, Steps, StepSeries
from nsysdiff.frames.columns import COUNT, NS, RATIO, TEXT, expect, frame
from nsysdiff.trace.records import HostFamily

if TYPE_CHECKING:  # pandas loads when a frame is made (frames.columns.frame)
    import pandas as pd

# What a fingerprint without steps shows: the same columns, no rows.
NO_STEPS = Steps(name="", domain="", steps=StepSeries(), call_times=())

_PART_COLUMN = {
    StepPart.COMPUTE: "Compute (ns)",
    StepPart.COMMUNICATION: "Communication (ns)",
    StepPart.COPIES: "Copies (ns)",
    StepPart.LAUNCH_BOUND: "Launch-bound (ns)",
    StepPart.SYNC: "Sync (ns)",
    StepPart.HOST: "Host (ns)",
    StepPart.BETWEEN: "Between (ns)",
}


def _steps(s: Steps) -> pd.DataFrame:
    """One row per step, in order: the parts of its period add up to ``Period (ns)``."""
    xs = s.steps
    cols: dict[str, tuple[str, Sequence[object]]] = {
        "Step": (COUNT, [s.skipped + i for i in range(len(xs))]),
        "Start (ns)": (NS, [x.start_ns for x in xs]),
        "Duration (ns)": (NS, [x.duration_ns for x in xs]),
        "Period (ns)": (NS, [x.period_ns for x in xs]),
        "Kernel Time (ns)": (NS, [x.kernel_ns for x in xs]),
    }
    for part, column in _PART_COLUMN.items():
        cols[column] = (NS, [x.parts.of(part) for x in xs])
    for family in HostFamily:
        cols[f"{family.value} Calls"] = (COUNT, [x.calls_of(family).calls for x in xs])
        cols[f"{family.value} Time (ns)"] = (NS, [x.calls_of(family).total_ns for x in xs])
        if family.value.startswith("copy_"):
            cols[f"{family.value} Bytes"] = (COUNT, [x.calls_of(family).bytes for x in xs])
    return frame(cols)


def _call_times(s: Steps) -> pd.DataFrame:
    """One row per host-call family: calls, bytes and the time per call across every step."""
    ts = s.call_times
    return frame(
        {
            "Family": (TEXT, [t.family.value for t in ts]),
            "Num Calls": (COUNT, [t.calls for t in ts]),
            "Total (bytes)": (COUNT, [t.bytes for t in ts]),
            "Total Time (ns)": (NS, [t.total_ns for t in ts]),
            "Avg (ns)": (NS, [round(t.mean_ns) for t in ts]),
            "Med (ns)": (NS, [t.p50_ns for t in ts]),
            "P90 (ns)": (NS, [t.p90_ns for t in ts]),
            "P99 (ns)": (NS, [t.p99_ns for t in ts]),
            "Max (ns)": (NS, [t.max_ns for t in ts]),
            "Calls per Step": (RATIO, [t.calls / len(s.steps) if s.steps else None for t in ts]),
        }
    )


def steps_frame(fp: Fingerprint) -> pd.DataFrame:
    """One row per step of a fingerprint read ``--per NAME``: its period split into parts,
    its host calls per family. Empty, with the same columns, when it has no steps."""
    expect(fp, Fingerprint, "steps_frame")
    return _steps(fp.steps if fp.steps is not None else NO_STEPS)


def step_calls_frame(fp: Fingerprint) -> pd.DataFrame:
    """One row per host-call family across the steps: calls, bytes, time per call and tail."""
    expect(fp, Fingerprint, "step_calls_frame")
    return _call_times(fp.steps if fp.steps is not None else NO_STEPS)
