"""The root of the command tree: the typer app, the classes every command is built with,
and the one-line error reporting that turns nsysdiff's errors into exit codes."""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from typing import Annotated, Any, TypeVar

import typer

from nsysdiff import __version__
from nsysdiff.errors import NsysdiffError
from nsysdiff.safe import neutral

# -h as well as --help, inherited by every command and group.
CONTEXT = {"help_option_names": ["-h", "--help"]}

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    rich_markup_mode=None,
    context_settings=CONTEXT,
    help="Diff two Nsight Systems traces (SQLite exports or saved fingerprints) and point at "
    "the change that is abnormal. `nsysdiff BASE CANDIDATE` is `nsysdiff diff BASE CANDIDATE`; its options "
    "(--rules, --no-rules, -o, ...: see `nsysdiff diff --help`) go before or after the two files.",
    epilog="Exit codes: 0 pass, 1 regression, 2 bad input or usage, 3 inconclusive, 70 internal error.",
)

F = TypeVar("F", bound=Callable[..., Any])


class _PlainArgument(typer.core.TyperArgument):
    """An argument shown by its metavar alone: ``BASE``, not typer's ``{BASE}`` in the
    usage line and ``BASE <path>`` in the help (the metavar already says what to give)."""

    def _usage_display_name(self) -> str:
        raw = self.metavar if self.metavar is not None else str(self.name)
        name = raw if self.required else f"[{raw}]"
        return name if self.nargs == 1 or name.endswith("...") else f"{name}..."

    def get_usage_pieces(self, ctx: Any) -> list[str]:
        # Typer before 0.29 builds the usage piece from make_metavar, 0.29 from the name above.
        return [self._usage_display_name()]

    def display_type_rich(self, ctx: Any) -> str | None:
        return None


class Command(typer.core.TyperCommand):
    """Every nsysdiff command: its arguments printed as :class:`_PlainArgument`."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        for param in self.params:
            if type(param) is typer.core.TyperArgument:
                # Same object, narrower display: only the two display methods differ.
                param.__class__ = _PlainArgument


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
            raise typer.Exit(int(e.exit_code)) from None

    return wrapper  # type: ignore[return-value]


def _version(value: bool) -> None:
    if value:
        from nsysdiff.fingerprint.model import FORMAT_VERSION

        # The fingerprint format is what a saved baseline depends on (CHANGELOG.md).
        print(f"nsysdiff {__version__} (fingerprint format {FORMAT_VERSION})")
        raise typer.Exit(0)


@app.callback()
def _root(
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Print the version.")
    ] = False,
) -> None:
    pass
