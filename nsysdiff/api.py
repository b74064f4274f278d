"""The entry points the CLI, the GitHub Action and notebooks share."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING

from nsysdiff.compare import comparability, ranks, runstats
from nsysdiff.compare.diff import Diff, Settings
from nsysdiff.errors import ExitCode, UsageError
from nsysdiff.fingerprint import runset, scope
from nsysdiff.fingerprint.model import Fingerprint, fingerprint_from_json
from nsysdiff.fingerprint.reduce import assemble
from nsysdiff.fingerprint.scope import ScopeOptions
from nsysdiff.rules.report import NO_RULES, Finding, Level, Outcome, Report, RuleResult, undecided_reason
from nsysdiff.trace import inputs
from nsysdiff.trace import ranks as trace_ranks
from nsysdiff.trace.launches import Grouping
from nsysdiff.trace.progress import Step, silent
from nsysdiff.trace.reader import TraceReader, open_trace
from nsysdiff.trace.records import GraphMode, JobIdentity, RangeRow, RankStats
from nsysdiff.trace.schema import check_stopped


def fingerprint_trace(
    path: str | Path,
    options: ScopeOptions | None = None,
    *,
    progress: Step = silent,
    side: str = "",
    by: Grouping = Grouping.name,
) -> Fingerprint:
    """Read an nsys SQLite export and reduce it to a fingerprint (of ``options``' scope).
    ``progress`` hears ``(side, table)`` before each table is read; ``by`` says what makes
    two launches the same kernel."""
    with open_trace(path) as r:
        if options is not None and options.step_ranges and by is Grouping.name:
            # A rule pack's step range: the trace's own --per, when it has the range.
            options = scope.find_steps(r, options)
        if options is not None and options.active and by is not Grouping.name:
            raise UsageError("--by name+launch reads the whole trace: it can't be combined with a scope option")
        if options is not None and options.active:
            progress(side, "scoping (kernels, NVTX ranges, launches)")
            return scope.fingerprint(r, options)
        # The NVTX table is often the largest: it is read on a connection of its own
        # beside the kernel scans (SQLite releases the GIL while it works).
        with ThreadPoolExecutor(max_workers=1) as pool:
            ranges = pool.submit(_nvtx_summary, path)
            progress(side, "kernels")
            # First: the kernel scan also learns the graph mode that metadata reports.
            groups = r.kernels(shapes=by is Grouping.name_launch)
            progress(side, "metadata")
            meta, has = r.metadata(), r.has_kernels()
            progress(side, "memcpy")
            memcpy = r.memcpy()
            progress(side, "memset")
            memset = r.memset()
            progress(side, "sync calls")
            sync = r.sync_calls()
            progress(side, "NVTX ranges")
            nvtx = ranges.result()
        progress(side, "reducing to a fingerprint")
        fp = assemble(path, meta, groups, has, memcpy, memset, sync, nvtx)
        if len(groups.devices) > 1:
            # Several GPUs in one trace: its (process, device) pairs are the ranks of a job.
            progress(side, "ranks")
            fp = dataclasses.replace(fp, ranks=_ranks(r, fp))
        if meta.graph_mode in (GraphMode.GRAPH, GraphMode.MIXED):
            # Graph-mode replays have no kernel rows: their launches are what can be compared.
            progress(side, "graph launches")
            fp = dataclasses.replace(fp, graphs=r.graph_launches())
        return fp


def _ranks(r: TraceReader, fp: Fingerprint) -> tuple[RankStats, ...]:
    """The ranks of a multi-GPU trace. One process per device (the usual shape) needs only
    the pairs: the figures are the devices'; else each pair is scanned for its own."""
    pairs = trace_ranks.pairs(r)
    pids = dict(pairs)
    if len(pids) == len(pairs):
        return ranks.per_device(fp, pids)
    return trace_ranks.read(r)


def _nvtx_summary(path: str | Path) -> tuple[RangeRow, ...]:
    with open_trace(path) as r:
        return r.nvtx_summary()


def _quiet(_: str) -> None:
    pass


def load(
    path: str | Path,
    options: ScopeOptions | None = None,
    *,
    progress: Step = silent,
    side: str = "",
    by: Grouping = Grouping.name,
    keep_export: Path | None = None,
    notify: Callable[[str], None] = _quiet,
) -> Fingerprint:
    """A fingerprint from a trace, a saved fingerprint, or an nsys report (exported first).

    What the file is comes from its content (:func:`nsysdiff.trace.inputs.recognise`). ``options``
    scope a trace; a saved fingerprint is already scoped, so options given with one must
    restate its scope (else :class:`~nsysdiff.errors.UsageError`). A report is exported
    with ``nsys`` into a temporary directory (``keep_export`` keeps it there instead), and
    ``notify`` is told so.
    """
    src = inputs.recognise(Path(path))
    p = src.path
    if src.kind is inputs.Kind.NSYS_REPORT:
        with inputs.exported(p, keep_export, notify) as exported:
            return fingerprint_trace(exported, options, progress=progress, side=side, by=by)
    if src.kind is inputs.Kind.SQLITE:
        return fingerprint_trace(p, options, progress=progress, side=side, by=by)
    _check_grouping(p, by)
    fp = fingerprint_from_json(inputs.saved_text(src), str(p))
    if options is not None:
        scope.check_saved(fp, options, str(p))
    return fp


def _check_grouping(path: Path, by: Grouping) -> None:
    if by is not Grouping.name:
        raise UsageError(f"{path}: a saved fingerprint groups kernels by name; --by name+launch needs the trace")


def load_runs(
    paths: Sequence[str | Path],
    options: ScopeOptions | None = None,
    *,
    progress: Step = silent,
    side: str = "",
    by: Grouping = Grouping.name,
    keep_export: Path | None = None,
    notify: Callable[[str], None] = _quiet,
) -> runset.RunSet:
    """The runs of one side from any mix of traces, reports, saved fingerprints and saved
    run sets (a run set contributes all its runs), checked alike with each other.
    A side of one trace or one fingerprint reads exactly as :func:`load` reads it."""
    from nsysdiff.fingerprint import validation  # jsonschema loads only when a fingerprint is read

    runs: list[Fingerprint] = []
    sources: list[str] = []
    for i, path in enumerate(paths):
        check_stopped(str(path))  # a Ctrl-C between inputs stops at once
        src = inputs.recognise(Path(path))
        # The progress line counts the runs of a side of several.
        label = f"{side} run {i + 1:,} of {len(paths):,}" if side and len(paths) > 1 else side
        if src.kind is not inputs.Kind.FINGERPRINT:
            runs.append(
                load(path, options, progress=progress, side=label, by=by, keep_export=keep_export, notify=notify)
            )
            sources.append(str(path))
            continue
        _check_grouping(src.path, by)
        # Read once: a fingerprint from a pipe can't be read twice.
        text, where = inputs.saved_text(src), str(src.path)
        saved = (
            runset.run_set_from_json(text, where)
            if runset.is_run_set(validation.parse(text, where))
            else runset.RunSet((fingerprint_from_json(text, where),), (where,))
        )
        for fp, run_source in zip(saved.runs, saved.sources, strict=True):
            if options is not None:
                scope.check_saved(fp, options, run_source)
        runs.extend(saved.runs)
        sources.extend(saved.sources)
    checked = runset.run_set(runs, sources)
    if len(runs) > 1:
        # A capture given twice (one file twice, a copy, its own fingerprint) is one run.
        inputs.check_distinct_files([Path(p) for p in paths])
        runset.check_distinct(runs, sources)
    return checked


if TYPE_CHECKING:  # the noise model and pandas load only where they are used
    import pandas as pd

    from nsysdiff.fingerprint.noise import NoiseProfile


def noise_profile(
    paths: Sequence[str | Path],
    options: ScopeOptions | None = None,
    *,
    progress: Step = silent,
    keep_export: Path | None = None,
    notify: Callable[[str], None] = _quiet,
) -> NoiseProfile:
    """The noise profile of A/A runs of one build (any mix of inputs, as :func:`load_runs`)."""
    from nsysdiff.fingerprint import noise

    return noise.measure(load_runs(paths, options, progress=progress, keep_export=keep_export, notify=notify))


def load_noise_profile(path: str | Path) -> NoiseProfile:
    """A saved noise profile (``nsysdiff noise ... -o FILE``), validated like a fingerprint."""
    from nsysdiff.fingerprint import noise

    return noise.load(path)


def compare_run_sets(
    base: runset.RunSet,
    cand: runset.RunSet,
    kind: runset.KeyKind = runset.KeyKind.KERNEL,
    measure: runset.Measure = runset.Measure.PER_CALL,
    *,
    alpha: float = 0.05,
    band: float = 0.02,
) -> tuple[runstats.RunComparison, tuple[str, ...]]:
    """Per key of ``kind``, the runs of both sides compared on ``measure``
    (:mod:`nsysdiff.compare.runstats`), and the keys left out because some run lacks them."""
    b = runset.per_run_values(base, kind, measure)
    c = runset.per_run_values(cand, kind, measure)
    # A key both sides have in every run is compared; any other key is a structural change.
    partial = sorted(set(b.partial) | set(c.partial) | (set(b.values) ^ set(c.values)))
    result = runstats.compare_runs(b.values, c.values, alpha=alpha, band=band)
    return result, tuple(partial)


def inconclusive_reasons(base: Fingerprint, cand: Fingerprint, *, require_same_gpu: bool = False) -> tuple[str, ...]:
    """Why two fingerprints can't be compared meaningfully, if they can't."""
    return comparability.assess(base, cand, require_same_gpu=require_same_gpu)[0]


def judge(
    diff: Diff,
    findings: Sequence[Finding],
    rules: Sequence[RuleResult],
    *,
    strict: bool = False,
    judged: bool = True,
    reasons: Sequence[str] = (),
    notes: Sequence[str] = (),
    packs: Sequence[str] = (),
) -> Report:
    """The outcome and exit code of a diff and its findings.

    Without a meaningful overall scale the findings judged against it decide nothing, so
    the outcome is inconclusive when an outlier rule ran, unless a finding that needs no
    scale (a budget, a structure check) already fails.
    """
    no_scale = comparability.scale_reason(diff) if judged else None
    if judged and not rules:
        # Rule files that hold no rule (only `version: 1`) judge nothing; a pass would
        # read in CI as "no regression" with any outlier on screen.
        reasons = (*reasons, f"{NO_RULES} ({', '.join(packs) or 'no rule file'}): nothing was judged")
    order = {Level.ERROR: 0, Level.WARNING: 1, Level.INFO: 2}
    ordered = tuple(sorted(findings, key=lambda f: (f.waived, order[f.level], f.rule_id, f.subject)))
    provisional = Report(diff, ordered, tuple(rules), Outcome.PASS, ExitCode.PASS, strict=strict)
    if no_scale is not None:
        # Only the outlier rules judge against the scale: without one among the rules (the
        # `tpot` pack judges steps and budgets), a missing scale is worth a note, no more.
        scale_judged = any(r.kind == "outlier" for r in rules)
        if not scale_judged or any(not f.scaled for f in provisional.failed):
            notes = (*notes, no_scale)
        else:
            reasons = (*reasons, no_scale)
    # A limit within the measured noise decides nothing: inconclusive unless a rule fails.
    undecided = tuple(undecided_reason(f) for f in provisional.undecided)
    if reasons:
        outcome, code = Outcome.INCONCLUSIVE, ExitCode.INCONCLUSIVE
    elif not judged:
        outcome, code = Outcome.UNJUDGED, ExitCode.PASS
    elif provisional.failed:
        outcome, code = Outcome.FAIL, ExitCode.REGRESSION
        notes = (*notes, *undecided)
    elif undecided:
        outcome, code = Outcome.INCONCLUSIVE, ExitCode.INCONCLUSIVE
        reasons = undecided
    else:
        outcome, code = Outcome.PASS, ExitCode.PASS
    return Report(
        diff=diff,
        findings=ordered,
        rules=tuple(rules),
        outcome=outcome,
        exit_code=code,
        reasons=tuple(reasons),
        notes=tuple(notes),
        strict=strict,
        packs=tuple(packs),
    )


def load_job(
    paths: Sequence[str | Path],
    *,
    progress: Step = silent,
    keep_export: Path | None = None,
    notify: Callable[[str], None] = _quiet,
    force: bool = False,
) -> tuple[RankStats, ...]:
    """The ranks of one job given as several traces (reports and saved fingerprints too),
    numbered in the order given (:func:`nsysdiff.compare.ranks.job`). A trace is read for its ranks
    alone: one scan of its kernel table, not a whole fingerprint, and a few rows that tell
    whether the traces are one job's (:func:`nsysdiff.compare.ranks.not_one_job`): when they
    are not, a UsageError says why, unless ``force`` (then ``notify`` is told)."""
    parts: list[tuple[str, Sequence[RankStats] | Fingerprint]] = []
    idents: list[tuple[str, JobIdentity]] = []
    for i, path in enumerate(paths):
        progress(f"rank {i + 1:,} of {len(paths):,}", "ranks")
        src = inputs.recognise(Path(path))
        if src.kind is inputs.Kind.NSYS_REPORT:
            with inputs.exported(src.path, keep_export, notify) as exported, open_trace(exported) as r:
                parts.append((src.path.name, trace_ranks.read(r)))
                idents.append((src.path.name, trace_ranks.identity(r)))
        elif src.kind is inputs.Kind.SQLITE:
            with open_trace(src.path) as r:
                parts.append((src.path.name, trace_ranks.read(r)))
                idents.append((src.path.name, trace_ranks.identity(r)))
        else:
            fp = fingerprint_from_json(inputs.saved_text(src), str(src.path))
            parts.append((src.path.name, fp))
            idents.append((src.path.name, JobIdentity(None, tuple(sorted({g.name for g in fp.meta.gpus})), ())))
    reasons = ranks.not_one_job(idents)
    if reasons and not force:
        raise UsageError(
            "these traces do not look like the ranks of one job: "
            + "; ".join(reasons)
            + "; give --ranks to show them side by side anyway"
        )
    if reasons:
        notify("shown as ranks of one job (--ranks), although: " + "; ".join(reasons))
    return ranks.job(parts)


if TYPE_CHECKING:  # the history store loads only where history is used
    from nsysdiff.history.changes import Changes
    from nsysdiff.history.dashboard import Dashboard
    from nsysdiff.history.store import Entry, Store
    from nsysdiff.history.trend import Trend


def open_history(store: str | Path) -> Store:
    """A history store (a path or an ``sqlite:///`` URL), read-only and schema-checked."""
    from nsysdiff.history import store as st

    return st.open_store(store)


def history_add(
    store: str | Path,
    paths: Sequence[str | Path],
    *,
    ref: str,
    commit: str,
    failed: bool = False,
    options: ScopeOptions | None = None,
    progress: Step = silent,
    notify: Callable[[str], None] = _quiet,
) -> tuple[Entry, ...]:
    """Append each run of ``paths`` (traces, reports, fingerprints, run sets) to ``store``
    as the next runs of ``commit`` on ``ref``, creating the store on its first run."""
    from nsysdiff.history import store as st

    runs = load_runs(paths, options, progress=progress, notify=notify)
    with st.create_or_open(store) as s:
        return tuple(s.add(fp, ref=ref, commit=commit, failed=failed) for fp in runs.runs)


def history_baseline(spec: str, like: Fingerprint | None) -> runset.RunSet:
    """The base side ``history:STORE@REF~N`` names: the last N runs of REF comparable with
    ``like`` (the candidate), never a failed one unless the spec ends in ``+failed``."""
    from nsysdiff.errors import InconclusiveError
    from nsysdiff.history import baseline
    from nsysdiff.history import store as st

    parsed = baseline.parse(spec)
    path = st.store_path(parsed.store)
    if not path.exists():
        raise InconclusiveError(
            f"{path}: no history store yet, so no baseline (the first 'nsysdiff history add' creates it)"
        )
    with open_history(parsed.store) as s:
        return baseline.pick(s, parsed, like)


def history_store_path(spec: str) -> Path:
    """The store file a ``history:STORE@REF~N`` spec names."""
    from nsysdiff.history import baseline
    from nsysdiff.history import store as st

    return st.store_path(baseline.parse(spec).store)


def history_changes(store: str | Path, ref: str, *, max_pvalue: float, window: int, last: int | None) -> Changes:
    """Every step and drift on ``ref`` (:mod:`nsysdiff.history.changes`)."""
    from nsysdiff.history import changes

    with open_history(store) as s:
        return changes.scan(s, ref, max_pvalue=max_pvalue, window=window, last=last)


def history_dashboard(
    store: str | Path, ref: str, *, top: int, max_pvalue: float, window: int, last: int | None
) -> Dashboard:
    """``ref``'s change points and the series worth a page (:mod:`nsysdiff.history.dashboard`)."""
    from nsysdiff.history import dashboard

    with open_history(store) as s:
        return dashboard.build(s, ref, top=top, max_pvalue=max_pvalue, window=window, last=last)


def history_trend(store: str | Path, ref: str, key: str, kind: str | None = None) -> Trend:
    """``key``'s series on ``ref``, one point per commit."""
    from nsysdiff.history import trend

    with open_history(store) as s:
        return trend.trend(s, ref, key, kind)


# --- DataFrame views (pandas, imported only here: docs/frames.md) ----------------------


def compare(
    base: Fingerprint | runset.RunSet, candidate: Fingerprint | runset.RunSet, settings: Settings | None = None
) -> Diff:
    """The diff of two fingerprints, or of two run sets (several runs per side), as
    ``nsysdiff diff`` computes it before the rules judge it."""
    from nsysdiff.compare import rundiff

    def runs(side: Fingerprint | runset.RunSet, name: str) -> runset.RunSet:
        return side if isinstance(side, runset.RunSet) else runset.RunSet((side,), (name,))

    return rundiff.compare_sides(runs(base, "base"), runs(candidate, "candidate"), settings or Settings())


def check(diff: Diff, rules: Sequence[str] = ("default",), *, strict: bool = False) -> Report:
    """A diff judged by rule packs or rule files (as ``nsysdiff diff --rules``), today's waivers applied."""
    from datetime import date

    from nsysdiff import rules as rule_engine

    ruleset = rule_engine.load_rules(list(rules))
    findings, results = rule_engine.evaluate(diff, ruleset, today=date.today())
    reasons, notes = comparability.assess(diff.base, diff.candidate)
    return judge(diff, findings, results, strict=strict, reasons=reasons, notes=notes, packs=tuple(rules))


def kernels_frame(fp: Fingerprint) -> pd.DataFrame:
    """One row per kernel: ``Name``, ``Demangled Name``, ``Total Time (ns)``, ``Instances``..."""
    from nsysdiff.frames import fingerprint as frames

    return frames.kernels(fp)


def families_frame(fp: Fingerprint) -> pd.DataFrame:
    """One row per kernel family, largest first."""
    from nsysdiff.frames import fingerprint as frames

    return frames.families(fp)


def categories_frame(fp: Fingerprint) -> pd.DataFrame:
    """One row per kernel category, largest first."""
    from nsysdiff.frames import fingerprint as frames

    return frames.categories(fp)


def copies_frame(fp: Fingerprint) -> pd.DataFrame:
    """One row per memcpy kind and memset, as ``nsys stats``' ``gpumemtimesum``."""
    from nsysdiff.frames import fingerprint as frames

    return frames.copies(fp)


def nvtx_frame(fp: Fingerprint) -> pd.DataFrame:
    """One row per NVTX range name and domain."""
    from nsysdiff.frames import fingerprint as frames

    return frames.nvtx(fp)


def sync_frame(fp: Fingerprint) -> pd.DataFrame:
    """One row per synchronising CUDA API call."""
    from nsysdiff.frames import fingerprint as frames

    return frames.sync(fp)


def steps_frame(fp: Fingerprint) -> pd.DataFrame:
    """One row per step (``--per NAME``): its period split into parts, its host calls per
    family. Empty when the fingerprint has no steps."""
    from nsysdiff.frames import steps as frames

    return frames.steps(fp.steps) if fp.steps is not None else frames.steps(frames.NO_STEPS)


def step_calls_frame(fp: Fingerprint) -> pd.DataFrame:
    """One row per host-call family across the steps: calls, bytes, time per call and tail."""
    from nsysdiff.frames import steps as frames

    return frames.call_times(fp.steps) if fp.steps is not None else frames.call_times(frames.NO_STEPS)


def diff_frame(diff: Diff, table: str = "kernels") -> pd.DataFrame:
    """One row per key of a diff table (kernels, families, categories, nvtx, sync, graphs)."""
    from nsysdiff.frames import diff as frames

    return frames.rows(diff, table)


def diff_copies_frame(diff: Diff) -> pd.DataFrame:
    """One row per memory operation kind of a diff."""
    from nsysdiff.frames import diff as frames

    return frames.copies(diff)


def attribution_frame(diff: Diff, by: str = "kernels") -> pd.DataFrame:
    """The change split into count, per-call, new and removed parts per kernel, family,
    category or phase."""
    from nsysdiff.frames import diff as frames

    return frames.attribution(diff, by)


def runs_frame(diff: Diff) -> pd.DataFrame:
    """Several runs per side: per key and measure, the ratio, its interval, p, q and verdict."""
    from nsysdiff.frames import runs as frames

    return frames.comparisons(diff)


def run_values_frame(diff: Diff) -> pd.DataFrame:
    """Several runs per side: every run's value, one row per key, measure, side and run."""
    from nsysdiff.frames import runs as frames

    return frames.values(diff)


def findings_frame(report: Report) -> pd.DataFrame:
    """One row per finding of a judged diff: level, rule, subject, observed and limit values."""
    from nsysdiff.frames import diff as frames

    return frames.findings(report)


def history_frame(
    store: str | Path, ref: str, key: str, kind: str | None = None, *, changes: bool = True
) -> pd.DataFrame:
    """``key``'s series on ``ref`` of a history store, one row per commit, with the change
    points of a scan of ``ref`` (``changes=False`` skips the scan, which needs
    ``nsysdiff[history]``)."""
    from nsysdiff.frames import history as frames
    from nsysdiff.history.changes import DEFAULT_MAX_PVALUE, DEFAULT_WINDOW

    scan = None
    if changes:
        scan = history_changes(store, ref, max_pvalue=DEFAULT_MAX_PVALUE, window=DEFAULT_WINDOW, last=None)
    return frames.series(history_trend(store, ref, key, kind), scan)


def history_changes_frame(store: str | Path, ref: str) -> pd.DataFrame:
    """Every step and drift on ``ref`` of a history store, one row each."""
    from nsysdiff.frames import history as frames
    from nsysdiff.history.changes import DEFAULT_MAX_PVALUE, DEFAULT_WINDOW

    return frames.changes(history_changes(store, ref, max_pvalue=DEFAULT_MAX_PVALUE, window=DEFAULT_WINDOW, last=None))
