"""Rule kind ``outlier``: one key scaled abnormally against the rest of the trace."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from nsysdiff.diff import Diff, Row
from nsysdiff.report import Finding
from nsysdiff.rules import options as opt
from nsysdiff.rules import units
from nsysdiff.rules.model import Kind, Option, Rule

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
    Option(
        "scope",
        "choice list",
        opt.choice_list(SCOPES),
        "What to score: kernels, families, categories (one or a list).",
        default=("kernels",),
        default_doc="kernels",
    ),
    Option(
        "direction",
        "choice",
        opt.choice(DIRECTIONS),
        "Which outliers count: both, slower (scaled up) or faster (scaled down).",
        default="both",
    ),
)


@dataclass(frozen=True, slots=True)
class OutlierOptions:
    z_threshold: float | None
    min_deviation: float | None
    min_share: float | None
    scope: tuple[str, ...]
    direction: str


def build(values: Mapping[str, Any], given: frozenset[str]) -> OutlierOptions:
    return OutlierOptions(
        z_threshold=values["z_threshold"],
        min_deviation=values["min_deviation"],
        min_share=values["min_share"],
        scope=values["scope"],
        direction=values["direction"],
    )


def _rows(diff: Diff, scope: str) -> tuple[Row, ...]:
    if scope == "kernels":
        return diff.kernels
    if scope == "families":
        return diff.families
    return diff.categories


def _share(row: Row) -> float:
    return max(row.base.share if row.base else 0.0, row.candidate.share if row.candidate else 0.0)


def check(diff: Diff, rule: Rule) -> Iterator[Finding]:
    o: OutlierOptions = rule.options
    s = diff.settings
    z_min = o.z_threshold if o.z_threshold is not None else s.z_threshold
    dev_min = o.min_deviation if o.min_deviation is not None else s.min_deviation
    share_min = o.min_share if o.min_share is not None else s.min_share
    scale = diff.headline.scale
    for scope in o.scope:
        what = _NOUN[scope]
        for row in _rows(diff, scope):
            z, dev, share = row.outlier_score, row.deviation, _share(row)
            if z is None or dev is None or row.ratio is None:
                continue
            if abs(z) < z_min or max(dev, 1 / dev) < dev_min or share < share_min:
                continue
            if (o.direction == "slower" and dev < 1) or (o.direction == "faster" and dev > 1):
                continue
            assert row.base is not None and row.candidate is not None
            way = "slower" if dev > 1 else "faster"
            evidence = (
                f"total {units.fmt_time(row.base.total_ns)} -> "
                f"{units.fmt_time(row.candidate.total_ns)} "
                f"({units.fmt_ratio(row.ratio)}) vs overall scale {units.fmt_ratio(scale)}; "
                f"count effect {_signed(row.count_effect_ns)} (calls {row.base.calls} -> "
                f"{row.candidate.calls}), "
                f"per-call effect {_signed(row.per_call_effect_ns)} "
                f"(mean {units.fmt_time(row.base.mean_ns)} -> "
                f"{units.fmt_time(row.candidate.mean_ns)}); "
                f"share {units.fmt_percent(share)}"
            )
            driver = (
                "per-call time"
                if abs(row.per_call_effect_ns) >= abs(row.count_effect_ns)
                else "call count"
            )
            message = rule.message or (
                f"{what} {row.name} scaled {units.fmt_ratio(row.ratio)} while the trace scaled "
                f"{units.fmt_ratio(scale)}: {units.fmt_ratio(max(dev, 1 / dev))} {way} than the "
                "rest, "
                f"driven by {driver}"
            )
            yield Finding(
                level=rule.level,
                rule_id=rule.id,
                kind="outlier",
                subject=diff.kernel_label(row) if scope == "kernels" else row.key,
                observed=f"z={z:+.1f}, {units.fmt_ratio(dev)} of scale",
                limit=(
                    f"|z| >= {z_min:g} and deviation >= {units.fmt_ratio(dev_min)} "
                    f"and share >= {units.fmt_percent(share_min)}"
                ),
                evidence=evidence,
                message=message,
            )


def _signed(ns: float) -> str:
    return ("+" if ns > 0 else "") + units.fmt_time(ns)


KIND = Kind(
    name="outlier",
    summary="Fails when a key scaled abnormally against the trace's overall scale.",
    doc="""\
Uses the diff's scale-aware outlier statistics: the overall scale (the time-weighted
median of per-kernel total-time ratios) and each key's modified z-score of its log ratio
against it. A key is an outlier when all three hold: |z| >= z_threshold, its ratio
differs from the scale by at least min_deviation either way, and it is material (at
least min_share of either side's kernel time). The thresholds default to the diff's own
settings (the --z-threshold, --min-deviation and --min-share options), so the rule agrees
with the report unless it overrides them. Only keys present on both sides are scored:
new and removed kernels are for `structure` and `danger-zone` rules.

The finding shows the key's ratio against the overall scale and splits its change into
a count effect (calls changed, at the base per-call time) and a per-call effect (each call
got slower or faster), so "called 16x more" is told apart from "each call got slower".
This catches "one kernel scaled abnormally" even when the totals look fine.
""",
    options=OPTIONS,
    build=build,
    check=check,
)
