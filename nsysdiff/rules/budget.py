"""Rule kind ``budget``: a limit on one metric of a selection of the trace."""

from __future__ import annotations

import dataclasses
import enum
import math
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from nsysdiff.compare.diff import Diff
from nsysdiff.fingerprint import categories
from nsysdiff.fingerprint.model import Fingerprint, KernelStats
from nsysdiff.fingerprint.noise import NoiseProfile
from nsysdiff.rules import limits, noise_limits, units
from nsysdiff.rules import options as opt
from nsysdiff.rules.comparison import Measure
from nsysdiff.rules.limits import Limit, LimitKind, Quantity, exceeds
from nsysdiff.rules.model import Kind, Option, OptionError, Rule
from nsysdiff.rules.report import NOT_JUDGED, Finding, Level, remark
from nsysdiff.safe.regex import Regex
from nsysdiff.trace.records import QUANTILE_GRID


class Metric(str, enum.Enum):
    """What a budget measures on its selection."""

    TOTAL_TIME = "total_time"
    CALLS = "calls"
    MEAN = "mean"  # per call
    P50 = "p50"  # per call
    P90 = "p90"  # per call
    BYTES = "bytes"
    OPS = "ops"
    SHARE = "share"  # of the side's kernel time

    @property
    def quantity(self) -> Quantity:
        return _QUANTITIES.get(self, Quantity.TIME)

    @property
    def unit(self) -> str:
        """The unit of its values in a finding's numbers."""
        return "ops" if self is Metric.OPS else self.quantity.unit

    @property
    def additive(self) -> bool:
        """Whether it sums over the selection, and so is divided by steps under ``per:``."""
        return self in (Metric.TOTAL_TIME, Metric.CALLS, Metric.OPS, Metric.BYTES)


_QUANTITIES = {
    Metric.CALLS: Quantity.COUNT,
    Metric.OPS: Quantity.COUNT,
    Metric.BYTES: Quantity.SIZE,
    Metric.SHARE: Quantity.SHARE,
}

SELECTORS = ("kernel", "family", "category", "memcpy", "memset", "nvtx", "sync", "whole")
KERNEL_SELECTORS = ("kernel", "family", "category", "whole")
METRICS = tuple(m.value for m in Metric)
LIMITS = (
    LimitKind.MAX_RATIO,
    LimitKind.MAX_INCREASE,
    LimitKind.MAX_VALUE,
    LimitKind.MAX_SHARE,
    LimitKind.MAX_NOISE_WIDTHS,
)

_KERNEL_METRICS = (Metric.TOTAL_TIME, Metric.CALLS, Metric.MEAN, Metric.P50, Metric.P90)
_COPIES = (Metric.TOTAL_TIME, Metric.MEAN, Metric.OPS, Metric.BYTES)
_CALLS = (Metric.TOTAL_TIME, Metric.CALLS, Metric.MEAN)
# Which metrics each selector can measure.
_METRICS_FOR: dict[str, tuple[Metric, ...]] = {
    "kernel": (*_KERNEL_METRICS, Metric.SHARE),
    "family": (*_KERNEL_METRICS, Metric.SHARE),
    "category": (*_KERNEL_METRICS, Metric.SHARE),
    "whole": _KERNEL_METRICS,
    "memcpy": _COPIES,
    "memset": _COPIES,
    "nvtx": _CALLS,
    "sync": _CALLS,
}


def _category(value: Any) -> Regex:
    pattern = opt.regex(value)
    known = categories.names()
    if not any(pattern.search(n) for n in known):
        raise ValueError(f"{pattern.pattern!r} matches no category (categories: {', '.join(known)})")
    return pattern


def _memset(value: Any) -> bool:
    if value is not True:
        raise ValueError(f"expected true (memset has one kind), got {opt.type_name(value)}")
    return True


def _scalar(value: Any) -> Any:
    """Checked against the metric's unit once the metric is known (in :func:`build`)."""
    if isinstance(value, (list, dict, bool)) or value is None:
        raise ValueError(f"expected a quantity, got {opt.type_name(value)}")
    return value


