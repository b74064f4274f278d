"""Rule kind ``budget``: a limit on one metric of a selection of the trace."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from nsysdiff.compare.diff import Diff
from nsysdiff.fingerprint import categories
from nsysdiff.fingerprint.model import Fingerprint, KernelStats
from nsysdiff.fingerprint.noise import NoiseProfile
from nsysdiff.rules import noise_limits, units
from nsysdiff.rules import options as opt
from nsysdiff.rules.model import Kind, Option, OptionError, Rule
from nsysdiff.rules.report import NOT_JUDGED, Finding, Level, remark
from nsysdiff.safe.regex import Regex
from nsysdiff.trace.records import QUANTILE_GRID

SELECTORS = ("kernel", "family", "category", "memcpy", "memset", "nvtx", "sync", "whole")
KERNEL_SELECTORS = ("kernel", "family", "category", "whole")
METRICS = ("total_time", "calls", "mean", "p50", "p90", "bytes", "ops", "share")
LIMITS = ("max_ratio", "max_increase", "max_value", "max_share", "max_noise_widths")

# Which metrics each selector can measure.
_METRICS_FOR: dict[str, tuple[str, ...]] = {
    "kernel": ("total_time", "calls", "mean", "p50", "p90", "share"),
    "family": ("total_time", "calls", "mean", "p50", "p90", "share"),
    "category": ("total_time", "calls", "mean", "p50", "p90", "share"),
    "whole": ("total_time", "calls", "mean", "p50", "p90"),
    "memcpy": ("total_time", "mean", "ops", "bytes"),
    "memset": ("total_time", "mean", "ops", "bytes"),
    "nvtx": ("total_time", "calls", "mean"),
    "sync": ("total_time", "calls", "mean"),
}
_ADDITIVE = ("total_time", "calls", "ops", "bytes")  # divided by steps under `per:`


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
    Option(
        "min_time",
        "time",
        opt.time,
        "Floor: a selection under this total time on both sides is too small to judge.",
        default=0.0,
        default_doc="0ns",
    ),
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
    metric: str
    max_ratio: float | None
    max_increase: float | None
    max_value: float | None
    max_share: float | None
    min_time_ns: float
    min_step_share: float | None
    each: bool
    per: str | None
    max_noise_widths: float | None = None
    min_ratio: float | None = None
    noise: NoiseProfile | None = None  # attached after loading (noise_limits.attach)

    @property
    def selection(self) -> str:
        if self.selector == "whole":
            return "whole trace"
        if self.pattern is None:
            return self.selector
        return f"{self.selector}:{self.pattern.pattern}"


def _metric_parser(metric: str) -> Callable[[Any], float]:
    if metric in ("calls", "ops"):
        return opt.count
    if metric == "bytes":
        return opt.size
    if metric == "share":
        return opt.percent
    return opt.time


def build(values: Mapping[str, Any], given: frozenset[str]) -> BudgetOptions:
    chosen = [s for s in SELECTORS if s in given]
    if not chosen:
        raise OptionError(None, f"a budget needs a selector: one of {', '.join(SELECTORS)}")
    if len(chosen) > 1:
        raise OptionError(chosen[1], f"a budget has one selector; this one also has {chosen[0]!r}")
    selector = chosen[0]
    metric: str = values["metric"]
    if metric not in _METRICS_FOR[selector]:
        allowed = ", ".join(_METRICS_FOR[selector])
        raise OptionError("metric", f"{metric!r} can't be measured on a {selector} selection (use {allowed})")
    if not any(lim in given for lim in LIMITS):
        raise OptionError(None, f"a budget needs a limit: one of {', '.join(LIMITS)}")
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
    parse = _metric_parser(metric)
    bounds: dict[str, float | None] = {}
    for key in ("max_increase", "max_value"):
        if key in given:
            try:
                bounds[key] = parse(values[key])
            except ValueError as e:
                raise OptionError(key, f"{e} (the unit of metric {metric!r})") from None
        else:
            bounds[key] = None
    raw = values[selector]
    return BudgetOptions(
        selector=selector,
        pattern=raw if isinstance(raw, Regex) else None,
        metric=metric,
        max_ratio=values["max_ratio"],
        max_increase=bounds["max_increase"],
        max_value=bounds["max_value"],
        max_share=values["max_share"],
        min_time_ns=values["min_time"],
        min_step_share=values["min_step_share"],
        each=values["each"],
        per=values["per"],
        max_noise_widths=values["max_noise_widths"],
        min_ratio=values["min_ratio"],
    )


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


def groups(fp: Fingerprint, o: BudgetOptions) -> dict[str, Group]:
    """Subject -> group on one side; a subject absent from the side is absent here."""
    p = o.pattern
    items: list[tuple[str, Group]] = []
    if o.selector in KERNEL_SELECTORS:
        key_of: Callable[[KernelStats], str]
        if o.selector == "kernel":
            assert p is not None
            ks = [k for k in fp.kernels if p.search(k.name) or p.search(k.demangled)]
            key_of = lambda k: k.demangled  # noqa: E731
        elif o.selector == "family":
            assert p is not None
            ks = [k for k in fp.kernels if p.search(k.family)]
            key_of = lambda k: k.family  # noqa: E731
        elif o.selector == "category":
            assert p is not None
            ks = [k for k in fp.kernels if p.search(k.category)]
            key_of = lambda k: k.category  # noqa: E731
        else:
            ks = list(fp.kernels)
            if not ks and fp.graphs:
                # A graph-mode capture has no kernel rows: its graph launches are its GPU work.
                launches = sum(g.launches for g in fp.graphs)
                return {o.selection: Group(launches, sum(g.total_ns for g in fp.graphs), 0, ())}
            key_of = lambda k: "whole trace"  # noqa: E731
        if o.each:
            by: dict[str, list[KernelStats]] = {}
            for k in ks:
                by.setdefault(key_of(k), []).append(k)
            return {key: _sum(v) for key, v in by.items()}
        return {o.selection: _sum(ks)} if ks else {}
    if o.selector in ("memcpy", "memset"):
        copies = fp.memcpy if o.selector == "memcpy" else fp.memset
        for c in copies:
            if p is None or p.search(c.kind):
                items.append((c.kind, Group(c.ops, c.total_ns, c.bytes, ())))
    elif o.selector == "nvtx":
        assert p is not None
        for r in fp.nvtx:
            key = f"{r.domain}::{r.name}" if r.domain else r.name
            if p.search(r.name) or p.search(key):
                items.append((key, Group(r.count, r.total_ns, 0, ())))
    else:
        assert p is not None
        for a in fp.sync:
            if p.search(a.name):
                items.append((a.name, Group(a.calls, a.total_ns, 0, ())))
    if o.each:
        return dict(items)
    if not items:
        return {}
    gs = [g for _, g in items]
    return {o.selection: Group(sum(g.calls for g in gs), sum(g.total_ns for g in gs), sum(g.bytes for g in gs), ())}


def steps(fp: Fingerprint, per: str | None) -> int | None:
    """Step count to normalise by: only when the fingerprint counted steps of that range."""
    sc = fp.scope
    if per is None or not sc.steps:
        return None
    if sc.per is not None and sc.per != per:
        return None
    return sc.steps


def value(g: Group, fp: Fingerprint, metric: str, n_steps: int | None) -> float | None:
    div = float(n_steps) if n_steps and metric in _ADDITIVE else 1.0
    if metric == "total_time":
        return g.total_ns / div
    if metric in ("calls", "ops"):
        return g.calls / div
    if metric == "bytes":
        return g.bytes / div
    if metric == "mean":
        return g.total_ns / g.calls if g.calls else None
    if metric == "share":
        return g.total_ns / fp.kernel_ns if fp.kernel_ns else None
    return mixture_quantile(g.kernels, 50.0 if metric == "p50" else 90.0)


def formatter(metric: str) -> Callable[[float], str]:
    if metric in ("calls", "ops"):
        return units.fmt_count
    if metric == "bytes":
        return units.fmt_size
    if metric == "share":
        return units.fmt_percent
    return units.fmt_time


def unit_of(metric: str) -> str:
    """The unit of a metric's value in a finding's numbers."""
    return {"calls": "calls", "ops": "ops", "bytes": "bytes", "share": "fraction"}.get(metric, "ns")


def _show(v: float | None, fmt: Callable[[float], str]) -> str:
    return "-" if v is None else fmt(v)


@dataclass(frozen=True, slots=True)
class _Limit:
    """One limit of a budget on one subject: how it reads, whether it is breached, and
    the change it allows as a log ratio from the base value (for the noise test)."""

    observed: str
    limit: str
    observed_value: float | None
    limit_value: float | None  # max_noise_widths: the ratio its widths allow, when measured
    unit: str
    breached: bool
    allowed: float | None
    change: float | None  # the observed log change of what the limit measures
    metric: str  # what the limit measures (max_share measures the share whatever the metric)
    in_widths: bool = False  # max_noise_widths: can't judge without a measured width


def _noise_of(o: BudgetOptions, metric: str, normalised: bool) -> dict[str, noise_limits.SubjectNoise]:
    """The noise of every subject's ``metric`` across the runs of the budget's profile,
    selected and normalised exactly as the diff's sides are."""
    assert o.noise is not None
    per_run: list[dict[str, float | None]] = []
    for fp in o.noise.runs.runs:
        n = steps(fp, o.per) if normalised else None
        if normalised and n is None:
            per_run.append({})  # a run without step counts can't be compared per step
            continue
        per_run.append({s: value(g, fp, metric, n) for s, g in groups(fp, o).items()})
    return noise_limits.subjects(per_run)


