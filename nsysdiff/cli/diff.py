"""``nsysdiff diff``: two traces, or several runs per side, compared and judged by the rules;
the report on stdout and in any ``--output`` files, the verdict as the exit code."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

import click

from nsysdiff import api
from nsysdiff.cli import options, outputs
from nsysdiff.cli.options import (
    F,
    note_unmangled,
    ratio,
    share,
    write,
    z_score,
)
from nsysdiff.cli.root import app, handled, notify, stderr
from nsysdiff.compare.diff import Settings
from nsysdiff.errors import NsysdiffError, UsageError
from nsysdiff.render import Format, format_for, layout, render, require
from nsysdiff.render.names import Names
from nsysdiff.rules.report import Report
from nsysdiff.trace import progress
from nsysdiff.trace.launches import Grouping

_DEFAULTS = Settings()

# The thresholds of the diff, each an option defaulting to its Settings default:
# (flag, parser, metavar, default, help). They reach the command as one Settings.
_THRESHOLDS = (
    (
        "--z-threshold",
        z_score,
        "Z",
        _DEFAULTS.z_threshold,
        "Outlier: minimum |modified z-score| of a kernel's log ratio.",
    ),
    (
        "--min-deviation",
        ratio,
        "RATIO",
        _DEFAULTS.min_deviation,
        "Outlier: minimum ratio beyond the overall scale, either way (1.25x).",
    ),
    (
        "--min-share",
        share,
        "SHARE",
        _DEFAULTS.min_share,
        "Outlier: minimum share of either side's kernel time (0.1% or 0.001).",
    ),
    (
        "--noise",
        ratio,
        "RATIO",
        _DEFAULTS.noise,
        "Total-time ratios within [1/RATIO, RATIO] count as unchanged (1.05x).",
    ),
)
_FIELDS = [flag.removeprefix("--").replace("-", "_") for flag, *_ in _THRESHOLDS]
_thresholds = options.bundle(
    "settings",
    Settings,
    _FIELDS,
    [
        click.option(flag, field, type=parse, metavar=metavar, default=default, help=text)
        for field, (flag, parse, metavar, default, text) in zip(_FIELDS, _THRESHOLDS, strict=True)
    ],
)


def _runs(side: str, help: str) -> Callable[[F], F]:
    """``--base RUN...`` or ``--candidate RUN...``: the runs of one side, as a list."""
    return click.option(
        f"--{side}",
        f"{side}_runs",
        multiple=True,
        type=options.PATH,
        callback=options.listed,
        metavar="RUN...",
        help=help,
    )


@app.command("diff")
@handled
@click.argument(
    "base",
    required=False,
    type=options.PATH,
    help="Base: an nsys SQLite export, an .nsys-rep report, a saved fingerprint or run set.",
)
@click.argument(
    "candidate",
    required=False,
    type=options.PATH,
    help="Candidate: an nsys SQLite export, an .nsys-rep report, a saved fingerprint or run set.",
)
@_runs(
    "base",
    "Runs of the base build (traces, reports, fingerprints, run sets): every path up to the next "
    "option, so a shell glob works; repeatable. Instead of BASE. Or history:STORE@REF~N: the last N "
    "runs of REF in a history store comparable with the candidate (docs/history.md).",
)
@_runs("candidate", "Runs of the candidate build, as --base. Instead of CANDIDATE.")
@click.option(
    "--rules",
    "-r",
    multiple=True,
    callback=options.listed,
    metavar="PACK|FILE",
    help="A shipped rule pack by name or a YAML rule file; repeatable. Default: the `default` pack.",
)
@click.option("--no-rules", is_flag=True, help="Report without judging (exit 0 unless the input is bad).")
@click.option("--strict", is_flag=True, help="Warnings fail the build too.")
@options.fmt(Format, "Format printed to stdout.")
@options.output(
    "FILE",
    "Also write the report to FILE, format from the extension (.txt .md .json .xml .csv .html), "
    "or one CSV per table into an existing DIR; repeatable.",
    multiple=True,
    callback=options.listed,
)
@_thresholds
@options.width
@click.option("--details", is_flag=True, help="Text: every section, not only the first screen.")
@options.names
@options.by
@options.quiet
@options.scope_options
@options.phases
@options.keep_export
@click.option(
    "--require-same-gpu",
    is_flag=True,
    help="Different GPU models (or counts) make the verdict inconclusive instead of a note.",
)
@click.option(
    "--mixed-runs",
    is_flag=True,
    help="Compare the median runs of sides whose runs are not repeats of one build (their "
    "exact counts differ) instead of refusing them.",
)
@click.option(
    "--noise-profile",
    type=options.PATH,
    metavar="FILE",
    help="Noise profile of the base build (nsysdiff noise): budgets in noise widths, and a limit "
    "within the noise is inconclusive. Overrides noise_profile: in rule files.",
)
def diff(
    base: Path | None,
    candidate: Path | None,
    base_runs: list[Path] | None,
    candidate_runs: list[Path] | None,
    rules: list[str] | None,
    no_rules: bool,
    strict: bool,
    fmt: Format,
    output: list[Path] | None,
    settings: Settings,
    width: int | None,
    details: bool,
    names: Names,
    by: Grouping,
    quiet: bool,
    scope_args: options.ScopeArgs,
    phases: Path | None,
    keep_export: Path | None,
    require_same_gpu: bool,
    mixed_runs: bool,
    noise_profile: Path | None,
) -> None:
    """Diff two traces, or several runs per side (--base RUN... --candidate RUN...): headline,
    outliers, categories, copies, variant drift, top changes."""
    if rules and no_rules:
        raise UsageError("--rules and --no-rules contradict each other: give one of them")
    base_paths, candidate_paths = _sides(base, candidate, base_runs, candidate_runs, rules or ())
    history = api.history_spec(base_paths)
    # A history store is an input too: no -o may write over it.
    store = [api.history_store_path(history)] if history is not None else []
    inputs = [*base_paths, *candidate_paths, *store, *(rules or ()), phases, noise_profile, keep_export]
    _check_outputs(output or (), inputs)
    # An unknown extension, or a format whose extra is missing, fails before any trace is read.
    for want in (fmt, *(format_for(o) for o in output or () if not o.is_dir())):
        require(want)
    diff_options = api.DiffOptions(
        settings=settings,
        scope=scope_args.options(),
        phases=phases,
        by=by,
        strict=strict,
        require_same_gpu=require_same_gpu,
        noise_profile=noise_profile,
        keep_export=keep_export,
        mixed_runs=mixed_runs,
    )
    with progress.reading(quiet) as report_progress:
        report = api.diff(
            base_paths,
            candidate_paths,
            None if no_rules else (rules or ["default"]),
            diff_options,
            progress=report_progress,
            notify=notify,
            warn=lambda message: stderr(message, "warning"),
        )
    note_unmangled(names, report.diff.base, report.diff.candidate)
    _publish(report, fmt, output or (), width, details, names)


def _publish(
    report: Report, fmt: Format, output: Sequence[Path], width: int | None, details: bool, names: Names
) -> None:
    """The report on stdout, in every ``-o`` file and, on GitHub, as annotations; exits
    with the verdict's code (or the write error's, when a file could not be written)."""
    sys.stdout.write(render(report, fmt, width=layout.columns(width, sys.stdout), details=details, names=names))
    lost = []
    for path in output:
        try:
            if path.is_dir():
                from nsysdiff.render import csv_report

                csv_report.write_dir(report, path, names=names)
                continue
            # A file keeps every section: it is read later, not on one screen.
            text = render(report, format_for(path), width=layout.columns(width, None), details=True, names=names)
            write(text, path)
        except NsysdiffError as e:  # the report is out: the verdict keeps its exit code
            stderr(str(e))
            lost.append(str(e))
    if os.environ.get("GITHUB_ACTIONS") == "true" or fmt is Format.github:
        from nsysdiff.render import github

        if fmt is not Format.github:
            sys.stdout.write(github.render(report))
        github.publish(report, os.environ)
    raise click.exceptions.Exit(outputs.settle(int(report.exit_code), lost))


def _check_outputs(paths: Sequence[Path], inputs: Sequence[Path | str | None]) -> None:
    """Every ``-o`` can be written and is no input, before any trace is read."""
    from nsysdiff.render import csv_report

    given = outputs.existing(inputs)
    outputs.github_files(os.environ, given)
    for path in paths:
        if path.is_dir():
            outputs.directory(path, given)
            outputs.files_in(path, csv_report.FILE_NAMES, given)
        else:
            outputs.file(path, given)


def _sides(
    base: Path | None,
    candidate: Path | None,
    base_runs: list[Path] | None,
    candidate_runs: list[Path] | None,
    rules: Sequence[str],
) -> tuple[list[Path], list[Path]]:
    """The runs of each side: --base/--candidate where given, else BASE and CANDIDATE in order."""
    positional = [p for p in (base, candidate) if p is not None]
    sides = []
    for runs in (base_runs, candidate_runs):
        sides.append(list(runs) if runs else positional[:1])
        positional = positional if runs else positional[1:]
    if positional:
        raise UsageError(
            f"{positional[0]}: one path too many; give BASE CANDIDATE, or --base RUN... --candidate RUN... "
            "(--base and --candidate take every path up to the next option)"
        )
    for name, runs in zip(("BASE", "CANDIDATE"), sides, strict=True):
        if not runs:
            _check_no_trace_in(rules)
            # Several runs: name the option; else the usage line, as click words it.
            option = f" or --{name.lower()} RUN..." if base_runs or candidate_runs else ""
            raise UsageError(
                f"missing {name}{option}: the usage is 'nsysdiff diff [OPTIONS] BASE CANDIDATE' "
                "(see 'nsysdiff diff --help')"
            )
    return sides[0], sides[1]


def _check_no_trace_in(rules: Sequence[str]) -> None:
    """A side is missing because ``--rules`` took a trace: say that, not "missing CANDIDATE"."""
    from nsysdiff.rules.config import trace_given_as_rules

    for spec in rules:
        reason = trace_given_as_rules(spec)
        if reason is not None:
            raise UsageError(f"--rules {spec}: {reason}")