def _per(value: Any) -> str:
    return opt.nonempty_string(value)


def _widths(value: Any) -> float:
    k = opt.number(value)
    if k < 1:
        raise ValueError(f"{value} is under 1: a limit inside one noise width can't be told from the noise")
    return k


OPTIONS = (
    Option("kernel", "regex", opt.regex, "Select kernels whose short or demangled name matches."),
    Option("family", "regex", opt.regex, "Select kernels whose family key matches."),
    Option(
        "category",
        "regex",
        _category,
        "Select kernels whose category matches (`attention`, `^gemm` for every GEMM "
        "category); must match at least one known category.",
    ),
    Option("memcpy", "regex", opt.regex, "Select memcpy kinds that match (`HtoD`, `DtoD`, `.*`)."),
    Option("memset", "true", _memset, "Select memsets (`memset: true`)."),
    Option("nvtx", "regex", opt.regex, "Select NVTX ranges whose name (or `domain::name`) matches."),
    Option("sync", "regex", opt.regex, "Select synchronising CUDA API calls whose name matches."),
    Option("whole", "`trace`", opt.choice(("trace",)), "Select every kernel (`whole: trace`)."),
    Option(
        "metric",
        "choice",
        opt.choice(METRICS),
        "What to measure: " + ", ".join(METRICS) + ". `mean`, `p50`, `p90` are per call; "
        "`share` is the selection's share of the side's kernel time.",
        default="total_time",
    ),
    Option("max_ratio", "ratio", opt.ratio, "Fail when candidate / base exceeds this (`1.10x`)."),
    Option(
        "max_increase",
        "metric unit",
        _scalar,
        "Fail when candidate - base exceeds this, in the metric's unit (time, count, size, %).",
    ),
    Option("max_value", "metric unit", _scalar, "Fail when the candidate value exceeds this."),
    Option(
        "max_share",
        "percent",
        opt.percent,
        "Fail when the selection takes more than this share of the candidate's kernel time.",
    ),
    Option(
        "max_noise_widths",
        "number",
        _widths,
        "Fail when the value grows by more than this many noise widths of the noise profile "
        "(at least 1; see docs/noise.md).",
    ),
    Option(
        "min_ratio",
        "ratio",
        opt.ratio,
        "With max_noise_widths: fail only when candidate / base also exceeds this (a change "
        "too small to matter, however clear).",
    ),
    opt.time_floor("Floor: a selection under this total time on both sides is too small to judge."),
    Option(
        "min_step_share",
        "percent",
        opt.percent,
        "With steps on both sides: a selection whose time per step moved by less than this "
        "share of the base time per step is too small to matter for the time per token, and "
        "is not judged.",
    ),
    Option(
        "each",
        "boolean",
        opt.boolean,
        "Judge each matched item (kernel, family, category, copy kind, range, call) on its own instead of their sum.",
        default=False,
        default_doc="false",
    ),
    Option(
        "per",
        "string",
        _per,
        "Normalise total_time, calls, ops and bytes per step of this NVTX range, when the "
        "fingerprints carry step counts (see docs).",
    ),
)


@dataclass(frozen=True, slots=True)
class BudgetOptions:
    selector: str
    pattern: Regex | None  # None for memset and whole
    metric: Metric
    limits: tuple[Limit, ...]  # in LIMITS order
    min_time_ns: float
    min_step_share: float | None
    each: bool
    per: str | None
    min_ratio: float | None = None  # gates max_noise_widths
    noise: NoiseProfile | None = None  # attached after loading (noise_limits.attach)

    @property
    def selection(self) -> str:
        if self.selector == "whole":
            return "whole trace"
        if self.pattern is None:
            return self.selector
        return f"{self.selector}:{self.pattern.pattern}"


