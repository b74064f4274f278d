"""Fingerprint x Fingerprint -> Diff: an outer join with named verdicts per row.

The statistics (documented in ``docs/diff.md``):

* **Overall scale**: measured over the kernel *families* present on both sides (variants
  aggregated, so a GEMM tile swap still counts), as the weighted median of their log
  ratios of total time. A family's weight is its share of base time plus its share of
  candidate time, capped so that no family holds more than ``WEIGHT_CAP`` of the weight:
  neither one heavy kernel nor many light variants decide the scale.
* **Spread**: the weighted median absolute deviation of the same log ratios around the
  scale, with the *same* weights, floored at ``mad_floor``. The weighted quartiles of the
  family ratios are reported beside the scale as its uncertainty.
* **Outlier score**: a modified z-score (Iglewicz & Hoaglin),
  ``0.6745 * (log ratio - log scale) / spread``, for families first and then for the
  kernels within them.
* A key is an **outlier** only if all three hold: ``|score| >= z_threshold`` (3.5), its
  ratio differs from the scale by at least ``min_deviation`` (1.25x) either way, and it
  is material: at least ``min_share`` of either side's total kernel time.
* **No scale**: when less than ``MIN_COMMON`` of either side's kernel time is in families
  present on both sides, a scale would be made up: nothing is scored.
* **Distribution evidence** (supporting, never gating): the per-call quantile sketches of
  both sides compared with Mann-Whitney's U (reported as the probability that a
  candidate launch is slower than a base launch) and the Kolmogorov-Smirnov distance.
  No p-value is reported: thousands of launches of one kernel are not independent
  samples, so a p-value would claim a certainty the trace can't give.
"""

from __future__ import annotations

import dataclasses
import enum
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from nsysdiff.compare import attribution, collective, labels, matching, stats
from nsysdiff.compare import steps as step_diff
from nsysdiff.compare.runs import RunsDiff
from nsysdiff.compare.scale import NO_SCALE, Scale, overall_scale, scale_of
from nsysdiff.fingerprint.model import Fingerprint, GroupStats, KernelStats, RangeStats, TraceMeta
from nsysdiff.fingerprint.reduce import group_by
from nsysdiff.trace.records import ApiStats, CopyStats, GraphStats

# Host time (API calls, sync waits) is judged against its own noise, not the GPU's: on the
# H100 captures two runs of one eager build differ by up to 1.5x in host time per step,
# while their GPU time per step agrees within 0.3% (docs/steps.md). The step rules assume
# this one-run noise too (`noise`, rules/step_budget.py).
HOST_NOISE = 1.6


class Verdict(str, enum.Enum):
    OUTLIER = "outlier"  # scaled abnormally against the overall scale
    REGRESSED = "regressed"  # slower beyond the noise band
    IMPROVED = "improved"  # faster beyond the noise band
    UNCHANGED = "unchanged"
    NEW = "new"  # only in the candidate
    REMOVED = "removed"  # only in the base


@dataclass(frozen=True, slots=True)
class Settings:
    """Thresholds of the diff; every one is a CLI option."""

    z_threshold: float = 3.5
    min_deviation: float = 1.25  # ratio beyond the overall scale, either way
    min_share: float = 0.001  # of either side's kernel time (0.1%)
    # With the rest of the trace scaled alike (spread 0), the z gate then lets
    # min_deviation decide: 3.5 x ln 1.04 / 0.6745 = ln 1.226, under 1.25x.
    mad_floor: float = math.log(1.04)
    noise: float = 1.05  # total-time ratio within [1/noise, noise] is "unchanged"


@dataclass(frozen=True, slots=True)
class Side:
    """One side of a row. ``p50_ns``/``p90_ns`` only for single kernels."""

    calls: float  # per step (a float) when the diff is normalised, else an int
    total_ns: float
    mean_ns: float
    p50_ns: float | None = None
    p90_ns: float | None = None
    share: float = 0.0  # of that side's total kernel time
    # A collective's time without waiting for other ranks (nsysdiff.compare.collective);
    # None for keys without collective kernels. Outliers are judged on it.
    transfer_ns: float | None = None

    @property
    def waiting_ns(self) -> float:
        """A collective's time above its transfer part: waiting for the other ranks."""
        return 0.0 if self.transfer_ns is None else self.total_ns - self.transfer_ns


