"""A diff of several runs per side: the median runs' diff, with statistics across runs.

What a report shows with N runs per side (``docs/statistics.md``):

- **Point figures** (the headline, every table, the attribution) are those of the
  *median run* of each side: the run whose kernel time is the side's median (the lower
  of the two middle runs when N is even). A real run, so every figure is a measured
  integer and the attribution's parts add up exactly to the change, as with one run.
- **Per key** (kernel, family, category, copy kind, NVTX range; total, calls, per-call
  mean) the runs are compared by :mod:`nsysdiff.compare.runstats`: the geometric-mean ratio, its
  Welch t interval, a test of "no change" and a verdict, with *one* Benjamini-Hochberg
  correction over every key and measure the diff tests.
- **The scale**: every run's scale is measured against one common reference, the base
  runs' per-key geometric mean; Welch's t over those per-run scales gives the scale's
  ratio and interval. With one reference for all runs, the per-run values differ from
  the runs' own log totals by a constant per key, so the interval has the spread of the
  runs and no resampling (2 to 5 runs leave a bootstrap almost nothing to resample).
- **Each key's deviation from the scale** (what an outlier score measures): per run, its
  log total against the reference minus the run's log scale; Welch's t over runs gives
  the deviation's interval, and the score's is that interval on the score's scale. A
  key is an outlier only when its median runs flag it *and* the whole interval clears
  the thresholds (beyond ``min_deviation`` and ``z_threshold`` the same way).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence

import numpy as np

from nsysdiff.compare import runstats
from nsysdiff.compare.diff import Diff, Row, Settings, compare, row_verdict, totals_of
from nsysdiff.compare.runs import Deviation, KeyRuns, RunsDiff, Spread
from nsysdiff.compare.scale import scale_of
from nsysdiff.compare.steps import StepSide
from nsysdiff.compare.steps import side as step_side
from nsysdiff.fingerprint import runset
from nsysdiff.fingerprint.model import Fingerprint
from nsysdiff.fingerprint.runset import KeyKind, Measure, RunSet

# The score is 0.6745 * log deviation / spread (Iglewicz & Hoaglin's modified z).
Z_FACTOR = 0.6745

_DEFAULTS = Settings()


def median_run(rs: RunSet) -> int:
    """The index of the run a multi-run diff shows: the median by kernel time (graph
    time, then NVTX time, for captures without kernel rows), the lower middle one when
    the count is even, the earlier run on a tie."""

    def weight(i: int) -> tuple[int, int, int, int]:
        fp = rs.runs[i]
        return (fp.kernel_ns, fp.meta.graph_total_ns, sum(r.total_ns for r in fp.nvtx), i)

    order = sorted(range(len(rs.runs)), key=weight)
    return order[(len(order) - 1) // 2]


def compare_sides(
    base: RunSet,
    cand: RunSet,
    settings: Settings = _DEFAULTS,
    *,
    alpha: float = 0.05,
    band: float = 0.02,
    confidence: float = 0.95,
) -> Diff:
    """The diff of the median runs; with more than one run on a side, the statistics
    across runs attached (``Diff.runs``) and outliers kept only where the runs agree."""
    bi, ci = median_run(base), median_run(cand)
    d = compare(base.runs[bi], cand.runs[ci], settings)
    if len(base.runs) == 1 and len(cand.runs) == 1:
        return d  # exactly today's diff: nothing across runs to say
    per_step = d.per_step
    keys, partial = _keys(base, cand, per_step, alpha, band, confidence)
    rows = _scored_rows(d)
    b_tot = {name: [_per_step(totals_of(fp, name), fp, per_step) for fp in base.runs] for name in rows}
    c_tot = {name: [_per_step(totals_of(fp, name), fp, per_step) for fp in cand.runs] for name in rows}
    scale_rows = "families" if d.headline.basis == "kernels" else d.headline.basis
    scale, b_scales, c_scales = _scale(b_tot[scale_rows], c_tot[scale_rows], d, confidence)
    spread = max(d.headline.scale_info.spread, settings.mad_floor)
    threshold = max(settings.min_deviation, math.exp(settings.z_threshold * spread / Z_FACTOR))
    deviations: dict[tuple[str, str], Deviation] = {}
    if scale is not None:
        for name in rows:
            for dev in _deviations(name, b_tot[name], c_tot[name], b_scales, c_scales, spread, threshold, confidence):
                deviations[(name, dev.key)] = dev
    # The outliers of the median runs, each with its interval (kept or not).
    flagged = [
        deviations[(name, r.key)]
        for name, table in _tables(d, rows)
        for r in table
        if r.is_outlier and (name, r.key) in deviations
    ]
    d = _outliers_across_runs(d, deviations, len(base.runs) > 1 and len(cand.runs) > 1)
    runs = RunsDiff(
        base_sources=base.sources,
        cand_sources=cand.sources,
        base_shown=bi,
        cand_shown=ci,
        keys=keys,
        partial=partial,
        kernel_time=_positive_spread(
            [_time(fp, per_step) for fp in base.runs], [_time(fp, per_step) for fp in cand.runs], confidence
        ),
        scale=scale,
        deviations=tuple(sorted(flagged, key=lambda x: -abs(x.score))),
        alpha=alpha,
        band=band,
        confidence=confidence,
        threshold=threshold,
        steps=_steps(base, cand),
    )
    return dataclasses.replace(d, runs=runs)


def _steps(base: RunSet, cand: RunSet) -> tuple[tuple[StepSide, ...], tuple[StepSide, ...]] | None:
    """Every run's steps summarised, when every run of both sides has steps."""
    runs = (*base.runs, *cand.runs)
    if not all(fp.steps is not None and fp.steps.steps for fp in runs):
        return None
    return (
        tuple(step_side(fp.steps) for fp in base.runs if fp.steps is not None),
        tuple(step_side(fp.steps) for fp in cand.runs if fp.steps is not None),
    )


