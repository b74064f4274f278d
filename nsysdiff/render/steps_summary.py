"""The Steps section of one trace's census (``nsysdiff summary --per RANGE``): the time per
step and its tail, where each step's time goes, and the host calls per step by family.
Definitions in docs/steps.md."""

from __future__ import annotations

from typing import Any

from nsysdiff import units as u
from nsysdiff.fingerprint import step_figures as f
from nsysdiff.fingerprint.model import Fingerprint, to_data
from nsysdiff.fingerprint.steps import StepPart, Steps
from nsysdiff.safe import neutral

# How a part and a family are named in reports.
PART_LABELS = {
    StepPart.COMPUTE: "compute",
    StepPart.COMMUNICATION: "communication",
    StepPart.COPIES: "copies",
    StepPart.LAUNCH_BOUND: "launch-bound",
    StepPart.SYNC: "sync",
    StepPart.HOST: "host",
    StepPart.BETWEEN: "between steps",
}

Table = tuple[str, tuple[str, ...], list[list[str]], tuple[int, ...]]


def _tail(spread: f.Spread) -> str:
    t = spread.tail
    return "-" if t is None else u.ratio(t)


def headline(steps: Steps) -> list[str]:
    """The time per step (the period) and the range, at p50 and max, and the tail."""
    per, dur = f.periods(steps), f.durations(steps)
    if steps.found:
        # Found without a marker: a step runs to the next one's start, so its range is its period.
        return [
            f"steps found without a marker: {steps.found}",
            f"time per step (period) p50 {u.ns(per.p50)} · max {u.ns(per.max)}",
            tail_line(steps),
        ]
    return [
        f"time per step (period) p50 {u.ns(per.p50)} · max {u.ns(per.max)} · "
        f"{steps.name} range p50 {u.ns(dur.p50)} · max {u.ns(dur.max)}",
        tail_line(steps),
    ]


def tail_line(steps: Steps) -> str:
    per = f.periods(steps)
    flag = per.tail is not None and per.tail > f.SYSTEMATIC_TAIL
    verdict = "a systematic tail" if flag else f"no systematic tail (above {f.SYSTEMATIC_TAIL:g}x is one)"
    return f"period p99/p50 {_tail(per)}: {verdict}"


def tables(fp: Fingerprint) -> list[Table]:
    """The section's tables, for the text and Markdown census."""
    steps = fp.steps
    if steps is None:
        return []
    n = len(steps.steps)
    rows = []
    for label, sp in (
        ("period", f.periods(steps)),
        ("range", f.durations(steps)),
        ("kernel time", f.kernel_times(steps)),
    ):
        rows.append([label, u.ns(sp.p50), u.ns(sp.p90), u.ns(sp.p99), u.ns(sp.max), u.ns(sp.mean), _tail(sp)])
    skipped = f", {steps.skipped} skipped" if steps.skipped else ""
    out: list[Table] = [
        (
            f"Steps ({n:,} {steps.name}{skipped})",
            ("per step", "p50", "p90", "p99", "max", "mean", "p99/p50"),
            rows,
            (6, 5),
        )
    ]
    parts = f.mean_parts(steps)
    period = sum(parts.values())
    part_rows = [[PART_LABELS[p], u.ns(v), u.pct(100 * v / period if period else 0.0)] for p, v in parts.items()]
    part_rows.append(["period", u.ns(period), u.pct(100.0 if period else 0.0)])
    out.append(
        (
            "Step time by part (mean per step)",
            ("part", "time", "%"),
            part_rows,
            (),
        )
    )
    fams = f.families(steps)
    if fams:
        fam_rows = []
        for x in fams:
            counts = f"{x.calls:,}" if x.least == x.most else f"{x.calls:,} ({x.least:,}-{x.most:,})"
            t = x.times
            fam_rows.append(
                [
                    u.many(x.family.noun),
                    counts,
                    u.ns(x.time_ns),
                    u.nbytes(x.bytes) if t.bytes else "-",
                    u.ns(t.mean_ns),
                    u.ns(t.p50_ns),
                    u.ns(t.p90_ns),
                    u.ns(t.p99_ns),
                    u.ns(t.max_ns),
                ]
            )
        out.append(
            (
                "Host calls per step",
                ("family", "calls", "time", "bytes", "per call", "p50", "p90", "p99", "max"),
                fam_rows,
                (7, 6, 3),
            )
        )
    return out


def steps_data(steps: Steps) -> dict[str, Any]:
    """The section in the census JSON: the figures across the steps, then every step."""
    n = len(steps.steps)

    def spread(sp: f.Spread) -> dict[str, Any]:
        return {
            "p50_ns": sp.p50,
            "p90_ns": sp.p90,
            "p99_ns": sp.p99,
            "max_ns": sp.max,
            "mean_ns": sp.mean,
            "p99_over_p50": sp.tail,
        }

    per = f.periods(steps)
    return {
        "name": steps.name,
        "domain": steps.domain,
        "count": n,
        "skipped": steps.skipped,
        **({"found": steps.found} if steps.found else {}),
        "period": spread(per),
        "duration": spread(f.durations(steps)),
        "kernel": spread(f.kernel_times(steps)),
        "systematic_tail": per.tail is not None and per.tail > f.SYSTEMATIC_TAIL,
        "parts_mean_ns": {p.value: v for p, v in f.mean_parts(steps).items()},
        "families": [
            {
                "family": x.family.value,
                "calls_per_step": x.calls,
                "least_calls": x.least,
                "most_calls": x.most,
                "time_per_step_ns": x.time_ns,
                "bytes_per_step": x.bytes,
                **to_data(x.times),
                "mean_ns": x.times.mean_ns,
            }
            for x in f.families(steps)
        ],
        # Made one step at a time as the JSON is written: a long capture has 100,000s.
        "steps": neutral.LazyRows(steps.steps, to_data),
    }