@dataclass(frozen=True, slots=True)
class Distribution:
    method: str
    prob_slower: float  # P(candidate launch > base launch), 0.5 = no shift
    ks_distance: float


@dataclass(frozen=True, slots=True)
class Row:
    """One key (kernel, family, category, NVTX range, sync call) on both sides."""

    key: str
    name: str
    family: str | None
    category: str | None
    base: Side | None
    candidate: Side | None
    delta_ns: float
    ratio: float | None  # total time, candidate / base
    calls_ratio: float | None
    mean_ratio: float | None
    p50_ratio: float | None
    count_effect_ns: float  # (calls change) x base mean
    per_call_effect_ns: float  # candidate calls x (mean change)
    outlier_score: float | None
    deviation: float | None  # ratio / overall scale
    is_outlier: bool
    verdict: Verdict
    distribution: Distribution | None = None
    # With several runs per side: the interval of ``deviation`` over the runs (the point
    # is the runs' geometric mean, see nsysdiff.compare.rundiff); None with one run per side.
    deviation_ci: tuple[float, float] | None = None
    # The change of a kernel that ran in calls of another size (nsysdiff.compare.attribution):
    # then its count and per-call effects are 0, and this is its whole change.
    resized_ns: float = 0.0


@dataclass(frozen=True, slots=True)
class CopySide:
    """One side of a copy row: :class:`CopyStats`, divided by the steps when normalised."""

    kind: str
    ops: float
    bytes: float
    total_ns: float

    @property
    def gbps(self) -> float | None:
        return self.bytes / self.total_ns if self.total_ns else None  # B/ns == GB/s


@dataclass(frozen=True, slots=True)
class CopyDelta:
    kind: str
    base: CopySide | None
    candidate: CopySide | None
    ratio: float | None  # time
    ops_ratio: float | None
    bytes_ratio: float | None
    verdict: Verdict


@dataclass(frozen=True, slots=True)
class Variant:
    name: str
    demangled: str
    calls: float
    total_ns: float


@dataclass(frozen=True, slots=True)
class VariantDrift:
    """Within one family present on both sides: which variants came and went."""

    family: str
    category: str
    appeared: tuple[Variant, ...]
    disappeared: tuple[Variant, ...]
    kept: tuple[str, ...]

    @property
    def appeared_ns(self) -> float:
        return sum(v.total_ns for v in self.appeared)

    @property
    def disappeared_ns(self) -> float:
        return sum(v.total_ns for v in self.disappeared)


@dataclass(frozen=True, slots=True)
class Headline:
    base_total_ns: int
    candidate_total_ns: int
    ratio: float | None
    scale: float  # scale_info.factor: the weighted median of per-family ratios
    base_launches: int
    candidate_launches: int
    base_kernels: int  # distinct kernels
    candidate_kernels: int
    common_kernels: int
    same_count_different_kernels: bool
    # Per-step normalisation (both sides counted instances of the `--per` range): the
    # rows, copies and variants are per step, and `ratio` is the per-step ratio.
    per: str | None = None
    base_steps: int | None = None
    candidate_steps: int | None = None
    base_per_step_ns: float | None = None  # kernel time per step: the GPU-side TPOT
    candidate_per_step_ns: float | None = None
    scale_info: Scale = NO_SCALE
    # What the scale and the outliers are about: "kernels"; "nvtx" when neither side has
    # kernel data but both have NVTX ranges; "graphs" when both are graph-mode captures
    # without kernel rows (whole-graph launches per graph id).
    basis: str = "kernels"


