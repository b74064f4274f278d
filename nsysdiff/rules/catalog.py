"""What ``nsysdiff rules list`` and ``rules explain`` print: packs, kinds and rules as text."""

from __future__ import annotations

import difflib
import textwrap
from dataclasses import dataclass

import yaml

from nsysdiff.errors import UsageError
from nsysdiff.rules.config import load_rules, pack_names, pack_source
from nsysdiff.rules.kinds import KINDS, SECTIONS
from nsysdiff.rules.model import Kind, Rule, Section


@dataclass(frozen=True, slots=True)
class PackInfo:
    name: str
    description: str
    rules: int  # rules in effect, extended packs included
    extends: tuple[str, ...]


def packs() -> tuple[PackInfo, ...]:
    out = []
    for name in pack_names():
        doc = yaml.safe_load(pack_source(name).text) or {}
        ext = doc.get("extends") or ()
        out.append(
            PackInfo(
                name=name,
                description=" ".join(str(doc.get("description", "")).split()),
                rules=len(load_rules([name]).rules),
                extends=(ext,) if isinstance(ext, str) else tuple(ext),
            )
        )
    return tuple(out)


def describe_kind(kind: Kind | Section) -> str:
    what = "kind" if isinstance(kind, Kind) else "section"
    lines = [f"{what} {kind.name}: {kind.summary}", "", kind.doc.rstrip()]
    if kind.options:
        lines += ["", "Options:"]
    for o in kind.options:
        lines.append(
            f"  {o.name} ({o.type}; {'required' if o.required else 'default: ' + o.shown_default})"
        )
        lines.extend(
            textwrap.wrap(o.doc, width=84, initial_indent="      ", subsequent_indent="      ")
        )
    if isinstance(kind, Kind):
        lines += [
            "",
            "Every rule also has: id (required, unique), kind (required), level (error, warning, "
            "info; default error), message and description (optional).",
        ]
    return "\n".join(lines) + "\n"


def describe_rule(rule: Rule, packs_using: tuple[str, ...]) -> str:
    kind = KINDS[rule.kind]
    lines = [f"rule {rule.id}: {rule.kind}, level {rule.level.value} ({rule.source}:{rule.line})"]
    if packs_using:
        lines.append(f"in packs: {', '.join(packs_using)}")
    if rule.description:
        lines += ["", *textwrap.wrap(" ".join(rule.description.split()), width=88)]
    if rule.message:
        lines += ["", "message: " + " ".join(rule.message.split())]
    if rule.settings:
        lines += ["", "options:"]
        lines += [
            textwrap.fill(f"  {k}: {v}", width=88, subsequent_indent="      ")
            for k, v in rule.settings
        ]
    lines += [
        "",
        f"kind {kind.name}: {kind.summary}",
        f"(`nsysdiff rules explain {kind.name}` for every option)",
    ]
    return "\n".join(lines) + "\n"


def describe_pack(info: PackInfo) -> str:
    rules = load_rules([info.name]).rules
    lines = [f"pack {info.name}: {len(rules)} rules ({pack_source(info.name).label})"]
    if info.extends:
        lines.append(f"extends: {', '.join(info.extends)}")
    if info.description:
        lines += ["", *textwrap.wrap(info.description, width=88)]
    lines += ["", "rules:"]
    lines += [f"  {r.id:<28} {r.kind:<12} {r.level.value}" for r in rules]
    lines += ["", f"(`nsysdiff rules explain RULE` for one rule, `--rules {info.name}` to use the pack)"]
    return "\n".join(lines) + "\n"


def explain(name: str) -> str:
    """The documentation of a pack, a kind, a section, or a rule of the shipped packs."""
    if name in KINDS:
        return describe_kind(KINDS[name])
    if name in SECTIONS:
        return describe_kind(SECTIONS[name])
    if name in pack_names():
        return describe_pack(next(p for p in packs() if p.name == name))
    found: dict[tuple[str, int], tuple[Rule, list[str]]] = {}
    rule_ids: set[str] = set()
    for pack in pack_names():
        ruleset = load_rules([pack])
        rule_ids.update(r.id for r in ruleset.rules)
        rule = ruleset.rule(name)
        if rule is not None:
            found.setdefault((rule.source, rule.line), (rule, []))[1].append(pack)
    if not found:
        known = [*pack_names(), *sorted(KINDS), *sorted(SECTIONS), *sorted(rule_ids)]
        close = difflib.get_close_matches(name, known, n=1)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        raise UsageError(
            f"{name!r} is no pack, rule, kind or section{hint} (packs: {', '.join(pack_names())}; "
            f"kinds: {', '.join([*sorted(KINDS), *sorted(SECTIONS)])})"
        )
    return "\n".join(describe_rule(rule, tuple(ps)) for rule, ps in found.values())