def _keys(
    base: RunSet, cand: RunSet, per_step: bool, alpha: float, band: float, confidence: float
) -> tuple[tuple[KeyRuns, ...], tuple[tuple[KeyKind, str], ...]]:
    """Every key of every kind on its three measures, one correction over all of them."""
    groups = []
    partial: list[tuple[KeyKind, str]] = []
    for kind in KeyKind:
        for measure in Measure:
            b = runset.per_run_values(base, kind, measure, per_step=per_step)
            c = runset.per_run_values(cand, kind, measure, per_step=per_step)
            groups.append((b.values, c.values))
            if measure is Measure.TOTAL:
                # Partial on one side or on one side only: a structural change, not noise.
                lacking = set(b.partial) | set(c.partial) | (set(b.values) ^ set(c.values))
                partial += [(kind, key) for key in sorted(lacking)]
    compared = runstats.compare_groups(groups, alpha=alpha, band=band, confidence=confidence)
    out = []
    for i, kind in enumerate(KeyKind):
        total, calls, per_call = compared[3 * i : 3 * i + 3]
        out += [KeyRuns(kind, t.key, t, c, p) for t, c, p in zip(total.keys, calls.keys, per_call.keys, strict=True)]
    return tuple(out), tuple(partial)


def _per_step(totals: dict[str, float], fp: Fingerprint, per_step: bool) -> dict[str, float]:
    n = fp.scope.steps if per_step and fp.scope.steps else 1
    return totals if n == 1 else {k: v / n for k, v in totals.items()}


def _time(fp: Fingerprint, per_step: bool) -> float:
    """The time a run's headline compares: kernels, else graph launches, else NVTX ranges."""
    total = fp.kernel_ns or fp.meta.graph_total_ns or sum(r.total_ns for r in fp.nvtx)
    return total / (fp.scope.steps or 1) if per_step else float(total)


def _spread(base: Sequence[float], cand: Sequence[float], confidence: float) -> Spread:
    """Welch's t of one positive value per run; the ratio alone with one run on a side."""
    b, c = np.array([base], dtype=np.float64), np.array([cand], dtype=np.float64)
    ratio = float(np.exp(np.log(c).mean() - np.log(b).mean()))
    if b.shape[1] < 2 or c.shape[1] < 2:
        return Spread(tuple(base), tuple(cand), ratio, None, None)
    t = runstats.welch_log(b, c, confidence)
    return Spread(tuple(base), tuple(cand), float(t.ratio[0]), float(t.ci_low[0]), float(t.ci_high[0]))


def _positive_spread(base: Sequence[float], cand: Sequence[float], confidence: float) -> Spread | None:
    """:func:`_spread`, or None when some run has no such time (a log needs a positive value)."""
    return _spread(base, cand, confidence) if min(*base, *cand) > 0 else None


def _reference(base: Sequence[Mapping[str, float]]) -> dict[str, float]:
    """Each key's geometric mean over the base runs, for the keys every base run has."""
    keys = set.intersection(*(set(k for k, v in run.items() if v > 0) for run in base))
    return {k: math.exp(sum(math.log(run[k]) for run in base) / len(base)) for k in sorted(keys)}