@dataclass(frozen=True, slots=True)
class Diff:
    base: Fingerprint
    candidate: Fingerprint
    settings: Settings
    headline: Headline
    kernels: tuple[Row, ...]
    families: tuple[Row, ...]
    categories: tuple[Row, ...]
    memcpy: tuple[CopyDelta, ...]
    memset: tuple[CopyDelta, ...]
    sync: tuple[Row, ...]
    nvtx: tuple[Row, ...]
    variants: tuple[VariantDrift, ...]
    attribution: attribution.Attribution = attribution.EMPTY
    phases: tuple[PhaseDiff, ...] = ()  # phases named on both sides, in base order
    graphs: tuple[Row, ...] = ()  # whole-graph launches per graph id (graph-mode captures)
    # Several runs on a side: the statistics across runs (the figures above are the
    # median runs'); None with one run per side.
    runs: RunsDiff | None = None
    # The steps of both sides compared (time per step, its parts, host calls per step);
    # None unless both fingerprints carry steps.
    steps: step_diff.StepsDiff | None = None
    # Every host API name's calls, whole counts (the census is not attributed to steps);
    # () unless both fingerprints carry the census.
    api: tuple[Row, ...] = ()
    # Kernel key -> its one label in every output (nsysdiff.compare.labels).
    labels: Mapping[str, str] = field(default_factory=dict, compare=False)
    # Both sides are fixed windows (nsysdiff.compare.notices.as_rates): a total over one is
    # a rate, and less of it is less work done, never an improvement.
    rates: bool = False

    @property
    def intervals(self) -> bool:
        """Whether both sides have the runs an interval needs (at least two each)."""
        return self.runs is not None and self.runs.intervals

    @property
    def per_step(self) -> bool:
        return self.headline.per is not None

    @property
    def scored(self) -> tuple[Row, ...]:
        """The rows the scale is about: kernels, or NVTX ranges or graphs (``basis``)."""
        return {"nvtx": self.nvtx, "graphs": self.graphs}.get(self.headline.basis, self.kernels)

    @property
    def outliers(self) -> tuple[Row, ...]:
        """Outlier kernels (NVTX ranges, graphs: ``basis``), most abnormal first."""
        rows = [r for r in self.scored if r.is_outlier]
        return tuple(sorted(rows, key=lambda r: -abs(r.outlier_score or 0.0)))

    @property
    def outlier_families(self) -> tuple[Row, ...]:
        """Families of several variants flagged as a whole (a change spread over light
        variants shows only here), most abnormal first."""
        if self.headline.basis != "kernels":
            return ()
        counts: dict[str | None, int] = {}
        for k in self.kernels:
            counts[k.family] = counts.get(k.family, 0) + 1
        rows = [r for r in self.families if r.is_outlier and counts.get(r.key, 0) > 1]
        return tuple(sorted(rows, key=lambda r: -abs(r.outlier_score or 0.0)))

    def kernel_label(self, row: Row) -> str:
        """A kernel as every output names it: its short name, with the words that tell it
        from the kernels sharing it (the same label in tables, subjects and annotations)."""
        return self.labels.get(row.key) or labels.short_labels((r.key, r.name) for r in self.kernels)[row.key]

    @property
    def base_meta(self) -> TraceMeta:
        return self.base.meta

    @property
    def candidate_meta(self) -> TraceMeta:
        return self.candidate.meta


@dataclass(frozen=True, slots=True)
class PhaseDiff:
    """One phase (``--phases``) present on both sides, diffed on its own."""

    name: str
    base_ranges: int
    candidate_ranges: int
    diff: Diff


def steps(base: Fingerprint, cand: Fingerprint) -> tuple[int, int] | None:
    """Both sides' step counts when the diff is per step: same ``--per`` range, both counted."""
    b, c = base.scope, cand.scope
    if b.per is None or b.per != c.per or not b.steps or not c.steps:
        return None
    return b.steps, c.steps


def _div(value: int, n: int | None) -> float:
    """``value`` per step; unchanged (an int) when there are no steps."""
    return value if n is None else value / n


def _per_step(items: list[_Item], n: int | None) -> list[_Item]:
    if n is None:
        return items
    return [
        dataclasses.replace(
            i,
            calls=i.calls / n,
            total_ns=i.total_ns / n,
            transfer_ns=None if i.transfer_ns is None else i.transfer_ns / n,
        )
        for i in items
    ]


def _ratio(a: float, b: float) -> float | None:
    """b / a, or None when undefined."""
    return b / a if a > 0 and b >= 0 else None


def row_verdict(row: Row, noise: float) -> Verdict:
    """The verdict of a row that is not an outlier (its interval across runs may clear
    none of the thresholds that its median runs did)."""
    return _verdict(row.base, row.candidate, row.ratio, noise)


def _verdict(base: object, cand: object, ratio: float | None, noise: float) -> Verdict:
    if base is None:
        return Verdict.NEW
    if cand is None:
        return Verdict.REMOVED
    if ratio is None:
        return Verdict.UNCHANGED
    if ratio > noise:
        return Verdict.REGRESSED
    if ratio < 1 / noise:
        return Verdict.IMPROVED
    return Verdict.UNCHANGED


