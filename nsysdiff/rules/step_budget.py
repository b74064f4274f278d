"""Rule kind ``step``: a limit on the time per step, its tail, one of its parts, or host calls per step.

Counts per step are exact (identical across runs of one build): a breach is a breach.
Times per step are noisy: a breach of the point value is judged against the noise,
measured when it can be and assumed when it can't (docs/steps.md, "Judging a step"):

1. several runs per side: the runs' Welch interval of the metric must clear the limit
   (fail); an interval that straddles it is inconclusive;
2. a noise profile: the limit and the change against the metric's noise width in the
   profile's runs, as every budget (:mod:`nsysdiff.rules.noise_limits`);
3. one run per side and no profile: the change must exceed the rule's ``noise`` (the
   run-to-run noise assumed of one run, measured on real repeats) to fail; within it the
   finding is inconclusive, never a silent pass.
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from nsysdiff import units as u
from nsysdiff.compare import runstats
from nsysdiff.compare.diff import HOST_NOISE, Diff
from nsysdiff.compare.steps import STATS, StepsDiff, StepSide, side
from nsysdiff.fingerprint.noise import NoiseProfile, fmt_width
from nsysdiff.fingerprint.steps import StepPart
from nsysdiff.rules import limits, noise_limits, units
from nsysdiff.rules import options as opt
from nsysdiff.rules.comparison import Measure
from nsysdiff.rules.limits import Limit, LimitKind, Quantity
from nsysdiff.rules.model import Kind, Option, OptionError, Rule
from nsysdiff.rules.report import NOT_JUDGED, WITHIN_NOISE, Finding, Level, remark
from nsysdiff.trace.records import HostFamily


class StepMetric(str, enum.Enum):
    """What a step rule measures per step, besides a part of the period (a StepPart)."""

    TIME = "time"  # the steady-state time per step: the longer of the host and GPU periods
    GPU = "gpu"  # the GPU time per step: the kernels each step launched
    PERIOD = "period"  # start to the next start: the host period
    DURATION = "duration"  # the range's own
    TAIL = "tail"  # p99 / p50 of the periods
    CALLS = "calls"  # of a host family, per step (exact)
    BYTES = "bytes"  # of a host family, per step (exact)
    CALL_TIME = "call_time"  # the mean time per call of a host family


_ACROSS_STEPS = (StepMetric.PERIOD, StepMetric.DURATION)  # distributions: a statistic picks one figure
_PER_STEP = (StepMetric.TIME, StepMetric.GPU)  # one figure per side
_OF_FAMILY = (StepMetric.CALLS, StepMetric.BYTES, StepMetric.CALL_TIME)
PARTS = tuple(p.value for p in StepPart)
FAMILIES = tuple(f.value for f in HostFamily)
# In the order the docs list them: the step's times, its tail, its parts, its host calls.
METRICS = (
    *(m.value for m in (*_PER_STEP, *_ACROSS_STEPS)),
    StepMetric.TAIL.value,
    *PARTS,
    *(m.value for m in _OF_FAMILY),
)
LIMITS = (LimitKind.MAX_RATIO, LimitKind.MAX_INCREASE, LimitKind.MAX_VALUE, LimitKind.MAX_INCREASE_OF_STEP)


OPTIONS = (
    Option(
        "metric",
        "choice",
        opt.choice(METRICS),
        "What to measure per step: `time` (the steady-state time per step: the longer of the "
        "host period and the GPU period), `gpu` (the GPU time per step: the kernels each step "
        "launched), `period` (start to the next start: the host period), "
        "`duration` (the range's own), `tail` (p99 / p50 of the periods), a part of the "
        f"period ({', '.join(PARTS)}: its mean per step), `calls` or `bytes` per step of a "
        "host `family`, or `call_time` (the mean time per call of a `family`).",
        default="period",
    ),
    Option(
        "stat",
        "choice",
        opt.choice(STATS),
        "For period and duration: which statistic across steps (mean is the time per step; p50, p90, p99, max).",
        default="mean",
    ),
    Option(
        "family",
        "choice",
        opt.choice(FAMILIES),
        "The host family of calls, bytes and call_time: " + ", ".join(FAMILIES) + ".",
    ),
    Option("max_ratio", "ratio", opt.ratio, "Fail when candidate / base exceeds this (`1.05x`)."),
    Option(
        "max_increase",
        "metric unit",
        lambda v: v,
        "Fail when candidate - base exceeds this: a time, or a count for calls, a size for bytes.",
    ),
    Option("max_value", "metric unit", lambda v: v, "Fail when the candidate value exceeds this."),
    Option(
        "max_increase_of_step",
        "percent",
        opt.percent,
        "Fail when candidate - base exceeds this share of the base time per step (for parts).",
    ),
    Option(
        "noise",
        "ratio",
        opt.ratio,
        "The run-to-run noise of a time metric assumed with one run per side and no noise "
        "profile: a change within it is inconclusive, beyond it a breach fails. For parts "
        "it is a share of the base time per step (`1.6x`: 60%).",
        default=HOST_NOISE,
        default_doc=f"{HOST_NOISE:g}x",
    ),
    opt.time_floor("Floor: a time metric under this on both sides is not judged."),
)


@dataclass(frozen=True, slots=True)
class StepOptions:
    metric: StepMetric | StepPart
    stat: str  # one of STATS
    family: HostFamily | None
    limits: tuple[Limit, ...]  # in LIMITS order
    assumed: float  # the `noise` option
    min_time_ns: float
    noise: NoiseProfile | None = None  # attached after loading (noise_limits.attach)

    @property
    def counted(self) -> bool:
        """Counts and bytes per step are exact: never judged against the noise."""
        return self.metric in (StepMetric.CALLS, StepMetric.BYTES)

    @property
    def quantity(self) -> Quantity:
        return _QUANTITIES.get(self.metric, Quantity.TIME)

    @property
    def subject(self) -> str:
        if self.family is not None:
            return f"{self.family.value} {self.metric.value.replace('_', ' ')}"
        if self.metric in _ACROSS_STEPS:
            return f"{self.metric.value} {self.stat}"
        if self.metric is StepMetric.GPU:
            return "GPU time"
        return str(self.metric.value)


# Times per step, but for a count or bytes per step and the tail (a ratio).
_QUANTITIES: dict[StepMetric | StepPart, Quantity] = {
    StepMetric.CALLS: Quantity.STEP_COUNT,
    StepMetric.BYTES: Quantity.SIZE,
    StepMetric.TAIL: Quantity.RATIO,
}


def build(values: Mapping[str, Any], given: frozenset[str]) -> StepOptions:
    name: str = values["metric"]
    metric = StepPart(name) if name in PARTS else StepMetric(name)
    limits.require(given, LIMITS, "a step rule")
    needs_family = metric in _OF_FAMILY
    if needs_family and "family" not in given:
        raise OptionError("metric", f"{name!r} needs a host family (family: {', '.join(FAMILIES)})")
    if not needs_family and "family" in given:
        raise OptionError("family", f"a family goes with calls, bytes or call_time, not {name!r}")
    if "stat" in given and metric not in _ACROSS_STEPS:
        raise OptionError("stat", f"a statistic across steps goes with period or duration, not {name!r}")
    if "max_increase_of_step" in given and not (
        isinstance(metric, StepPart) or metric in _ACROSS_STEPS or metric in _PER_STEP
    ):
        raise OptionError("max_increase_of_step", f"a share of the time per step needs a time per step, not {name!r}")
    return StepOptions(
        metric=metric,
        stat=values["stat"],
        family=HostFamily(values["family"]) if needs_family else None,
        limits=limits.build(values, given, LIMITS, _QUANTITIES.get(metric, Quantity.TIME), name),
        assumed=values["noise"],
        min_time_ns=values["min_time"],
    )


# --- measuring ------------------------------------------------------------------------


def value(s: StepSide, o: StepOptions) -> float | None:
    """The metric on one side's steps; None where it has no value (no calls of the family)."""
    m = o.metric
    if m is StepMetric.TIME:
        return s.time_per_step
    if m is StepMetric.GPU:
        return s.kernel_per_step if s.kernel_total_ns else None
    if isinstance(m, StepPart):
        return s.part(m)
    if m is StepMetric.PERIOD:
        return s.period.of(o.stat)
    if m is StepMetric.DURATION:
        return s.duration.of(o.stat)
    if m is StepMetric.TAIL:
        return s.tail
    assert o.family is not None
    if m is StepMetric.CALLS:
        return s.calls_per_step(o.family)
    if m is StepMetric.BYTES:
        return s.bytes_per_step(o.family)
    return s.mean_call_ns(o.family)


