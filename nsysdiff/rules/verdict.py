"""The verdict: what is being compared, decided once from the evidence; the rules that kind
of comparison lets judge; the outcome and exit code.

``run`` is the one judgement the command, ``api.diff`` and ``api.check`` share: the kind
of comparison (nsysdiff.rules.comparison) is decided before any rule judges, the diff is
framed as that kind reads it, every rule runs, and a rule whose measure the kind does not
judge decides nothing: its findings leave the report and its result says why, with what
it would have said. A comparison that concludes nothing (different programs, sides that
can't be compared) lists no failed rule and no outlier.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from datetime import date

from nsysdiff.compare import comparability
from nsysdiff.compare.diff import Diff
from nsysdiff.errors import ExitCode
from nsysdiff.rules import comparison as cmp
from nsysdiff.rules import engine, outlier
from nsysdiff.rules.kinds import KINDS
from nsysdiff.rules.model import Rule, RuleSet
from nsysdiff.rules.report import (
    NO_RULES,
    NOT_JUDGED,
    Finding,
    Level,
    Outcome,
    Report,
    RuleResult,
    remark_notes,
    undecided_reason,
)


@dataclasses.dataclass(frozen=True, slots=True)
class Judged:
    """A report and every finding the rules made, those the comparison set aside
    included (the waivers are matched against all of them)."""

    report: Report
    findings: tuple[Finding, ...]


def run(
    diff: Diff,
    ruleset: RuleSet | None,
    *,
    today: date,
    reasons: Sequence[str] = (),
    notes: Sequence[str] = (),
    strict: bool = False,
) -> Judged:
    """``diff`` judged by ``ruleset`` (None: reported without a verdict, ``--no-rules``).
    ``reasons`` are why the sides can't be compared (comparability.assess and a step range
    on one side only); ``notes`` are reported beside the verdict."""
    premise = _premise_reason(diff, ruleset.rules if ruleset else ())
    reasons = (*reasons, *([premise] if premise else []))
    c = cmp.decide(diff, reasons)
    framed = cmp.frame(diff, c)
    if ruleset is None:
        return Judged(judge(framed, c, (), (), judged=False, reasons=reasons, notes=notes, strict=strict), ())
    found, results = engine.evaluate(framed, ruleset, today=today)
    framed = _judged_outliers(framed, ruleset.rules)
    kept, results = _gate(c, ruleset.rules, found, results)
    if premise is not None:
        # The low overlap is the premise's reason: not a note besides it.
        notes = tuple(n for n in notes if not n.startswith(comparability.LOW_OVERLAP_NOTE))
    report = judge(framed, c, kept, results, reasons=reasons, notes=notes, strict=strict, packs=ruleset.sources)
    return Judged(report, found)


def _judged_outliers(diff: Diff, rules: Sequence[Rule]) -> Diff:
    """The diff's outliers that an outlier rule of the rule set would judge (its floor and
    evidence, its thresholds): a row the rules would not judge is no outlier of this
    report. Rules without an outlier rule leave the diff's own statistic."""
    gates = [outlier.judges(diff, r) for r in rules if r.kind == "outlier"]
    if not gates:
        return diff
    return cmp.unscored(diff, lambda r: not any(g(r) for g in gates), unflag_only=True)


def _measure(rule: Rule) -> cmp.Measure:
    return KINDS[rule.kind].measure(rule.options)


def _gate(
    c: cmp.Comparison, rules: Sequence[Rule], found: Sequence[Finding], results: Sequence[RuleResult]
) -> tuple[tuple[Finding, ...], tuple[RuleResult, ...]]:
    """The findings of the rules the comparison judges; the others' results marked not
    judged, with the kind's reason and what they would have failed."""
    by_id = {r.id: r for r in rules}
    idle = {r.id for r in rules if _measure(r) not in c.kind.judges}
    if not idle:
        return tuple(found), tuple(results)
    kept = tuple(f for f in found if f.rule_id not in idle)
    out = []
    for r in results:
        if r.rule_id not in idle:
            out.append(r)
            continue
        reason = c.not_judged(_measure(by_id[r.rule_id]))
        failing = [
            f for f in found if f.rule_id == r.rule_id and not f.waived and not f.summary and f.level is Level.ERROR
        ]
        if failing:
            more = f" (+{len(failing) - 1:,} more)" if len(failing) > 1 else ""
            reason += f"; it would have failed: {failing[0].subject} {failing[0].observed}{more}"
        out.append(dataclasses.replace(r, findings=0, remark=NOT_JUDGED, remark_reason=reason))
    return kept, tuple(out)


