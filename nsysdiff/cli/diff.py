"""``nsysdiff diff``: two traces, or several runs per side, compared and judged by the rules;
the report on stdout and in any ``--output`` files, the verdict as the exit code."""

from __future__ import annotations

import dataclasses
import os
import sys
from collections.abc import Sequence
from datetime import date
from pathlib import Path
from typing import Any

import click

from nsysdiff import api
from nsysdiff.cli import options, outputs
from nsysdiff.cli.options import (
    note_unmangled,
    ratio,
    share,
    write,
    z_score,
)
from nsysdiff.cli.root import app, handled, notify, stderr
from nsysdiff.compare import comparability, rundiff
from nsysdiff.compare.diff import Settings
from nsysdiff.errors import InconclusiveError, NsysdiffError, UsageError
from nsysdiff.fingerprint import scope
from nsysdiff.render import Format, format_for, layout, render, require
from nsysdiff.render.names import Names
from nsysdiff.trace import progress, sides
from nsysdiff.trace.launches import Grouping

_DEFAULTS = Settings()


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
@click.option(
    "--base",
    "base_runs",
    multiple=True,
    type=options.PATH,
    callback=options.listed,
    metavar="RUN...",
    help="Runs of the base build (traces, reports, fingerprints, run sets): every path up to the next "
    "option, so a shell glob works; repeatable. Instead of BASE. Or history:STORE@REF~N: the last N "
    "runs of REF in a history store comparable with the candidate (docs/history.md).",
)
@click.option(
    "--candidate",
    "candidate_runs",
    multiple=True,
    type=options.PATH,
    callback=options.listed,
    metavar="RUN...",
    help="Runs of the candidate build, as --base. Instead of CANDIDATE.",
)
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
    "Also write the report to FILE, format from the extension (.txt .md .json .xml .csv), "
    "or one CSV per table into an existing DIR; repeatable.",
    multiple=True,
    callback=options.listed,
)
@click.option(
    "--z-threshold",
    type=z_score,
    metavar="Z",
    default=_DEFAULTS.z_threshold,
    help="Outlier: minimum |modified z-score| of a kernel's log ratio.",
)
@click.option(
    "--min-deviation",
    type=ratio,
    metavar="RATIO",
    default=_DEFAULTS.min_deviation,
    help="Outlier: minimum ratio beyond the overall scale, either way (1.25x).",
)
@click.option(
    "--min-share",
    type=share,
    metavar="SHARE",
    default=_DEFAULTS.min_share,
    help="Outlier: minimum share of either side's kernel time (0.1% or 0.001).",
)
@click.option(
    "--noise",
    type=ratio,
    metavar="RATIO",
    default=_DEFAULTS.noise,
    help="Total-time ratios within [1/RATIO, RATIO] count as unchanged (1.05x).",
)
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
    z_threshold: float,
    min_deviation: float,
    min_share: float,
    noise: float,
    width: int | None,
    details: bool,
    names: Names,
    by: Grouping,
    quiet: bool,
    scope_args: options.ScopeArgs,
    phases: Path | None,
    keep_export: Path | None,
    require_same_gpu: bool,
    noise_profile: Path | None,
) -> None:
    """Diff two traces, or several runs per side (--base RUN... --candidate RUN...): headline,
    outliers, categories, copies, variant drift, top changes."""
    from nsysdiff import rules as rule_engine
    from nsysdiff.rules import waivers

    if rules and no_rules:
        raise UsageError("--rules and --no-rules contradict each other: give one of them")
    settings = Settings(z_threshold=z_threshold, min_deviation=min_deviation, min_share=min_share, noise=noise)
    base_paths, candidate_paths = _sides(base, candidate, base_runs, candidate_runs)
    history = _history_spec(base_paths)
    # A history store is an input too: no -o may write over it.
    store = [api.history_store_path(history)] if history is not None else []
    _check_outputs(
        output or (), [*base_paths, *candidate_paths, *store, *(rules or ()), phases, noise_profile, keep_export]
    )
    # An unknown extension, or a format whose extra is missing, fails before any trace is read.
    for want in (fmt, *(format_for(o) for o in output or () if not o.is_dir())):
        require(want)
    # Rule files are validated before any trace is read: a typo fails in milliseconds.
    ruleset = None if no_rules else rule_engine.load_rules(rules or ["default"])
    if ruleset is not None:
        ruleset = _with_noise(ruleset, noise_profile)
        if not ruleset.rules:
            stderr(
                f"{', '.join(ruleset.sources)}: no rule to judge with: the verdict is inconclusive (exit 3), "
                "not a pass; give a pack or a file with rules, or --no-rules to report only",
                "warning",
            )
    elif noise_profile is not None:
        raise UsageError("--noise-profile judges rules; --no-rules judges none: give one of them")
    opts = scope_args.options(
        phases_file=phases,
        phases=ruleset.phases if ruleset else None,
        phases_source=", ".join(ruleset.sources) if ruleset else "rules",
        step_ranges=_step_ranges(ruleset),
    )
    with progress.reading(quiet) as report_progress:

        def read(o: scope.ScopeOptions) -> tuple[Any, Any]:
            if history is not None:
                # The candidate first: its GPU, scope and graph mode pick the comparable history.
                c = sides.read_one(
                    lambda: api.load_runs(
                        candidate_paths,
                        o,
                        progress=report_progress,
                        side="candidate",
                        by=by,
                        keep_export=keep_export,
                        notify=notify,
                    )
                )
                return api.history_baseline(history, c.runs[0]), c
            return sides.read_both(
                lambda: api.load_runs(
                    base_paths, o, progress=report_progress, side="base", by=by, keep_export=keep_export, notify=notify
                ),
                lambda: api.load_runs(
                    candidate_paths,
                    o,
                    progress=report_progress,
                    side="candidate",
                    by=by,
                    keep_export=keep_export,
                    notify=notify,
                ),
            )

        whole = dataclasses.replace(opts, step_ranges=())
        try:
            b_runs, c_runs = read(opts)
        except InconclusiveError:
            if history is None or opts.per is not None or not opts.step_ranges:
                raise
            # No run in the history was read per the pack's step range: both sides whole,
            # the same fallback as a side without it (docs/steps.md).
            b_runs, c_runs = read(whole)
        if opts.per is None and opts.step_ranges and not scope.same_steps([*b_runs.runs, *c_runs.runs]):
            # The pack's step range on one side only (or beside a fingerprint saved without
            # it): both sides are read whole, the documented fallback (docs/steps.md).
            b_runs, c_runs = read(whole)
    # With several runs, the figures are the median runs' (docs/statistics.md).
    b, c = b_runs.runs[rundiff.median_run(b_runs)], c_runs.runs[rundiff.median_run(c_runs)]
    reasons, notes = comparability.assess(b, c, require_same_gpu=require_same_gpu)
    d = rundiff.compare_sides(b_runs, c_runs, settings)
    today = date.today()
    findings, results = rule_engine.evaluate(d, ruleset, today=today) if ruleset else ((), ())
    if ruleset is not None:
        for w in waivers.unmatched(findings, ruleset.waivers, today):
            stderr(f"{w.source}:{w.line}: waiver for rule {w.rule!r} matches no finding ({w.subject_text})", "warning")
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
    note_unmangled(names, b, c)
    columns = layout.columns(width, sys.stdout)
    sys.stdout.write(render(report, fmt, width=columns, details=details, names=names))
    lost = []
    for path in output or ():
        try:
            if path.is_dir():
                from nsysdiff.render import csv_report

                csv_report.write_dir(report, path, names=names)
                continue
            # A file keeps every section: it is read later, not on one screen.
            write(render(report, format_for(path), width=layout.columns(width, None), details=True, names=names), path)
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
    for path in paths:
        if path.is_dir():
            outputs.directory(path, given)
            outputs.files_in(path, csv_report.FILE_NAMES, given)
        else:
            outputs.file(path, given)


