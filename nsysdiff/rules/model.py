"""The plain data of the rule engine: option and kind declarations, rules, waivers, rule sets."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import date
from typing import Any

from nsysdiff.compare.diff import Diff
from nsysdiff.fingerprint.noise import NoiseProfile
from nsysdiff.rules.comparison import Measure
from nsysdiff.rules.report import Finding, Level
from nsysdiff.safe.regex import Regex


class OptionError(Exception):
    """A kind's cross-option check failed; the loader adds file, line and rule id."""

    def __init__(self, key: str | None, message: str) -> None:
        super().__init__(message)
        self.key = key
        self.message = message


@dataclass(frozen=True, slots=True)
class Option:
    """One option of a rule kind, as documented and as validated."""

    name: str
    type: str  # for the docs: "regex", "time", "ratio", ...
    parse: Callable[[Any], Any]  # raises ValueError with the user's message
    doc: str
    default: Any = None
    required: bool = False
    default_doc: str | None = None  # how the default reads in the docs, when not its repr

    @property
    def shown_default(self) -> str:
        if self.required:
            return "required"
        if self.default_doc is not None:
            return self.default_doc
        return "none" if self.default is None else str(self.default)


@dataclass(frozen=True, slots=True)
class Kind:
    """A rule kind: its id, options, defaults, documentation and check."""

    name: str
    summary: str  # one line
    doc: str  # paragraphs
    options: tuple[Option, ...]
    # Validated option values (defaults filled in) and the keys the user gave -> the kind's
    # own frozen options object; raises OptionError for problems spanning options.
    build: Callable[[Mapping[str, Any], frozenset[str]], Any]
    check: Callable[[Diff, Rule], Iterable[Finding]]
    # What a rule of this kind measures, from its options (a budget on calls counts, one
    # on total time times).
    measure: Callable[[Any], Measure]
    statistical: bool = True

    def option(self, name: str) -> Option | None:
        return next((o for o in self.options if o.name == name), None)


@dataclass(frozen=True, slots=True)
class Section:
    """A documented top-level section of a rule file that is not a rule (``waivers``)."""

    name: str
    summary: str
    doc: str
    options: tuple[Option, ...]


@dataclass(frozen=True, slots=True)
class Rule:
    id: str
    kind: str
    level: Level
    message: str
    description: str
    options: Any  # the kind's options object
    settings: tuple[tuple[str, str], ...]  # the options as written, for `rules explain`
    source: str
    line: int

    def finding(self, subject: str, observed: str, limit: str, evidence: str, why: str, **details: Any) -> Finding:
        """A finding of this rule, at its level; its message is the rule's own when the
        rule file gives one, else ``why`` (the kind's explanation). ``details`` are the
        finding's other fields: its numbers, ``statistical``, ``covers``, ``scaled``."""
        return Finding(
            self.level, self.id, self.kind, subject, observed, limit, evidence, self.message or why, **details
        )


@dataclass(frozen=True, slots=True)
class Waiver:
    """Silences the findings of one rule on matching subjects, until ``expires`` (inclusive)."""

    rule: str
    subject: str | None
    subject_regex: Regex | None
    reason: str
    expires: date
    source: str
    line: int

    def matches(self, finding: Finding) -> bool:
        if finding.rule_id != self.rule:
            return False
        if self.subject is not None:
            return finding.subject == self.subject
        assert self.subject_regex is not None
        return self.subject_regex.search(finding.subject) is not None

    def expired(self, today: date) -> bool:
        return today > self.expires

    @property
    def subject_text(self) -> str:
        if self.subject is not None:
            return self.subject
        assert self.subject_regex is not None
        return f"/{self.subject_regex.pattern}/"


@dataclass(frozen=True, slots=True)
class RuleSet:
    sources: tuple[str, ...]  # the packs and files asked for, as given
    rules: tuple[Rule, ...]
    waivers: tuple[Waiver, ...]
    phases: Mapping[str, tuple[str, ...]]  # phase name -> NVTX regex patterns (read-only)
    files: tuple[str, ...] = ()  # every file read, extends included, in load order
    noise: NoiseProfile | None = None  # what budgets judge against (noise_profile:, --noise-profile)
    # The NVTX range whose instances are steps (steps: range:), in the --per syntax: tried
    # in order when no --per is given; the first a trace has becomes its --per.
    steps: tuple[str, ...] = ()

    def rule(self, rule_id: str) -> Rule | None:
        return next((r for r in self.rules if r.id == rule_id), None)
