"""The JSON report of ``nsysdiff diff --format json``, documented field by field in
``docs/json.md``.

The shape is built explicitly here (not dumped from the dataclasses) so that renaming a
field in the engine can't silently change a documented key. Keys keep the order written
below; collections keep the diff's order (kernels: largest absolute change first).
Durations are integer or fractional nanoseconds (``*_ns``), sizes bytes; a ratio is
candidate / base. Values that don't exist (a side that is absent, a ratio over zero, a
non-finite number) are ``null``, never ``NaN`` or ``Infinity``.
"""

from __future__ import annotations

import json
from typing import Any

from nsysdiff.compare import comparability, stats
from nsysdiff.compare.attribution import Effects, Part
from nsysdiff.compare.diff import CopyDelta, CopySide, Diff, PhaseDiff, Row, Side, Variant, VariantDrift
from nsysdiff.compare.runs import RunsDiff, Spread
from nsysdiff.compare.runstats import KeyComparison
from nsysdiff.fingerprint.model import Fingerprint, TraceMeta, to_data
from nsysdiff.render import steps as step_lines
from nsysdiff.render.cells import finite
from nsysdiff.rules.report import NOT_JUDGED, WITHIN_NOISE, Finding, Report, RuleResult
from nsysdiff.safe import neutral
from nsysdiff.trace.records import CopyStats

FORMAT = "nsysdiff-diff"
VERSION = 1


def _side(s: Side | None) -> dict[str, Any] | None:
    if s is None:
        return None
    data: dict[str, Any] = to_data(s)
    # Only rows of collective kernels have a transfer part (nsysdiff.compare.collective).
    if s.transfer_ns is None:
        del data["transfer_ns"]
    else:
        data["waiting_ns"] = s.waiting_ns
    return data


def _stats(r: Row) -> dict[str, Any]:
    """The comparison fields every row carries, after its identifying fields."""
    dist = r.distribution
    return {
        "base": _side(r.base),
        "candidate": _side(r.candidate),
        "delta_ns": r.delta_ns,
        "ratio": r.ratio,
        "calls_ratio": r.calls_ratio,
        "mean_ratio": r.mean_ratio,
        "p50_ratio": r.p50_ratio,
        "count_effect_ns": r.count_effect_ns,
        "per_call_effect_ns": r.per_call_effect_ns,
        "resized_effect_ns": r.resized_ns,
        "verdict": r.verdict.value,
        "outlier_score": r.outlier_score,
        "deviation": r.deviation,
        "is_outlier": r.is_outlier,
        "distribution": (None if dist is None else {"prob_slower": dist.prob_slower, "ks_distance": dist.ks_distance}),
    }


def kernel_row(r: Row) -> dict[str, Any]:
    ident = {"name": r.name, "demangled": r.key, "family": r.family, "category": r.category}
    return {**ident, **_stats(r)}


def named_row(r: Row) -> dict[str, Any]:
    return {"name": r.name, **_stats(r)}


def nvtx_row(r: Row) -> dict[str, Any]:
    # The diff keys an NVTX range as "domain::name" (or just "name" without a domain).
    domain = r.key[: -len(r.name) - 2] if r.key != r.name else ""
    return {"name": r.name, "domain": domain, **_stats(r)}


def _copy(c: CopyStats | CopySide | None) -> dict[str, Any] | None:
    return None if c is None else {"ops": c.ops, "bytes": c.bytes, "total_ns": c.total_ns}


def copy_row(d: CopyDelta) -> dict[str, Any]:
    b, c = d.base, d.candidate
    return {
        "kind": d.kind,
        "base": _copy(b),
        "candidate": _copy(c),
        "delta_ns": (c.total_ns if c else 0) - (b.total_ns if b else 0),
        "delta_bytes": (c.bytes if c else 0) - (b.bytes if b else 0),
        "ratio": d.ratio,
        "ops_ratio": d.ops_ratio,
        "bytes_ratio": d.bytes_ratio,
        "verdict": d.verdict.value,
    }


def _variant(v: Variant) -> dict[str, Any]:
    return {"name": v.name, "demangled": v.demangled, "calls": v.calls, "total_ns": v.total_ns}


