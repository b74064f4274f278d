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
        f"{t.where}: p50 {units.fmt_time(t.base_p50_ns)} -> {units.fmt_time(t.candidate_p50_ns)}; "
        f"{units.fmt_count(t.beyond)} of {units.fmt_count(t.calls)} calls over {t.multiple:g}x the median, "
        f"{units.fmt_count(t.base_beyond)} of {units.fmt_count(t.base_calls)} in the base "
        f"(Fisher exact p = {t.p_value:.1e}; {tails.METHOD})"
    )
    why = (
        f"{t.name} kept its median but {units.fmt_count(t.beyond)} of its calls ({t.where}) took over "
        f"{t.multiple:g}x it, adding {units.fmt_time(t.extra_ns)}: a tail (allocator stalls, contention, "
        "clock changes, data-dependent paths), not slower calls across the board"
    )
    return rule.finding(
        subject,
        (
            f"{units.fmt_count(t.beyond)} calls over {t.multiple:g}x the median "
            f"(base {units.fmt_count(t.base_beyond)} of {units.fmt_count(t.base_calls)}), "
            f"+{units.fmt_time(t.extra_ns)} ({units.fmt_percent(share)})"
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
    doc="""\\
A median and a total both miss a tail: one call in fifty taking ten times longer leaves the
median where it was. A tail is one population's, so each kernel is compared per launch
shape (grid and block) within the scope: calls with another grid (a prefill at another
batch, a new caller) are never a tail. Per kernel and shape with at least 200 calls on both
sides, each fingerprint counts exactly the calls longer than 1.5x, 2x, 4x and 10x its
median, and the candidate's share is tested against the base's: a one-sided Fisher exact
test at 0.01 over all the tests made (Bonferroni). A shape is reported when a count of at
least 3 calls is significant, its median held within 1.05x, and the time beyond what the
base's mean call predicts is at least 5% of the shape's base time and `min_time`. One slow
call (a warm-up, a new maximum) is never enough. The finding gives the shape, the calls
beyond the multiple on both sides, the p-value and the medians. Fingerprints saved before
the counts were kept judge no tail.
""",
    options=OPTIONS,
    build=build,
    check=check,
    measure=lambda _: Measure.TIME,
)
