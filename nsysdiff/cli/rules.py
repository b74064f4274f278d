"""``nsysdiff rules``: the rule packs and kinds (list, explain) and a check of rule files (validate)."""

from __future__ import annotations

import sys

import click

from nsysdiff.cli import options
from nsysdiff.cli.root import app, handled, one_line, stderr
from nsysdiff.render import layout


@app.group("rules")
def rules_app() -> None:
    """Rule packs and kinds: list the shipped packs, explain a rule or a kind, validate files."""


@rules_app.command("list")
@handled
def rules_list() -> None:
    """The shipped rule packs, with their rule counts and descriptions."""
    from nsysdiff.rules import catalog

    lines = []
    for p in catalog.packs():
        extends = f" (extends {', '.join(p.extends)})" if p.extends else ""
        lines.append(f"{p.name:<17} {p.rules:>3} {'rule ' if p.rules == 1 else 'rules'}{extends}  {p.description}")
    sys.stdout.write(layout.fit("\n".join(lines) + "\n", layout.columns(None, sys.stdout)))


@rules_app.command("explain")
@handled
@click.argument(
    "name", help="A shipped pack, a rule id of a shipped pack, a kind (budget, ...), waivers or noise_profile."
)
def rules_explain(name: str) -> None:
    """Print the documentation of a pack, a rule, a rule kind and its options, or waivers."""
    from nsysdiff.rules import catalog

    width = layout.columns(None, sys.stdout)
    sys.stdout.write(layout.fit(catalog.explain(name, width), width))


@rules_app.command("validate")
@handled
@click.argument(
    "files",
    nargs=-1,
    required=True,
    callback=options.listed,
    metavar="FILE|PACK...",
    help="Rule files or pack names, loaded together as --rules does.",
)
def rules_validate(files: list[str]) -> None:
    """Check rule files without reading a trace: exit 0 and 'ok', or exit 2 and the error."""
    from nsysdiff import rules as rule_engine

    ruleset = rule_engine.load_rules(files)
    rules, waivers = len(ruleset.rules), len(ruleset.waivers)
    # One inert line: a file name may hold a newline and a workflow command.
    counts = f"{rules} rule{'s' * (rules != 1)}, {waivers} waiver{'s' * (waivers != 1)}"
    print(one_line(f"ok: {', '.join(files)} ({counts})"))
    if not rules:
        stderr(
            f"{', '.join(files)}: no rule: a diff judged by these rules alone judges nothing and exits 3 "
            "(inconclusive), never 0",
            "warning",
        )