def variant_row(v: VariantDrift) -> dict[str, Any]:
    return {
        "family": v.family,
        "category": v.category,
        "appeared": [_variant(x) for x in v.appeared],
        "disappeared": [_variant(x) for x in v.disappeared],
        "kept": list(v.kept),
        "appeared_count": len(v.appeared),
        "appeared_ns": v.appeared_ns,
        "disappeared_count": len(v.disappeared),
        "disappeared_ns": v.disappeared_ns,
    }


def _value(v: float | None, unit: str) -> float | int | None:
    if v is None:
        return None
    return round(v) if unit == "ns" else v


def finding_row(f: Finding, failing: bool) -> dict[str, Any]:
    return {
        "level": f.level.value,
        "rule_id": f.rule_id,
        "kind": f.kind,
        "subject": f.subject,
        "observed": f.observed,
        "limit": f.limit,
        # The same as numbers; a duration ("unit": "ns") is rounded to the nanosecond.
        "observed_value": _value(f.observed_value, f.unit),
        "limit_value": _value(f.limit_value, f.unit),
        "unit": f.unit or None,
        "evidence": f.evidence,
        "message": f.message,
        "waived": f.waived,
        "waiver_reason": f.waiver_reason,
        "statistical": f.statistical,
        "fails": failing,
        # Only with a noise profile: a limit within the measured noise (docs/noise.md).
        **({"inconclusive": True} if f.inconclusive else {}),
    }


def rule_row(r: RuleResult, failed: set[str]) -> dict[str, Any]:
    return {
        "rule_id": r.rule_id,
        "kind": r.kind,
        "level": r.level.value,
        "description": r.description,
        "findings": r.findings,
        "failed": r.rule_id in failed,
        # Whether the rule judged anything; a rule that saw nothing is no pass.
        "judged": r.remark != NOT_JUDGED,
        "not_judged": r.remark_reason if r.remark == NOT_JUDGED else None,
        "within_noise": r.remark_reason if r.remark == WITHIN_NOISE else None,
    }


def meta_data(m: TraceMeta) -> dict[str, Any]:
    return {**to_data(m), "capture_ns": m.capture_ns}


def overall(d: Diff) -> dict[str, Any]:
    h = d.headline
    return {
        "base_total_ns": h.base_total_ns,
        "candidate_total_ns": h.candidate_total_ns,
        "delta_ns": h.candidate_total_ns - h.base_total_ns,
        "ratio": h.ratio,
        "scale": h.scale,
        "scale_info": scale_data(d),
        "basis": h.basis,
        "base_launches": h.base_launches,
        "candidate_launches": h.candidate_launches,
        "base_kernels": h.base_kernels,
        "candidate_kernels": h.candidate_kernels,
        "common_kernels": h.common_kernels,
        "only_base_kernels": h.base_kernels - h.common_kernels,
        "only_candidate_kernels": h.candidate_kernels - h.common_kernels,
        "same_count_different_kernels": h.same_count_different_kernels,
        "per": h.per,
        "base_steps": h.base_steps,
        "candidate_steps": h.candidate_steps,
        "base_per_step_ns": h.base_per_step_ns,
        "candidate_per_step_ns": h.candidate_per_step_ns,
    }


def scale_data(d: Diff) -> dict[str, Any]:
    i = d.headline.scale_info
    return {**to_data(i), "meaningful": i.meaningful}


def _effects(e: Effects) -> dict[str, Any]:
    return {"delta_ns": e.total_ns, **to_data(e)}


def _parts(parts: tuple[Part, ...]) -> list[dict[str, Any]]:
    return [{"key": p.key, **_effects(p.effects)} for p in parts]


