"""The command line: a thin shell over :mod:`nsysdiff.api`.

The only module that imports typer or decides an exit code. ``nsysdiff A B`` is routed
to ``nsysdiff diff A B``.
"""

from __future__ import annotations

import functools
import os
import sys
from datetime import date
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
from nsysdiff.diff import Settings, compare
from nsysdiff.model import fingerprint_to_json
from nsysdiff.render import Format, format_for, render
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


@app.command()
@handled
def diff(
    base: Annotated[Path, typer.Argument(help="Base: an nsys SQLite export or a saved fingerprint (.json).")],
    candidate: Annotated[Path, typer.Argument(help="Candidate: an nsys SQLite export or a saved fingerprint.")],
    rules: Annotated[
        list[str] | None,
        typer.Option("--rules", "-r", help="A shipped rule pack by name or a YAML rule file; repeatable. Default: the `default` pack."),
    ] = None,
    no_rules: Annotated[bool, typer.Option("--no-rules", help="Report without judging (exit 0 unless the input is bad).")] = False,
    strict: Annotated[bool, typer.Option("--strict", help="Warnings fail the build too.")] = False,
    fmt: Annotated[Format, typer.Option("--format", "-f", help="Format printed to stdout.")] = Format.text,
    output: Annotated[
        list[Path] | None,
        typer.Option("--output", "-o", help="Also write the report to FILE, format from the extension (.txt .md .json .xml); repeatable."),
    ] = None,
    z_threshold: Annotated[float, typer.Option(help="Outlier: minimum |modified z-score| of a kernel's log ratio.")] = Settings.z_threshold,
    min_deviation: Annotated[float, typer.Option(help="Outlier: minimum ratio beyond the overall scale, either way.")] = Settings.min_deviation,
    min_share: Annotated[float, typer.Option(help="Outlier: minimum share of either side's kernel time (0.001 = 0.1%).")] = Settings.min_share,
    noise: Annotated[float, typer.Option(help="Total-time ratios within [1/noise, noise] count as unchanged.")] = Settings.noise,
    width: Annotated[int, typer.Option(help="Text report width in columns.")] = 120,
) -> None:
    """Diff two traces: headline, outliers, categories, copies, variant drift, top changes."""
    from nsysdiff import rules as rule_engine

    settings = Settings(z_threshold=z_threshold, min_deviation=min_deviation, min_share=min_share, noise=noise)
    for bad in (o for o in output or () if o.suffix.lower() not in (".txt", ".md", ".markdown", ".json", ".xml")):
        format_for(bad)
    # Rule files are validated before any trace is read: a typo fails in milliseconds.
    ruleset = None if no_rules else rule_engine.load_rules(rules or ["default"])
    b, c = api.load(base), api.load(candidate)
    d = compare(b, c, settings)
    findings, results = rule_engine.evaluate(d, ruleset, today=date.today()) if ruleset else ((), ())
    report = api.judge(
        d,
        findings,
        results,
        strict=strict,
        judged=ruleset is not None,
        reasons=api.inconclusive_reasons(b, c),
        packs=ruleset.sources if ruleset else (),
    )
    sys.stdout.write(render(report, fmt, width=width))
    for path in output or ():
        _write(render(report, format_for(path), width=width), path)
    if os.environ.get("GITHUB_ACTIONS") == "true" or fmt is Format.github:
        from nsysdiff.render import github

        if fmt is not Format.github:
            sys.stdout.write(github.render(report))
        github.publish(report, os.environ)
    raise typer.Exit(int(report.exit_code))


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