def _sides(
    base: Path | None, candidate: Path | None, base_runs: list[Path] | None, candidate_runs: list[Path] | None
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
            # Several runs: name the option; else the usage line, as click words it.
            option = f" or --{name.lower()} RUN..." if base_runs or candidate_runs else ""
            raise UsageError(
                f"missing {name}{option}: the usage is 'nsysdiff diff [OPTIONS] BASE CANDIDATE' "
                "(see 'nsysdiff diff --help')"
            )
    return sides[0], sides[1]


def _history_spec(paths: list[Path]) -> str | None:
    """``history:STORE@REF~N`` as the base side (docs/history.md), given alone."""
    specs = [str(p) for p in paths if str(p).startswith("history:")]
    if not specs:
        return None
    if len(paths) > 1:
        raise UsageError(f"{specs[0]}: a history baseline is the whole base side; give no other base run with it")
    return specs[0]


def _step_ranges(ruleset: Any) -> tuple[str, ...]:
    """The rule files' step range, unless their noise profile was made without steps: its
    runs would not be read alike with sides read per step (docs/steps.md)."""
    if ruleset is None or not ruleset.steps:
        return ()
    if ruleset.noise is not None and any(fp.scope.per is None for fp in ruleset.noise.runs.runs):
        return ()
    return tuple(ruleset.steps)


def _with_noise(ruleset: Any, profile: Path | None) -> Any:
    """The rule set judging against ``profile`` (else its files' own), checked before any trace is read."""
    from nsysdiff.rules import noise_limits

    if profile is not None:
        ruleset = noise_limits.attach(ruleset, api.load_noise_profile(profile))
    noise_limits.require(ruleset)
    return ruleset
