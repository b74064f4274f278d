"""Statistics across several runs per side: per key, a ratio with a confidence interval,
a test of "no change" corrected over all keys, and a named verdict.

The unit of replication is the run. Launches inside one run share the machine state
(clocks, thermal state, neighbours, allocator), so they are not independent samples of
the run-to-run noise and are never used as such here: each key contributes one value
per run (a total, a call count or a per-call mean), and the runs are assumed
independent.

Method (see ``docs/statistics.md`` for the reasoning and the measured calibration):

- values are compared on the log scale, where a slowdown is a shift and run-to-run noise
  of timings is close to symmetric;
- the location of a side is the mean of its log values (the geometric mean), and the
  ratio is ``exp(mean log cand - mean log base)``;
- the interval and the p-value come from Welch's t on the log values (unequal
  variances, exact under log-normal noise, no resampling, so no seed and no
  under-coverage at 2 to 5 runs as a bootstrap has);
- the p-values of all keys tested together are adjusted with Benjamini-Hochberg;
- the verdict: ``changed`` when the adjusted p-value is at most ``alpha``;
  ``no significant change`` when it is not and the whole interval lies inside the
  practical band ``[1 / (1 + band), 1 + band]`` (a change larger than the band is ruled
  out); otherwise ``too noisy to tell`` (this many runs can neither show nor rule out a
  change of the size of the band). With one run on a side no interval exists.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import Enum

import numpy as np
import numpy.typing as npt

FloatArray = npt.NDArray[np.float64]

RUNS_METHOD = (
    "Welch's t on log per-run values (geometric-mean ratio, {confidence:.0%} interval), "
    "Benjamini-Hochberg over {tested} keys at alpha {alpha:g}, runs: {base} base, {cand} candidate"
)


class RunVerdict(str, Enum):
    """What several runs per side say about one key."""

    CHANGED = "changed"
    NO_CHANGE = "no significant change"
    TOO_NOISY = "too noisy to tell"
    SINGLE_RUN = "no interval (one run)"


@dataclass(frozen=True, slots=True)
class RunTest:
    """Welch's t on the log values of one key per row: arrays with one entry per key."""

    ratio: FloatArray
    ci_low: FloatArray
    ci_high: FloatArray
    p_value: FloatArray


@dataclass(frozen=True, slots=True)
class KeyComparison:
    """One key across the runs of both sides."""

    key: str
    base_values: tuple[float, ...]
    cand_values: tuple[float, ...]
    ratio: float
    median_ratio: float
    ci_low: float | None
    ci_high: float | None
    p_value: float | None
    q_value: float | None
    verdict: RunVerdict


@dataclass(frozen=True, slots=True)
class RunComparison:
    """All keys compared across runs, sorted by key, with the settings that produced them."""

    keys: tuple[KeyComparison, ...]
    base_runs: int
    cand_runs: int
    alpha: float
    band: float
    confidence: float

    @property
    def method(self) -> str:
        tested = sum(k.p_value is not None for k in self.keys)
        return RUNS_METHOD.format(
            confidence=self.confidence,
            tested=tested,
            alpha=self.alpha,
            base=self.base_runs,
            cand=self.cand_runs,
        )


def welch_log(base: FloatArray, cand: FloatArray, confidence: float = 0.95) -> RunTest:
    """Welch's t on ``log`` of ``base`` (keys x base runs) against ``cand`` (keys x
    candidate runs); both need at least two runs and positive values.

    Rows whose runs are all identical on both sides have no spread: their interval is
    the point itself and the p-value is 1 when the sides agree, 0 when they differ.
    """
    if base.ndim != 2 or cand.ndim != 2 or base.shape[0] != cand.shape[0]:
        raise ValueError("base and candidate must be (keys x runs) arrays with the same keys")
    nb, nc = base.shape[1], cand.shape[1]
    if nb < 2 or nc < 2:
        raise ValueError("Welch's t needs at least two runs per side")
    if (base <= 0).any() or (cand <= 0).any():
        raise ValueError("per-run values must be positive to be compared on the log scale")
    # scipy.stats takes half a second to import: only a multi-run diff pays for it.
    from scipy import stats as sps

    lb, lc = np.log(base), np.log(cand)
    diff = lc.mean(axis=1) - lb.mean(axis=1)
    vb = lb.var(axis=1, ddof=1) / nb
    vc = lc.var(axis=1, ddof=1) / nc
    se = np.sqrt(vb + vc)
    spread = se > 0
    with np.errstate(divide="ignore", invalid="ignore"):
        df = np.where(spread, (vb + vc) ** 2 / (vb**2 / (nb - 1) + vc**2 / (nc - 1)), float(nb + nc - 2))
        t = np.where(spread, diff / se, 0.0)
    half = sps.t.ppf(0.5 + confidence / 2.0, df) * se
    p = np.where(spread, 2.0 * sps.t.sf(np.abs(t), df), np.where(diff == 0.0, 1.0, 0.0))
    return RunTest(
        ratio=np.exp(diff),
        ci_low=np.exp(diff - half),
        ci_high=np.exp(diff + half),
        p_value=p,
    )


def benjamini_hochberg(p: FloatArray) -> FloatArray:
    """Benjamini-Hochberg adjusted p-values along the last axis (each row is one family
    of tests): reject every test whose adjusted value is at most the target FDR."""
    m = p.shape[-1]
    order = np.argsort(p, axis=-1, kind="stable")
    ranked = np.take_along_axis(p, order, axis=-1) * m / np.arange(1, m + 1)
    # The step-up: each adjusted value is the smallest one at its rank or above.
    adjusted_sorted = np.minimum.accumulate(ranked[..., ::-1], axis=-1)[..., ::-1]
    adjusted = np.empty_like(adjusted_sorted)
    np.put_along_axis(adjusted, order, np.minimum(adjusted_sorted, 1.0), axis=-1)
    return adjusted


