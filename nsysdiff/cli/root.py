"""The root of the command tree: the click group, the classes every command is built with,
and the one-line error reporting that turns nsysdiff's errors into exit codes.

The commands are click commands whose options are declared by decorators
(:mod:`nsysdiff.cli.options` holds the ones several commands share, each declared once).
click rather than typer: typer derives each option from a function parameter, so an
option group shared by five commands is five parameter lists; its help, usage line and
error wording changed between releases (typer 0.29 converts values through pydantic,
which also costs every command 0.07 s of start-up), and it wraps its own copy of click,
whose exceptions are not click's. Declared with click, an option group is one decorator,
the wording is click's or ours, and start-up imports one library fewer.
"""

from __future__ import annotations

import functools
import importlib
import sys
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

import click

from nsysdiff import __version__
from nsysdiff.errors import NsysdiffError
from nsysdiff.safe import neutral

F = TypeVar("F", bound=Callable[..., Any])

# The commands, each declared by the module of its name; --help lists them in this order,
# each with this line, so that listing them imports none of their modules (a command's
# module imports numpy and its stage: 0.3 s of CPU for the seven). A command's own --help
# reads its docstring; this line is its short help in both.
COMMANDS = {
    "summary": "The census of one trace, or the ranks of one job.",
    "fingerprint": "Reduce traces to small versioned JSON fingerprints.",
    "noise": "Measure run-to-run noise per key from A/A runs of one build.",
    "diff": "Diff two traces, or several runs per side.",
    "comment": "Post the Markdown report as one pull-request comment.",
    "rules": "Rule packs and kinds: list, explain, validate.",
    "history": "A branch's fingerprints over time: trends, change points.",
}


class Command(click.Command):
    """Every nsysdiff command: its arguments listed with their help, as its options are."""

    def format_arguments(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = [
            (p.human_readable_name, f"{p.help}  [required]" if p.required else p.help or "")
            for p in self.get_params(ctx)
            if isinstance(p, click.Argument)
        ]
        if rows:
            with formatter.section("Arguments"):
                formatter.write_dl(rows)


class Group(click.Group):
    """A command group whose commands and subgroups are nsysdiff's own classes, listed in
    the order they were declared (click sorts them by name; the order here reads as a tour).

    ``lazy`` names the module that declares each command: it is imported when the command
    runs or is listed, so that a command (and ``--version``) imports its own modules, not
    every command's (the diff's rule engine and comparison, the comment client's HTTP).
    """

    command_class = Command
    group_class = type  # subgroups of this class too

    def __init__(
        self,
        *args: Any,
        lazy: Mapping[str, str] | None = None,
        summaries: Mapping[str, str] | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(*args, **kwargs)
        self.lazy = dict(lazy or {})
        self.summaries = dict(summaries or {})

    def add_command(self, cmd: click.Command, name: str | None = None) -> None:
        summary = self.summaries.get(name or cmd.name or "")
        if summary is not None and cmd.short_help is None:
            cmd.short_help = summary
        super().add_command(cmd, name)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = [
            (name, self.summaries.get(name) or self._loaded(ctx, name).get_short_help_str())
            for name in self.list_commands(ctx)
        ]
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)

    def _loaded(self, ctx: click.Context, name: str) -> click.Command:
        cmd = self.get_command(ctx, name)
        assert cmd is not None, name  # listed, so declared
        return cmd

    def list_commands(self, ctx: click.Context) -> list[str]:
        return list(dict.fromkeys([*self.lazy, *self.commands]))

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        module = self.lazy.get(cmd_name)
        if module is not None and cmd_name not in self.commands:
            importlib.import_module(module)  # its decorators add the command to this group
        return super().get_command(ctx, cmd_name)


def one_line(message: str) -> str:
    """One inert line: messages quote SQLite or nsys text with newlines, and name files and
    values from untrusted inputs (no control sequence, no workflow command)."""
    return neutral.text(" ".join(message.split()))


def stderr(message: str, level: str = "error") -> None:
    print(f"nsysdiff: {level}: {one_line(message)}", file=sys.stderr)


def notify(message: str) -> None:
    print(f"nsysdiff: {one_line(message)}", file=sys.stderr)


def handled(fn: F) -> F:
    """Turn nsysdiff's own errors into one line on stderr and their exit code."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except NsysdiffError as e:
            for line in e.lines:
                stderr(line)
            raise click.exceptions.Exit(int(e.exit_code)) from None

    return wrapper  # type: ignore[return-value]


def _version(ctx: click.Context, param: click.Parameter, value: bool) -> None:
    if value:
        from nsysdiff.fingerprint import FORMAT_VERSION

        # The fingerprint format is what a saved baseline depends on (CHANGELOG.md).
        print(f"nsysdiff {__version__} (fingerprint format {FORMAT_VERSION})")
        raise click.exceptions.Exit(0)


@click.group(
    "nsysdiff",
    cls=Group,
    # In the order --help lists them.
    lazy={name: f"nsysdiff.cli.{name}" for name in COMMANDS},
    summaries=COMMANDS,
    # -h as well as --help, and every option's default in its help, in every command.
    context_settings={"help_option_names": ["-h", "--help"], "show_default": True},
    help="Diff two Nsight Systems traces (SQLite exports or saved fingerprints) and point at "
    "the change that is abnormal. `nsysdiff BASE CANDIDATE` is `nsysdiff diff BASE CANDIDATE`; its options "
    "(--rules, --no-rules, -o, ...: see `nsysdiff diff --help`) go before or after the two files.",
    epilog="Exit codes: 0 pass, 1 regression, 2 bad input or usage, 3 inconclusive, 70 internal error.",
)
@click.option(
    "--version", is_flag=True, is_eager=True, expose_value=False, callback=_version, help="Print the version."
)
def app() -> None:
    pass