@dataclass(frozen=True, slots=True)
class _Item:
    """What the row builder needs from any summable thing on one side."""

    key: str
    name: str
    calls: float
    total_ns: float
    p50_ns: float | None = None
    p90_ns: float | None = None
    family: str | None = None
    category: str | None = None
    kernel: KernelStats | None = None
    transfer_ns: float | None = None


def _side(item: _Item | None, total: float) -> Side | None:
    if item is None:
        return None
    mean = item.total_ns / item.calls if item.calls else 0.0
    return Side(
        item.calls,
        item.total_ns,
        mean,
        item.p50_ns,
        item.p90_ns,
        item.total_ns / total if total else 0.0,
        item.transfer_ns,
    )


def _rows(
    base: Sequence[_Item],
    cand: Sequence[_Item],
    base_total: float,
    cand_total: float,
    settings: Settings,
    scale: float,
    spread: float,
    score: bool,
    host: bool = False,
) -> tuple[Row, ...]:
    """The rows of one table; ``host``: their times are host time (calls), judged by
    :func:`_noise_band`."""
    b = {i.key: i for i in base}
    c = {i.key: i for i in cand}
    rows = []
    for key in sorted(b.keys() | c.keys()):
        bi, ci = b.get(key), c.get(key)
        any_i = bi or ci
        assert any_i is not None
        bs, cs = _side(bi, base_total), _side(ci, cand_total)
        b_calls, b_ns = (bs.calls, bs.total_ns) if bs else (0, 0)
        c_calls, c_ns = (cs.calls, cs.total_ns) if cs else (0, 0)
        b_mean = bs.mean_ns if bs else 0.0
        c_mean = cs.mean_ns if cs else 0.0
        ratio = _ratio(b_ns, c_ns) if bs and cs else None
        judged = ratio
        if bs and cs and bs.transfer_ns is not None and cs.transfer_ns is not None:
            judged = _ratio(bs.transfer_ns, cs.transfer_ns)  # a collective: its transfer part
        if bs and cs:
            # The same split as the attribution's: integer parts when the times are.
            e = attribution.Change(key, "", "", "", b_calls, b_ns, c_calls, c_ns).effects
            count_effect, per_call, resized = e.count_ns, e.per_call_ns, e.resized_ns
        else:
            # Removed: every call went (a count effect); new: all of it is per-call time.
            count_effect, per_call = (-float(b_ns), 0.0) if bs else (0.0, float(c_ns))
            resized = 0.0
        z = dev = None
        outlier = False
        if score and judged:
            lr = math.log(judged) if judged > 0 else -math.inf
            z = 0.6745 * (lr - math.log(scale)) / spread if math.isfinite(lr) else None
            dev = judged / scale
            share = max(bs.share if bs else 0.0, cs.share if cs else 0.0)
            outlier = (
                z is not None
                and abs(z) >= settings.z_threshold
                and max(dev, 1 / dev) >= settings.min_deviation
                and share >= settings.min_share
            )
        verdict = Verdict.OUTLIER if outlier else _verdict(bi, ci, ratio, _noise_band(settings, host, b_calls, c_calls))
        dist = None
        # Evidence for the rows a reader is asked to look at; it costs scipy's import.
        if outlier and bi and ci and bi.kernel and ci.kernel:
            dist = stats.compare_sketches(bi.kernel.quantiles_ns, ci.kernel.quantiles_ns)
        p50r = None
        if bs and cs and bs.p50_ns is not None and cs.p50_ns is not None:
            p50r = _ratio(bs.p50_ns, cs.p50_ns)
        rows.append(
            Row(
                key=key,
                name=any_i.name,
                family=any_i.family,
                category=any_i.category,
                base=bs,
                candidate=cs,
                delta_ns=c_ns - b_ns,
                ratio=ratio,
                calls_ratio=_ratio(b_calls, c_calls) if bs and cs else None,
                mean_ratio=_ratio(b_mean, c_mean) if bs and cs else None,
                p50_ratio=p50r,
                count_effect_ns=count_effect,
                per_call_effect_ns=per_call,
                outlier_score=z,
                deviation=dev,
                is_outlier=outlier,
                verdict=verdict,
                distribution=Distribution(stats.DISTRIBUTION_METHOD, *dist) if dist else None,
                resized_ns=resized,
            )
        )
    return tuple(sorted(rows, key=lambda r: (-abs(r.delta_ns), r.key)))


