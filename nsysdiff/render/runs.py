"""The statistics across several runs per side, as the text and Markdown reports show
them: intervals written compactly (``1.06x [1.03, 1.09]``), run counts, the keys that
changed or can't be told, and the method. Nothing here with one run per side: the
reports then read exactly as before.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping

from nsysdiff.compare.diff import Diff, Row
from nsysdiff.compare.runs import Deviation, KeyRuns, RunsDiff, Spread
from nsysdiff.compare.runstats import KeyComparison, RunVerdict
from nsysdiff.fingerprint.runset import KeyKind, Measure

FIRST_SCREEN_KEYS = 5  # keys across runs on the first screen of the text report

_MEASURE = {Measure.PER_CALL: "per call", Measure.TOTAL: "total", Measure.CALLS: "calls"}
# What a key of each kind is called (the runs' and the noise profile's tables).
KIND_WORDS = {
    KeyKind.KERNEL: "kernel",
    KeyKind.FAMILY: "family",
    KeyKind.CATEGORY: "category",
    KeyKind.COPY: "copy kind",
    KeyKind.NVTX: "NVTX range",
    KeyKind.STEP: "step figure",
}
# Keys listed: changed first, then those the runs can't tell; the order of the verdicts.
_LISTED = (RunVerdict.CHANGED, RunVerdict.TOO_NOISY)


def interval(ratio: float, low: float | None, high: float | None) -> str:
    """``1.06x [1.03, 1.09]``; ``1.06x`` where no interval exists (one run on a side)."""
    if low is None or high is None:
        return f"{ratio:.2f}x"
    return f"{ratio:.2f}x [{low:.2f}, {high:.2f}]"


def spread_text(s: Spread) -> str:
    return interval(s.ratio, s.low, s.high)


def count_phrase(r: RunsDiff) -> str:
    """``3 vs 3 runs``."""
    return f"{r.base_runs:,} vs {r.cand_runs:,} runs"


def shown_phrase(r: RunsDiff) -> str:
    """Which runs the figures are, and how many runs each side has."""
    return (
        f"{r.base_runs:,} base, {r.cand_runs:,} candidate; figures from the median runs "
        f"{r.base_sources[r.base_shown]} → {r.cand_sources[r.cand_shown]}"
    )


def over_runs_phrase(r: RunsDiff) -> str:
    """The headline's ratios across runs, or why there is no interval."""
    if not r.intervals:
        return "no interval: a side has one run (an interval needs two runs on each side)"
    scale = "none (no meaningful scale in some run)" if r.scale is None else spread_text(r.scale)
    time = "none in some run" if r.kernel_time is None else spread_text(r.kernel_time)
    return f"kernel time {time} · scale {scale} ({r.confidence:.0%} intervals)"


def deviation_of(d: Diff, row: Row) -> Deviation | None:
    """The interval across runs of an outlier row of the diff's basis."""
    if d.runs is None:
        return None
    rows = "kernels" if d.headline.basis == "kernels" else d.headline.basis
    return next((x for x in d.runs.deviations if x.rows == rows and x.key == row.key), None)


def outlier_phrase(d: Diff, row: Row) -> str | None:
    """``across 3 vs 3 runs: 3.02x [2.96, 3.07] vs the scale · z=+19.0 [18.7, 19.3]``."""
    dev = deviation_of(d, row)
    if d.runs is None or dev is None or not d.runs.intervals:
        return None
    return (
        f"across {count_phrase(d.runs)}: {spread_text(dev.spread)} vs the scale · z="
        f"{dev.score:+.1f} [{dev.score_low:.1f}, {dev.score_high:.1f}]"
    )


def worst(k: KeyRuns) -> RunVerdict:
    """The verdict a key is listed under: changed on any measure, else too noisy on any."""
    verdicts = {c.verdict for _, c in k.measures}
    return next((v for v in (*_LISTED, RunVerdict.NO_CHANGE) if v in verdicts), RunVerdict.SINGLE_RUN)


