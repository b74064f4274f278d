"""Diff + RuleSet -> findings: run every rule, then apply the waivers."""

from __future__ import annotations

from dataclasses import replace
from datetime import date

from nsysdiff.compare.diff import Diff
from nsysdiff.rules import invariance, waivers
from nsysdiff.rules.kinds import KINDS
from nsysdiff.rules.model import RuleSet
from nsysdiff.rules.report import Finding, Level, RuleResult

# Findings of one rule listed in a report; the rest are counted (see _bounded).
MAX_FINDINGS_PER_RULE = 100


def evaluate(diff: Diff, ruleset: RuleSet, *, today: date) -> tuple[tuple[Finding, ...], tuple[RuleResult, ...]]:
    """Every rule's findings (waived ones marked) and one result per rule run.

    ``today`` decides which waivers have expired; it is a parameter so that a report is
    a pure function of its inputs.
    """
    findings: list[Finding] = []
    results: list[RuleResult] = []
    for rule in ruleset.rules:
        kind = KINDS[rule.kind]
        checked = list(kind.check(diff, rule))
        remarks = [f for f in checked if f.remark]
        found = waivers.apply([f for f in checked if not f.remark], ruleset.waivers, today)
        active = sum(1 for f in found if not f.waived)
        findings.extend(_bounded(found, rule.id, rule.kind))
        # A rule with findings judged something: its remark is moot.
        said = remarks[0] if remarks and not found else None
        results.append(
            RuleResult(
                rule_id=rule.id,
                kind=rule.kind,
                level=rule.level,
                description=rule.description or kind.summary,
                findings=active,
                remark=said.remark if said else "",
                remark_reason=said.message if said else "",
            )
        )
    if any(f.covers for f in findings):
        # A diagnosis explains other rules' findings: fold them in, recount per rule.
        findings = invariance.fold(diff, findings)
        counts: dict[str, int] = {}
        for f in findings:
            if not f.waived and not f.summary:
                counts[f.rule_id] = counts.get(f.rule_id, 0) + 1
        results = [replace(r, findings=counts.get(r.rule_id, 0)) for r in results]
    findings.extend(waivers.expired(ruleset.waivers, today))
    return tuple(findings), tuple(results)


def _bounded(found: list[Finding], rule_id: str, kind: str) -> list[Finding]:
    """At most :data:`MAX_FINDINGS_PER_RULE` findings of one rule, in the rule's order
    (largest changes first), and one line saying how many more there were: a rule with
    ``each: true`` over thousands of kernels must not make a report of millions of lines.
    The rule's result still counts every finding, and the verdict is the same: the
    findings kept are of the rule's own level."""
    active = [f for f in found if not f.waived]
    if len(active) <= MAX_FINDINGS_PER_RULE:
        return found
    # Waived findings stay (a waiver must still see the finding it matches; there are at
    # most as many as waivers); the active ones beyond the bound are counted.
    cut = {id(f) for f in active[MAX_FINDINGS_PER_RULE:]}
    kept = [f for f in found if id(f) not in cut]
    more = len(cut)
    note = Finding(
        level=Level.INFO,
        rule_id=rule_id,
        kind=kind,
        subject=f"{more:,} more finding{'s' if more != 1 else ''}",
        observed=f"{len(active):,} active findings in all",
        limit="",
        evidence=f"a report lists at most {MAX_FINDINGS_PER_RULE} findings per rule",
        message="narrow the rule's selection, or raise its limit, to see each of them",
        statistical=False,
        summary=True,
    )
    return [*kept, note]
