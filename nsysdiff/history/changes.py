"""Change points on a ref's history: where each key's series stepped, by how much, and
how sure that is.

**Method.** Each key (kernel, family, category, copy kind, NVTX range) gives one value
per commit: the geometric mean of its total time over the commit's runs. The series goes
to Apache Otava's E-Divisive (``otava.analysis.compute_change_points``, the "Hunter"
variant of Matteson and James's E-Divisive: divisive splits over sliding windows, each
split kept when a two-sided Student's t-test between the segments it separates is under
``max_pvalue``, then a merge pass that drops the weakest). Otava is deterministic (no
permutation test) and windowed, so a scan of 1,000 commits stays linear in their number.

For each step found, the size is the ratio of the after segment to the before segment
with a Welch interval on the log of every run's value in the two segments
(:func:`nsysdiff.compare.runstats.welch_log`); its significance is Otava's t-test
p-value. A key whose series a straight line fits better than the steps (by BIC) is a
drift, not a sequence of steps: it is reported as a drift with its slope per commit and
that slope's interval, and its steps are not reported as steps.

**What it can't tell.** A p-value chosen after searching every split is not a nominal
one: the false-alarm rate per key is measured on simulated noise
(:data:`FALSE_ALARM`, docs/history.md), not read off ``max_pvalue``. A step within the
first or last few commits has too few points on one side to be found. Keys that are not
in every run are structural changes, not scanned: each is named with the commit where it
appeared or went (:class:`Structural`), or as coming and going.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from nsysdiff.errors import UsageError
from nsysdiff.history import store as st

FloatArray = npt.NDArray[np.float64]

DEFAULT_MAX_PVALUE = 1e-5
DEFAULT_WINDOW = 30
# The share of pure-noise keys with at least one change point at the defaults, measured by
# benchmarks/history_calibrate.py on 20,000 simulated histories of 60 commits x 3 runs:
# 7 in 20,000 (0.035%; 95% upper bound 0.066%). tests/history/test_changes.py checks 200.
FALSE_ALARM = 0.00035
FALSE_ALARM_UPPER = 0.00066
MIN_COMMITS = 6


@dataclass(frozen=True, slots=True)
class Step:
    """A change in a key's level, starting at ``commit``."""

    kind: str
    key: str
    index: int  # position of ``commit`` in the scanned commits
    commit: str
    before_commit: str  # the last commit at the old level
    before_ns: float  # the segments' geometric means of total time
    after_ns: float
    ratio: float  # after / before, Welch on the runs' logs
    ci_low: float | None
    ci_high: float | None
    p_value: float  # Otava's t-test between the two segments
    before_runs: int
    after_runs: int
    returns_to: str | None  # the step undoes an earlier one: the level before that commit
    drifting: str | None = None  # a family or category holding a drifting kernel: that kernel
    label: str = ""  # the key as a report shows it: a kernel's short label (the key is its signature)


@dataclass(frozen=True, slots=True)
class Drift:
    """A key whose level moves a little with every commit rather than in steps."""

    kind: str
    key: str
    first_commit: str
    last_commit: str
    commits: int
    per_commit: float  # ratio per commit, from the slope of log(total) on commit order
    ci_low: float
    ci_high: float
    p_value: float
    overall: float  # the fitted line's last value over its first
    label: str = ""  # the key as a report shows it: a kernel's short label (the key is its signature)


@dataclass(frozen=True, slots=True)
class Structural:
    """A key that is not in every run: it appeared, went, or comes and goes."""

    kind: str
    key: str
    change: str  # "appeared", "gone" or "intermittent"
    commit: str | None  # the first commit with it (appeared) or without it (gone)
    commits: int  # commits with it in at least one run
    label: str = ""  # the key as a report shows it: a kernel's short label (the key is its signature)