def _per_run(diff: Diff) -> tuple[Sequence[StepSide], Sequence[StepSide]] | None:
    r = diff.runs
    if r is None or r.steps is None:
        return None
    return r.steps


def _interval(o: StepOptions, runs: tuple[Sequence[StepSide], Sequence[StepSide]]) -> tuple[float, float, float] | None:
    """The runs' geometric-mean ratio of the metric and its Welch interval; None when a
    side has fewer than two runs or some run has no positive value."""
    b = [value(s, o) for s in runs[0]]
    c = [value(s, o) for s in runs[1]]
    if len(b) < 2 or len(c) < 2 or any(v is None or v <= 0 for v in (*b, *c)):
        return None
    t = runstats.welch_log(np.array([b], dtype=np.float64), np.array([c], dtype=np.float64))
    return float(t.ratio[0]), float(t.ci_low[0]), float(t.ci_high[0])


def _profile_noise(o: StepOptions) -> noise_limits.SubjectNoise | None:
    if o.noise is None:
        return None
    per_run: list[dict[str, float | None]] = []
    for fp in o.noise.runs.runs:
        per_run.append({o.subject: value(side(fp.steps), o)} if fp.steps and fp.steps.steps else {})
    return noise_limits.subjects(per_run).get(o.subject)


def _cause(o: StepOptions, bv: float, cv: float) -> str:
    """The cause as the first lines name it: what moved, in the rule's terms."""
    if o.metric is StepMetric.CALLS:
        assert o.family is not None
        delta = f"{cv - bv:+,.2f}".rstrip("0").rstrip(".")
        return f"{delta} {o.family.noun if abs(cv - bv) == 1 else u.many(o.family.noun)} per step"
    if isinstance(o.metric, StepPart):
        return f"{u.signed_ns(cv - bv)} {o.metric.value.replace('_', ' ')} per step"
    if o.metric is StepMetric.GPU:
        return f"GPU time per step {o.quantity.fmt(bv)} -> {o.quantity.fmt(cv)} ({u.signed_ns(cv - bv)})"
    return f"{o.subject} {o.quantity.fmt(bv)} -> {o.quantity.fmt(cv)}"