def _limits(
    o: BudgetOptions,
    b: Group | None,
    c: Group,
    bv: float | None,
    cv: float,
    diff: Diff,
    noise: noise_limits.SubjectNoise | None,
) -> list[_Limit]:
    fmt = formatter(o.metric)
    unit = unit_of(o.metric)
    new = b is None or bv is None
    change = noise_limits.log_change(bv, cv)
    out: list[_Limit] = []
    if o.max_ratio is not None:
        limit = f"max_ratio {units.fmt_ratio(o.max_ratio)}"
        allowed = math.log(o.max_ratio)
        if new or bv == 0:
            out.append(
                _Limit(f"new ({fmt(cv)})", limit, None, o.max_ratio, "ratio", cv > 0 or new, None, None, o.metric)
            )
        else:
            assert bv is not None
            r = cv / bv
            out.append(
                _Limit(
                    units.fmt_ratio(r),
                    limit,
                    r,
                    o.max_ratio,
                    "ratio",
                    r > o.max_ratio * (1 + 1e-9),
                    allowed,
                    change,
                    o.metric,
                )
            )
    if o.max_increase is not None:
        inc = cv - (bv or 0.0)
        allowed_inc = noise_limits.log_change(bv, (bv or 0.0) + o.max_increase)
        out.append(
            _Limit(
                f"+{fmt(inc)}" if inc >= 0 else f"-{fmt(-inc)}",
                f"max_increase {fmt(o.max_increase)}",
                inc,
                o.max_increase,
                unit,
                inc > o.max_increase + 1e-9,
                allowed_inc,
                change,
                o.metric,
            )
        )
    if o.max_value is not None:
        out.append(
            _Limit(
                fmt(cv),
                f"max_value {fmt(o.max_value)}",
                cv,
                o.max_value,
                unit,
                cv > o.max_value + 1e-9,
                noise_limits.log_change(bv, o.max_value),
                change,
                o.metric,
            )
        )
    if o.max_share is not None and diff.candidate.kernel_ns:
        share = c.total_ns / diff.candidate.kernel_ns
        base_share = b.total_ns / diff.base.kernel_ns if b is not None and diff.base.kernel_ns else None
        out.append(
            _Limit(
                units.fmt_percent(share),
                f"max_share {units.fmt_percent(o.max_share)}",
                share,
                o.max_share,
                "fraction",
                share > o.max_share + 1e-12,
                noise_limits.log_change(base_share, o.max_share),
                noise_limits.log_change(base_share, share),
                "share",
            )
        )
    if o.max_noise_widths is not None:
        out.append(_widths_limit(o, bv, cv, noise))
    return out


