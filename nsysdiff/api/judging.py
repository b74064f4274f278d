"""The low-level steps of the diff pipeline: two fingerprints compared, a diff judged."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date
from pathlib import Path

from nsysdiff.compare import comparability, geometry, notices, runstats
from nsysdiff.compare.diff import Diff, Settings
from nsysdiff.errors import ExitCode
from nsysdiff.fingerprint import runset
from nsysdiff.fingerprint.model import Fingerprint
from nsysdiff.rules.config import pack_names
from nsysdiff.rules.report import (
    NO_RULES,
    Finding,
    Level,
    Outcome,
    Report,
    RuleResult,
    remark_notes,
    undecided_reason,
)


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


# Rule kinds that judge kernel time: with another launch geometry their findings measure
# the workload, so they decide nothing. Any other kind (structure, danger zones, invariance)
# still fails the build.
_TIME_KINDS = frozenset({"budget", "outlier", "tail", "step"})


def _geometry_reason(
    diff: Diff, provisional: Report, rules: Sequence[RuleResult], packs: Sequence[str]
) -> tuple[str, ...]:
    """The reason a changed launch geometry makes the shipped packs' verdict inconclusive,
    unless one of their rules that does not judge kernel time fails. A rule file of the
    user's own says what a workload change means to it: it judges as written."""
    g = geometry.changed(diff.base, diff.candidate)
    if g is None or not packs or not set(packs) <= set(pack_names()):
        return ()
    kind = {r.rule_id: r.kind for r in rules}
    if any(kind.get(f.rule_id) not in _TIME_KINDS for f in provisional.failed):
        return ()
    return (geometry.reason(g),)


def _premise_reason(diff: Diff, rules: Sequence[RuleResult]) -> str | None:
    """The invariance rules compare one build at two batch sizes: when the kernel sets
    mostly differ (another compiler, backend or version), each kernel on one side only
    would be a finding of its own, so the broken premise is said once instead."""
    if not any(r.kind == "invariance" for r in rules):
        return None
    overlap = comparability.kernel_overlap(diff.base, diff.candidate)
    if overlap is None or overlap >= comparability.LOW_OVERLAP:
        return None
    return (
        f"the batch-invariance rules assume one build at two batch sizes, but only {overlap:.0%} of the "
        "kernel names are shared (Jaccard): another build (a compiler, backend or version change), so "
        "their findings are not judged (see --details); compare two batch sizes of one build"
    )


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
    notes = (*notes, *remark_notes(rules))
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
    premise = _premise_reason(diff, rules)
    if premise is not None:
        # The low overlap is the premise's reason: not a note besides it.
        reasons = (*reasons, premise)
        notes = tuple(n for n in notes if not n.startswith(comparability.LOW_OVERLAP_NOTE))
    else:
        reasons = (*reasons, *_geometry_reason(diff, provisional, rules, packs))
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


def check_type(value: object, kind: type | tuple[type, ...], name: str, wanted: str) -> None:
    if not isinstance(value, kind):
        raise TypeError(f"{name}: pass {wanted}, not {type(value).__name__}")


def rule_names(rules: str | Path | Sequence[str | Path]) -> list[str]:
    """Pack names and rule files as ``load_rules`` takes them; one name is one pack."""
    if isinstance(rules, str | Path):
        return [str(rules)]
    if not isinstance(rules, Sequence) or not all(isinstance(r, str | Path) for r in rules):
        raise TypeError(f"rules: pass a pack name, a rule file's path, or a list of them, not {type(rules).__name__}")
    return [str(r) for r in rules]


def compare(
    base: Fingerprint | runset.RunSet, candidate: Fingerprint | runset.RunSet, settings: Settings | None = None
) -> Diff:
    """The diff of two fingerprints, or of two run sets (several runs per side), as
    ``nsysdiff diff`` computes it before the rules judge it."""
    from nsysdiff.compare import rundiff

    def runs(side: Fingerprint | runset.RunSet, name: str) -> runset.RunSet:
        check_type(
            side,
            (Fingerprint, runset.RunSet),
            name,
            "a Fingerprint (nsysdiff.api.load) or a RunSet (nsysdiff.api.load_runs); for paths, nsysdiff.api.diff",
        )
        return side if isinstance(side, runset.RunSet) else runset.RunSet((side,), (name,))

    check_type(settings or Settings(), Settings, "settings", "an nsysdiff.compare.diff.Settings")
    # As its first screen frames it: fixed windows by rates, a tiny trace without outliers.
    d = rundiff.compare_sides(runs(base, "base"), runs(candidate, "candidate"), settings or Settings())
    return notices.framed(d)


def check(diff: Diff, rules: str | Path | Sequence[str | Path] = ("default",), *, strict: bool = False) -> Report:
    """A diff judged by rule packs or rule files, today's waivers applied: the low-level
    step under :func:`diff`. It judges the diff it is given: a pack's step range, its noise
    profile and its fallbacks need the sides' files, so for the verdict ``nsysdiff diff``
    gives, call :func:`diff`."""
    from nsysdiff import rules as rule_engine

    check_type(diff, Diff, "diff", "a Diff (nsysdiff.api.compare)")
    names = rule_names(rules)
    ruleset = rule_engine.load_rules(names)
    findings, results = rule_engine.evaluate(diff, ruleset, today=date.today())
    reasons, notes = comparability.assess(diff.base, diff.candidate)
    return judge(diff, findings, results, strict=strict, reasons=reasons, notes=notes, packs=ruleset.sources)
