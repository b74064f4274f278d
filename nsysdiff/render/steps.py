"""The Steps section shared by every format: the time per step, where it went, host calls per step.

The first lines (every format's first screen, whenever both sides have steps):

- ``time per step 27.9 ms → 55.8 ms (2.00x): +27.9 ms between steps, kernels unchanged``:
  the mean period and the parts that moved it (exact: the parts add up to the change);
- ``+1 D2H copy and +1 sync call per step``: the host calls per step that changed (exact
  counts), else the tail when a side has a systematic one.
"""

from __future__ import annotations

import math
from typing import Any

from nsysdiff import units as u
from nsysdiff.compare.steps import TAIL_RATIO, FamilyChange, StepsDiff, StepSide
from nsysdiff.fingerprint.model import to_data
from nsysdiff.fingerprint.steps import StepPart
from nsysdiff.trace.records import HostFamily

PART_WORDS = {
    StepPart.COMPUTE: "compute",
    StepPart.COMMUNICATION: "communication",
    StepPart.COPIES: "GPU copies",
    StepPart.LAUNCH_BOUND: "launch-bound",
    StepPart.SYNC: "blocked in sync",
    StepPart.HOST: "other host time",
    StepPart.BETWEEN: "between steps",
}

FAMILY_WORDS = {
    HostFamily.LAUNCH: ("launch", "launches"),
    HostFamily.SYNC: ("sync call", "sync calls"),
    HostFamily.COPY_H2D: ("H2D copy", "H2D copies"),
    HostFamily.COPY_D2H: ("D2H copy", "D2H copies"),
    HostFamily.COPY_D2D: ("D2D copy", "D2D copies"),
    HostFamily.ALLOC: ("alloc/free call", "alloc/free calls"),
}

# A time per call that moved by this ratio either way is named on the first screen.
CALL_TIME_SHOWN = 1.25

STAT_HEADER = ("", "mean", "p50", "p90", "p99", "max")
PART_HEADER = ("part", "base", "candidate", "Δ")
FAMILY_HEADER = ("host calls", "calls/step", "Δ", "per call (mean)", "ratio", "bytes/step")


def count(x: float) -> str:
    """A per-step count: exact integers as integers, else two decimals."""
    return f"{x:,.0f}" if abs(x - round(x)) < 1e-9 else f"{x:,.2f}"


def signed_count(x: float) -> str:
    return ("+" if x > 0 else "-") + count(abs(x))


def family_word(family: HostFamily, n: float) -> str:
    one, many = FAMILY_WORDS[family]
    return one if abs(n) == 1 else many


def period_line(sd: StepsDiff) -> str:
    """``time per step 27.88 ms → 55.76 ms (2.00x): +27.88 ms between steps, kernels unchanged``."""
    b, c = sd.base.period.mean, sd.candidate.period.mean
    head = f"time per step {u.ns(b)} → {u.ns(c)} ({u.ratio(sd.ratio())})"
    moved = [f"{u.signed_ns(p.delta_ns)} {PART_WORDS[p.part]}" for p in sd.material()[:3]]
    compute_moved = any(p.part is StepPart.COMPUTE for p in sd.material())
    if sd.kernels_unchanged and not compute_moved:
        moved.append("kernels unchanged")
    elif sd.kernel_ratio is not None and not compute_moved:
        moved.append(f"kernel time per step {u.ratio(sd.kernel_ratio)}")
    return head + (": " + ", ".join(moved) if moved else ": no part moved materially")


def counts_phrase(changes: tuple[FamilyChange, ...]) -> str | None:
    """``+1 D2H copy and +1 sync call per step`` (exact counts), None when none changed."""
    if not changes:
        return None
    items = [f"{signed_count(f.delta_calls)} {family_word(f.family, f.delta_calls)}" for f in changes]
    joined = items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]
    return joined + " per step"


def tail_phrase(s: StepSide) -> str:
    t = s.tail
    word = " (systematic tail)" if s.systematic_tail else ""
    return f"p50 {u.ns(s.period.p50)}, p99 {u.ns(s.period.p99)}, max {u.ns(s.period.max)}; p99/p50 {u.ratio(t)}{word}"


