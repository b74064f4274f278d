"""What a run concludes: the diff, the findings of the rules, the verdict and exit code.

Every renderer takes a :class:`Report`; nothing downstream recomputes a verdict.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass

from nsysdiff.compare.diff import Diff
from nsysdiff.errors import ExitCode
from nsysdiff.rules.comparison import Comparison, Kind

# A report made without deciding (a hand-built one): one workload, every rule judged.
ONE_WORKLOAD = Comparison(Kind.ONE_WORKLOAD, "")

# The reason a diff judged by rules that hold none is inconclusive (never a pass).
NO_RULES = "the rules hold no rule"


class Level(str, enum.Enum):
    ERROR = "error"  # fails the build
    WARNING = "warning"  # reported; fails only with --strict
    INFO = "info"  # reported


class Outcome(str, enum.Enum):
    PASS = "pass"
    FAIL = "fail"
    INCONCLUSIVE = "inconclusive"
    UNJUDGED = "unjudged"  # --no-rules: a report without a verdict


@dataclass(frozen=True, slots=True)
class Finding:
    level: Level
    rule_id: str
    kind: str  # the rule kind: budget, outlier, danger-zone, structure, waiver
    subject: str  # what the finding is about: a kernel, family, category, copy kind...
    observed: str  # the measured value, with units
    limit: str  # the limit it broke, with units
    evidence: str  # the numbers behind it, one line
    message: str = ""  # the rule's message, or the kind's explanation
    waived: bool = False
    waiver_reason: str | None = None
    statistical: bool = True  # False for structure checks: facts, not statistics
    # A diagnosis (kind invariance): the kernels and families it explains. Other rules'
    # findings on them are folded into it (nsysdiff.rules.invariance.fold).
    covers: tuple[str, ...] = ()
    # The numbers behind ``observed`` and ``limit``, for machines (JSON): ``unit`` is
    # "ns", "calls", "ops", "bytes", "fraction" or "ratio"; None where a rule has none
    # (a kernel that is new has no ratio) or does not give them yet.
    observed_value: float | None = None
    limit_value: float | None = None
    unit: str = ""
    # The limit is within the measured noise of what it judges: neither a pass nor a
    # breach can be told (nsysdiff.rules.noise_limits). Decides an inconclusive outcome.
    inconclusive: bool = False
    # Judged against the overall scale (the outlier rule): without a meaningful scale such
    # a finding decides nothing, while a budget or a fact still does.
    scaled: bool = False
    # A line that stands for the findings of a rule beyond those listed (see
    # nsysdiff.rules.engine.MAX_FINDINGS_PER_RULE): counted nowhere, waived by nothing.
    summary: bool = False
    # A rule's word on itself, not a finding: NOT_JUDGED (it judged nothing: no steps,
    # nothing matched its selector, under its floor) or WITHIN_NOISE (what it judged moved
    # within its noise). The engine moves it onto the rule's result (RuleResult.remark).
    remark: str = ""


# RuleResult.remark: the rule judged nothing, or found its subject within the noise.
NOT_JUDGED = "not judged"
WITHIN_NOISE = "within noise"


def remark(rule_id: str, kind: str, what: str, reason: str) -> Finding:
    """A rule's remark on itself (``what`` is NOT_JUDGED or WITHIN_NOISE), with the reason."""
    return Finding(Level.INFO, rule_id, kind, what, "", "", "", message=reason, statistical=False, remark=what)


def undecided_reason(f: Finding) -> str:
    """How an inconclusive finding reads as a reason of the outcome."""
    return f"rule {f.rule_id!r}: {f.message}"


@dataclass(frozen=True, slots=True)
class RuleResult:
    """One rule that ran, for reports that list every rule (JUnit)."""

    rule_id: str
    kind: str
    level: Level
    description: str
    findings: int  # active (unwaived) findings
    # NOT_JUDGED or WITHIN_NOISE with its reason (``remark_reason``); "" when the rule
    # judged its subjects and they are within its limits or listed as findings.
    remark: str = ""
    remark_reason: str = ""


@dataclass(frozen=True, slots=True)
class Report:
    diff: Diff
    findings: tuple[Finding, ...]  # errors first, then warnings, then info
    rules: tuple[RuleResult, ...]
    outcome: Outcome
    exit_code: ExitCode
    reasons: tuple[str, ...] = ()  # why the outcome is inconclusive
    notes: tuple[str, ...] = ()  # comparability notes that do not change the outcome
    strict: bool = False
    packs: tuple[str, ...] = ()  # the rule packs and files applied
    # What is being compared, decided before any rule judged (nsysdiff.rules.comparison).
    comparison: Comparison = ONE_WORKLOAD

    @property
    def active(self) -> tuple[Finding, ...]:
        return tuple(f for f in self.findings if not f.waived)

    @property
    def failed(self) -> tuple[Finding, ...]:
        """The findings that decide a FAIL."""
        levels = {Level.ERROR, Level.WARNING} if self.strict else {Level.ERROR}
        return tuple(f for f in self.active if f.level in levels and not f.inconclusive)

    @property
    def undecided(self) -> tuple[Finding, ...]:
        """The findings too small to tell at a level that would decide a FAIL."""
        levels = {Level.ERROR, Level.WARNING} if self.strict else {Level.ERROR}
        return tuple(f for f in self.active if f.level in levels and f.inconclusive)


def remark_notes(rules: Sequence[RuleResult]) -> tuple[str, ...]:
    """The rules whose subject moved within its noise (with the smallest change one run per
    side can detect) and those that judged nothing, rules with one reason grouped: a rule
    with no finding must not read as passed when it saw nothing."""
    out = []
    for what, head in ((WITHIN_NOISE, "within run-to-run noise"), (NOT_JUDGED, "not judged")):
        by_reason: dict[str, list[str]] = {}
        for r in rules:
            if r.remark == what:
                by_reason.setdefault(r.remark_reason, []).append(r.rule_id)
        if by_reason:
            out.append(f"{head}: " + "; ".join(f"{', '.join(ids)}: {why}" for why, ids in by_reason.items()))
    return tuple(out)