def build(values: Mapping[str, Any], given: frozenset[str]) -> BudgetOptions:
    selector = _selector(given)
    metric = Metric(values["metric"])
    if metric not in _METRICS_FOR[selector]:
        allowed = ", ".join(m.value for m in _METRICS_FOR[selector])
        raise OptionError("metric", f"{metric.value!r} can't be measured on a {selector} selection (use {allowed})")
    limits.require(given, LIMITS, "a budget")
    if "max_share" in given and selector not in ("kernel", "family", "category"):
        raise OptionError(
            "max_share",
            f"a share of kernel time needs a kernel, family or category selection, not {selector}",
        )
    if "min_ratio" in given and "max_noise_widths" not in given:
        raise OptionError(
            "min_ratio",
            "goes with max_noise_widths (it gates a noise-relative limit); for a plain ratio limit use max_ratio",
        )
    if values["each"] and selector == "whole":
        raise OptionError("each", "'whole: trace' is one item; 'each' needs another selector")
    raw = values[selector]
    return BudgetOptions(
        selector=selector,
        pattern=raw if isinstance(raw, Regex) else None,
        metric=metric,
        limits=limits.build(values, given, LIMITS, metric.quantity, metric.value),
        min_time_ns=values["min_time"],
        min_step_share=values["min_step_share"],
        each=values["each"],
        per=values["per"],
        min_ratio=values["min_ratio"],
    )


def _selector(given: frozenset[str]) -> str:
    chosen = [s for s in SELECTORS if s in given]
    if not chosen:
        raise OptionError(None, f"a budget needs a selector: one of {', '.join(SELECTORS)}")
    if len(chosen) > 1:
        raise OptionError(chosen[1], f"a budget has one selector; this one also has {chosen[0]!r}")
    return chosen[0]


# --- measuring ------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Group:
    """The summed selection (or one item of it) on one side."""

    calls: int
    total_ns: int
    bytes: int
    kernels: tuple[KernelStats, ...]


def mixture_quantile(kernels: Sequence[KernelStats], pct: float) -> float | None:
    """The ``pct`` percentile of the per-call times of several kernels pooled together.

    Exact for one kernel. For several, the call-weighted mixture of their quantile
    sketches (linear between the sketch's grid points), solved by bisection.
    """
    ks = [k for k in kernels if k.calls > 0]
    if not ks:
        return None
    if len(ks) == 1:
        return ks[0].quantile(pct)
    grid = np.array(QUANTILE_GRID) / 100.0
    weights = np.array([k.calls for k in ks], dtype=float)
    weights /= weights.sum()
    sketches = [np.array(k.quantiles_ns) for k in ks]
    target = pct / 100.0

    def cdf(x: float) -> float:
        return float(
            sum(w * np.interp(x, q, grid, left=0.0, right=1.0) for w, q in zip(weights, sketches, strict=True))
        )

    lo, hi = min(k.min_ns for k in ks), max(k.max_ns for k in ks)
    for _ in range(80):
        mid = (lo + hi) / 2
        if cdf(mid) >= target:
            hi = mid
        else:
            lo = mid
    return hi


def _sum(kernels: Sequence[KernelStats]) -> Group:
    return Group(sum(k.calls for k in kernels), sum(k.total_ns for k in kernels), 0, tuple(kernels))


def groups(fp: Fingerprint, o: BudgetOptions, *, periods: bool = False) -> dict[str, Group]:
    """Subject -> group on one side; a subject absent from the side is absent here.
    ``periods``: sync calls are those of the steps' periods (:func:`step_sync`)."""
    if o.selector in KERNEL_SELECTORS:
        return _kernel_groups(fp, o)
    items = _items(fp, o, periods)
    if o.each:
        return dict(items)
    if not items:
        return {}
    gs = [g for _, g in items]
    return {o.selection: Group(sum(g.calls for g in gs), sum(g.total_ns for g in gs), sum(g.bytes for g in gs), ())}