def top_kernel(diff: Diff, sd: StepsDiff) -> tuple[str, float] | None:
    """The kernel whose time per step grew the most (a kernel new in the candidate counts
    from zero), as its label (``sm80_xmma_gemm_f32f32… (new)``) and that growth in ns."""
    base = {k.name: k.total_ns / sd.base.steps for k in diff.base.kernels}
    cand = {k.name: k.total_ns / sd.candidate.steps for k in diff.candidate.kernels}
    if not cand:
        return None
    name = max(cand, key=lambda n: cand[n] - base.get(n, 0.0))
    delta = cand[name] - base.get(name, 0.0)
    if delta <= 0:
        return None
    new = " (new)" if name not in base else ""
    return f"{diff.labels.get(name, name)}{new}", delta


def check(diff: Diff, rule: Rule) -> Iterator[Finding]:
    o: StepOptions = rule.options
    sd = diff.steps
    if sd is None:
        yield remark(rule.id, "step", NOT_JUDGED, "no steps on both sides (a step range: --per or the pack's steps)")
        return
    uncounted = _uncounted(sd, o.family)
    if uncounted is not None:
        yield remark(rule.id, "step", NOT_JUDGED, uncounted)
        return
    bv, cv = value(sd.base, o), value(sd.candidate, o)
    if cv is None:
        what = f"no {o.family.value} calls" if o.family is not None else "no kernel launched from the steps"
        yield remark(rule.id, "step", NOT_JUDGED, f"{what} in the candidate's steps")
        return
    if o.quantity is Quantity.TIME and max(bv or 0.0, cv) < o.min_time_ns:
        yield remark(
            rule.id, "step", NOT_JUDGED, f"under its floor min_time {units.fmt_time(o.min_time_ns)} on both sides"
        )
        return
    yield from _judge(diff, rule, sd, bv, cv)