def attribution_data(d: Diff) -> dict[str, Any]:
    """The exact decomposition of the kernel-time change (docs/json.md, ``attribution``)."""
    a = d.attribution
    return {
        "delta_ns": a.delta_ns,
        "effects": _effects(a.effects),
        "top": [
            {
                "kind": c.kind,
                "name": c.name,
                "key": c.key,
                "delta_ns": c.delta_ns,
                "replaces": c.replaces,
                "replaces_ns": c.replaces_ns,
                "calls": list(c.calls) if c.calls is not None else None,
            }
            for c in a.top
        ],
        "replacements": [
            {
                "new": r.new,
                "new_name": r.new_name,
                "new_ns": r.new_ns,
                "removed": r.removed,
                "removed_name": r.removed_name,
                "removed_ns": r.removed_ns,
                "delta_ns": r.delta_ns,
                "why": r.why,
            }
            for r in a.replacements
        ],
        "kernels": _parts(a.kernels),
        "families": _parts(a.families),
        "categories": _parts(a.categories),
        "phases": _parts(a.phases),
    }


def phase_row(p: PhaseDiff) -> dict[str, Any]:
    d = p.diff
    return {
        "name": p.name,
        "base_ranges": p.base_ranges,
        "candidate_ranges": p.candidate_ranges,
        "overall": overall(d),
        "outliers": [kernel_row(r) for r in d.outliers],
        "categories": [named_row(r) for r in d.categories],
        "memcpy": [copy_row(x) for x in d.memcpy],
        "memset": [copy_row(x) for x in d.memset],
        "variants": [variant_row(v) for v in d.variants],
    }


def _scope(fp: Fingerprint) -> Any:
    return to_data(fp.scope)


def comparison_data(report: Report) -> dict[str, Any]:
    """What is being compared (nsysdiff.rules.comparison): the kind, why, what it judges,
    the rules it did not judge and why, and the evidence."""
    c = report.comparison
    g, p, w = c.geometry, c.programs, c.window
    return {
        "kind": c.kind.key,
        "label": c.kind.label,
        "why": c.why,
        "conclusive": c.kind.conclusive,
        "judges": sorted(m.value for m in c.kind.judges),
        "not_judged": [{"rule": r.rule_id, "reason": r.remark_reason} for r in report.rules if r.remark == NOT_JUDGED],
        "geometry": None
        if g is None
        else {
            "kernels": g.kernels,
            "blocks_per_launch_ratio": g.ratio,
            "threads_ratio": g.work_ratio,
            "base_threads": g.base_threads,
            "candidate_threads": g.candidate_threads,
            "base_launches": g.base_launches,
            "candidate_launches": g.candidate_launches,
            "calls_per_shape_recorded": g.exact,
        },
        "programs": None
        if p is None
        else {
            "kernel_overlap": p.kernel_overlap,
            "shared_kernels": p.shared_kernels,
            "base_share": p.base_share,
            "candidate_share": p.candidate_share,
            "nvtx_overlap": p.nvtx_overlap,
        },
        "window": None
        if w is None
        else {
            "base_ns": w.base_span_ns,
            "candidate_ns": w.candidate_span_ns,
            "rate_ratio": w.rate_ratio,
            "base_busy": w.base_busy,
            "candidate_busy": w.candidate_busy,
        },
    }


def report_data(report: Report) -> dict[str, Any]:
    """The whole report as plain data, in the documented key order."""
    d = report.diff
    failing = set(report.failed)
    failed_rules = {f.rule_id for f in failing}
    return {
        "format": FORMAT,
        "version": VERSION,
        "outcome": report.outcome.value,
        "exit_code": int(report.exit_code),
        "comparison": comparison_data(report),
        "strict": report.strict,
        "packs": list(report.packs),
        "reasons": list(report.reasons),
        "notes": list(report.notes),
        "comparability": [
            {"label": f.label, "base": f.base, "candidate": f.candidate}
            for f in comparability.facts(d.base, d.candidate)
        ],
        "settings": {
            "z_threshold": d.settings.z_threshold,
            "min_deviation": d.settings.min_deviation,
            "min_share": d.settings.min_share,
            "mad_floor": d.settings.mad_floor,
            "noise": d.settings.noise,
            "distribution_method": stats.DISTRIBUTION_METHOD,
        },
        "overall": overall(d),
        "attribution": attribution_data(d),
        "outliers": [r.key for r in d.outliers],
        "outlier_families": [r.key for r in d.outlier_families],
        "kernels": [kernel_row(r) for r in d.kernels],
        "families": [named_row(r) for r in d.families],
        "categories": [named_row(r) for r in d.categories],
        "memcpy": [copy_row(x) for x in d.memcpy],
        "memset": [copy_row(x) for x in d.memset],
        "sync": [named_row(r) for r in d.sync],
        "api": [named_row(r) for r in d.api],
        "nvtx": [nvtx_row(r) for r in d.nvtx],
        "graphs": [named_row(r) for r in d.graphs],
        "variants": [variant_row(v) for v in d.variants],
        "phases": [phase_row(p) for p in d.phases],
        "findings": [finding_row(f, f in failing) for f in report.findings],
        "rules": [rule_row(r, failed_rules) for r in report.rules],
        "base_meta": meta_data(d.base_meta),
        "candidate_meta": meta_data(d.candidate_meta),
        "scope": {"base": _scope(d.base), "candidate": _scope(d.candidate)},
        **_ranks(d),
        **_runs(d),
        **({"steps": step_lines.data(d.steps)} if d.steps is not None else {}),
    }