def _kernel_groups(fp: Fingerprint, o: BudgetOptions) -> dict[str, Group]:
    if o.selector == "whole" and not fp.kernels and fp.graphs:
        # A graph-mode capture has no kernel rows: its graph launches are its GPU work.
        launches = sum(g.launches for g in fp.graphs)
        return {o.selection: Group(launches, sum(g.total_ns for g in fp.graphs), 0, ())}
    key_of = _KERNEL_KEYS[o.selector]
    p = o.pattern
    ks = list(fp.kernels) if p is None else [k for k in fp.kernels if any(p.search(n) for n in _searched(o, k))]
    if o.each:
        by: dict[str, list[KernelStats]] = {}
        for k in ks:
            by.setdefault(key_of(k), []).append(k)
        return {key: _sum(v) for key, v in by.items()}
    return {o.selection: _sum(ks)} if ks else {}


# The subject of a kernel judged on its own, per kernel selector.
_KERNEL_KEYS: dict[str, Callable[[KernelStats], str]] = {
    "kernel": lambda k: k.demangled,
    "family": lambda k: k.family,
    "category": lambda k: k.category,
    "whole": lambda k: "whole trace",
}


def _searched(o: BudgetOptions, k: KernelStats) -> tuple[str, ...]:
    """The names of a kernel a kernel selector's pattern is searched in."""
    if o.selector == "kernel":
        return (k.name, k.demangled)
    return (_KERNEL_KEYS[o.selector](k),)


def _items(fp: Fingerprint, o: BudgetOptions, periods: bool = False) -> list[tuple[str, Group]]:
    """The matched copy kinds, ranges or calls of one side, each as a group."""
    p = o.pattern
    if o.selector in ("memcpy", "memset"):
        copies = fp.memcpy if o.selector == "memcpy" else fp.memset
        return [(c.kind, Group(c.ops, c.total_ns, c.bytes, ())) for c in copies if p is None or p.search(c.kind)]
    assert p is not None
    if o.selector == "nvtx":
        items = []
        for r in fp.nvtx:
            key = f"{r.domain}::{r.name}" if r.domain else r.name
            if p.search(r.name) or p.search(key):
                items.append((key, Group(r.count, r.total_ns, 0, ())))
        return items
    calls = fp.steps.sync if periods and fp.steps is not None and fp.steps.sync is not None else fp.sync
    return [(a.name, Group(a.calls, a.total_ns, 0, ())) for a in calls if p.search(a.name)]


def step_sync(diff: Diff, o: BudgetOptions, normalised: bool) -> bool:
    """Whether a sync budget per step reads the sync calls of the steps' periods: a decode
    loop's sync (an ``.item()``) lies between one step's range and the next, outside the
    scope's ranges, and the step counts it. Both sides must have counted them (a
    fingerprint saved before has the calls inside the ranges only)."""
    return (
        o.selector == "sync"
        and normalised
        and all(f.steps is not None and f.steps.sync is not None for f in (diff.base, diff.candidate))
    )


def steps(fp: Fingerprint, per: str | None) -> int | None:
    """Step count to normalise by: only when the fingerprint counted steps of that range."""
    sc = fp.scope
    if per is None or not sc.steps:
        return None
    if sc.per is not None and sc.per != per:
        return None
    return sc.steps


def value(g: Group, fp: Fingerprint, metric: Metric, n_steps: int | None) -> float | None:
    div = float(n_steps) if n_steps and metric.additive else 1.0
    if metric is Metric.TOTAL_TIME:
        return g.total_ns / div
    if metric in (Metric.CALLS, Metric.OPS):
        return g.calls / div
    if metric is Metric.BYTES:
        return g.bytes / div
    if metric is Metric.MEAN:
        return g.total_ns / g.calls if g.calls else None
    if metric is Metric.SHARE:
        return g.total_ns / fp.kernel_ns if fp.kernel_ns else None
    return mixture_quantile(g.kernels, 50.0 if metric is Metric.P50 else 90.0)