def _uncounted(sd: StepsDiff, family: HostFamily | None) -> str | None:
    """Why a family's calls can't be judged: a side saved before they were counted per step
    (its calls are unknown, not none); None where both sides counted them."""
    if family is None:
        return None
    sides = [name for name, s in (("base", sd.base), ("candidate", sd.candidate)) if family not in s.counted]
    if not sides:
        return None
    were = "fingerprints were" if len(sides) > 1 else "fingerprint was"
    return f"the {' and '.join(sides)} {were} saved before {family.value} calls were counted per step"


def _judge(diff: Diff, rule: Rule, sd: StepsDiff, bv: float | None, cv: float) -> Iterator[Finding]:
    o: StepOptions = rule.options
    fmt = o.quantity.fmt
    evidence = (
        f"{o.subject} per {sd.name} {'-' if bv is None else fmt(bv)} -> {fmt(cv)} "
        f"({sd.base.steps} -> {sd.candidate.steps} steps); time per step "
        f"{u.ns(sd.base.time_per_step)} -> {u.ns(sd.candidate.time_per_step)}"
    )
    base = bv if bv is not None else 0.0
    cause = _cause(o, base, cv)
    subject = f"{sd.name} {o.subject}"
    if o.metric is StepMetric.GPU and cv > base:
        # The kernel that moved it is what a reader looks for first.
        # The subject names the kernel, never the growth measured: a waiver copied from
        # one run's report matches the next run's finding (the growth is in the cause).
        top = top_kernel(diff, sd)
        cause += f", most {u.signed_ns(top[1])} per step in {top[0]}" if top else ""
        subject = f"{sd.name} GPU time per step" + (f": {top[0]}" if top else "")
    runs = _per_run(diff)
    interval = _interval(o, runs) if runs is not None and not o.counted else None
    if interval is not None:
        r, low, high = (units.fmt_ratio(x) for x in interval)
        evidence += f"; over runs {r} [{low}, {high}]"
    if o.noise is not None and not o.counted:
        noise_limits.check_fits(o.noise, diff.base)  # another build's noise would mislead
    judged = _profile_noise(o) if not o.counted else None
    if judged is not None and judged.width is not None:
        evidence += "; " + noise_limits.evidence(judged)
    better = sd.improvement() if o.metric is StepMetric.GPU else None
    # Across runs the point is the runs' geometric-mean ratio, not the median runs'.
    shown = interval[0] * base if interval is not None and base > 0 else cv
    step_ns = sd.base.time_per_step
    for lim in o.limits:
        if not lim.breached(base, shown, step_ns):
            continue  # within the limit
        reason = None if o.counted else _undecided(o, lim, base, cv, sd.base, interval, judged, _counts(runs))
        if reason is not None:
            # Within its noise a time is no finding and no reason for an inconclusive
            # verdict: the report says so, with the smallest change it could have seen,
            # and says where the base was already over the limit (a value limit's "no
            # change" is then not "within the limit").
            over = f", over {lim.text(fmt, step_ns)} on both sides" if lim.breached(base, base, step_ns) else ""
            yield remark(rule.id, "step", WITHIN_NOISE, f"{cause}{over}: {reason}")
            continue
        found = rule.finding(
            subject,
            lim.observed(base, shown, fmt),
            lim.text(fmt, step_ns),
            evidence,
            cause,
            observed_value=shown,
            limit_value=lim.amount,
            unit=o.quantity.unit,
        )
        if better is not None and rule.level is Level.ERROR:
            # An improvement never fails a build: GPU time the user doesn't wait for
            # (the steps got faster clear of the noise) is named, as a warning.
            found = dataclasses.replace(found, level=Level.WARNING, message=f"{found.message} ({better}: a warning)")
        yield found