def call_time_phrase(sd: StepsDiff) -> str | None:
    """``launch calls 8.05 us → 18.05 us each (2.24x)``: families of at least one call per
    step whose mean time per call moved beyond :data:`CALL_TIME_SHOWN` either way."""
    moved = [
        f
        for f in sd.families
        if f.mean_ratio is not None
        and min(f.base_calls, f.candidate_calls) >= 1
        and abs(math.log(f.mean_ratio)) >= math.log(CALL_TIME_SHOWN)
    ]
    if not moved:
        return None
    return ", ".join(
        f"{FAMILY_WORDS[f.family][0]} calls {u.ns(f.base_mean_ns)} → {u.ns(f.candidate_mean_ns)} each "
        f"({u.ratio(f.mean_ratio)})"
        for f in moved
    )


def first_lines(sd: StepsDiff) -> list[str]:
    """The step lines of a report's first screen."""
    lines = [period_line(sd)]
    counts = counts_phrase(sd.count_changes()) or "host calls per step unchanged (" + _launches(sd) + ")"
    slower = call_time_phrase(sd)
    lines.append(counts + ("; " + slower if slower else ""))
    for name, s in (("base", sd.base), ("candidate", sd.candidate)):
        if s.systematic_tail:
            lines.append(f"{name} tail: {tail_phrase(s)} > {TAIL_RATIO:g}x")
    return lines


def _launches(sd: StepsDiff) -> str:
    f = sd.family(HostFamily.LAUNCH)
    return f"{count(f.base_calls)} {family_word(HostFamily.LAUNCH, f.base_calls)} per step" if f else "no launches"


def verdict_phrase(sd: StepsDiff) -> str:
    """What the verdict line says of the steps: ``time per decode_step 27.88 ms → 55.76 ms (2.00x)``."""
    return f"time per {sd.name} {u.ns(sd.base.period.mean)} → {u.ns(sd.candidate.period.mean)} ({u.ratio(sd.ratio())})"


def stat_rows(sd: StepsDiff) -> list[list[str]]:
    """Period and range duration, base and candidate, across steps."""
    rows = []
    for what, label in (("period", "period"), ("duration", "range")):
        for name, s in (("base", sd.base), ("candidate", sd.candidate)):
            d = getattr(s, what)
            rows.append([f"{label} {name}", *(u.ns(d.of(st)) for st in ("mean", "p50", "p90", "p99", "max"))])
        rows.append([f"{label} ratio", *(u.ratio(sd.ratio(what, st)) for st in ("mean", "p50", "p90", "p99", "max"))])
    return rows


def part_rows(sd: StepsDiff) -> list[list[str]]:
    """Each part's mean per step; the last row is the period, the sum of the rows above."""
    rows = [[PART_WORDS[p.part], u.ns(p.base_ns), u.ns(p.candidate_ns), u.signed_ns(p.delta_ns)] for p in sd.parts]
    rows.append(["time per step", u.ns(sd.base.period.mean), u.ns(sd.candidate.period.mean), u.signed_ns(sd.delta_ns)])
    return rows


def family_rows(sd: StepsDiff) -> list[list[str]]:
    rows = []
    for f in sd.families:
        copies = f.family in (HostFamily.COPY_H2D, HostFamily.COPY_D2H, HostFamily.COPY_D2D)
        rows.append(
            [
                FAMILY_WORDS[f.family][1],
                f"{count(f.base_calls)} → {count(f.candidate_calls)}",
                signed_count(f.delta_calls) if f.delta_calls else "0",
                f"{u.ns(f.base_mean_ns)} → {u.ns(f.candidate_mean_ns)}",
                u.ratio(f.mean_ratio),
                f"{u.nbytes(f.base_bytes)} → {u.nbytes(f.candidate_bytes)}" if copies else "",
            ]
        )
    return rows


