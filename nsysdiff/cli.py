"""The command line: a thin shell over :mod:`nsysdiff.api`.

The only module that imports typer or decides an exit code. ``nsysdiff A B`` is routed
to ``nsysdiff diff A B``.
"""

from __future__ import annotations

import functools
import sys
import traceback
from collections.abc import Callable
from enum import Enum
from pathlib import Path
from typing import Annotated, Any, TypeVar

import click
import typer
from rich.console import Console

from nsysdiff import __version__, api
from nsysdiff.errors import ExitCode, NsysdiffError
from nsysdiff.model import fingerprint_to_json
from nsysdiff.render import summary as summary_render

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    rich_markup_mode=None,
    help="Diff two Nsight Systems traces (SQLite exports or saved fingerprints) and point at "
    "the change that is abnormal. `nsysdiff BASE CANDIDATE` is `nsysdiff diff BASE CANDIDATE`.",
    epilog="Exit codes: 0 pass, 1 regression, 2 bad input or usage, 3 inconclusive, 70 internal error.",
)

F = TypeVar("F", bound=Callable[..., Any])


def _stderr(message: str) -> None:
    print(f"nsysdiff: error: {message}", file=sys.stderr)


def handled(fn: F) -> F:
    """Turn nsysdiff's own errors into one line on stderr and their exit code."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except NsysdiffError as e:
            _stderr(str(e))
            raise typer.Exit(int(e.exit_code)) from None

    return wrapper  # type: ignore[return-value]


def _version(value: bool) -> None:
    if value:
        print(f"nsysdiff {__version__}")
        raise typer.Exit(0)


@app.callback()
def _root(
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Print the version.")
    ] = False,
) -> None:
    pass


class SummaryFormat(str, Enum):
    text = "text"
    json = "json"


def _write(text: str, output: Path | None) -> None:
    if output is None:
        sys.stdout.write(text)
        return
    try:
        output.write_text(text, encoding="utf-8")
    except OSError as e:
        raise NsysdiffError(f"{output}: can't write ({e.strerror})") from None


@app.command()
@handled
def summary(
    trace: Annotated[Path, typer.Argument(help="An nsys SQLite export or a saved fingerprint.")],
    fmt: Annotated[SummaryFormat, typer.Option("--format", "-f", help="Output format.")] = SummaryFormat.text,
    top: Annotated[int, typer.Option(help="Rows in the top-kernels and NVTX tables.")] = 20,
    output: Annotated[Path | None, typer.Option("--output", "-o", help="Write to FILE.")] = None,
) -> None:
    """The census of one trace: metadata, totals, top kernels, categories, copies, NVTX."""
    fp = api.load(trace)
    if fmt is SummaryFormat.json:
        _write(summary_render.render_json(fp), output)
        return
    console = Console(
        file=open(output, "w", encoding="utf-8") if output else None,  # noqa: SIM115
        width=140 if output else None,
    )
    summary_render.render_text(fp, console, top=top)


@app.command()
@handled
def fingerprint(
    trace: Annotated[Path, typer.Argument(help="An nsys SQLite export.")],
    output: Annotated[Path | None, typer.Option("--output", "-o", help="Write to FILE (default: stdout).")] = None,
) -> None:
    """Reduce a trace to a small versioned JSON fingerprint (a CI baseline artifact)."""
    _write(fingerprint_to_json(api.load(trace)), output)


def route(argv: list[str]) -> list[str]:
    """``nsysdiff A B ...`` means ``nsysdiff diff A B ...``."""
    commands = {c.name or (c.callback.__name__ if c.callback else "") for c in app.registered_commands}
    commands |= {g.name for g in app.registered_groups if g.name}
    if argv and not argv[0].startswith("-") and argv[0] not in commands:
        return ["diff", *argv]
    return argv


def main() -> None:
    try:
        rv = app(args=route(sys.argv[1:]), prog_name="nsysdiff", standalone_mode=False)
    except click.exceptions.UsageError as e:
        e.show(file=sys.stderr)
        sys.exit(int(ExitCode.BAD_INPUT))
    except click.exceptions.Exit as e:
        sys.exit(e.exit_code)
    except (KeyboardInterrupt, click.exceptions.Abort):
        print("nsysdiff: interrupted", file=sys.stderr)
        sys.exit(130)
    except NsysdiffError as e:
        _stderr(str(e))
        sys.exit(int(e.exit_code))
    except Exception:
        # A bug, not a verdict: never 1, which CI reads as "regression".
        print("nsysdiff: internal error (please report it):", file=sys.stderr)
        traceback.print_exc()
        sys.exit(int(ExitCode.INTERNAL))
    sys.exit(rv if isinstance(rv, int) else 0)
