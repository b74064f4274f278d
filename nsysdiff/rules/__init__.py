"""The rule engine: YAML rule files and shipped packs that turn a diff into findings.

``load_rules`` validates everything before any trace is read; ``evaluate`` runs the
rules over a :class:`~nsysdiff.compare.diff.Diff`. The format is documented in ``docs/rules.md``.
"""

from __future__ import annotations

from nsysdiff.rules.config import load_rules, pack_names
from nsysdiff.rules.engine import evaluate
from nsysdiff.rules.kinds import KINDS, SECTIONS
from nsysdiff.rules.model import Kind, Option, Rule, RuleSet, Section, Waiver

__all__ = [
    "KINDS",
    "SECTIONS",
    "Kind",
    "Option",
    "Rule",
    "RuleSet",
    "Section",
    "Waiver",
    "evaluate",
    "load_rules",
    "pack_names",
]
