"""What is being compared: the kind of comparison, decided once from evidence before any
rule judges, and what each kind lets the rules judge (docs/comparisons.md).

Two builds of one program on one input are judged by every rule. The same program at
another batch or input size (the work per launch and the work itself grew together) is
judged by scale: the outlier rule against the trace's own scale, kernel selection, launch
shapes, exact counts; its absolute times measure the workload, so budgets on them are not
judged. The same work cut into launches of another size is one workload whose count
effects are no outliers. Two windows cut to a fixed length from longer captures are
judged as rates. Two different programs, and sides that can't be compared (capture modes,
scopes, no data), are inconclusive whatever any rule says.

The evidence is the compare stage's (``compare.geometry``, ``compare.comparability``,
``compare.notices``); the decision and what each kind judges live here, on the kind.
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from nsysdiff import units as u
from nsysdiff.compare import comparability, geometry, notices
from nsysdiff.compare.diff import Diff, Row, row_verdict


class Measure(str, enum.Enum):
    """What a rule's findings measure (each rule kind says, from its options): a resized
    workload's absolute times measure the workload, its kernel selection does not."""

    TIME = "time"  # absolute time: totals, per call, per step, tails
    COUNT = "count"  # exact counts: launches, calls, copies per step
    BYTES = "bytes"  # bytes moved
    SCALE = "scale"  # against the trace's own overall scale (the outlier rule, shares)
    SELECTION = "selection"  # which kernels, variants and launch shapes run


_ALL = frozenset(Measure)
_NONE: frozenset[Measure] = frozenset()


class Kind(enum.Enum):
    """A kind of comparison: its name, what its rules judge, and whether it concludes."""

    ONE_WORKLOAD = ("one workload", _ALL, True)
    SPLIT = ("the same work split differently", _ALL, True)
    RESIZED = ("resized workload", frozenset({Measure.SCALE, Measure.SELECTION, Measure.COUNT}), True)
    WINDOWS = ("fixed windows", _ALL, True)
    DIFFERENT_PROGRAMS = ("different programs", _NONE, False)
    CANT_COMPARE = ("can't compare", _NONE, False)

    def __init__(self, label: str, judges: frozenset[Measure], conclusive: bool) -> None:
        self.label = label
        self.judges = judges
        self.conclusive = conclusive

    @property
    def key(self) -> str:
        """The kind's name in JSON: ``one_workload``, ``resized``..."""
        return "resized" if self is Kind.RESIZED else self.name.lower()


@dataclass(frozen=True, slots=True)
class Comparison:
    """The kind of comparison, why (its evidence, one line), and the evidence itself."""

    kind: Kind
    why: str
    geometry: geometry.Geometry | None = None
    programs: comparability.Programs | None = None
    window: notices.Window | None = None

    @property
    def phrase(self) -> str:
        """The first line's words: ``resized workload (the work per launch grew 7.52x ...)``."""
        if self.kind is Kind.CANT_COMPARE:
            return self.kind.label
        return f"{self.kind.label} ({self.why})" if self.why else self.kind.label

    def not_judged(self, measure: Measure) -> str:
        """Why a rule that measures ``measure`` decides nothing in this comparison."""
        if self.kind is Kind.RESIZED:
            what = {Measure.TIME: "absolute times", Measure.BYTES: "bytes"}.get(measure, "its figures")
            grew = self.geometry.work_ratio if self.geometry is not None else None
            return f"{self.kind.label}: {what} measure the workload, which {_grew(grew)}"
        return self.phrase


def _grew(ratio: float | None) -> str:
    if ratio is None:
        return "changed"
    return f"{'grew' if ratio >= 1 else 'shrank'} {u.ratio(ratio)}"


def decide(diff: Diff, reasons: Sequence[str]) -> Comparison:
    """The kind of comparison of ``diff``, from its evidence. ``reasons`` are why the sides
    can't be compared at all (comparability.assess): they decide first."""
    if reasons:
        return Comparison(Kind.CANT_COMPARE, "; ".join(reasons))
    base, cand = diff.base, diff.candidate
    bw, cw = base.meta.window_ns, cand.meta.window_ns
    if (bw is None) != (cw is None):
        side = "base" if bw is not None else "candidate"
        return Comparison(
            Kind.CANT_COMPARE,
            f"only the {side} is a window cut from a longer capture (its export metadata says so): "
            "compare two windows of one length, or two whole captures",
        )
    if diff.headline.basis != "kernels":
        return Comparison(Kind.ONE_WORKLOAD, "")
    progs = comparability.programs(base, cand)
    if progs is not None and progs.different:
        return Comparison(Kind.DIFFERENT_PROGRAMS, progs.text(), programs=progs)
    w = notices.window(diff)
    if w is not None:
        return Comparison(Kind.WINDOWS, notices.window_phrase(w), programs=progs, window=w)
    g = geometry.compare(base, cand)
    if g is not None and g.split:
        return Comparison(Kind.SPLIT, geometry.split_phrase(g), g, progs)
    if g is not None and g.resized:
        return Comparison(Kind.RESIZED, geometry.resized_phrase(g), g, progs)
    return Comparison(Kind.ONE_WORKLOAD, "", g, progs)


def frame(diff: Diff, c: Comparison) -> Diff:
    """The diff as the kind reads it: fixed windows by rates; the same work split
    differently, or resized, without count effects as outliers; a comparison that concludes nothing
    without outliers at all (an inconclusive report lists none)."""
    if c.kind is Kind.WINDOWS:
        return notices.as_rates(diff)
    if c.kind in (Kind.SPLIT, Kind.RESIZED):
        # A count effect is the split of the work, not a kernel that scaled wrong: at
        # another batch size a prefill GEMM cut into 112 launches instead of 1 is a
        # launch split (the invariance rules' fact), never the abnormal scaler.
        return unscored(diff, _count_effect)
    if not c.kind.conclusive:
        return unscored(diff, lambda r: True)
    return diff


def _count_effect(r: Row) -> bool:
    """An outlier whose change is mostly its calls' count, not their time: a row of a split
    workload whose per-call effect carries under half its change."""
    change = abs(r.count_effect_ns) + abs(r.per_call_effect_ns) + abs(r.resized_ns)
    return not change or r.per_call_effect_ns * r.delta_ns <= 0 or abs(r.per_call_effect_ns) < 0.5 * change


def unscored(d: Diff, drop: Callable[[Row], bool], *, unflag_only: bool = False) -> Diff:
    """``d`` with the rows ``drop`` picks no longer outliers: unscored (the outlier rule's
    own gate scores rows anew, so a count effect must carry no score), or with
    ``unflag_only`` only unflagged (the report's list, the scores kept)."""
    noise = d.settings.noise

    def plain(r: Row) -> Row:
        if r.outlier_score is None or not (r.is_outlier or not unflag_only) or not drop(r):
            return r
        verdict = row_verdict(r, noise) if r.is_outlier else r.verdict
        score = r.outlier_score if unflag_only else None
        return dataclasses.replace(r, is_outlier=False, outlier_score=score, verdict=verdict)

    return dataclasses.replace(
        d,
        kernels=tuple(map(plain, d.kernels)),
        families=tuple(map(plain, d.families)),
        categories=tuple(map(plain, d.categories)),
        nvtx=tuple(map(plain, d.nvtx)),
        graphs=tuple(map(plain, d.graphs)),
    )