VERDICTS = (RunVerdict.CHANGED, RunVerdict.NO_CHANGE, RunVerdict.TOO_NOISY)


def classify(
    q_value: FloatArray, ci_low: FloatArray, ci_high: FloatArray, alpha: float, band: float
) -> npt.NDArray[np.int8]:
    """The verdict per key from its adjusted p-value and its interval, as an index into
    ``VERDICTS`` (integer codes keep whole simulations in one array)."""
    inside = (ci_low >= 1.0 / (1.0 + band)) & (ci_high <= 1.0 + band)
    return np.where(q_value <= alpha, 0, np.where(inside, 1, 2)).astype(np.int8)


def compare_runs(
    base: Mapping[str, Sequence[float]],
    cand: Mapping[str, Sequence[float]],
    *,
    alpha: float = 0.05,
    band: float = 0.02,
    confidence: float = 0.95,
) -> RunComparison:
    """Compare every key present on both sides, one value per run.

    Every key of a side must have one value per run of that side, and all of them must
    be positive: a key missing from some runs is a structural change, for the caller to
    report, not noise. With one run on either side each key gets its ratio and the
    verdict ``SINGLE_RUN``, and no interval or p-value.
    """
    return compare_groups([(base, cand)], alpha=alpha, band=band, confidence=confidence)[0]


def compare_groups(
    groups: Sequence[tuple[Mapping[str, Sequence[float]], Mapping[str, Sequence[float]]]],
    *,
    alpha: float = 0.05,
    band: float = 0.02,
    confidence: float = 0.95,
) -> tuple[RunComparison, ...]:
    """:func:`compare_runs` for several groups of keys (kernels, families... each on a
    measure) at once, with one Benjamini-Hochberg correction over every key of every
    group: a diff tests all of them together, so the false-discovery rate is the diff's.

    All groups hold the same runs, so every key of a side has that side's run count.
    """
    matrices = []
    for base, cand in groups:
        keys = sorted(set(base) & set(cand))
        matrices.append((keys, _matrix(base, keys, "base"), _matrix(cand, keys, "candidate")))
    # An empty group has no runs to count: the other groups say how many there are.
    counts = {(b.shape[1], c.shape[1]) for keys, b, c in matrices if keys}
    if len(counts) > 1:
        raise ValueError(f"groups have different numbers of runs ({sorted(counts)})")
    nb, nc = counts.pop() if counts else (1, 1)
    b_all = np.concatenate([np.empty((0, nb)), *(b for keys, b, _ in matrices if keys)])
    c_all = np.concatenate([np.empty((0, nc)), *(c for keys, _, c in matrices if keys)])
    lb, lc = np.log(b_all), np.log(c_all)
    ratio = np.exp(lc.mean(axis=1) - lb.mean(axis=1))
    median_ratio = np.median(c_all, axis=1) / np.median(b_all, axis=1) if len(b_all) else ratio
    n = len(b_all)
    if nb < 2 or nc < 2 or not n:
        nothing: list[float | None] = [None] * n
        lo, hi, p, q = nothing, nothing, nothing, nothing
        verdicts = [RunVerdict.SINGLE_RUN] * n
    else:
        test = welch_log(b_all, c_all, confidence)
        adjusted = benjamini_hochberg(test.p_value)
        # float() per element, not tolist(): numpy's stubs type tolist() differently across versions.
        lo, hi = [float(v) for v in test.ci_low], [float(v) for v in test.ci_high]
        p, q = [float(v) for v in test.p_value], [float(v) for v in adjusted]
        codes = classify(adjusted, test.ci_low, test.ci_high, alpha, band)
        verdicts = [VERDICTS[code] for code in codes]
    ratios, medians = ratio.tolist(), median_ratio.tolist()
    out = []
    start = 0
    for keys, _, _ in matrices:
        rows = tuple(
            KeyComparison(
                key,
                tuple(b_all[i].tolist()),
                tuple(c_all[i].tolist()),
                ratios[i],
                medians[i],
                lo[i],
                hi[i],
                p[i],
                q[i],
                verdicts[i],
            )
            for i, key in enumerate(keys, start)
        )
        start += len(keys)
        out.append(RunComparison(rows, nb, nc, alpha, band, confidence))
    return tuple(out)


def _matrix(side: Mapping[str, Sequence[float]], keys: list[str], name: str) -> FloatArray:
    """The side's values as keys x runs, checked for one positive value per run."""
    lengths = {len(side[k]) for k in keys}
    if len(lengths) > 1:
        raise ValueError(f"{name}: keys have different numbers of runs ({sorted(lengths)})")
    runs = lengths.pop() if lengths else 1
    if runs < 1:
        raise ValueError(f"{name}: no runs")
    m = np.array([side[k] for k in keys], dtype=np.float64).reshape(len(keys), runs)
    if (m <= 0).any() or not np.isfinite(m).all():
        raise ValueError(f"{name}: per-run values must be positive and finite")
    return m


def format_ratio(k: KeyComparison) -> str:
    """The ratio as reports show it: ``1.06x [1.03, 1.09]``, or ``1.06x`` without an interval."""
    if k.ci_low is None or k.ci_high is None:
        return f"{k.ratio:.2f}x"
    return f"{k.ratio:.2f}x [{k.ci_low:.2f}, {k.ci_high:.2f}]"