def listed(r: RunsDiff) -> list[KeyRuns]:
    """The keys worth a line: changed first, then too noisy, by kind, largest change first."""
    kinds = list(KeyKind)
    keys = [k for k in r.keys if worst(k) in _LISTED]
    return sorted(keys, key=lambda k: (_LISTED.index(worst(k)), kinds.index(k.kind), -abs(_log(k.per_call)), k.key))


def _log(c: KeyComparison) -> float:
    return math.log(c.ratio)


def measures_text(k: KeyRuns) -> str:
    """The measures of a key that did not stay put: ``per call 1.06x [1.04, 1.09] changed · ...``."""
    parts = [
        f"{_MEASURE[m]} {interval(c.ratio, c.ci_low, c.ci_high)} {c.verdict.value}"
        for m, c in (
            (Measure.PER_CALL, k.per_call),
            (Measure.TOTAL, k.total),
            (Measure.CALLS, k.calls),
        )
        if c.verdict is not RunVerdict.NO_CHANGE
    ]
    return " · ".join(parts)


def kind_word(k: KeyRuns) -> str:
    return KIND_WORDS[k.kind]


def tally(r: RunsDiff) -> str:
    """``2 keys changed, 3 too noisy to tell, 10 with no significant change on every measure``."""
    counts = [(r.count(v), v.value) for v in (*_LISTED, RunVerdict.NO_CHANGE)]
    steady = sum(all(c.verdict is RunVerdict.NO_CHANGE for _, c in k.measures) for k in r.keys)
    return (
        f"{counts[0][0]:,} keys changed, {counts[1][0]:,} too noisy to tell, "
        f"{steady:,} with no significant change on every measure"
    )


def title(r: RunsDiff) -> str:
    return f"Across runs ({count_phrase(r)}): {tally(r)}"


def partial_text(r: RunsDiff) -> str | None:
    """The keys some run lacks: structural changes, left out of the statistics."""
    if not r.partial:
        return None
    keys = ", ".join(f"{KIND_WORDS[kind]} {key}" for kind, key in r.partial)
    return f"not compared across runs (absent from some runs or from one side): {keys}"


def method_text(r: RunsDiff) -> str:
    """The methods line of a multi-run report."""
    if not r.intervals:
        return (
            f"Runs: {r.base_runs:,} base, {r.cand_runs:,} candidate; with one run on a side no interval "
            "exists, and the figures are those of the median runs."
        )
    return (
        f"Runs: {r.method}. A key changed when its adjusted p-value is at most {r.alpha:g}; no significant "
        f"change when its interval lies within ±{r.band:.0%}; else too noisy to tell. Figures are those of "
        f"the median runs (so is the attribution, exact); the scale and the deviation of each key from it: "
        f"each run against the geometric mean of the base runs, Welch's t over runs; an outlier is kept only "
        f"when its whole interval clears {r.threshold:.2f}x either way."
    )


def key_text(k: KeyRuns, named: Mapping[str, str]) -> str:
    """A key as the report's other tables name it: a kernel by its label (the short name,
    told apart from others of that name; ``named``), any other key as it is."""
    return named.get(k.key, k.key) if k.kind is KeyKind.KERNEL else k.key


def markdown_rows(r: RunsDiff, cell: Callable[[str], str], named: Mapping[str, str]) -> list[list[str]]:
    """The rows of the Markdown table of keys across runs: one per listed key and measure."""
    out = []
    for k in listed(r):
        for m, c in ((Measure.PER_CALL, k.per_call), (Measure.TOTAL, k.total), (Measure.CALLS, k.calls)):
            if c.verdict is RunVerdict.NO_CHANGE:
                continue
            q = "-" if c.q_value is None else f"{c.q_value:.3g}"
            out.append(
                [
                    kind_word(k),
                    f"<code>{cell(key_text(k, named))}</code>",
                    _MEASURE[m],
                    interval(c.ratio, c.ci_low, c.ci_high),
                    q,
                    c.verdict.value,
                ]
            )
    return out