def _kernel_items(fp: Fingerprint) -> list[_Item]:
    return [
        _Item(
            k.demangled,
            k.name,
            k.calls,
            k.total_ns,
            k.p50_ns,
            k.p90_ns,
            k.family,
            k.category,
            k,
            collective.transfer_ns(k),
        )
        for k in fp.kernels
    ]


def _group_items(groups: Iterable[GroupStats], kind: str, kernels: Sequence[KernelStats]) -> list[_Item]:
    transfer = collective.group_transfer(kernels, kind)
    return [
        _Item(
            g.name,
            g.name,
            g.calls,
            g.total_ns,
            family=g.name if kind == "family" else None,
            category=g.name if kind == "category" else None,
            transfer_ns=transfer.get(g.name),
        )
        for g in groups
    ]


def _api_items(apis: Iterable[ApiStats]) -> list[_Item]:
    return [_Item(a.name, a.name, a.calls, a.total_ns) for a in apis]


def _nvtx_items(ranges: Iterable[RangeStats]) -> list[_Item]:
    return [_Item(f"{r.domain}::{r.name}" if r.domain else r.name, r.name, r.count, r.total_ns) for r in ranges]


def _graph_items(graphs: Iterable[GraphStats]) -> list[_Item]:
    return [_Item(f"graph {g.graph_id}", f"graph {g.graph_id}", g.launches, g.total_ns) for g in graphs]


def _sums(b: Sequence[_Item], c: Sequence[_Item], bt: float, ct: float, own: bool) -> tuple[float, float]:
    """What a row's share is of: its own kind's total when it is the basis (NVTX ranges
    nest, so that total counts nested time twice: a share, not a budget), else kernel time."""
    if not own:
        return bt, ct
    return sum(i.total_ns for i in b), sum(i.total_ns for i in c)


def basis_of(base: Fingerprint, cand: Fingerprint) -> str:
    """What a diff of the two can judge: ``kernels``, else ``graphs`` (both graph-mode
    captures without kernel rows), else ``nvtx`` (both have NVTX ranges)."""
    if base.kernels or cand.kernels:
        return "kernels"
    if base.graphs and cand.graphs:
        return "graphs"
    return "nvtx" if base.nvtx and cand.nvtx else "kernels"


def _totals(items: Iterable[_Item]) -> dict[str, float]:
    return {i.key: i.total_ns for i in items}


_GROUPED = {"families": "family", "categories": "category"}


def totals_of(fp: Fingerprint, rows: str) -> dict[str, float]:
    """Each key's total time in ``fp``, keyed as the diff keys its ``rows``: ``kernels``,
    ``families``, ``categories``, ``nvtx`` or ``graphs``."""
    if rows == "kernels":
        return {k.demangled: k.total_ns for k in fp.kernels}
    if rows in _GROUPED:
        return {g.name: g.total_ns for g in group_by(fp.kernels, _GROUPED[rows])}
    return _totals(_nvtx_items(fp.nvtx) if rows == "nvtx" else _graph_items(fp.graphs))


def _copy_side(c: CopyStats, n: int | None) -> CopySide:
    return CopySide(c.kind, _div(c.ops, n), _div(c.bytes, n), _div(c.total_ns, n))


def _copies(
    base: Sequence[CopyStats],
    cand: Sequence[CopyStats],
    noise: float,
    per: tuple[int, int] | None = None,
) -> tuple[CopyDelta, ...]:
    bn, cn = per if per else (None, None)
    b = {x.kind: _copy_side(x, bn) for x in base}
    c = {x.kind: _copy_side(x, cn) for x in cand}
    out = []
    for kind in sorted(b.keys() | c.keys()):
        bx, cx = b.get(kind), c.get(kind)
        ratio = _ratio(bx.total_ns, cx.total_ns) if bx and cx else None
        out.append(
            CopyDelta(
                kind=kind,
                base=bx,
                candidate=cx,
                ratio=ratio,
                ops_ratio=_ratio(bx.ops, cx.ops) if bx and cx else None,
                bytes_ratio=_ratio(bx.bytes, cx.bytes) if bx and cx else None,
                verdict=_verdict(bx, cx, ratio, noise),
            )
        )
    return tuple(out)