def _interval(
    base: tuple[float, ...], cand: tuple[float, ...], ratio: float, low: float | None, high: float | None
) -> dict[str, Any]:
    return {
        "base_values": list(base),
        "candidate_values": list(cand),
        "ratio": ratio,
        "ci_low": low,
        "ci_high": high,
    }


def _spread(s: Spread) -> dict[str, Any]:
    return _interval(s.base_values, s.cand_values, s.ratio, s.low, s.high)


def _key_measure(k: KeyComparison) -> dict[str, Any]:
    return {
        **_interval(k.base_values, k.cand_values, k.ratio, k.ci_low, k.ci_high),
        "median_ratio": k.median_ratio,
        "p_value": k.p_value,
        "q_value": k.q_value,
        "verdict": k.verdict.value,
    }


def runs_data(r: RunsDiff) -> dict[str, Any]:
    """The statistics across runs (docs/json.md, ``runs``)."""
    return {
        "base_runs": r.base_runs,
        "candidate_runs": r.cand_runs,
        "base_sources": list(r.base_sources),
        "candidate_sources": list(r.cand_sources),
        "base_shown": r.base_shown,
        "candidate_shown": r.cand_shown,
        "intervals": r.intervals,
        "method": r.method,
        "alpha": r.alpha,
        "band": r.band,
        "confidence": r.confidence,
        "tested": r.tested,
        "kernel_time": None if r.kernel_time is None else _spread(r.kernel_time),
        "scale": None if r.scale is None else _spread(r.scale),
        "outlier_threshold": r.threshold,
        "outliers": [
            {
                "rows": x.rows,
                "key": x.key,
                "deviation": _spread(x.spread),
                "score": x.score,
                "score_low": x.score_low,
                "score_high": x.score_high,
                "cleared": x.cleared,
            }
            for x in r.deviations
        ],
        "keys": [
            {
                "kind": k.kind.value,
                "key": k.key,
                "total": _key_measure(k.total),
                "calls": _key_measure(k.calls),
                "mean": _key_measure(k.per_call),
            }
            for k in r.keys
        ],
        "partial": [{"kind": kind.value, "key": key} for kind, key in r.partial],
    }


def _runs(d: Diff) -> dict[str, Any]:
    """The statistics across runs, only when a side has several runs (docs/json.md)."""
    return {} if d.runs is None else {"runs": runs_data(d.runs)}


def _ranks(d: Diff) -> dict[str, Any]:
    """The rank view of both sides, only when both have several ranks (docs/json.md)."""
    from nsysdiff.compare.ranks import compare
    from nsysdiff.render.ranks import diff_data

    rd = compare(d.base.ranks, d.candidate.ranks)
    return {} if rd is None else {"ranks": diff_data(rd)}


def render(report: Report) -> str:
    # Lossless: names keep every character, escaped so that no log line carries a command.
    return neutral.json_document(json.dumps(finite(report_data(report)), indent=1, allow_nan=False)) + "\n"