@dataclass(frozen=True, slots=True)
class _Reading:
    """One limit of a budget read on one subject: how it reads, whether it is breached,
    and the change it allows as a log ratio from the base value (for the noise test)."""

    observed: str
    limit: str
    observed_value: float | None
    limit_value: float | None  # max_noise_widths: the ratio its widths allow, when measured
    unit: str
    breached: bool
    allowed: float | None
    change: float | None  # the observed log change of what the limit measures
    metric: Metric  # what the limit measures (max_share measures the share whatever the metric)
    in_widths: bool = False  # max_noise_widths: can't judge without a measured width


def _noise_of(
    o: BudgetOptions, metric: Metric, normalised: bool, periods: bool = False
) -> dict[str, noise_limits.SubjectNoise]:
    """The noise of every subject's ``metric`` across the runs of the budget's profile,
    selected and normalised exactly as the diff's sides are."""
    assert o.noise is not None
    per_run: list[dict[str, float | None]] = []
    for fp in o.noise.runs.runs:
        n = steps(fp, o.per) if normalised else None
        if normalised and n is None:
            per_run.append({})  # a run without step counts can't be compared per step
            continue
        per_run.append({s: value(g, fp, metric, n) for s, g in groups(fp, o, periods=periods).items()})
    return noise_limits.subjects(per_run)


def _readings(
    o: BudgetOptions,
    b: Group | None,
    c: Group,
    bv: float | None,
    cv: float,
    diff: Diff,
    noise: noise_limits.SubjectNoise | None,
) -> list[_Reading]:
    out: list[_Reading] = []
    for lim in o.limits:
        if lim.kind is LimitKind.MAX_SHARE:
            if diff.candidate.kernel_ns:
                out.append(_share_reading(lim, b, c, diff))
        elif lim.kind is LimitKind.MAX_NOISE_WIDTHS:
            out.append(_widths_reading(o, lim, bv, cv, noise))
        elif lim.kind is LimitKind.MAX_RATIO and not bv:
            # Nothing on the base side to take a ratio of: a new selection.
            fmt = o.metric.quantity.fmt
            new = _Reading(
                f"new ({fmt(cv)})", lim.text(fmt), None, lim.amount, "ratio", cv > 0 or bv is None, None, None, o.metric
            )
            out.append(new)
        else:
            out.append(_reading(o.metric, lim, bv, cv))
    return out


def _reading(metric: Metric, lim: Limit, bv: float | None, cv: float) -> _Reading:
    """A limit on the metric itself (max_ratio from a base value, max_increase, max_value)."""
    fmt = metric.quantity.fmt
    base = bv or 0.0
    return _Reading(
        lim.observed(base, cv, fmt),
        lim.text(fmt),
        lim.measure(base, cv),
        lim.amount,
        "ratio" if lim.kind is LimitKind.MAX_RATIO else metric.unit,
        lim.breached(base, cv),
        lim.allowed_change(bv),
        noise_limits.log_change(bv, cv),
        metric,
    )


def _share_reading(lim: Limit, b: Group | None, c: Group, diff: Diff) -> _Reading:
    """``max_share``: the selection's share of the candidate's kernel time."""
    share = c.total_ns / diff.candidate.kernel_ns
    base_share = b.total_ns / diff.base.kernel_ns if b is not None and diff.base.kernel_ns else None
    return _Reading(
        lim.observed(0.0, share, Quantity.SHARE.fmt),
        lim.text(Quantity.SHARE.fmt),
        share,
        lim.amount,
        Quantity.SHARE.unit,
        lim.breached(0.0, share),
        lim.allowed_change(base_share),
        noise_limits.log_change(base_share, share),
        Metric.SHARE,
    )