def _variants(
    base: Sequence[KernelStats], cand: Sequence[KernelStats], per: tuple[int, int] | None = None
) -> tuple[VariantDrift, ...]:
    def by_family(ks: Sequence[KernelStats]) -> dict[str, dict[str, KernelStats]]:
        out: dict[str, dict[str, KernelStats]] = {}
        for k in ks:
            out.setdefault(k.family, {})[k.demangled] = k
        return out

    bf, cf = by_family(base), by_family(cand)
    bn, cn = per if per else (None, None)
    drifts = []

    def variant(k: KernelStats, n: int | None) -> Variant:
        return Variant(k.name, k.demangled, _div(k.calls, n), _div(k.total_ns, n))

    for fam in sorted(bf.keys() & cf.keys()):
        b, c = bf[fam], cf[fam]
        appeared = [variant(c[n], cn) for n in sorted(c.keys() - b.keys())]
        gone = [variant(b[n], bn) for n in sorted(b.keys() - c.keys())]
        if appeared or gone:
            any_k = next(iter(b.values()))
            drifts.append(
                VariantDrift(
                    family=fam,
                    category=any_k.category,
                    appeared=tuple(sorted(appeared, key=lambda v: (-v.total_ns, v.demangled))),
                    disappeared=tuple(sorted(gone, key=lambda v: (-v.total_ns, v.demangled))),
                    kept=tuple(sorted(b.keys() & c.keys())),
                )
            )
    return tuple(sorted(drifts, key=lambda d: (-(d.appeared_ns + d.disappeared_ns), d.family)))


def _attribute(
    kernels: Sequence[Row], base: Fingerprint, cand: Fingerprint, phases: Sequence[PhaseDiff]
) -> attribution.Attribution:
    changes = [
        attribution.Change(
            r.key,
            r.name,
            r.family or "",
            r.category or "",
            r.base.calls if r.base else 0,
            r.base.total_ns if r.base else 0,
            r.candidate.calls if r.candidate else 0,
            r.candidate.total_ns if r.candidate else 0,
            r.candidate.waiting_ns - r.base.waiting_ns if r.base and r.candidate else 0.0,
        )
        for r in kernels
    ]
    # Where phases are known, a replacement must run in the same phases as what it replaces.
    phases_of: dict[str, set[str]] = {}
    for fp in (base, cand):
        for p in fp.phases:
            for k in p.fingerprint.kernels:
                phases_of.setdefault(k.demangled, set()).add(p.name)
    return attribution.attribute(
        changes,
        [(p.name, p.diff.attribution.effects) for p in phases],
        {k: frozenset(v) for k, v in phases_of.items()},
    )