@dataclass(frozen=True, slots=True)
class Changes:
    """A scan of one ref: every step and drift, and what was scanned."""

    store: str
    ref: str
    identity: tuple[str, str, str]
    commits: tuple[str, ...]
    runs: int
    keys: int
    structural: int  # keys not in every commit, left out
    steps: tuple[Step, ...]
    drifts: tuple[Drift, ...]
    max_pvalue: float
    window: int
    structures: tuple[Structural, ...] = ()  # the ``structural`` keys, each named


def engine() -> object:
    """Otava's analysis module; imported here, so that only a scan needs the extra."""
    try:
        from otava import analysis
    except ImportError:
        raise UsageError("history changes needs Apache Otava's E-Divisive: pip install 'nsysdiff[history]'") from None
    return analysis


def _commit_index(entries: Sequence[st.Entry]) -> tuple[tuple[str, ...], npt.NDArray[np.intp]]:
    """The commits in order of first appearance, and each entry's commit's position."""
    order: dict[str, int] = {}
    at = [order.setdefault(e.provenance.commit, len(order)) for e in entries]
    return tuple(order), np.array(at, dtype=np.intp)


def scan(
    store: st.Store,
    ref: str,
    *,
    max_pvalue: float = DEFAULT_MAX_PVALUE,
    window: int = DEFAULT_WINDOW,
    last: int | None = None,
    with_failed: bool = True,
) -> Changes:
    """Every step and drift of ``ref``'s comparable runs (the newest entry's GPU, scope
    and graph mode), over its last ``last`` commits (all when None)."""
    if not 0 < max_pvalue < 1:
        raise UsageError(f"--max-pvalue {max_pvalue}: expected a probability between 0 and 1")
    if window < 6:
        raise UsageError(f"--commits {window}: expected at least 6 commits")
    analysis = engine()
    entries = store.entries(ref)
    if not entries:
        raise UsageError(f"{store.path}: no entries for ref {ref!r}{st.unknown_ref(store, ref)}")
    newest = entries[-1].provenance
    ident = (newest.gpu, newest.scope, newest.graph_mode)
    from nsysdiff.history import baseline

    chosen = baseline.comparable(entries, ident, with_failed=with_failed)
    if last is not None:
        keep = set(list(dict.fromkeys(e.provenance.commit for e in chosen))[-last:])
        chosen = [e for e in chosen if e.provenance.commit in keep]
    commits, commit_of = _commit_index(chosen)
    keys, totals, calls = store.totals(chosen)
    # A key some run lacks is a structural change, not a series: counted, not scanned.
    present = (totals > 0) & (calls > 0)
    whole = present.all(axis=0)
    seen = present.any(axis=0)
    scanned = [int(i) for i in np.flatnonzero(whole)]
    # The series of a step figure is its time per step (per call for a host family's
    # calls); of every other key, its total time (nsysdiff.history.store.PER_STEP).
    per_step = np.array([kind in st.PER_STEP for kind, _ in keys], dtype=bool)
    values: FloatArray = np.where(per_step, totals / np.maximum(calls, 1), totals.astype(np.float64))
    logs: FloatArray = np.log(values[:, whole]) if len(chosen) else np.zeros((0, 0))
    runs = np.bincount(commit_of, minlength=len(commits)).astype(np.float64)
    level = np.zeros((len(commits), logs.shape[1]))
    np.add.at(level, commit_of, logs)
    level = np.exp(level / runs[:, None]) if len(commits) else level
    steps: list[Step] = []
    drifts: list[Drift] = []
    if len(commits) >= MIN_COMMITS:
        for j in sorted(range(len(scanned)), key=lambda j: keys[scanned[j]]):
            kind, key = keys[scanned[j]]
            s, d = _changes(analysis, kind, key, commits, level[:, j], logs[:, j], commit_of, max_pvalue, window)
            steps.extend(s)
            drifts.extend(d)
    if any(d.kind == "kernel" for d in drifts) and any(s.kind in ("family", "category", "nvtx") for s in steps):
        steps = _mark_drifting(store, chosen[-1], steps, drifts)
    labels = store.kernel_labels()
    structures = [
        dataclasses.replace(x, label=_label(x.kind, x.key, labels))
        for x in structural(keys, present, commit_of, commits, np.flatnonzero(seen & ~whole))
    ]
    steps = [dataclasses.replace(s, label=_label(s.kind, s.key, labels)) for s in steps]
    drifts = [dataclasses.replace(d, label=_label(d.kind, d.key, labels)) for d in drifts]
    return Changes(
        store=str(store.path),
        ref=ref,
        identity=ident,
        commits=commits,
        runs=len(chosen),
        keys=len(scanned),
        structural=int((seen & ~whole).sum()),
        steps=tuple(steps),
        drifts=tuple(drifts),
        max_pvalue=max_pvalue,
        window=window,
        structures=tuple(structures),
    )


