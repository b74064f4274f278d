"""The command line: a thin shell over :mod:`nsysdiff.api`.

The only module that imports typer or decides an exit code. ``nsysdiff A B`` is routed
to ``nsysdiff diff A B``.
"""

from __future__ import annotations

import functools
import os
import sys
import traceback
from collections.abc import Callable
from datetime import date
from enum import Enum
from pathlib import Path
from typing import Annotated, Any, TypeVar

import typer
from rich.console import Console

from nsysdiff import __version__, api, batch, comparability, scope
from nsysdiff.diff import Settings, compare
from nsysdiff.errors import ExitCode, NsysdiffError
from nsysdiff.model import fingerprint_to_json
from nsysdiff.render import Format, format_for, render, safe
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
    # Messages name files and values from untrusted inputs: one inert line.
    print(f"nsysdiff: error: {safe.text(message)}", file=sys.stderr)


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


# Scope options, shared by summary, fingerprint and diff (see docs/scopes.md).
WindowOpt = Annotated[
    str | None,
    typer.Option(
        "--window",
        metavar="START:END",
        help="Keep GPU work starting in this window, e.g. 2s:5s, 500ms: or :3s (units ns, us, ms, s), "
        "relative to --window-origin.",
    ),
]
OriginOpt = Annotated[
    str,
    typer.Option(
        "--window-origin",
        metavar="kernel|capture",
        help="What --window counts from: the first kernel's start (kernel) or the capture start (capture).",
    ),
]
SkipOpt = Annotated[
    int,
    typer.Option(
        "--skip-first",
        metavar="N",
        help="Drop warm-up: per process, all work launched before the (N+1)-th instance of the --per range "
        "(else the --nvtx range).",
    ),
]
NvtxOpt = Annotated[
    str | None,
    typer.Option(
        "--nvtx",
        metavar="NAME[@DOMAIN]",
        help="Keep only GPU work launched inside matching NVTX ranges (exact name or regex; PyTorch suffixes folded).",
    ),
]
PerOpt = Annotated[
    str | None,
    typer.Option(
        "--per",
        metavar="RANGE",
        help="Count the instances of this NVTX range as steps; a diff of two such sides compares per step.",
    ),
]
PhasesOpt = Annotated[
    Path | None,
    typer.Option(
        "--phases",
        metavar="FILE",
        help="YAML file with a `phases:` mapping (phase name -> NVTX patterns): per-phase sections.",
    ),
]


@app.command()
@handled
def summary(
    trace: Annotated[Path, typer.Argument(help="An nsys SQLite export or a saved fingerprint.")],
    fmt: Annotated[SummaryFormat, typer.Option("--format", "-f", help="Output format.")] = SummaryFormat.text,
    top: Annotated[int, typer.Option(help="Rows in the top-kernels and NVTX tables.")] = 20,
    output: Annotated[Path | None, typer.Option("--output", "-o", help="Write to FILE.")] = None,
    window: WindowOpt = None,
    window_origin: OriginOpt = "kernel",
    skip_first: SkipOpt = 0,
    nvtx: NvtxOpt = None,
    per: PerOpt = None,
    phases: PhasesOpt = None,
) -> None:
    """The census of one trace: metadata, totals, top kernels, categories, copies, NVTX."""
    opts = scope.options(
        window=window, window_origin=window_origin, skip_first=skip_first, nvtx=nvtx, per=per,
        phases_file=phases,
    )  # fmt: skip
    fp = api.load(trace, opts)
    if fmt is SummaryFormat.json:
        _write(summary_render.render_json(fp), output)
        return
    if output is None:
        summary_render.render_text(fp, Console(), top=top)
        return
    try:
        with output.open("w", encoding="utf-8") as fh:
            summary_render.render_text(fp, Console(file=fh, width=140), top=top)
    except OSError as e:
        raise NsysdiffError(f"{output}: can't write ({e.strerror})") from None