def compare(base: Fingerprint, cand: Fingerprint, settings: Settings = Settings()) -> Diff:
    """Diff two fingerprints; per step (every figure divided by the step counts) when
    both were scoped with the same ``--per`` range. Kernels another demangler spelled
    differently are matched first (nsysdiff.compare.matching)."""
    cand = matching.align(base, cand)
    per = steps(base, cand)
    bn, cn = per if per else (None, None)
    bt, ct = _div(base.kernel_ns, bn), _div(cand.kernel_ns, cn)
    basis = basis_of(base, cand)
    b_nvtx, c_nvtx = _per_step(_nvtx_items(base.nvtx), bn), _per_step(_nvtx_items(cand.nvtx), cn)
    b_graphs, c_graphs = _per_step(_graph_items(base.graphs), bn), _per_step(_graph_items(cand.graphs), cn)
    if basis == "kernels":
        info = overall_scale(base.kernels, cand.kernels, settings.min_share)
    else:
        # Without kernel data the ranges (or graph launches) are what can be compared;
        # their per-step values already carry the step ratio, so no .times() below.
        b_items, c_items = (b_nvtx, c_nvtx) if basis == "nvtx" else (b_graphs, c_graphs)
        info = scale_of(_totals(b_items), _totals(c_items), settings.min_share)
    if per and basis == "kernels":
        # Dividing by the steps shifts every log ratio by the same amount: the MAD stays.
        info = info.times(per[0] / per[1])
    scale = info.factor
    spread = max(info.spread, settings.mad_floor)
    scored = info.meaningful and basis == "kernels"
    other = info.meaningful and basis != "kernels"

    def kernel_rows(items: Callable[[Fingerprint], list[_Item]]) -> tuple[Row, ...]:
        """Rows of the kernels (or groups of them) of both sides, against the kernel totals."""
        return _rows(_per_step(items(base), bn), _per_step(items(cand), cn), bt, ct, settings, scale, spread, scored)

    kernels = kernel_rows(_kernel_items)
    fam = kernel_rows(lambda fp: _group_items(group_by(fp.kernels, "family"), "family", fp.kernels))
    cats = kernel_rows(lambda fp: _group_items(group_by(fp.kernels, "category"), "category", fp.kernels))
    b_names = {k.demangled for k in base.kernels}
    c_names = {k.demangled for k in cand.kernels}
    headline = Headline(
        base_total_ns=base.kernel_ns,
        candidate_total_ns=cand.kernel_ns,
        ratio=_ratio(bt, ct),
        scale=scale,
        base_launches=base.kernel_calls,
        candidate_launches=cand.kernel_calls,
        base_kernels=len(b_names),
        candidate_kernels=len(c_names),
        common_kernels=len(b_names & c_names),
        same_count_different_kernels=base.kernel_calls == cand.kernel_calls and b_names != c_names,
        per=base.scope.per if per else None,
        base_steps=bn,
        candidate_steps=cn,
        base_per_step_ns=bt if per else None,
        candidate_per_step_ns=ct if per else None,
        scale_info=info,
        basis=basis,
    )
    nvtx = _rows(
        b_nvtx,
        c_nvtx,
        *_sums(b_nvtx, c_nvtx, bt, ct, basis == "nvtx"),
        settings,
        scale,
        spread,
        other and basis == "nvtx",
    )
    graphs = _rows(
        b_graphs,
        c_graphs,
        *_sums(b_graphs, c_graphs, bt, ct, basis == "graphs"),
        settings,
        scale,
        spread,
        other and basis == "graphs",
    )
    c_phases = {p.name: p for p in cand.phases}
    phases = tuple(
        PhaseDiff(
            p.name,
            p.ranges,
            c_phases[p.name].ranges,
            compare(p.fingerprint, c_phases[p.name].fingerprint, settings),
        )
        for p in base.phases
        if p.name in c_phases
    )
    return Diff(
        attribution=_attribute(kernels, base, cand, phases),
        base=base,
        candidate=cand,
        settings=settings,
        headline=headline,
        kernels=kernels,
        labels=labels.short_labels((r.key, r.name) for r in kernels),
        families=fam,
        categories=cats,
        memcpy=_copies(base.memcpy, cand.memcpy, settings.noise, per),
        memset=_copies(base.memset, cand.memset, settings.noise, per),
        sync=_rows(
            _per_step(_api_items(base.sync), bn),
            _per_step(_api_items(cand.sync), cn),
            bt,
            ct,
            settings,
            1.0,
            1.0,
            False,
            host=True,
        ),
        nvtx=nvtx,
        graphs=graphs,
        variants=_variants(base.kernels, cand.kernels, per),
        phases=phases,
        steps=step_diff.compare(base.steps, cand.steps) if base.steps and cand.steps else None,
        api=_api_rows(base, cand, settings),
    )


def _api_rows(base: Fingerprint, cand: Fingerprint, settings: Settings) -> tuple[Row, ...]:
    if base.api is None or cand.api is None:
        return ()  # a fingerprint saved before the census: nothing to hold it against
    b = [_Item(a.name, a.name, a.calls, a.total_ns) for a in base.api]
    c = [_Item(a.name, a.name, a.calls, a.total_ns) for a in cand.api]
    base_total, cand_total = sum(a.total_ns for a in base.api), sum(a.total_ns for a in cand.api)
    return _rows(b, c, base_total, cand_total, settings, 1.0, 1.0, False, host=True)


def _noise_band(settings: Settings, host: bool, base_calls: float, cand_calls: float) -> float:
    """The ratio within which a row's time is unchanged: ``noise``; for host time whose
    calls held (an exact count), ``HOST_NOISE`` or a wider ``noise``. With more or fewer
    calls the change is a fact, and ``noise`` stands."""
    return max(settings.noise, HOST_NOISE) if host and base_calls == cand_calls else settings.noise
