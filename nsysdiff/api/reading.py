"""Reading one side: a trace, a report, a saved fingerprint or run set, as a fingerprint or the runs of a side."""

from __future__ import annotations

import dataclasses
import shlex
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from nsysdiff.compare import ranks
from nsysdiff.errors import UsageError
from nsysdiff.fingerprint import read, runset, scope
from nsysdiff.fingerprint.model import Fingerprint, fingerprint_from_json
from nsysdiff.fingerprint.scope import ScopeOptions
from nsysdiff.trace import inputs
from nsysdiff.trace import ranks as trace_ranks
from nsysdiff.trace.launches import Grouping
from nsysdiff.trace.progress import Step, silent
from nsysdiff.trace.reader import TraceReader, open_trace
from nsysdiff.trace.records import JobIdentity, RankStats
from nsysdiff.trace.schema import check_stopped

if TYPE_CHECKING:  # the noise model and pandas load only where they are used
    from nsysdiff.fingerprint.noise import NoiseProfile


def fingerprint_trace(
    path: str | Path,
    options: ScopeOptions | None = None,
    *,
    progress: Step = silent,
    side: str = "",
    by: Grouping = Grouping.name,
    notify: Callable[[str], None] | None = None,
) -> Fingerprint:
    """Read an nsys SQLite export and reduce it to a fingerprint (of ``options``' scope).
    ``progress`` hears ``(side, table)`` before each table is read; ``by`` says what makes
    two launches the same kernel; ``notify`` hears why a rule pack's step range was not
    read as steps."""
    with open_trace(path) as r:
        looked = False
        if options is not None and options.step_ranges and by is Grouping.name:
            # A rule pack's step range: the trace's own --per, when it has the range.
            options = scope.find_steps(r, options, notify or quiet)
            looked = True
        if options is not None and options.active and by is not Grouping.name:
            raise UsageError("--by name+launch reads the whole trace: it can't be combined with a scope option")
        if options is not None and looked and options.per is None and options.auto_fallback:
            fp = _auto_steps(r, options, progress, side)
            if fp is not None:
                return fp
        if options is not None and options.active:
            progress(side, "scoping (kernels, NVTX ranges, launches)")
            return scope.fingerprint(r, options)
        return read.whole(r, shapes=by is Grouping.name_launch, grouped=looked, progress=progress, side=side)


def _auto_steps(r: TraceReader, options: ScopeOptions, progress: Step, side: str) -> Fingerprint | None:
    """The trace per steps found without a marker, or None when it has none (it is then
    read whole): the fallback for a trace without the rule pack's step range."""
    from nsysdiff.trace.autosteps import NoStepsError

    progress(side, "scoping (steps found without a marker)")
    try:
        return scope.fingerprint(r, dataclasses.replace(options, per=scope.AUTO, step_ranges=()))
    except (NoStepsError, UsageError):
        return None


def quiet(_: str) -> None:
    pass


def load(
    path: str | Path,
    options: ScopeOptions | None = None,
    *,
    progress: Step = silent,
    side: str = "",
    by: Grouping = Grouping.name,
    keep_export: Path | None = None,
    notify: Callable[[str], None] = quiet,
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
            return fingerprint_trace(exported, options, progress=progress, side=side, by=by, notify=notify)
    if src.kind is inputs.Kind.SQLITE:
        return fingerprint_trace(p, options, progress=progress, side=side, by=by, notify=notify)
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
    notify: Callable[[str], None] = quiet,
    mixed: bool = False,
) -> runset.RunSet:
    """The runs of one side from any mix of traces, reports, saved fingerprints and saved
    run sets (a run set contributes all its runs), checked alike with each other and, unless
    ``mixed``, checked to be repeats of one build (their exact counts agree).
    A side of one trace or one fingerprint reads exactly as :func:`load` reads it."""
    from nsysdiff.fingerprint import validation  # jsonschema loads only when a fingerprint is read

    if len(paths) > 1:
        # A capture given twice as a path (one file twice, a link, a copy) is refused
        # before any run is read: one file given 5,000 times took minutes to refuse. A
        # side stopped already stops first: the other side's error is the one to report.
        check_stopped(str(paths[0]))
        inputs.check_distinct_files([Path(p) for p in paths])
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
        # A capture given twice (its trace and its own fingerprint) is one run.
        runset.check_distinct(runs, sources)
        if not mixed:
            runset.check_repeats(runs, sources)
    return checked


def noise_profile(
    paths: Sequence[str | Path],
    options: ScopeOptions | None = None,
    *,
    progress: Step = silent,
    keep_export: Path | None = None,
    notify: Callable[[str], None] = quiet,
) -> NoiseProfile:
    """The noise profile of A/A runs of one build (any mix of inputs, as :func:`load_runs`)."""
    from nsysdiff.fingerprint import noise

    return noise.measure(load_runs(paths, options, progress=progress, keep_export=keep_export, notify=notify))


def load_noise_profile(path: str | Path) -> NoiseProfile:
    """A saved noise profile (``nsysdiff noise ... -o FILE``), validated like a fingerprint."""
    from nsysdiff.fingerprint import noise

    return noise.load(path)


def load_job(
    paths: Sequence[str | Path],
    *,
    progress: Step = silent,
    keep_export: Path | None = None,
    notify: Callable[[str], None] = quiet,
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
        names = [shlex.quote(str(p)) for p in paths]
        compare = f"to compare them: nsysdiff {names[0]} {names[1]}; " if len(names) == 2 else ""
        raise UsageError(
            "these traces do not look like the ranks of one job: "
            + "; ".join(reasons)
            + f"; {compare}to read each: nsysdiff summary {names[0]}; "
            "or give --ranks to show them side by side anyway"
        )
    if reasons:
        notify("shown as ranks of one job (--ranks), although: " + "; ".join(reasons))
    return ranks.job(parts)