def structural(
    keys: Sequence[tuple[str, str]],
    present: npt.NDArray[np.bool_],
    commit_of: npt.NDArray[np.intp],
    commits: Sequence[str],
    which: npt.NDArray[np.intp],
) -> list[Structural]:
    """The keys ``which`` (columns of ``present``, runs by keys), each named by how it
    changed over the commits: present from a commit on (appeared), absent from a commit on
    (gone), or neither (intermittent). Oldest change first."""
    by_commit = np.zeros((len(commits), present.shape[1]), dtype=bool)
    np.logical_or.at(by_commit, commit_of, present)
    out = []
    for i in (int(x) for x in which):
        col = by_commit[:, i]
        first = int(np.argmax(col))
        last = len(col) - 1 - int(np.argmax(col[::-1]))
        kind, key = keys[i]
        if first > 0 and col[first:].all():
            out.append(Structural(kind, key, "appeared", commits[first], int(col.sum())))
        elif last < len(col) - 1 and col[: last + 1].all():
            out.append(Structural(kind, key, "gone", commits[last + 1], int(col.sum())))
        else:
            out.append(Structural(kind, key, "intermittent", None, int(col.sum())))
    order = {c: n for n, c in enumerate(commits)}
    return sorted(out, key=lambda x: (order.get(x.commit or "", len(order)), x.kind, x.key))


def _label(kind: str, key: str, labels: dict[str, str]) -> str:
    return labels.get(key, key) if kind == st.KERNEL else key


def key_changes(
    analysis: object,
    kind: str,
    key: str,
    commits: tuple[str, ...],
    runs: Sequence[Sequence[float]],
    max_pvalue: float,
    window: int,
) -> tuple[list[Step], list[Drift]]:
    """The steps and drift of one key given each commit's runs' values (positive)."""
    commit_of = np.repeat(np.arange(len(runs)), [len(r) for r in runs])
    logs = np.log(np.concatenate([np.asarray(r, dtype=np.float64) for r in runs]))
    level = np.exp(np.bincount(commit_of, weights=logs) / np.bincount(commit_of))
    return _changes(analysis, kind, key, commits, level, logs, commit_of, max_pvalue, window)


def _changes(
    analysis: object,
    kind: str,
    key: str,
    commits: tuple[str, ...],
    level: FloatArray,
    logs: FloatArray,
    commit_of: npt.NDArray[np.intp],
    max_pvalue: float,
    window: int,
) -> tuple[list[Step], list[Drift]]:
    """``level``: the key's geometric mean per commit; ``logs``: every run's log value,
    ``commit_of`` its commit's position."""
    points, _ = analysis.compute_change_points(level.tolist(), window_len=window, max_pvalue=max_pvalue)  # type: ignore[attr-defined]
    cuts = [int(cp.index) for cp in points]
    pvalues = [float(cp.stats.pvalue) for cp in points]
    drift = _drift(kind, key, commits, np.log(level), cuts, max_pvalue)
    if drift is not None:
        return [], [drift]
    bounds = [0, *cuts, len(level)]

    def runs_of(first: int, stop: int) -> FloatArray:
        return logs[(commit_of >= first) & (commit_of < stop)]

    steps: list[Step] = []
    for i, cut in enumerate(cuts):
        before, after = runs_of(bounds[i], cut), runs_of(cut, bounds[i + 2])
        ratio, low, high = _welch(before, after)
        returns_to = None
        if i > 0:
            earlier = runs_of(bounds[i - 1], bounds[i])
            _, lo2, hi2 = _welch(earlier, after)
            prev_ratio = float(np.exp(before.mean() - earlier.mean()))
            if lo2 is not None and hi2 is not None and lo2 <= 1.0 <= hi2 and (prev_ratio - 1) * (ratio - 1) < 0:
                returns_to = commits[bounds[i]]
        steps.append(
            Step(
                kind=kind,
                key=key,
                index=cut,
                commit=commits[cut],
                before_commit=commits[cut - 1],
                before_ns=float(np.exp(before.mean())),
                after_ns=float(np.exp(after.mean())),
                ratio=ratio,
                ci_low=low,
                ci_high=high,
                p_value=pvalues[i],
                before_runs=len(before),
                after_runs=len(after),
                returns_to=returns_to,
            )
        )
    return steps, []


