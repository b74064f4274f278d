"""Diff + RuleSet -> findings: run every rule, then apply the waivers."""

from __future__ import annotations

from dataclasses import replace
from datetime import date

from nsysdiff.compare.diff import Diff
from nsysdiff.rules import invariance, waivers
from nsysdiff.rules.kinds import KINDS
from nsysdiff.rules.model import RuleSet
from nsysdiff.rules.report import Finding, RuleResult


def evaluate(
    diff: Diff, ruleset: RuleSet, *, today: date
) -> tuple[tuple[Finding, ...], tuple[RuleResult, ...]]:
    """Every rule's findings (waived ones marked) and one result per rule run.

    ``today`` decides which waivers have expired; it is a parameter so that a report is
    a pure function of its inputs.
    """
    findings: list[Finding] = []
    results: list[RuleResult] = []
    for rule in ruleset.rules:
        kind = KINDS[rule.kind]
        found = waivers.apply(list(kind.check(diff, rule)), ruleset.waivers, today)
        findings.extend(found)
        results.append(
            RuleResult(
                rule_id=rule.id,
                kind=rule.kind,
                level=rule.level,
                description=rule.description or kind.summary,
                findings=sum(1 for f in found if not f.waived),
            )
        )
    if any(f.covers for f in findings):
        # A diagnosis explains other rules' findings: fold them in, recount per rule.
        findings = invariance.fold(diff, findings)
        active: dict[str, int] = {}
        for f in findings:
            if not f.waived:
                active[f.rule_id] = active.get(f.rule_id, 0) + 1
        results = [replace(r, findings=active.get(r.rule_id, 0)) for r in results]
    findings.extend(waivers.expired(ruleset.waivers, today))
    return tuple(findings), tuple(results)