def _widths_reading(
    o: BudgetOptions, lim: Limit, bv: float | None, cv: float, noise: noise_limits.SubjectNoise | None
) -> _Reading:
    """``max_noise_widths`` (and ``min_ratio``) on one subject. Without a measured width
    (the profile lacks the subject, or some of its runs do) the limit can't judge: its
    finding is inconclusive, made by the caller from ``breached=False, allowed=None``."""
    k = lim.amount
    gate = f" and min_ratio {units.fmt_ratio(o.min_ratio)}" if o.min_ratio is not None else ""
    fmt = o.metric.quantity.fmt
    if bv is None or bv <= 0:
        return _Reading(f"new ({fmt(cv)})", lim.text(fmt) + gate, None, None, "ratio", True, None, None, o.metric, True)
    r = cv / bv
    w = noise.width if noise is not None else None
    if w is None:
        return _Reading(
            units.fmt_ratio(r), lim.text(fmt) + gate, r, None, "ratio", False, None, math.log(r), o.metric, True
        )
    threshold = math.exp(k * w)
    floor = o.min_ratio if o.min_ratio is not None else 1.0
    breached = exceeds(r, threshold) and exceeds(r, floor)
    widths = f"{math.log(r) / w:.1f} noise widths" if w > 0 else "no measured noise"
    limit = f"{lim.text(fmt)} ({units.fmt_ratio(threshold)}){gate}"
    return _Reading(
        f"{units.fmt_ratio(r)}, {widths}", limit, r, threshold, "ratio", breached, k * w, math.log(r), o.metric, True
    )


def _moves_the_step(diff: Diff, o: BudgetOptions, b: Group | None, c: Group) -> bool:
    """Whether the selection's change per step is at least ``min_step_share`` of the base
    GPU time per step (always, without the option or without steps on both sides). The
    GPU time per step is steady between repeats; a host-dominated period is not, and a
    floor on it would judge one change differently by which repeat is the base."""
    s = diff.steps
    if o.min_step_share is None or s is None or not s.base.steps or not s.candidate.steps:
        return True
    before = (b.total_ns if b else 0) / s.base.steps
    after = c.total_ns / s.candidate.steps
    return abs(after - before) >= o.min_step_share * s.base.kernel_per_step


@dataclass(frozen=True, slots=True)
class _Sides:
    """What a budget judges every subject of a diff with: both sides' selections, their
    step counts, and the noise of each measured metric per subject."""

    base: dict[str, Group]
    candidate: dict[str, Group]
    base_steps: int | None
    candidate_steps: int | None
    noise: dict[Metric, dict[str, noise_limits.SubjectNoise]]
    periods: bool = False  # sync calls of the steps' periods (step_sync)

    @property
    def normalised(self) -> bool:
        return self.base_steps is not None and self.candidate_steps is not None


def _sides(diff: Diff, o: BudgetOptions) -> _Sides:
    bs, cs = steps(diff.base, o.per), steps(diff.candidate, o.per)
    normalised = bs is not None and cs is not None
    periods = step_sync(diff, o, normalised)
    noise: dict[Metric, dict[str, noise_limits.SubjectNoise]] = {}
    if o.noise is not None:
        noise_limits.check_fits(o.noise, diff.base)
        noise[o.metric] = _noise_of(o, o.metric, normalised, periods)
        if limits.find(o.limits, LimitKind.MAX_SHARE) is not None:
            noise[Metric.SHARE] = _noise_of(o, Metric.SHARE, normalised, periods)
    return _Sides(
        groups(diff.base, o, periods=periods), groups(diff.candidate, o, periods=periods), bs, cs, noise, periods
    )


def _evidence(
    o: BudgetOptions, sides: _Sides, b: Group | None, c: Group, bv: float | None, cv: float, subject: str
) -> str:
    fmt = o.metric.quantity.fmt
    evidence = f"{o.metric.value} {'-' if bv is None else fmt(bv)} -> {fmt(cv)}"
    if o.metric is not Metric.TOTAL_TIME:
        before = units.fmt_time(b.total_ns) if b else "-"
        evidence += f"; total time {before} -> {units.fmt_time(c.total_ns)}"
    counted = "ops" if o.selector in ("memcpy", "memset") else "calls"
    evidence += f", {counted} {units.fmt_count(b.calls) if b else '-'} -> {units.fmt_count(c.calls)}"
    if o.per is not None and sides.normalised:
        evidence += f"; per {o.per} ({sides.base_steps} -> {sides.candidate_steps} steps)"
    elif o.per is not None:
        evidence += f"; per {o.per}: no step counts in the fingerprints, whole values compared"
    if len(c.kernels) > 1 or (b is not None and len(b.kernels) > 1):
        evidence += f"; {len(b.kernels) if b else 0} -> {len(c.kernels)} kernels"
    subject_noise = sides.noise.get(o.metric, {}).get(subject)
    if subject_noise is not None and subject_noise.width is not None:
        evidence += "; " + noise_limits.evidence(subject_noise)
    return evidence


