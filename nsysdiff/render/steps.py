"""The Steps section shared by every format: the time per step, where it went, host calls per step.

The first lines (every format's first screen, whenever both sides have steps):

- ``time per step 27.9 ms → 55.8 ms (2.00x): +27.9 ms between steps, kernels unchanged``:
  the mean period and the parts that moved it (exact: the parts add up to the change);
- ``+1 D2H copy and +1 sync call per step``: the host calls per step that changed (exact
  counts), else the tail when a side has a systematic one.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from typing import Any

from nsysdiff import units as u
from nsysdiff.compare.steps import TAIL_RATIO, Bound, FamilyChange, StepsDiff, StepSide
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


# A time per call that moved by this ratio either way is named on the first screen.
CALL_TIME_SHOWN = 1.25

STAT_HEADER = ("", "mean", "p50", "p90", "p99", "max")
PART_HEADER = ("part", "base", "candidate", "Δ")
FAMILY_HEADER = ("host calls", "calls/step", "Δ", "per call (mean)", "ratio", "bytes/step")


def count(x: float) -> str:
    """A per-step count: exact integers as integers, else two decimals."""
    return f"{x:,.0f}" if _whole(x) else f"{x:,.2f}"


def signed_count(x: float) -> str:
    return ("+" if x > 0 else "-") + count(abs(x))


def _whole(x: float) -> bool:
    return abs(x - round(x)) < 1e-9


def step_count(per_step: float, steps: int) -> str:
    """Calls per step as the exact count they are: ``680``, or ``21,759/32`` when the
    calls don't divide evenly over the steps (never a mean like ``679.97``)."""
    if _whole(per_step) or not steps:
        return count(per_step)
    return f"{round(per_step * steps):,}/{steps:,}"


def _spread_total(f: FamilyChange, sd: StepsDiff) -> int | None:
    """The change in calls over all steps, when it is not whole per step (and both sides
    have as many steps, so that a total over them means something); else None."""
    if _whole(f.delta_calls) or sd.base.steps != sd.candidate.steps:
        return None
    return round(f.delta_calls * sd.base.steps)


def _change_item(f: FamilyChange, sd: StepsDiff) -> tuple[str, bool]:
    """``+1 sync call`` (the same in every step), or ``+1 sync call in 32 steps``: the
    exact change in calls; the flag says whether it is whole per step."""
    total = _spread_total(f, sd)
    if total is None:
        return f"{signed_count(f.delta_calls)} {family_word(f.family, f.delta_calls)}", True
    return f"{signed_count(total)} {family_word(f.family, total)} in {sd.base.steps:,} steps", False


def _delta_cell(f: FamilyChange, sd: StepsDiff) -> str:
    """The calls/step column's change: ``+1``, or ``+1/32`` when not whole per step."""
    total = _spread_total(f, sd)
    if not f.delta_calls:
        return "0"
    return signed_count(f.delta_calls) if total is None else f"{signed_count(total)}/{sd.base.steps:,}"


def family_word(family: HostFamily, n: float) -> str:
    return family.noun if abs(n) == 1 else u.many(family.noun)


def period_line(sd: StepsDiff) -> str:
    """``time per step 27.88 ms → 55.76 ms (2.00x): +27.88 ms between steps, kernels unchanged``."""
    b, c = sd.base.time_per_step, sd.candidate.time_per_step
    head = f"time per step {u.ns(b)} → {u.ns(c)} ({u.ratio(sd.time_ratio)})"
    if sd.base.gpu_ahead or sd.candidate.gpu_ahead:
        # The parts split the host period; the GPU's period is what the user waits for.
        head += f", GPU period (host period {u.ns(sd.base.period.mean)} → {u.ns(sd.candidate.period.mean)})"
    shown = sd.material()[:3]
    moved = [f"{u.signed_ns(p.delta_ns)} {PART_WORDS[p.part]}" for p in shown]
    # The parts add up to the period's change: what the named parts leave is said too, so
    # the line adds up (+3.83 ms = +2.59 ms host + 0.75 ms compute + 0.49 ms other parts).
    rest = sum(p.delta_ns for p in sd.parts) - sum(p.delta_ns for p in shown)
    if shown and abs(rest) >= 0.001 * sd.base.period.mean:  # under 0.1% of a step is rounding
        moved.append(f"{u.signed_ns(rest)} other parts")
    compute_moved = any(p.part is StepPart.COMPUTE for p in sd.material())
    if sd.kernels_unchanged and not compute_moved:
        moved.append("kernels unchanged")
    elif sd.kernel_ratio is not None and not compute_moved:
        moved.append(f"kernel time per step {u.ratio(sd.kernel_ratio)}")
    return head + (": " + ", ".join(moved) if moved else ": no part moved materially")


def counts_phrase(sd: StepsDiff) -> str | None:
    """``+1 D2H copy and +1 sync call per step`` (exact counts; a change that is not whole
    per step is said over the steps: ``+1 sync call in 32 steps``), None when none changed."""
    changes = [_change_item(f, sd) for f in sd.count_changes()]
    if not changes:
        return None
    every = all(whole for _, whole in changes)
    items = [text + ("" if every or not whole else " per step") for text, whole in changes]
    joined = items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]
    return joined + (" per step" if every else "")


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
        f"{f.family.calls} {u.ns(f.base_mean_ns)} → {u.ns(f.candidate_mean_ns)} each ({u.ratio(f.mean_ratio)})"
        for f in moved
    )


