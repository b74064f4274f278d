"""Rule kind ``tail``: a kernel whose slow calls multiplied while its median held."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from nsysdiff.compare import tails
from nsysdiff.compare.diff import Diff
from nsysdiff.rules import options as opt
from nsysdiff.rules import units
from nsysdiff.rules.comparison import Measure
from nsysdiff.rules.model import Kind, Rule
from nsysdiff.rules.report import Finding

OPTIONS = (opt.time_floor("The time beyond what the base's mean call predicts must be at least this much.", "1ms"),)


@dataclass(frozen=True, slots=True)
class TailOptions:
    min_time_ns: float


build = opt.taken(TailOptions, min_time_ns="min_time")


def check(diff: Diff, rule: Rule) -> Iterator[Finding]:
    o: TailOptions = rule.options
    label = {r.key: diff.kernel_label(r) for r in diff.kernels}
    for t in tails.changes(diff.base, diff.candidate):
        if t.extra_ns < o.min_time_ns:
            continue
        yield _finding(rule, o, t, label.get(t.key, t.name))


def _finding(rule: Rule, o: TailOptions, t: tails.TailChange, subject: str) -> Finding:
    share = t.extra_ns / t.base_total_ns if t.base_total_ns else 0.0
    evidence = (
        f"p50 {units.fmt_time(t.base_p50_ns)} -> {units.fmt_time(t.candidate_p50_ns)}, "
        f"p99 {units.fmt_time(t.base_p99_ns)} -> {units.fmt_time(t.candidate_p99_ns)}, "
        f"max {units.fmt_time(t.base_max_ns)} -> {units.fmt_time(t.candidate_max_ns)}; "
        f"{units.fmt_count(t.beyond)} of {units.fmt_count(t.calls)} calls beyond the base's p{t.threshold:g} "
        f"({units.fmt_time(t.threshold_ns)}) where {units.fmt_count(round(t.expected))} were expected "
        f"(binomial p = {t.p_value:.1e}; {tails.METHOD})"
    )
    why = (
        f"{t.name} kept its median but {units.fmt_count(t.beyond)} of its calls ran beyond the base's "
        f"p{t.threshold:g}, adding {units.fmt_time(t.extra_ns)}: a tail (allocator stalls, contention, "
        "clock changes, data-dependent paths), not slower calls across the board"
    )
    return rule.finding(
        subject,
        (
            f"{units.fmt_count(t.beyond)} calls beyond the base's p{t.threshold:g} "
            f"(expected {units.fmt_count(round(t.expected))}), +{units.fmt_time(t.extra_ns)} "
            f"({units.fmt_percent(share)})"
        ),
        f"extra time under {units.fmt_time(o.min_time_ns)} or no significant tail",
        evidence,
        why,
        observed_value=t.extra_ns,
        limit_value=o.min_time_ns,
        unit="ns",
    )


KIND = Kind(
    name="tail",
    summary="Reports a kernel whose slow calls multiplied while its median held (a tail change).",
    doc="""\
A median and a total both miss a tail: one call in fifty taking ten times longer leaves the
median where it was. Per kernel on both sides (at least 200 calls each), the candidate's
calls beyond the base's own p90, p95 and p99 are counted (estimated from the candidate's
percentile sketch) and each count is tested against the 10%, 5% and 1% expected with no
change: a one-sided binomial test at 0.01 over all the tests made (Bonferroni). A kernel is
reported when a count is significant, its median held within 1.05x, and the time beyond what
the base's mean call predicts is at least 5% of the kernel's base time and `min_time`. One
slow call (a new maximum) is never enough. The finding gives the calls beyond the
threshold, the ones expected, the p-value, and p50, p99 and the maximum on both sides.
""",
    options=OPTIONS,
    build=build,
    check=check,
    measure=lambda _: Measure.TIME,
)