def _undecided(
    o: StepOptions,
    lim: Limit,
    bv: float,
    cv: float,
    base: StepSide,
    interval: tuple[float, float, float] | None,
    judged: noise_limits.SubjectNoise | None,
    counts: str = "one run per side",
) -> str | None:
    """Why a breach of a noisy metric can't be told from the noise, with the smallest
    change the runs could have detected; None when it can."""
    step_ns = base.time_per_step
    if interval is not None:
        _, low, _ = interval
        # The whole interval must clear the limit (as a ratio of the base value).
        if bv > 0 and low * bv > lim.bound(bv, step_ns):
            return None
        return f"within the noise of the runs (interval low {units.fmt_ratio(low)} under the limit)"
    if judged is not None and judged.width is not None:
        allowed = lim.allowed_change(bv, step_ns)
        change = noise_limits.log_change(bv, cv)
        if noise_limits.too_small(allowed, change, judged):
            assert allowed is not None
            return f"within the measured noise {fmt_width(judged.width)} over {judged.runs} runs"
        return None
    # One run per side, nothing measured: the assumed noise of one run.
    part = isinstance(o.metric, StepPart)
    scale = step_ns if part else bv
    if scale > 0 and cv - bv > (o.assumed - 1.0) * scale:
        return None
    what = "the base time per step" if part else "the base value"
    smallest = f"+{100 * (o.assumed - 1.0):.0f}% of {what} ({o.quantity.fmt((o.assumed - 1.0) * scale)})"
    if o.noise is not None:
        return f"{counts} can detect {smallest} or more (the noise profile has no steps)"
    return f"{counts} can detect {smallest} or more"


def _counts(runs: tuple[Sequence[StepSide], Sequence[StepSide]] | None) -> str:
    """``one run per side``, or ``2 base runs and 1 candidate run`` where they differ: two
    base runs are two, even when one side's single run leaves no interval to compute."""
    if runs is None or (len(runs[0]) <= 1 and len(runs[1]) <= 1):
        return "one run per side"
    b, c = len(runs[0]), len(runs[1])
    return f"{b} base run{'s' if b != 1 else ''} and {c} candidate run{'s' if c != 1 else ''}"


def _measure(o: StepOptions) -> Measure:
    """Calls per step are counts, bytes per step bytes, everything else time."""
    return {Quantity.COUNT: Measure.COUNT, Quantity.STEP_COUNT: Measure.COUNT, Quantity.SIZE: Measure.BYTES}.get(
        o.quantity, Measure.TIME
    )


KIND = Kind(
    name="step",
    summary="A limit on the time per step, its tail, a part of it, or host calls per step.",
    doc="""\
Judges the steps of both sides (an NVTX range, `--per NAME` or the range a pack names;
docs/steps.md). `metric` chooses what: `period` (start to the next start: the time per
step) or `duration` (the range's own) with `stat` mean (default), p50, p90, p99 or max;
`tail` (p99 / p50 of the periods); a part of the period (compute, communication,
copies, launch_bound, sync, host, between: its mean per step); or, for a host `family`
(launch, sync, copy_h2d, copy_d2h, copy_d2d, alloc), `calls` or `bytes` per step or
`call_time` (the mean time per call).

Limits (at least one): max_ratio, max_increase, max_value (in the metric's unit) and
max_increase_of_step (a share of the base time per step: `5%`). Diffs without steps on
both sides produce no finding.

Counts and bytes per step are exact: a breach fails. Times are noisy: a breach fails
only when it is clear of the noise, else the finding is inconclusive (exit 3 unless
another rule fails). With several runs per side the runs' Welch interval must clear the
limit; with a noise profile the change is measured in its noise widths, as every
budget's; with one run per side and no profile the change must exceed `noise` (the
run-to-run noise assumed of one run: of the value, or for parts of the base time per
step).
""",
    options=OPTIONS,
    build=build,
    check=check,
    measure=_measure,
)