def _scale(
    base: Sequence[Mapping[str, float]], cand: Sequence[Mapping[str, float]], d: Diff, confidence: float
) -> tuple[Spread | None, list[float], list[float]]:
    """The scale of every run against the base reference, and their Welch interval; None
    when the median runs have no meaningful scale or some run has none."""
    if not d.headline.scale_info.meaningful:
        return None, [], []
    ref = _reference(base)
    scales = [scale_of(ref, run, d.settings.min_share) for run in (*base, *cand)]
    if not ref or not all(s.families for s in scales):
        return None, [], []
    values = [s.factor for s in scales]
    b, c = values[: len(base)], values[len(base) :]
    return _spread(b, c, confidence), b, c


def _scored_rows(d: Diff) -> tuple[str, ...]:
    """The diff tables whose rows carry outlier scores."""
    if d.headline.basis == "kernels":
        return ("kernels", "families", "categories")
    return (d.headline.basis,)


def _tables(d: Diff, names: Sequence[str]) -> list[tuple[str, tuple[Row, ...]]]:
    return [(name, getattr(d, name)) for name in names]


def _deviations(
    name: str,
    base: Sequence[Mapping[str, float]],
    cand: Sequence[Mapping[str, float]],
    b_scales: Sequence[float],
    c_scales: Sequence[float],
    spread: float,
    threshold: float,
    confidence: float,
) -> list[Deviation]:
    """Per key on every run of both sides: its log total against the base reference minus
    the run's log scale, compared by Welch's t (keys every run has, on both sides)."""
    ref = _reference(base)
    keys = [k for k in ref if all(run.get(k, 0) > 0 for run in cand)]
    if not keys:
        return []
    r = np.array([ref[k] for k in keys])
    b = np.array([[run[k] for run in base] for k in keys]) / r[:, None] / np.array(b_scales)
    c = np.array([[run[k] for run in cand] for k in keys]) / r[:, None] / np.array(c_scales)
    out = []
    if b.shape[1] >= 2 and c.shape[1] >= 2:
        t = runstats.welch_log(b, c, confidence)
        # float() per element, not tolist(): numpy's stubs type tolist() differently across versions.
        ratio = [float(v) for v in t.ratio]
        lo: list[float | None] = [float(v) for v in t.ci_low]
        hi: list[float | None] = [float(v) for v in t.ci_high]
    else:
        ratio = [float(v) for v in np.exp(np.log(c).mean(axis=1) - np.log(b).mean(axis=1))]
        lo = hi = [None] * len(keys)
    for i, key in enumerate(keys):
        low, high = lo[i], hi[i]
        # Cleared: the interval lies wholly beyond the threshold, on one side.
        cleared = low is not None and high is not None and (low >= threshold or high <= 1 / threshold)
        score = Z_FACTOR * math.log(ratio[i]) / spread
        s_lo = Z_FACTOR * math.log(low) / spread if low is not None else score
        s_hi = Z_FACTOR * math.log(high) / spread if high is not None else score
        spread_i = Spread(tuple(b[i].tolist()), tuple(c[i].tolist()), ratio[i], low, high)
        out.append(Deviation(name, key, spread_i, score, s_lo, s_hi, cleared))
    return out


def _outliers_across_runs(d: Diff, deviations: Mapping[tuple[str, str], Deviation], judge: bool) -> Diff:
    """Every scored row with its deviation interval; with intervals on both sides, a row
    stays an outlier only when its interval clears the thresholds."""

    def row(name: str, r: Row) -> Row:
        dev = deviations.get((name, r.key))
        low, high = (dev.spread.low, dev.spread.high) if dev is not None else (None, None)
        interval = (low, high) if low is not None and high is not None else None
        if not r.is_outlier or not judge or (dev is not None and dev.cleared):
            return dataclasses.replace(r, deviation_ci=interval)
        return dataclasses.replace(r, deviation_ci=interval, is_outlier=False, verdict=row_verdict(r, d.settings.noise))

    def table(name: str) -> tuple[Row, ...]:
        rows: tuple[Row, ...] = getattr(d, name)
        return tuple(row(name, r) for r in rows) if name in _scored_rows(d) else rows

    return dataclasses.replace(
        d,
        kernels=table("kernels"),
        families=table("families"),
        categories=table("categories"),
        nvtx=table("nvtx"),
        graphs=table("graphs"),
    )