def loop_phrase(s: StepSide) -> str:
    """``host-bound, GPU busy 8% of each step``."""
    text = f"{s.bound.value}, GPU busy {100 * s.gpu_share:.0f}% of each step"
    if s.gpu_ahead and s.gpu_period_ns is not None:
        text += (
            f" (the host enqueues a step in {u.ns(s.period.mean)}, the GPU finishes one every {u.ns(s.gpu_period_ns)})"
        )
    return text


def loop_line(sd: StepsDiff) -> str:
    """What each side's loop waits on and what follows for judging it."""
    b, c = loop_phrase(sd.base), loop_phrase(sd.candidate)
    sides = f"loop: {b}" if b == c else f"loop: base {b}; candidate {c}"
    if sd.base.bound is Bound.GPU and sd.candidate.bound is Bound.GPU:
        follows = "the GPU time per step is the time per step"
    else:
        follows = "GPU time per step is judged on its own"
    gpu = f"GPU time per step {u.ns(sd.base.kernel_per_step)} → {u.ns(sd.candidate.kernel_per_step)}"
    return f"{sides}: {follows} ({gpu}, {u.ratio(sd.kernel_ratio)})"


def first_lines(sd: StepsDiff) -> list[str]:
    """The step lines of a report's first screen."""
    lines = [period_line(sd), loop_line(sd)]
    counts = counts_phrase(sd) or "host calls per step unchanged (" + _launches(sd) + ")"
    slower = call_time_phrase(sd)
    lines.append(counts + ("; " + slower if slower else ""))
    for name, s in (("base", sd.base), ("candidate", sd.candidate)):
        if s.systematic_tail:
            lines.append(f"{name} tail: {tail_phrase(s)} > {TAIL_RATIO:g}x")
    return lines


def _launches(sd: StepsDiff) -> str:
    f = sd.family(HostFamily.LAUNCH)
    if f is None:
        return "no launches"
    if _whole(f.base_calls):
        return f"{count(f.base_calls)} {family_word(HostFamily.LAUNCH, f.base_calls)} per step"
    return f"{u.plural(round(f.base_calls * sd.base.steps), 'launch')} in {u.plural(sd.base.steps, 'step')}"


def step_word(per: str) -> str:
    """What one step is called: the range's name, or a step found without a marker."""
    return "step (found without a marker)" if per == "auto" else per


def verdict_phrase(sd: StepsDiff, per_run: tuple[Sequence[StepSide], Sequence[StepSide]] | None = None) -> str:
    """What the verdict line says of the steps: ``time per decode_step 27.88 ms → 55.76 ms
    (2.00x)``; with several runs on a side (``per_run``, every run's steps), each side's
    runs and the ratio of their geometric means, never one run's figure as the side's:
    ``time per decode_step 26.52-32.59 ms (2 runs) → 32.59 ms (1 run), 1.11x geomean``."""
    b, c = sd.base.time_per_step, sd.candidate.time_per_step
    if per_run is None or (len(per_run[0]) <= 1 and len(per_run[1]) <= 1):
        return f"time per {step_word(sd.name)} {u.ns(b)} → {u.ns(c)} ({u.ratio(sd.time_ratio)})"
    bases = [s.time_per_step for s in per_run[0]]
    cands = [s.time_per_step for s in per_run[1]]
    text = f"time per {step_word(sd.name)} {_over_runs(bases)} → {_over_runs(cands)}"
    if min(bases + cands) > 0:
        ratio = math.exp(statistics.fmean(map(math.log, cands)) - statistics.fmean(map(math.log, bases)))
        text += f", {u.ratio(ratio)} geomean"
    return text


def _over_runs(times: Sequence[float]) -> str:
    """``32.59 ms (1 run)``, ``26.52-32.59 ms (2 runs)``: a side's runs, low to high."""
    if len(times) == 1:
        return f"{u.ns(times[0])} (1 run)"
    low, high = u.ns(min(times)), u.ns(max(times))
    unit = high.split()[-1]
    if low.endswith(" " + unit):
        low = low.rsplit(" ", 1)[0]
    return f"{low}-{high} ({len(times)} runs)"


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


def family_rows(sd: StepsDiff, fractions: bool = True) -> list[list[str]]:
    """The host-call families' rows; calls per step as exact fractions (``21,759/32``),
    or, ``fractions=False``, as decimals (``679.97``: a pull-request comment's reader
    takes a fraction for a typo)."""
    rows = []
    for f in sd.families:
        copies = f.family.copies
        if fractions:
            calls = f"{step_count(f.base_calls, sd.base.steps)} → {step_count(f.candidate_calls, sd.candidate.steps)}"
            delta = _delta_cell(f, sd)
        else:
            calls = f"{count(f.base_calls)} → {count(f.candidate_calls)}"
            delta = signed_count(f.delta_calls) if f.delta_calls else "0"
        rows.append(
            [
                u.many(f.family.noun),
                calls,
                delta,
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