def _premise_reason(diff: Diff, rules: Sequence[Rule]) -> str | None:
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
    c: cmp.Comparison,
    findings: Sequence[Finding],
    rules: Sequence[RuleResult],
    *,
    strict: bool = False,
    judged: bool = True,
    reasons: Sequence[str] = (),
    notes: Sequence[str] = (),
    packs: Sequence[str] = (),
) -> Report:
    """The outcome and exit code of a diff, its comparison and the findings it allowed.

    A comparison that concludes nothing is inconclusive whatever the rules found. Without a
    meaningful overall scale the findings judged against it decide nothing, so the outcome
    is inconclusive when an outlier rule ran, unless a finding that needs no scale (a
    budget, a structure check) already fails.
    """
    reasons = tuple(reasons)
    if not c.kind.conclusive:
        reasons = (*reasons, *_kind_reasons(c, reasons))
    no_scale = comparability.scale_reason(diff) if judged and c.kind.conclusive else None
    if judged and not rules:
        # Rule files that hold no rule (only `version: 1`) judge nothing; a pass would
        # read in CI as "no regression" with any outlier on screen.
        reasons = (*reasons, f"{NO_RULES} ({', '.join(packs) or 'no rule file'}): nothing was judged")
    notes = (*notes, *remark_notes(rules))
    order = {Level.ERROR: 0, Level.WARNING: 1, Level.INFO: 2}
    ordered = tuple(sorted(findings, key=lambda f: (f.waived, order[f.level], f.rule_id, f.subject)))
    provisional = Report(diff, ordered, tuple(rules), Outcome.PASS, ExitCode.PASS, strict=strict, comparison=c)
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
        # An inconclusive report lists no failed rule: what would have failed is said as
        # not judged, with the reason.
        ordered, rules = _unjudged(ordered, rules)
        notes = (*(n for n in notes if not n.startswith("not judged")), *remark_notes(rules))
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
        reasons=reasons,
        notes=tuple(notes),
        strict=strict,
        packs=tuple(packs),
        comparison=c,
    )


def _kind_reasons(c: cmp.Comparison, given: Sequence[str]) -> tuple[str, ...]:
    """Why a comparison that concludes nothing does, unless the reasons given say it."""
    if c.kind is cmp.Kind.DIFFERENT_PROGRAMS:
        return (
            f"different programs ({c.why}): no rule judges across them; compare two builds of one program, "
            "or two sizes of one workload",
        )
    return () if given else (c.why,)


def _unjudged(
    findings: tuple[Finding, ...], rules: Sequence[RuleResult]
) -> tuple[tuple[Finding, ...], tuple[RuleResult, ...]]:
    """Findings that would decide a verdict, turned into their rules' "not judged"
    remarks: informational findings (improvements, facts) stay."""
    deciding = {Level.ERROR, Level.WARNING}
    failing = {f.rule_id for f in findings if f.level in deciding and not f.waived and not f.summary}
    out = []
    for r in rules:
        if r.rule_id in failing:
            first = next(f for f in findings if f.rule_id == r.rule_id and f.level in deciding)
            reason = f"the sides can't be compared; it would have said: {first.subject} {first.observed}".rstrip()
            out.append(dataclasses.replace(r, findings=0, remark=NOT_JUDGED, remark_reason=reason))
        else:
            out.append(r)
    kept = tuple(f for f in findings if f.rule_id not in failing)
    return kept, tuple(out)