def _widths_limit(o: BudgetOptions, bv: float | None, cv: float, noise: noise_limits.SubjectNoise | None) -> _Limit:
    """``max_noise_widths`` (and ``min_ratio``) on one subject. Without a measured width
    (the profile lacks the subject, or some of its runs do) the limit can't judge: its
    finding is inconclusive, made by the caller from ``breached=False, allowed=None``."""
    k = o.max_noise_widths
    assert k is not None
    gate = f" and min_ratio {units.fmt_ratio(o.min_ratio)}" if o.min_ratio is not None else ""
    fmt = formatter(o.metric)
    if bv is None or bv <= 0:
        return _Limit(
            f"new ({fmt(cv)})",
            f"max_noise_widths {k:g}{gate}",
            None,
            None,
            "ratio",
            True,
            None,
            None,
            o.metric,
            in_widths=True,
        )
    r = cv / bv
    w = noise.width if noise is not None else None
    if w is None:
        return _Limit(
            units.fmt_ratio(r),
            f"max_noise_widths {k:g}{gate}",
            r,
            None,
            "ratio",
            False,
            None,
            math.log(r),
            o.metric,
            in_widths=True,
        )
    threshold = math.exp(k * w)
    floor = o.min_ratio if o.min_ratio is not None else 1.0
    breached = r > threshold * (1 + 1e-9) and r > floor * (1 + 1e-9)
    widths = f"{math.log(r) / w:.1f} noise widths" if w > 0 else "no measured noise"
    limit = f"max_noise_widths {k:g} ({units.fmt_ratio(threshold)}){gate}"
    return _Limit(
        f"{units.fmt_ratio(r)}, {widths}",
        limit,
        r,
        threshold,
        "ratio",
        breached,
        k * w,
        math.log(r),
        o.metric,
        in_widths=True,
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
    bg, cg = groups(diff.base, o), groups(diff.candidate, o)
    bs, cs = steps(diff.base, o.per), steps(diff.candidate, o.per)
    normalised = bs is not None and cs is not None
    fmt = formatter(o.metric)
    noise: dict[str, dict[str, noise_limits.SubjectNoise]] = {}
    if o.noise is not None:
        noise_limits.check_fits(o.noise, diff.base)
        noise[o.metric] = _noise_of(o, o.metric, normalised)
        if o.max_share is not None:
            noise["share"] = _noise_of(o, "share", normalised)
    skipped: list[str] = []  # why each subject went unjudged
    for subject in sorted(bg.keys() | cg.keys()):
        b, c = bg.get(subject), cg.get(subject)
        why = _skipped(diff, o, b, c)
        skipped.append(why)
        if why or c is None:
            continue
        bv = value(b, diff.base, o.metric, bs if normalised else None) if b else None
        cv = value(c, diff.candidate, o.metric, cs if normalised else None)
        if cv is None:
            continue
        evidence = f"{o.metric} {_show(bv, fmt)} -> {fmt(cv)}"
        if o.metric != "total_time":
            before = units.fmt_time(b.total_ns) if b else "-"
            evidence += f"; total time {before} -> {units.fmt_time(c.total_ns)}"
        counted = "ops" if o.selector in ("memcpy", "memset") else "calls"
        evidence += f", {counted} {units.fmt_count(b.calls) if b else '-'} -> {units.fmt_count(c.calls)}"
        if o.per is not None and normalised:
            evidence += f"; per {o.per} ({bs} -> {cs} steps)"
        elif o.per is not None:
            evidence += f"; per {o.per}: no step counts in the fingerprints, whole values compared"
        if len(c.kernels) > 1 or (b is not None and len(b.kernels) > 1):
            evidence += f"; {len(b.kernels) if b else 0} -> {len(c.kernels)} kernels"
        # A kernel judged on its own is named as every output names it (its label).
        shown = diff.labels.get(subject, subject) if o.selector == "kernel" and o.each else subject
        message = rule.message or f"{o.metric} of {shown} is over budget"
        subject_noise = noise.get(o.metric, {}).get(subject)
        if subject_noise is not None and subject_noise.width is not None:
            evidence += "; " + noise_limits.evidence(subject_noise)
        for lim in _limits(o, b, c, bv, cv, diff, subject_noise):
            found = Finding(
                level=rule.level,
                rule_id=rule.id,
                kind="budget",
                subject=shown,
                observed=lim.observed,
                limit=lim.limit,
                evidence=evidence,
                message=message,
                observed_value=lim.observed_value,
                limit_value=lim.limit_value,
                unit=lim.unit,
            )
            judged = noise.get(lim.metric, {}).get(subject)
            if lim.in_widths and lim.allowed is None and not lim.breached:
                # No width to count in: this limit can't judge the subject.
                reason = noise_limits.unmeasured(judged, lim.metric, shown)
                yield dataclasses.replace(found, message=reason, inconclusive=True)
            elif noise_limits.too_small(lim.allowed, lim.change, judged):
                assert lim.allowed is not None and judged is not None
                reason = noise_limits.below_noise(lim.allowed, judged, lim.metric, shown)
                yield dataclasses.replace(found, message=reason, inconclusive=True)
            elif lim.breached:
                yield found

    if all(skipped):
        yield remark(rule.id, "budget", NOT_JUDGED, _unjudged(o, skipped))


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


def _unjudged(o: BudgetOptions, skipped: list[str]) -> str:
    """Why a budget judged no subject: nothing matched its selector, or each fell under a floor."""
    if not skipped:
        return "nothing matched its selector"
    return "; ".join(dict.fromkeys(skipped))


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
)