def title(sd: StepsDiff) -> str:
    return f"Steps of {sd.name}: {sd.base.steps:,} → {sd.candidate.steps:,}"


METHOD = (
    "Time per step = the mean period (a step's start to the next step's start: the whole "
    "run's time over its steps); its parts' means add up to it exactly, so the change is "
    "attributed exactly. Calls per step are exact counts; times per call are noisy."
)


# --- machine-readable ------------------------------------------------------------------


def _dist(s: StepSide, what: str) -> dict[str, float]:
    d = getattr(s, what)
    return {st: d.of(st) for st in ("mean", "p50", "p90", "p99", "max")}


def _side_data(s: StepSide) -> dict[str, Any]:
    return {
        "steps": s.steps,
        "period_ns": _dist(s, "period"),
        "duration_ns": _dist(s, "duration"),
        "tail": s.tail,
        "systematic_tail": s.systematic_tail,
        "period_total_ns": s.period_total_ns,
        "part_totals_ns": {p.value: s.part_totals[i] for i, p in enumerate(StepPart)},
        "kernel_total_ns": s.kernel_total_ns,
        "calls": {
            f.value: {"calls": s.calls[i], "total_ns": s.call_ns[i], "bytes": s.bytes[i]}
            for i, f in enumerate(HostFamily)
        },
        "call_times": [to_data(t) for t in s.call_times],
    }


def data(sd: StepsDiff) -> dict[str, Any]:
    """The Steps section as JSON data (docs/json.md)."""
    return {
        "name": sd.name,
        "base": _side_data(sd.base),
        "candidate": _side_data(sd.candidate),
        "period_ratio": {st: sd.ratio("period", st) for st in ("mean", "p50", "p90", "p99", "max")},
        "duration_ratio": {st: sd.ratio("duration", st) for st in ("mean", "p50", "p90", "p99", "max")},
        "delta_ns": sd.delta_ns,
        "parts": [
            {"part": p.part.value, "base_ns": p.base_ns, "candidate_ns": p.candidate_ns, "delta_ns": p.delta_ns}
            for p in sd.parts
        ],
        "kernel_ratio": sd.kernel_ratio,
        "kernels_unchanged": sd.kernels_unchanged,
        "families": [
            {
                "family": f.family.value,
                "base_calls_per_step": f.base_calls,
                "candidate_calls_per_step": f.candidate_calls,
                "delta_calls_per_step": f.delta_calls,
                "base_mean_ns": f.base_mean_ns,
                "candidate_mean_ns": f.candidate_mean_ns,
                "mean_ratio": f.mean_ratio,
                "base_bytes_per_step": f.base_bytes,
                "candidate_bytes_per_step": f.candidate_bytes,
            }
            for f in sd.families
        ],
        "first_lines": first_lines(sd),
        "method": METHOD,
    }


CSV_HEADER = ("Section", "Item", "Base", "Candidate", "Delta", "Ratio")


def csv_rows(sd: StepsDiff) -> list[tuple[str, str, float | None, float | None, float | None, float | None]]:
    """One row per figure: period and range statistics, parts, host calls per family."""
    rows: list[tuple[str, str, float | None, float | None, float | None, float | None]] = []
    for what in ("period", "duration"):
        for st in ("mean", "p50", "p90", "p99", "max"):
            b, c = getattr(sd.base, what).of(st), getattr(sd.candidate, what).of(st)
            rows.append((f"{what} (ns)", st, b, c, c - b, sd.ratio(what, st)))
    for p in sd.parts:
        r = p.candidate_ns / p.base_ns if p.base_ns else None
        rows.append(("part per step (ns)", p.part.value, p.base_ns, p.candidate_ns, p.delta_ns, r))
    for f in sd.families:
        r = f.candidate_calls / f.base_calls if f.base_calls else None
        rows.append(("calls per step", f.family.value, f.base_calls, f.candidate_calls, f.delta_calls, r))
        b, c = f.base_mean_ns, f.candidate_mean_ns
        rows.append(("time per call (ns)", f.family.value, b, c, c - b if b and c else None, f.mean_ratio))
    return rows