def _judged(found: Finding, reading: _Reading, judged: noise_limits.SubjectNoise | None) -> Finding | None:
    """The finding a reading makes: inconclusive where the noise can't tell, else the
    finding when the limit is breached."""
    if reading.in_widths and reading.allowed is None and not reading.breached:
        # No width to count in: this limit can't judge the subject.
        reason = noise_limits.unmeasured(judged, reading.metric, found.subject)
        return dataclasses.replace(found, message=reason, inconclusive=True)
    if noise_limits.too_small(reading.allowed, reading.change, judged):
        assert reading.allowed is not None and judged is not None
        reason = noise_limits.below_noise(reading.allowed, judged, reading.metric, found.subject)
        return dataclasses.replace(found, message=reason, inconclusive=True)
    return found if reading.breached else None


def check(diff: Diff, rule: Rule) -> Iterator[Finding]:
    """The budget's findings; with ``min_step_share`` (a rule about the time per token), an
    error is a warning when the steps got faster clear of their noise: an improvement never
    fails a build, and the kernels that got slower inside it are still named."""
    o: BudgetOptions = rule.options
    better = diff.steps.improvement() if o.min_step_share is not None and diff.steps is not None else None
    for f in _check(diff, rule):
        if better is not None and f.level is Level.ERROR and not f.remark:
            f = dataclasses.replace(f, level=Level.WARNING, message=f"{f.message} ({better}: a warning)")
        yield f


def _check(diff: Diff, rule: Rule) -> Iterator[Finding]:
    o: BudgetOptions = rule.options
    sides = _sides(diff, o)
    skipped: list[str] = []  # why each subject went unjudged
    for subject in sorted(sides.base.keys() | sides.candidate.keys()):
        b, c = sides.base.get(subject), sides.candidate.get(subject)
        why = _skipped(diff, o, b, c)
        skipped.append(why)
        if why or c is None:
            continue
        bv = value(b, diff.base, o.metric, sides.base_steps if sides.normalised else None) if b else None
        cv = value(c, diff.candidate, o.metric, sides.candidate_steps if sides.normalised else None)
        if cv is None:
            continue
        evidence = _evidence(o, sides, b, c, bv, cv, subject)
        if diff.rates and o.metric.additive and bv:
            # Fixed windows: a total is a rate, so the time a unit of work takes is judged
            # (the window over the total), and less work per second is the regression.
            bw, cw = diff.base.meta.window_ns or 1, diff.candidate.meta.window_ns or 1
            evidence += (
                f"; fixed windows: per second of window {bv / bw * 1e9:,.4g} -> {cv / cw * 1e9:,.4g}, "
                "judged as the window time per unit of work"
            )
            bv, cv = bw / bv, (cw / cv if cv else math.inf)
        # A kernel judged on its own is named as every output names it (its label).
        shown = diff.labels.get(subject, subject) if o.selector == "kernel" and o.each else subject
        message = f"{o.metric.value} of {shown} is over budget"
        for reading in _readings(o, b, c, bv, cv, diff, sides.noise.get(o.metric, {}).get(subject)):
            if diff.rates and o.metric.additive and reading.unit != "ratio":
                continue  # a rate has no absolute limit: only max_ratio judges it
            found = rule.finding(
                shown,
                reading.observed,
                reading.limit,
                evidence,
                message,
                observed_value=reading.observed_value,
                limit_value=reading.limit_value,
                unit=reading.unit,
            )
            judged = _judged(found, reading, sides.noise.get(reading.metric, {}).get(subject))
            if judged is not None:
                yield judged

    if all(skipped):
        yield remark(rule.id, "budget", NOT_JUDGED, _unjudged(o, skipped, sides))


