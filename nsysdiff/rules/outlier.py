"""Rule kind ``outlier``: one key scaled abnormally against the rest of the trace."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

from nsysdiff.compare.diff import Diff, Row
from nsysdiff.rules import options as opt
from nsysdiff.rules import units
from nsysdiff.rules.comparison import Measure
from nsysdiff.rules.model import Kind, Option, Rule
from nsysdiff.rules.report import Finding

SCOPES = ("kernels", "families", "categories")
DIRECTIONS = ("both", "slower", "faster")
_NOUN = {"kernels": "kernel", "families": "family", "categories": "category"}

OPTIONS = (
    Option(
        "z_threshold",
        "number",
        opt.number,
        "Minimum |modified z-score| of the key's log ratio against the overall scale.",
        default_doc="the diff's --z-threshold (3.5)",
    ),
    Option(
        "min_deviation",
        "ratio",
        opt.ratio,
        "Minimum ratio beyond the overall scale, either way (`1.25x`).",
        default_doc="the diff's --min-deviation (1.25x)",
    ),
    Option(
        "min_share",
        "percent",
        opt.percent,
        "Materiality: minimum share of either side's kernel time (`0.1%`).",
        default_doc="the diff's --min-share (0.1%)",
    ),
    opt.time_floor(
        "Floor: a key under this total time on both sides is too small to judge, unless its "
        "own calls are evidence enough (`min_calls`, `consistency`)."
    ),
    Option(
        "min_calls",
        "number",
        opt.number,
        "Evidence under the floor: a kernel with at least this many calls on each side whose calls "
        "moved one way consistently is judged whatever its time (0: never).",
        default=3.0,
    ),
    Option(
        "consistency",
        "percent",
        opt.percent,
        "Evidence under the floor: the share of call pairs in which the candidate's call is the "
        "slower (or, for a faster key, the faster).",
        default=0.9,
        default_doc="90%",
    ),
    Option(
        "scope",
        "choice list",
        opt.choice_list(SCOPES),
        "What to score: kernels, families, categories (one or a list). With both families "
        "and kernels, a family is judged first and its flagged variants fold into it.",
        default=("families", "kernels"),
        default_doc="[families, kernels]",
    ),
    Option(
        "direction",
        "choice",
        opt.choice(DIRECTIONS),
        "Which outliers count: both, slower (scaled up) or faster (scaled down). A faster "
        "outlier is reported as an improvement.",
        default="both",
    ),
)


@dataclass(frozen=True, slots=True)
class OutlierOptions:
    z_threshold: float | None
    min_deviation: float | None
    min_share: float | None
    min_time_ns: float
    min_calls: float
    consistency: float
    scope: tuple[str, ...]
    direction: str


build = opt.taken(OutlierOptions, min_time_ns="min_time")


def _rows(diff: Diff, scope: str) -> tuple[Row, ...]:
    if scope == "kernels":
        return diff.kernels
    if scope == "families":
        return diff.families
    return diff.categories


def _share(row: Row) -> float:
    return max(row.base.share if row.base else 0.0, row.candidate.share if row.candidate else 0.0)


@dataclass(frozen=True, slots=True)
class _Gate:
    z: float
    deviation: float
    share: float
    min_time_ns: float
    direction: str
    min_calls: float = 3.0
    consistency: float = 0.9
    steps: float = 1.0  # calls are per step in a per-step diff: this many steps make a side
    # Several runs per side: the deviation's interval across runs must clear the gate
    # over its whole width (its end nearest 1 is judged); ``spread`` puts it on the z scale.
    runs: bool = False
    spread: float = 1.0

    def passes(self, row: Row) -> bool:
        z, dev = row.outlier_score, row.deviation
        if z is None or dev is None or row.ratio is None or row.base is None or row.candidate is None:
            return False
        if self.runs:
            if row.deviation_ci is None:
                return False  # no interval: some run lacks the key, or no scale in some run
            low, high = row.deviation_ci
            if low <= 1 <= high:
                return False
            dev = low if low > 1 else high
            z = 0.6745 * math.log(dev) / self.spread
        if abs(z) < self.z or max(dev, 1 / dev) < self.deviation or _share(row) < self.share:
            return False
        if max(row.base.total_ns, row.candidate.total_ns) < self.min_time_ns and not self.evident(row, dev):
            return False  # too small to judge, and its calls are no evidence either
        return not ((self.direction == "slower" and dev < 1) or (self.direction == "faster" and dev > 1))

    def evident(self, row: Row, dev: float) -> bool:
        """Whether a key under the floor moved by evidence of its own: enough calls on
        each side, and its calls moved the same way in most call pairs. What makes a
        finding trustworthy is how many calls moved and how consistently, not the total."""
        d, b, c = row.distribution, row.base, row.candidate
        if not self.min_calls or d is None or b is None or c is None:
            return False
        if min(b.calls, c.calls) * self.steps < self.min_calls:
            return False
        return (d.prob_slower if dev > 1 else 1 - d.prob_slower) >= self.consistency


def judges(diff: Diff, rule: Rule) -> Callable[[Row], bool]:
    """Whether this outlier rule's gate passes a row: the report lists as outliers only the
    rows some outlier rule would judge (one 11 us call is no outlier under a 1 ms floor;
    eight calls that all got 3x slower are)."""
    return _gate(diff, rule).passes


def check(diff: Diff, rule: Rule) -> Iterator[Finding]:
    o: OutlierOptions = rule.options
    gate = _gate(diff, rule)
    yield from _check(diff, rule, o, gate)


def _gate(diff: Diff, rule: Rule) -> _Gate:
    o: OutlierOptions = rule.options
    s = diff.settings
    return _Gate(
        z=o.z_threshold if o.z_threshold is not None else s.z_threshold,
        deviation=o.min_deviation if o.min_deviation is not None else s.min_deviation,
        share=o.min_share if o.min_share is not None else s.min_share,
        min_time_ns=o.min_time_ns,
        direction=o.direction,
        min_calls=o.min_calls,
        consistency=o.consistency,
        steps=float(min(diff.headline.base_steps or 1, diff.headline.candidate_steps or 1)) if diff.per_step else 1.0,
        runs=diff.intervals,
        spread=max(diff.headline.scale_info.spread, s.mad_floor),
    )


def _check(diff: Diff, rule: Rule, o: OutlierOptions, gate: _Gate) -> Iterator[Finding]:
    if diff.headline.basis != "kernels":
        # No kernel data: the NVTX ranges (or graph launches) are what the scale is about.
        what = "NVTX range" if diff.headline.basis == "nvtx" else "CUDA"
        for row in diff.scored:
            if gate.passes(row):
                yield _finding(diff, rule, gate, row, what, row.key, "")
        return
    members: dict[str, list[Row]] = {}
    for k in diff.kernels:
        members.setdefault(k.family or "", []).append(k)
    folded: set[str] = set()
    if "families" in o.scope:
        # Families first: a regression spread over many light variants shows only here,
        # and one finding per family says it once.
        for row in diff.families:
            variants = members.get(row.key, [])
            if not gate.passes(row) or (len(variants) == 1 and "kernels" in o.scope):
                continue
            folded.add(row.key)
            inner = [k for k in variants if gate.passes(k)]
            yield _finding(diff, rule, gate, row, "family", row.key, _variants_note(variants, inner))
    if "kernels" in o.scope:
        for row in diff.kernels:
            if row.family not in folded and gate.passes(row):
                yield _finding(diff, rule, gate, row, "kernel", diff.kernel_label(row), "")
    if "categories" in o.scope:
        for row in diff.categories:
            if gate.passes(row):
                yield _finding(diff, rule, gate, row, "category", row.key, "")


def _variants_note(variants: Sequence[Row], inner: Sequence[Row]) -> str:
    both = sum(1 for k in variants if k.base is not None and k.candidate is not None)
    text = f"; {len(variants)} variants ({both} on both sides)"
    if inner:
        text += ", flagged on their own: " + ", ".join(k.name for k in inner[:3])
        if len(inner) > 3:
            text += f" and {len(inner) - 3} more"
    return text


def _finding(diff: Diff, rule: Rule, gate: _Gate, row: Row, what: str, subject: str, extra: str) -> Finding:
    assert row.base is not None and row.candidate is not None
    assert row.ratio is not None and row.deviation is not None and row.outlier_score is not None
    scale, dev, share = diff.headline.scale, row.deviation, _share(row)
    evidence = (
        f"total {units.fmt_time(row.base.total_ns)} -> "
        f"{units.fmt_time(row.candidate.total_ns)} "
        f"({units.fmt_ratio(row.ratio)}) vs overall scale {units.fmt_ratio(scale)}; "
        + (
            f"resized {units.fmt_signed_time(row.resized_ns)} (calls {units.fmt_count(row.base.calls)} -> "
            f"{units.fmt_count(row.candidate.calls)}, mean {units.fmt_time(row.base.mean_ns)} -> "
            f"{units.fmt_time(row.candidate.mean_ns)}: the same work in calls of another size); "
            if row.resized_ns
            else f"count effect {units.fmt_signed_time(row.count_effect_ns)} "
            f"(calls {units.fmt_count(row.base.calls)} -> "
            f"{units.fmt_count(row.candidate.calls)}), "
            f"per-call effect {units.fmt_signed_time(row.per_call_effect_ns)} "
            f"(mean {units.fmt_time(row.base.mean_ns)} -> "
            f"{units.fmt_time(row.candidate.mean_ns)}); "
        )
        + f"share {units.fmt_percent(share)}{extra}"
    )
    if row.base.transfer_ns is not None and row.candidate.transfer_ns is not None:
        evidence += (
            f"; a collective, judged on its transfer part (calls x median call) "
            f"{units.fmt_time(row.base.transfer_ns)} -> {units.fmt_time(row.candidate.transfer_ns)}"
        )
    if gate.runs and row.deviation_ci is not None:
        # The interval the gate judged: the reader sees why the runs agree.
        low, high = row.deviation_ci
        evidence += f"; across runs {units.fmt_ratio(low)} to {units.fmt_ratio(high)} of scale"
    if row.resized_ns:
        driver = "the same work in calls of another size"
    else:
        driver = "per-call time" if abs(row.per_call_effect_ns) >= abs(row.count_effect_ns) else "call count"
    way = "slower" if dev > 1 else "faster"
    why = (
        ("" if dev > 1 else "improvement: ")
        + f"{what} {row.name} scaled {units.fmt_ratio(row.ratio)} while the trace scaled "
        f"{units.fmt_ratio(scale)}: {units.fmt_ratio(max(dev, 1 / dev))} {way} than the rest, "
        f"driven by {driver}"
    )
    limit = (
        f"|z| >= {gate.z:g} and deviation >= {units.fmt_ratio(gate.deviation)} "
        f"and share >= {units.fmt_percent(gate.share)}"
    )
    if gate.min_time_ns and gate.min_calls:
        limit += (
            f" and (time >= {units.fmt_time(gate.min_time_ns)} or >= {gate.min_calls:g} calls a side "
            f"moving one way in {units.fmt_percent(gate.consistency)} of call pairs)"
        )
    elif gate.min_time_ns:
        limit += f" and time >= {units.fmt_time(gate.min_time_ns)}"
    return rule.finding(
        subject,
        f"z={row.outlier_score:+.1f}, {units.fmt_ratio(dev)} of scale" + ("" if dev > 1 else " (improvement)"),
        limit,
        evidence,
        why,
        # The deviation from the scale against the gate's, on the side it was crossed.
        observed_value=dev,
        limit_value=gate.deviation if dev > 1 else 1 / gate.deviation,
        unit="ratio",
        scaled=True,
    )


KIND = Kind(
    name="outlier",
    summary="Fails when a key scaled abnormally against the trace's overall scale.",
    doc="""\
Uses the diff's scale-aware outlier statistics: the overall scale (the weighted median
of per-family total-time ratios, no family holding more than a fifth of the weight) and
each key's modified z-score of its log ratio against it. A key is an outlier when all
three hold: |z| >= z_threshold, its ratio differs from the scale by at least
min_deviation either way, and it is material (at least min_share of either side's kernel
time). The thresholds default to the diff's own settings (the --z-threshold,
--min-deviation and --min-share options), so the rule agrees with the report unless it
overrides them; `min_time` skips keys too small to judge. Only keys present on both
sides are scored: new and removed kernels are for `structure` and `danger-zone` rules.
Families are judged before kernels: a family flagged as a whole is one finding, its
flagged variants named in it. `direction: slower` gates only regressions; a `direction:
faster` rule reports improvements (marked as such). When the diff has no meaningful
scale (too little time in common families) nothing is scored.

The finding shows the key's ratio against the overall scale and splits its change into a
count effect (calls changed, at the base per-call time) and a per-call effect (each call
got slower or faster), so "called 16x more" is told apart from "each call got slower".
This catches "one kernel scaled abnormally" even when the totals look fine.
""",
    options=OPTIONS,
    build=build,
    check=check,
    measure=lambda _: Measure.SCALE,
)
