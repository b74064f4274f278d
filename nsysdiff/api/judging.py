"""The low-level steps of the diff pipeline: two fingerprints compared, a diff judged."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date
from pathlib import Path

from nsysdiff.compare import comparability, runstats
from nsysdiff.compare.diff import Diff, Settings
from nsysdiff.fingerprint import runset
from nsysdiff.fingerprint.model import Fingerprint
from nsysdiff.rules import comparison, verdict
from nsysdiff.rules.model import RuleSet
from nsysdiff.rules.report import Finding, Report, RuleResult


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
    """The outcome and exit code of a diff and findings already made: the kind of
    comparison decided from the diff's evidence (:func:`nsysdiff.rules.verdict.judge`)."""
    c = comparison.decide(diff, reasons)
    return verdict.judge(
        diff, c, findings, rules, strict=strict, judged=judged, reasons=reasons, notes=notes, packs=packs
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
    return rundiff.compare_sides(runs(base, "base"), runs(candidate, "candidate"), settings or Settings())


def check(diff: Diff, rules: str | Path | Sequence[str | Path] = ("default",), *, strict: bool = False) -> Report:
    """A diff judged by rule packs or rule files, today's waivers applied: the low-level
    step under :func:`diff`. It judges the diff it is given: a pack's step range, its noise
    profile and its fallbacks need the sides' files, so for the verdict ``nsysdiff diff``
    gives, call :func:`diff`."""
    from nsysdiff import rules as rule_engine

    check_type(diff, Diff, "diff", "a Diff (nsysdiff.api.compare)")
    names = rule_names(rules)
    ruleset = rule_engine.load_rules(names)
    reasons, notes = comparability.assess(diff.base, diff.candidate)
    reasons = (*reasons, *missing_reasons(diff, ruleset))
    return verdict.run(diff, ruleset, today=date.today(), reasons=reasons, notes=notes, strict=strict).report


def missing_reasons(diff: Diff, ruleset: RuleSet) -> tuple[str, ...]:
    """What a rule set needs that a diff made without the sides' files lacks: its steps,
    its phases, its noise profile's fit. ``nsysdiff diff`` reads the sides for them; a
    diff given to :func:`check` that lacks them can't be judged as the command judges it,
    so the verdict is inconclusive with the reason, never a pass the command would fail."""
    out = []
    if ruleset.steps and diff.steps is None:
        ranges = ", ".join(ruleset.steps)
        out.append(
            f"the rules judge per step ({ranges}) and this diff has no steps: give the sides' paths to "
            "nsysdiff.api.diff, or compare fingerprints read with --per"
        )
    lacking = sorted(ruleset.phases) if not diff.phases else []
    if lacking:
        out.append(
            f"the rules judge phases ({', '.join(lacking)}) this diff does not have: give the sides' paths to "
            "nsysdiff.api.diff"
        )
    return tuple(out)
