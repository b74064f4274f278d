"""What ``nsysdiff rules list`` and ``rules explain`` print: packs, kinds and rules as text."""

from __future__ import annotations

import difflib
import re
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


WIDTH = 88  # the text width when none is given


def _reflowed(doc: str, width: int) -> list[str]:
    """A kind's documentation, written wrapped in the source, as paragraphs wrapped once at
    ``width`` (wrapping the source's lines again would break each of them in two)."""
    out: list[str] = []
    for paragraph in doc.strip().split("\n\n"):
        lines = paragraph.splitlines()
        if any(line.startswith("- ") for line in lines):
            # A list: each item wrapped on its own, its continuation under its text.
            items: list[str] = []
            for line in lines:
                if line.startswith("- ") or not items:
                    items.append(line)
                else:
                    items[-1] += " " + line.strip()
            for item in items:
                out += textwrap.wrap(
                    " ".join(item.split()), width=width, subsequent_indent="  ", break_on_hyphens=False
                )
        elif any(line.startswith(" ") for line in lines):
            out += _table(lines, width)
        else:
            out += textwrap.wrap(" ".join(paragraph.split()), width=width, break_on_hyphens=False)
        out.append("")
    return out[:-1]


def _fitted(lines: list[str], width: int) -> str:
    """Lines, any longer than ``width`` wrapped with its continuation indented past its own."""
    out: list[str] = []
    for line in lines:
        indent = line[: len(line) - len(line.lstrip())]
        out += (
            [line]
            if len(line) <= width
            else textwrap.wrap(line, width, subsequent_indent=indent + "    ", break_on_hyphens=False)
        )
    return "\n".join(out) + "\n"


def _table(lines: list[str], width: int) -> list[str]:
    """Two columns (``  term   what it means``, continued under the meaning): each row
    wrapped at ``width`` with its continuation under the meaning again."""
    rows: list[tuple[int, str]] = []  # (column of the meaning, the row's whole text)
    for line in lines:
        head = re.match(r"^(\s*\S+\s{2,})", line)
        if head and not line[: head.end()].isspace():
            rows.append((head.end(), line))
        elif rows:
            rows[-1] = (rows[-1][0], rows[-1][1] + " " + line.strip())
        else:
            rows.append((0, line))
    out: list[str] = []
    for hang, text in rows:
        hang = hang if hang < width // 2 else 4
        out += textwrap.wrap(
            text, width=width, subsequent_indent=" " * hang, break_on_hyphens=False, drop_whitespace=True
        ) or [""]
    return out


def describe_kind(kind: Kind | Section, width: int = WIDTH) -> str:
    what = "kind" if isinstance(kind, Kind) else "section"
    lines = [
        *textwrap.wrap(f"{what} {kind.name}: {kind.summary}", width=width, subsequent_indent="    "),
        "",
        *_reflowed(kind.doc, width),
    ]
    if kind.options:
        lines += ["", "Options:"]
    for o in kind.options:
        lines += textwrap.wrap(
            f"  {o.name} ({o.type}; {'required' if o.required else 'default: ' + o.shown_default})",
            width=width,
            subsequent_indent="      ",
        )
        lines += textwrap.wrap(
            o.doc, width=width, initial_indent=" " * 6, subsequent_indent=" " * 6, break_on_hyphens=False
        )
    if isinstance(kind, Kind):
        lines += [
            "",
            *textwrap.wrap(
                "Every rule also has: id (required, unique), kind (required), level (error, warning, "
                "info; default error), message and description (optional).",
                width=width,
            ),
        ]
    return "\n".join(lines) + "\n"


def describe_rule(rule: Rule, packs_using: tuple[str, ...], width: int = WIDTH) -> str:
    kind = KINDS[rule.kind]
    lines = [f"rule {rule.id}: {rule.kind}, level {rule.level.value} ({rule.source}:{rule.line})"]
    if packs_using:
        lines.append(f"in packs: {', '.join(packs_using)}")
    if rule.description:
        lines += ["", *textwrap.wrap(" ".join(rule.description.split()), width=width)]
    if rule.message:
        lines += ["", "message: " + " ".join(rule.message.split())]
    if rule.settings:
        lines += ["", "options:"]
        lines += [textwrap.fill(f"  {k}: {v}", width=width, subsequent_indent="      ") for k, v in rule.settings]
    lines += [
        "",
        f"kind {kind.name}: {kind.summary}",
        f"(`nsysdiff rules explain {kind.name}` for every option)",
    ]
    return _fitted(lines, width)


def describe_pack(info: PackInfo, width: int = WIDTH) -> str:
    rules = load_rules([info.name]).rules
    lines = [f"pack {info.name}: {len(rules)} rules ({pack_source(info.name).label})"]
    if info.extends:
        lines.append(f"extends: {', '.join(info.extends)}")
    if info.description:
        lines += ["", *textwrap.wrap(" ".join(info.description.split()), width=width)]
    lines += ["", "rules:"]
    lines += [f"  {r.id:<28} {r.kind:<12} {r.level.value}" for r in rules]
    lines += ["", f"(`nsysdiff rules explain RULE` for one rule, `--rules {info.name}` to use the pack)"]
    return _fitted(lines, width)


def explain(name: str, width: int = WIDTH) -> str:
    """The documentation of a pack, a kind, a section, or a rule of the shipped packs,
    wrapped at ``width``."""
    if name in KINDS:
        return describe_kind(KINDS[name], width)
    if name in SECTIONS:
        return describe_kind(SECTIONS[name], width)
    if name in pack_names():
        return describe_pack(next(p for p in packs() if p.name == name), width)
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
    return "\n".join(describe_rule(rule, tuple(ps), width) for rule, ps in found.values())
