"""The statistics across the runs of both sides, as frozen data (``Diff.runs``).

Apart from :mod:`nsysdiff.compare.rundiff`, which computes them, so that the diff can
carry them without importing the computation that builds on the diff.
"""

from __future__ import annotations

from dataclasses import dataclass

from nsysdiff.compare import runstats
from nsysdiff.compare.steps import StepSide
from nsysdiff.fingerprint.runset import KeyKind, Measure


@dataclass(frozen=True, slots=True)
class KeyRuns:
    """One key of one kind across the runs: its total, calls and per-call mean compared."""

    kind: KeyKind
    key: str
    total: runstats.KeyComparison
    calls: runstats.KeyComparison
    per_call: runstats.KeyComparison

    @property
    def measures(self) -> tuple[tuple[Measure, runstats.KeyComparison], ...]:
        return ((Measure.TOTAL, self.total), (Measure.CALLS, self.calls), (Measure.PER_CALL, self.per_call))


@dataclass(frozen=True, slots=True)
class Spread:
    """A ratio across runs: the runs' values, their geometric-mean ratio and its interval
    (None with fewer than two runs on a side)."""

    base_values: tuple[float, ...]
    cand_values: tuple[float, ...]
    ratio: float
    low: float | None
    high: float | None


@dataclass(frozen=True, slots=True)
class Deviation:
    """A key's deviation from the scale across runs, and whether it clears the outlier
    thresholds over its whole interval."""

    rows: str  # kernels, families, categories, nvtx, graphs: the diff table it belongs to
    key: str
    spread: Spread
    score: float
    score_low: float
    score_high: float
    cleared: bool


@dataclass(frozen=True, slots=True)
class RunsDiff:
    """The statistics across the runs of both sides (``Diff.runs``)."""

    base_sources: tuple[str, ...]
    cand_sources: tuple[str, ...]
    base_shown: int  # index of the median run, whose figures the diff shows
    cand_shown: int
    keys: tuple[KeyRuns, ...]  # by kind (KeyKind order), then key
    partial: tuple[tuple[KeyKind, str], ...]  # keys some run lacks: structural, not tested
    kernel_time: Spread | None  # total kernel time (graph or NVTX time without kernels); None: none in some run
    scale: Spread | None  # None: no meaningful scale in some run
    deviations: tuple[Deviation, ...]  # the outliers of the median runs, most abnormal first
    alpha: float
    band: float
    confidence: float
    threshold: float  # the deviation an outlier's interval must clear, either way
    # Every run's steps summarised, base runs then candidate runs, when every run has steps.
    steps: tuple[tuple[StepSide, ...], tuple[StepSide, ...]] | None = None

    @property
    def base_runs(self) -> int:
        return len(self.base_sources)

    @property
    def cand_runs(self) -> int:
        return len(self.cand_sources)

    @property
    def intervals(self) -> bool:
        return self.base_runs >= 2 and self.cand_runs >= 2

    @property
    def tested(self) -> int:
        return sum(c.p_value is not None for k in self.keys for _, c in k.measures)

    @property
    def method(self) -> str:
        return runstats.RUNS_METHOD.format(
            confidence=self.confidence,
            tested=self.tested,
            alpha=self.alpha,
            base=self.base_runs,
            cand=self.cand_runs,
        )

    def count(self, verdict: runstats.RunVerdict) -> int:
        """Keys with at least one measure of this verdict."""
        return sum(any(c.verdict is verdict for _, c in k.measures) for k in self.keys)