@app.command()
@handled
def fingerprint(
    traces: Annotated[list[Path], typer.Argument(help="One or more nsys SQLite exports.")],
    output: Annotated[
        Path | None,
        typer.Option(
            "--output", "-o",
            help="Write to FILE (default: stdout); with several traces, a directory: DIR/STEM.json each.",
        ),
    ] = None,
    jobs: Annotated[int, typer.Option("--jobs", "-j", help="Fingerprint N traces at once in local processes.")] = 1,
    scheduler: Annotated[
        str | None,
        typer.Option(
            "--scheduler",
            help="Run on an existing Dask cluster (e.g. tcp://host:8786); needs nsysdiff[dask].",
        ),
    ] = None,
    window: WindowOpt = None,
    window_origin: OriginOpt = "kernel",
    skip_first: SkipOpt = 0,
    nvtx: NvtxOpt = None,
    per: PerOpt = None,
    phases: PhasesOpt = None,
) -> None:
    """Reduce traces to small versioned JSON fingerprints (CI baseline artifacts)."""
    opts = scope.options(
        window=window, window_origin=window_origin, skip_first=skip_first, nvtx=nvtx, per=per,
        phases_file=phases,
    )  # fmt: skip
    if len(traces) == 1 and scheduler is None and (output is None or not output.is_dir()):
        _write(fingerprint_to_json(api.load(traces[0], opts)), output)
        return
    if output is None:
        raise NsysdiffError("several traces: give -o DIR, the directory that receives one STEM.json per trace")
    batch.run(batch.plan(traces, output), opts, workers=jobs, scheduler=scheduler)


_DEFAULTS = Settings()


