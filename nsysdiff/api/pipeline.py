"""The diff pipeline: two sides read per the rule packs, compared and judged, as ``nsysdiff diff`` judges them."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from datetime import date
from pathlib import Path

from nsysdiff.api.history import history_baseline
from nsysdiff.api.judging import check_type, rule_names
from nsysdiff.api.reading import load_noise_profile, load_runs, quiet
from nsysdiff.compare import comparability
from nsysdiff.compare.diff import Settings
from nsysdiff.compare.steps import ONE_SIDED
from nsysdiff.errors import UsageError
from nsysdiff.fingerprint import runset, scope
from nsysdiff.fingerprint.model import Fingerprint
from nsysdiff.fingerprint.scope import ScopeOptions
from nsysdiff.rules.model import RuleSet
from nsysdiff.rules.report import Report
from nsysdiff.trace.launches import Grouping
from nsysdiff.trace.progress import Step, silent


@dataclasses.dataclass(frozen=True)
class DiffOptions:
    """How :func:`diff` reads, compares and judges two sides: every option of
    ``nsysdiff diff`` that is not about where its report goes."""

    settings: Settings = dataclasses.field(default_factory=Settings)
    # The user's scope (window, NVTX range, --per, skip); the rule packs' phases and step
    # range complete it, as docs/steps.md says.
    scope: ScopeOptions = dataclasses.field(default_factory=ScopeOptions)
    phases: Path | None = None  # a phases file, over the rule files' own phases
    by: Grouping = Grouping.name
    strict: bool = False
    require_same_gpu: bool = False
    noise_profile: Path | None = None  # overrides the rule files' noise_profile:
    keep_export: Path | None = None
    # Runs of one side whose exact counts disagree are compared anyway (their median run).
    mixed_runs: bool = False


# One side of a diff: a path (a trace, a report, a saved fingerprint or run set, or for the
# base a ``history:STORE@REF~N`` spec), several runs' paths, or what was already loaded.
Side = str | Path | Sequence[str | Path] | Fingerprint | runset.RunSet


def diff(
    base: Side,
    candidate: Side,
    rules: str | Path | Sequence[str | Path] | None = ("default",),
    options: DiffOptions | None = None,
    *,
    progress: Step = silent,
    notify: Callable[[str], None] = quiet,
    warn: Callable[[str], None] | None = None,
    today: date | None = None,
) -> Report:
    """Two sides read, compared and judged: the report ``nsysdiff diff`` prints and whose
    exit code it exits with, from the same steps in the same order.

    ``rules`` are pack names or rule files (one name alone is one pack); ``None`` reports
    without judging (``--no-rules``). Rule files are validated before any trace is read.
    A pack's step range reads both sides per step where both have it, else both whole
    (docs/steps.md). With several runs a side's figures are its median run's. ``warn``
    hears what ``nsysdiff diff`` prints as warnings (a rule set with no rule, a waiver that
    matches nothing); by default they are Python warnings. ``notify`` hears notes (an nsys
    report exported); ``progress`` hears each table before it is read.
    """
    from nsysdiff import rules as rule_engine
    from nsysdiff.compare import rundiff
    from nsysdiff.rules import verdict, waivers

    o = options or DiffOptions()
    check_type(o, DiffOptions, "options", "an nsysdiff.api.DiffOptions")
    say = warn or _warning
    ruleset = None if rules is None else rule_engine.load_rules(rule_names(rules))
    if ruleset is not None:
        ruleset = _with_noise(ruleset, o.noise_profile)
        if not ruleset.rules:
            say(
                f"{', '.join(ruleset.sources)}: no rule to judge with: the verdict is inconclusive (exit 3), "
                "not a pass; give a pack or a file with rules, or --no-rules to report only"
            )
    elif o.noise_profile is not None:
        raise UsageError("--noise-profile judges rules; --no-rules judges none: give one of them")
    history = history_spec(base)
    read_opts = _scope_for(o, ruleset)
    b_runs, c_runs, one_sided = _read_sides(base, candidate, history, read_opts, o, progress, notify)
    if history is None:
        runset.check_apart(b_runs, c_runs)
    b, c = b_runs.runs[rundiff.median_run(b_runs)], c_runs.runs[rundiff.median_run(c_runs)]
    reasons, notes = comparability.assess(b, c, require_same_gpu=o.require_same_gpu)
    if one_sided is not None and b.scope.per == scope.AUTO and c.scope.per == scope.AUTO:
        # Judged on one step definition for both sides: said, and valid.
        notes = (f"{one_sided[0]}: both sides are judged per step found without a marker", *notes)
    elif one_sided is not None:
        reasons = ("; ".join(one_sided), *reasons)
    d = rundiff.compare_sides(b_runs, c_runs, o.settings)
    day = today or date.today()
    judged = verdict.run(d, ruleset, today=day, reasons=reasons, notes=notes, strict=o.strict)
    if ruleset is not None:
        for w in waivers.unmatched(judged.findings, ruleset.waivers, day):
            say(f"{w.source}:{w.line}: waiver for rule {w.rule!r} matches no finding ({w.subject_text})")
    return judged.report


def _warning(message: str) -> None:
    import warnings

    warnings.warn(message, stacklevel=3)


def _with_noise(ruleset: RuleSet, profile: Path | None) -> RuleSet:
    """The rule set judging against ``profile`` (else its files' own), checked before any trace is read."""
    from nsysdiff.rules import noise_limits

    if profile is not None:
        ruleset = noise_limits.attach(ruleset, load_noise_profile(profile))
    noise_limits.require(ruleset)
    return ruleset


def _scope_for(o: DiffOptions, ruleset: RuleSet | None) -> ScopeOptions:
    """The user's scope completed by the rule files: their phases unless a phases file is
    given, and their step range unless their noise profile was made without steps (its
    runs would not be read alike with sides read per step, docs/steps.md)."""
    phases = o.scope.phases
    if o.phases is not None or not phases:
        phases = scope.options(
            phases_file=o.phases,
            phases=ruleset.phases if ruleset else None,
            phases_source=", ".join(ruleset.sources) if ruleset else "rules",
        ).phases
    steps: tuple[str, ...] = ()
    if ruleset is not None and ruleset.steps:
        made_whole = ruleset.noise is not None and any(fp.scope.per is None for fp in ruleset.noise.runs.runs)
        steps = () if made_whole else tuple(ruleset.steps)
    return dataclasses.replace(o.scope, phases=phases, step_ranges=steps)


def history_spec(base: Side) -> str | None:
    """The ``history:STORE@REF~N`` spec a base side names (docs/history.md), if it is one;
    a UsageError when other runs come with it."""
    paths = _paths(base, "base")
    specs = [str(p) for p in paths or () if str(p).startswith("history:")]
    if not specs:
        return None
    if paths is not None and len(paths) > 1:
        raise UsageError(f"{specs[0]}: a history baseline is the whole base side; give no other base run with it")
    return specs[0]


def _paths(side: Side, name: str) -> list[str | Path] | None:
    """The paths of a side given as paths; None for a side already loaded."""
    if isinstance(side, Fingerprint | runset.RunSet):
        return None
    if isinstance(side, str | Path):
        return [side]
    if isinstance(side, Sequence) and side and all(isinstance(p, str | Path) for p in side):
        return list(side)
    raise TypeError(
        f"{name}: pass a path, a list of run paths, a Fingerprint (nsysdiff.api.load) or a RunSet "
        f"(nsysdiff.api.load_runs), not {type(side).__name__}"
    )


def _read_sides(
    base: Side,
    candidate: Side,
    history: str | None,
    opts: ScopeOptions,
    o: DiffOptions,
    progress: Step,
    notify: Callable[[str], None],
) -> tuple[runset.RunSet, runset.RunSet, tuple[str, str] | None]:
    """Both sides per ``opts``. When the rule files' step range is not on both sides, both
    are read again per steps found without a marker (never a marker's steps against auto
    steps), and whole when those are not found either or a history run was not read per
    the range: the fallbacks of docs/steps.md. The third item is why the comparison is not
    valid when only one side has the range and no auto steps stand in on both: a renamed
    step range must never pass silently, its step rules having judged nothing."""
    from nsysdiff.errors import InconclusiveError
    from nsysdiff.trace import sides
    from nsysdiff.trace.autosteps import NoStepsError

    def side(given: Side, name: str, s: ScopeOptions) -> runset.RunSet:
        paths = _paths(given, name)
        if paths is None:
            return given if isinstance(given, runset.RunSet) else runset.RunSet((given,), (name,))  # type: ignore[arg-type]
        return load_runs(
            paths,
            s,
            progress=progress,
            side=name,
            by=o.by,
            keep_export=o.keep_export,
            notify=notify,
            mixed=o.mixed_runs,
        )

    def read(s: ScopeOptions) -> tuple[runset.RunSet, runset.RunSet]:
        if history is not None:
            # The candidate first: its GPU, scope and graph mode pick the comparable history.
            c = sides.read_one(lambda: side(candidate, "candidate", s))
            return history_baseline(history, c.runs[0]), c
        return sides.read_both(lambda: side(base, "base", s), lambda: side(candidate, "candidate", s))

    whole = dataclasses.replace(opts, step_ranges=(), auto_fallback=False)
    if history is None and opts.per is None and opts.step_ranges:
        # A trace without the range tries steps found without a marker while it is open.
        opts = dataclasses.replace(opts, auto_fallback=True)

    def again_whole(b_runs: runset.RunSet, c_runs: runset.RunSet) -> tuple[runset.RunSet, runset.RunSet]:
        if history is not None:
            return read(whole)
        # A side that none of its runs read per step was read whole already: the same read
        # again would cost as much (a trace of many ranges, grouped twice).
        return _reread(side, (base, candidate), (b_runs, c_runs), whole, None)

    def again_auto(b_runs: runset.RunSet, c_runs: runset.RunSet) -> tuple[runset.RunSet, runset.RunSet]:
        # A side that found its steps without a marker while it was open has them.
        auto = dataclasses.replace(opts, per=scope.AUTO, step_ranges=(), auto_fallback=False)
        return _reread(side, (base, candidate), (b_runs, c_runs), auto, scope.AUTO)

    try:
        b_runs, c_runs = read(opts)
    except InconclusiveError:
        if history is None or opts.per is not None or not opts.step_ranges:
            raise
        b_runs, c_runs = read(whole)
    except NoStepsError as e:
        raise InconclusiveError(str(e)) from None  # --per auto found no steps on a side: exit 3
    runs = [*b_runs.runs, *c_runs.runs]
    one_sided = None
    if opts.per is None and opts.step_ranges and not (scope.same_steps(runs) and runs[0].scope.per):
        if opts.auto_fallback and all(fp.scope.per is None for fp in runs):
            # Every trace looked for steps without a marker and found none (a saved
            # fingerprint can't be re-scoped): both sides are whole, as the fallback says.
            return b_runs, c_runs, None
        # The range on one side only: invalid, unless auto steps stand in on both sides
        # (one step definition for both, said on the first line).
        one_sided = _one_sided(b_runs, c_runs)
        b_runs, c_runs = _auto_or_whole(
            lambda: again_auto(b_runs, c_runs), lambda: again_whole(b_runs, c_runs), history
        )
    return b_runs, c_runs, one_sided


def _reread(
    side: Callable[[Side, str, ScopeOptions], runset.RunSet],
    given: tuple[Side, Side],
    runs: tuple[runset.RunSet, runset.RunSet],
    opts: ScopeOptions,
    have: str | None,
) -> tuple[runset.RunSet, runset.RunSet]:
    """Both sides again per ``opts``, but a side whose runs were all read per ``have``
    already (None: whole) is kept as it is."""
    from nsysdiff.trace import sides

    def again(i: int, name: str) -> Callable[[], runset.RunSet]:
        if all(fp.scope.per == have for fp in runs[i].runs):
            return lambda: runs[i]
        return lambda: side(given[i], name, opts)

    return sides.read_both(again(0, "base"), again(1, "candidate"))


def _auto_or_whole(
    read_auto: Callable[[], tuple[runset.RunSet, runset.RunSet]],
    read_whole: Callable[[], tuple[runset.RunSet, runset.RunSet]],
    history: str | None,
) -> tuple[runset.RunSet, runset.RunSet]:
    """Both sides per steps found without a marker; whole when a side has none (the step
    rules then say they compared whole values) or is already read (a saved fingerprint)."""
    from nsysdiff.errors import InconclusiveError
    from nsysdiff.trace.autosteps import NoStepsError

    if history is None:
        try:
            return read_auto()
        except (NoStepsError, InconclusiveError, UsageError):
            pass
    return read_whole()


def _ranges(runs: runset.RunSet) -> set[str | None]:
    """The step ranges a side's runs were read per: None for a run read whole, and for one
    read per steps found without a marker (it lacks the range as one read whole does)."""
    return {None if fp.scope.per == scope.AUTO else fp.scope.per for fp in runs.runs}


def _one_sided(b_runs: runset.RunSet, c_runs: runset.RunSet) -> tuple[str, str] | None:
    """Why sides with the step range on one side only can't be compared per step, and what
    to do about it; None when neither side has it (both are read whole, as the fallback
    says) or the sides differ otherwise (a history run or a profile read without steps)."""
    b, c = _ranges(b_runs), _ranges(c_runs)
    if b == c:
        return None  # the same range on both sides (it is compared per it), or neither
    if b == {None} or c == {None}:
        has, lacks = ("base", "candidate") if c == {None} else ("candidate", "base")
        name = next(p for p in b | c if p is not None)
        pattern = scope.parse_pattern(name, "--per")
        lacking = c_runs if c == {None} else b_runs
        if any(pattern.matches(r.name, r.domain) for fp in lacking.runs for r in fp.nvtx):
            # The ranges are there, but the side was saved without them as steps.
            return (
                f"{ONE_SIDED}: the {lacks} has {name} ranges but was saved without steps (a fingerprint "
                "made without --per)",
                f"fingerprint it again with --per {name}, or give its trace",
            )
        return (
            f"{ONE_SIDED}: the {has} has {name} ranges and the {lacks} has none (renamed or removed?)",
            "the step rules can't judge it. Name the candidate's step range with --per, or restore the range",
        )
    return None