def _skipped(diff: Diff, o: BudgetOptions, b: Group | None, c: Group | None) -> str:
    """Why a subject is not judged ("" when it is): under the floor, gone from the
    candidate (nothing left to exceed a limit), or too small a change per step."""
    if max(b.total_ns if b else 0, c.total_ns if c else 0) < o.min_time_ns:
        return f"under its floor min_time {units.fmt_time(o.min_time_ns)}"
    if c is None:
        return "gone from the candidate"
    if not _moves_the_step(diff, o, b, c):
        share = units.fmt_percent(o.min_step_share or 0.0)
        return f"moved by less than its floor ({share} of the GPU time per step)"
    return ""


def _unjudged(o: BudgetOptions, skipped: list[str], sides: _Sides) -> str:
    """Why a budget judged no subject: nothing matched its selector, or each fell under a floor."""
    if not skipped and o.selector == "sync" and sides.normalised and not sides.periods:
        # Only the calls inside the ranges were looked at: a step's sync often lies between them.
        return (
            "nothing inside the steps' ranges matched its selector "
            "(a side saved before the steps counted their sync calls)"
        )
    if not skipped:
        return "nothing matched its selector"
    return "; ".join(dict.fromkeys(skipped))


def _measure(o: BudgetOptions) -> Measure:
    """Counts are counts, bytes bytes, a share is against the side's own time."""
    return {Quantity.COUNT: Measure.COUNT, Quantity.SIZE: Measure.BYTES, Quantity.SHARE: Measure.SCALE}.get(
        o.metric.quantity, Measure.TIME
    )


KIND = Kind(
    name="budget",
    summary="A limit on one metric (time, calls, per-call time, bytes, share) of a selection.",
    doc="""\
Selects part of the trace with exactly one selector (kernel, family, category, memcpy,
memset, nvtx, sync, or whole: trace), measures one metric on both sides, and fails when
a limit is exceeded. Name selectors are regexes in RE2 syntax (matched in linear time: no
lookaround, no backreferences), searched (not anchored) and case-sensitive: write `(?i)`
for case-insensitive, `^...$` to anchor.

By default the matched items are summed and judged as one subject (`category:attention`);
with `each: true` every matched item is judged on its own and the subject is its name.

Metrics: total_time, calls, ops and bytes are sums; mean is total time / calls; p50 and
p90 are per-call percentiles: exact for one kernel, and for several kernels the
percentile of all their launches pooled (the call-weighted mixture of their quantile
sketches). share is the selection's share of the side's total kernel time.

Limits (at least one; each breached limit is one finding): max_ratio (candidate/base),
max_increase and max_value (in the metric's unit: a time for time metrics, a count for
calls/ops, a size for bytes, a percentage for share), max_share (of the candidate's
kernel time). A selection present only in the candidate breaches max_ratio as "new" and
counts from zero for max_increase; one absent from the candidate breaches nothing; one
absent on both sides produces no finding. `min_time` skips selections whose total time
is under the floor on both sides.

`max_noise_widths: K` (a limit) fails when the value grows by more than K noise widths
of the noise profile (`nsysdiff rules explain noise_profile`); `min_ratio` beside it also
requires candidate / base above that ratio. With a profile, any limit within one noise
width of no change is too small to tell: its finding is inconclusive (exit 3 unless
another rule fails) unless the change itself is beyond 3 widths.

`per: RANGE` normalises the sums (total_time, calls, ops, bytes) per step, dividing by
the step counts of both fingerprints (`scope.steps`, when `scope.per` is that range or
unset). Fingerprints without step counts are compared whole, and the evidence says so.
""",
    options=OPTIONS,
    build=build,
    check=check,
    measure=_measure,
)