@app.command()
@handled
def diff(
    base: Annotated[Path, typer.Argument(help="Base: an nsys SQLite export or a saved fingerprint (.json).")],
    candidate: Annotated[Path, typer.Argument(help="Candidate: an nsys SQLite export or a saved fingerprint.")],
    rules: Annotated[
        list[str] | None,
        typer.Option(
            "--rules",
            "-r",
            help="A shipped rule pack by name or a YAML rule file; repeatable. Default: the `default` pack.",
        ),
    ] = None,
    no_rules: Annotated[
        bool,
        typer.Option("--no-rules", help="Report without judging (exit 0 unless the input is bad)."),
    ] = False,
    strict: Annotated[bool, typer.Option("--strict", help="Warnings fail the build too.")] = False,
    fmt: Annotated[Format, typer.Option("--format", "-f", help="Format printed to stdout.")] = Format.text,
    output: Annotated[
        list[Path] | None,
        typer.Option(
            "--output",
            "-o",
            help="Also write the report to FILE, format from the extension (.txt .md .json .xml); repeatable.",
        ),
    ] = None,
    z_threshold: Annotated[
        float, typer.Option(help="Outlier: minimum |modified z-score| of a kernel's log ratio.")
    ] = Settings().z_threshold,
    min_deviation: Annotated[
        float, typer.Option(help="Outlier: minimum ratio beyond the overall scale, either way.")
    ] = Settings().min_deviation,
    min_share: Annotated[
        float,
        typer.Option(help="Outlier: minimum share of either side's kernel time (0.001 = 0.1%)."),
    ] = Settings().min_share,
    noise: Annotated[
        float, typer.Option(help="Total-time ratios within [1/noise, noise] count as unchanged.")
    ] = Settings().noise,
    width: Annotated[int, typer.Option(help="Text report width in columns.")] = 120,
    window: WindowOpt = None,
    window_origin: OriginOpt = "kernel",
    skip_first: SkipOpt = 0,
    nvtx: NvtxOpt = None,
    per: PerOpt = None,
    phases: PhasesOpt = None,
    require_same_gpu: Annotated[
        bool,
        typer.Option(
            "--require-same-gpu",
            help="Different GPU models (or counts) make the verdict inconclusive instead of a note.",
        ),
    ] = False,
) -> None:
    """Diff two traces: headline, outliers, categories, copies, variant drift, top changes."""
    from nsysdiff import rules as rule_engine

    settings = Settings(z_threshold=z_threshold, min_deviation=min_deviation, min_share=min_share, noise=noise)
    for bad in (o for o in output or () if o.suffix.lower() not in (".txt", ".md", ".markdown", ".json", ".xml")):
        format_for(bad)
    # Rule files are validated before any trace is read: a typo fails in milliseconds.
    ruleset = None if no_rules else rule_engine.load_rules(rules or ["default"])
    opts = scope.options(
        window=window, window_origin=window_origin, skip_first=skip_first, nvtx=nvtx, per=per,
        phases_file=phases, phases=ruleset.phases if ruleset else None,
        phases_source=", ".join(ruleset.sources) if ruleset else "rules",
    )  # fmt: skip
    b, c = api.load(base, opts), api.load(candidate, opts)
    reasons, notes = comparability.assess(b, c, require_same_gpu=require_same_gpu)
    d = compare(b, c, settings)
    findings, results = rule_engine.evaluate(d, ruleset, today=date.today()) if ruleset else ((), ())
    report = api.judge(
        d,
        findings,
        results,
        strict=strict,
        judged=ruleset is not None,
        reasons=reasons,
        notes=notes,
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


rules_app = typer.Typer(
    no_args_is_help=True,
    rich_markup_mode=None,
    help="Rule packs and kinds: list the shipped packs, explain a rule or a kind, validate files.",
)
app.add_typer(rules_app, name="rules")


@rules_app.command("list")
@handled
def rules_list() -> None:
    """The shipped rule packs, with their rule counts and descriptions."""
    from nsysdiff.rules import catalog

    for p in catalog.packs():
        extends = f" (extends {', '.join(p.extends)})" if p.extends else ""
        print(f"{p.name:<17} {p.rules:>3} rules{extends}  {p.description}")


@rules_app.command("explain")
@handled
def rules_explain(
    name: Annotated[str, typer.Argument(help="A rule id of a shipped pack, a kind (budget, ...) or waivers.")],
) -> None:
    """Print the documentation of a rule, a rule kind and its options, or waivers."""
    from nsysdiff.rules import catalog

    sys.stdout.write(catalog.explain(name))


@rules_app.command("validate")
@handled
def rules_validate(
    files: Annotated[list[str], typer.Argument(help="Rule files or pack names, loaded together as --rules does.")],
) -> None:
    """Check rule files without reading a trace: exit 0 and 'ok', or exit 2 and the error."""
    from nsysdiff import rules as rule_engine

    ruleset = rule_engine.load_rules(files)
    print(f"ok: {', '.join(files)} ({len(ruleset.rules)} rules, {len(ruleset.waivers)} waivers)")


def route(argv: list[str]) -> list[str]:
    """``nsysdiff A B ...`` means ``nsysdiff diff A B ...``."""
    commands = {c.name or (c.callback.__name__ if c.callback else "") for c in app.registered_commands}
    commands |= {g.name for g in app.registered_groups if g.name}
    if argv and not argv[0].startswith("-") and argv[0] not in commands:
        return ["diff", *argv]
    return argv


def _click_class(name: str) -> type[BaseException]:
    """A click exception class as typer uses it (newer typer vendors its own click)."""
    for cls in typer.BadParameter.__mro__:
        if cls.__name__ == name:
            return cls
    raise AssertionError(f"typer has no {name}")


_USAGE_ERROR = _click_class("UsageError")
_CLICK_ERROR = _click_class("ClickException")


def main() -> None:
    try:
        rv = app(args=route(sys.argv[1:]), prog_name="nsysdiff", standalone_mode=False)
    except _USAGE_ERROR as e:
        e.show(file=sys.stderr)  # type: ignore[attr-defined]
        sys.exit(int(ExitCode.BAD_INPUT))
    except _CLICK_ERROR as e:
        e.show(file=sys.stderr)  # type: ignore[attr-defined]
        sys.exit(int(ExitCode.BAD_INPUT))
    except typer.Exit as e:
        sys.exit(e.exit_code)
    except (KeyboardInterrupt, typer.Abort):
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