def _mark_drifting(store: st.Store, newest: st.Entry, steps: list[Step], drifts: list[Drift]) -> list[Step]:
    """Steps of a family or category that holds a drifting kernel, marked: such a sum is
    part drift, and the steps that fit it best may be the drift's (the newest run's
    fingerprint says which kernels a family or category holds). An NVTX range holds
    whatever ran inside it, which a fingerprint does not record: its steps are marked with
    the largest drifting kernel, as possibly holding it."""
    fp = store.fingerprint(newest)
    drifting = {d.key for d in drifts if d.kind == "kernel"}
    holds: dict[tuple[str, str], str] = {}
    for k in sorted(fp.kernels, key=lambda k: -k.total_ns):
        if k.demangled in drifting:
            holds.setdefault(("family", k.family), k.demangled)
            holds.setdefault(("category", k.category), k.demangled)
            holds.setdefault(("nvtx", ""), k.demangled)
    return [dataclasses.replace(s, drifting=holds.get((s.kind, "" if s.kind == "nvtx" else s.key))) for s in steps]


def _welch(before: FloatArray, after: FloatArray) -> tuple[float, float | None, float | None]:
    """after / before on the log scale with its 95% Welch interval (None with one run a side)."""
    ratio = float(np.exp(after.mean() - before.mean()))
    if len(before) < 2 or len(after) < 2:
        return ratio, None, None
    from nsysdiff.compare.runstats import welch_log

    t = welch_log(np.exp(before)[None, :], np.exp(after)[None, :])
    return ratio, float(t.ci_low[0]), float(t.ci_high[0])


def _bic(rss: float, n: int, params: int) -> float:
    return n * math.log(max(rss, 1e-300) / n) + params * math.log(n)


def _drift(
    kind: str, key: str, commits: tuple[str, ...], y: FloatArray, cuts: list[int], max_pvalue: float
) -> Drift | None:
    """A drift when a straight line explains the series better than its steps (BIC, with
    a step costing two parameters: its place and its level) and its slope is significant."""
    n = len(y)
    if not cuts or n < 10:
        return None
    bounds = [0, *cuts, n]
    rss_steps = float(sum(((y[a:b] - y[a:b].mean()) ** 2).sum() for a, b in itertools.pairwise(bounds)))
    x = np.arange(n, dtype=np.float64)
    from scipy import stats as sps

    fit = sps.linregress(x, y)
    rss_line = float(((y - (fit.intercept + fit.slope * x)) ** 2).sum())
    if _bic(rss_line, n, 3) >= _bic(rss_steps, n, 1 + 2 * len(cuts)) or fit.pvalue >= max_pvalue:
        return None
    half = float(sps.t.ppf(0.975, n - 2) * fit.stderr)
    return Drift(
        kind=kind,
        key=key,
        first_commit=commits[0],
        last_commit=commits[-1],
        commits=n,
        per_commit=math.exp(fit.slope),
        ci_low=math.exp(fit.slope - half),
        ci_high=math.exp(fit.slope + half),
        p_value=float(fit.pvalue),
        overall=math.exp(fit.slope * (n - 1)),
    )
