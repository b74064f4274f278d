"""Rule kind ``danger-zone``: kernels whose presence or change is a determinism suspect."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from nsysdiff.compare.diff import Diff, Row
from nsysdiff.rules import options as opt
from nsysdiff.rules import units
from nsysdiff.rules.comparison import Measure
from nsysdiff.rules.model import Kind, Option, Rule
from nsysdiff.rules.report import Finding
from nsysdiff.safe.regex import Regex

CONDITIONS = ("present", "appears", "disappears", "count-changes", "time-changes")

OPTIONS = (
    Option(
        "patterns",
        "regex list",
        opt.regex_list,
        "Kernel name regexes (searched in the short and the demangled name).",
        required=True,
    ),
    opt.choices(
        "condition",
        CONDITIONS,
        "When a matching kernel is reported",
        default=("present",),
        default_doc="present",
    ),
    opt.written(
        "tolerance", "percent", opt.percent, "time-changes: the total-time ratio may stay within 1 +/- this.", "10%"
    ),
    opt.written(
        "count_tolerance",
        "percent",
        opt.percent,
        "count-changes: the calls ratio may stay within 1 +/- this (0% = any change).",
        "0%",
    ),
    Option(
        "why",
        "string",
        opt.nonempty_string,
        "Why the pattern is a determinism suspect; every finding carries it.",
        default="the kernel matches a determinism-suspect pattern",
    ),
)

# The most specific condition names the finding; the others go to the evidence.
_PRIORITY = ("appears", "disappears", "count-changes", "time-changes", "present")


@dataclass(frozen=True, slots=True)
class DangerZoneOptions:
    patterns: tuple[Regex, ...]
    conditions: tuple[str, ...]
    tolerance: float
    count_tolerance: float
    why: str


build = opt.taken(DangerZoneOptions, conditions="condition")


def _outside(ratio: float | None, tol: float) -> bool:
    return ratio is not None and (ratio > 1 + tol + 1e-12 or ratio < 1 - tol - 1e-12)


def _met(row: Row, o: DangerZoneOptions) -> list[str]:
    met: list[str] = []
    for cond in _PRIORITY:
        if cond not in o.conditions:
            continue
        if cond == "present":
            hit = row.candidate is not None and row.candidate.calls > 0
        elif cond == "appears":
            hit = row.base is None and row.candidate is not None
        elif cond == "disappears":
            hit = row.base is not None and row.candidate is None
        elif cond == "count-changes":
            hit = (
                row.base is not None
                and row.candidate is not None
                and (
                    _outside(row.calls_ratio, o.count_tolerance) or (row.base.calls == 0) != (row.candidate.calls == 0)
                )
            )
        else:
            hit = row.base is not None and row.candidate is not None and _outside(row.ratio, o.tolerance)
        if hit:
            met.append(cond)
    return met


def check(diff: Diff, rule: Rule) -> Iterator[Finding]:
    o: DangerZoneOptions = rule.options
    for row in sorted(diff.kernels, key=lambda r: r.key):
        pattern = next((p for p in o.patterns if p.search(row.name) or p.search(row.key)), None)
        if pattern is None:
            continue
        met = _met(row, o)
        if not met:
            continue
        b, c = row.base, row.candidate
        evidence = (
            f"matches /{pattern.pattern}/; calls {units.fmt_count(b.calls) if b else '-'} -> "
            f"{units.fmt_count(c.calls) if c else '-'}, "
            f"total {units.fmt_time(b.total_ns) if b else '-'} -> "
            f"{units.fmt_time(c.total_ns) if c else '-'}"
        )
        if row.ratio is not None:
            evidence += f" ({units.fmt_ratio(row.ratio)})"
        if len(met) > 1:
            evidence += f"; also {', '.join(met[1:])}"
        limit = f"danger zone: {met[0]}"
        # The ratio that left the tolerance, and the edge of the tolerance it crossed;
        # presence conditions (appears, disappears) have no number.
        ratio, tol = (
            (row.ratio, o.tolerance)
            if met[0] == "time-changes"
            else (row.calls_ratio, o.count_tolerance)
            if met[0] == "count-changes" and b is not None and c is not None and b.calls and c.calls
            else (None, 0.0)
        )
        edge = None if ratio is None else (1 + tol if ratio > 1 else 1 - tol)
        if met[0] == "time-changes":
            limit = f"time within {units.fmt_percent(o.tolerance)}"
        elif met[0] == "count-changes":
            limit = (
                "calls unchanged" if o.count_tolerance == 0 else f"calls within {units.fmt_percent(o.count_tolerance)}"
            )
        yield rule.finding(
            diff.kernel_label(row),
            met[0],
            limit,
            evidence,
            o.why,
            observed_value=ratio,
            limit_value=edge,
            unit="ratio" if ratio is not None else "",
        )


KIND = Kind(
    name="danger-zone",
    summary="Kernels whose presence or change makes results batch-dependent or nondeterministic.",
    doc="""\
Matches kernel names (short or demangled, regex search) against patterns of known
determinism suspects, and reports a matching kernel when one of the listed conditions
holds:

  present        the kernel runs in the candidate
  appears        it runs in the candidate and not in the base
  disappears     it ran in the base and not in the candidate
  count-changes  its number of calls changed (beyond count_tolerance, default exact)
  time-changes   its total time changed beyond tolerance (default 10%)

A kernel gives at most one finding per rule, named after the most specific condition it
meets (appears, disappears, count-changes, time-changes, then present); the evidence lists
the others. Every finding carries the rule's `why`, so the report says why the kernel is
suspect, not just that it matched.
""",
    options=OPTIONS,
    build=build,
    check=check,
    measure=lambda _: Measure.SELECTION,
)
