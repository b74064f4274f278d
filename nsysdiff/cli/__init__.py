"""The command line: a thin shell over :mod:`nsysdiff.api`.

The only module that imports typer or decides an exit code. ``nsysdiff A B`` is routed
to ``nsysdiff diff A B``.
"""

from __future__ import annotations

import difflib
import errno
import functools
import math
import os
import sys
import traceback
from collections.abc import Callable
from datetime import date
from enum import Enum
from pathlib import Path
from typing import Annotated, Any, TypeVar

import typer

from nsysdiff import __version__, api
from nsysdiff.cli import batch
from nsysdiff.compare import comparability, rundiff
from nsysdiff.compare.diff import Settings
from nsysdiff.errors import ExitCode, NsysdiffError, UsageError
from nsysdiff.fingerprint import runset, scope
from nsysdiff.fingerprint.model import Fingerprint, fingerprint_to_json
from nsysdiff.render import Format, format_for, layout, render
from nsysdiff.render import summary as summary_render
from nsysdiff.render.names import Names, unmangled
from nsysdiff.safe import neutral
from nsysdiff.trace import progress, sides
from nsysdiff.trace.launches import Grouping

# -h as well as --help, inherited by every command and group.
CONTEXT = {"help_option_names": ["-h", "--help"]}

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    rich_markup_mode=None,
    context_settings=CONTEXT,
    help="Diff two Nsight Systems traces (SQLite exports or saved fingerprints) and point at "
    "the change that is abnormal. `nsysdiff BASE CANDIDATE` is `nsysdiff diff BASE CANDIDATE`.",
    epilog="Exit codes: 0 pass, 1 regression, 2 bad input or usage, 3 inconclusive, 70 internal error.",
)

F = TypeVar("F", bound=Callable[..., Any])


class _PlainArgument(typer.core.TyperArgument):
    """An argument shown by its metavar alone: ``BASE``, not typer's ``{BASE}`` in the
    usage line and ``BASE <path>`` in the help (the metavar already says what to give)."""

    def _usage_display_name(self) -> str:
        name = self.display_name_raw if self.required else f"[{self.display_name_raw}]"
        return name if self.nargs == 1 or name.endswith("...") else f"{name}..."

    def display_type_rich(self, ctx: Any) -> str | None:
        return None


class _Command(typer.core.TyperCommand):
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


def _stderr(message: str, level: str = "error") -> None:
    print(f"nsysdiff: {level}: {one_line(message)}", file=sys.stderr)


def _notify(message: str) -> None:
    print(f"nsysdiff: {one_line(message)}", file=sys.stderr)


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


# --- option values ------------------------------------------------------------------
# typer calls these with the text given (and with the default); BadParameter becomes one
# usage line (see usage_line).


def _number(text: str, what: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise typer.BadParameter(f"{text!r} is not a number; {what}") from None
    if not math.isfinite(value):
        raise typer.BadParameter(f"{text!r} is not a finite number; {what}")
    return value


def _at_least(low: int, what: str) -> Callable[[str | int], int]:
    def parse(given: str | int) -> int:
        text = str(given)
        try:
            value = int(text)
        except ValueError:
            raise typer.BadParameter(f"{text!r} is not a whole number; {what}") from None
        if value < low:
            raise typer.BadParameter(f"{value} is too small; {what}")
        return value

    return parse


def _z_threshold(given: str | float) -> float:
    text = str(given)
    value = _number(text, "give a positive number such as 3.5")
    if value <= 0:
        raise typer.BadParameter(f"{text!r} is not positive; give a positive number such as 3.5")
    return value


def _ratio_at_least_one(given: str | float) -> float:
    """``1.25x`` or ``1.25``: a ratio of 1 or more (the README and rule files write the x)."""
    text = str(given)
    what = "give a ratio of at least 1, such as 1.25x"
    value = _number(text.strip().removesuffix("x"), what)
    if value < 1:
        raise typer.BadParameter(f"{text!r} is below 1; {what}")
    return value


def _share(given: str | float) -> float:
    """``0.1%`` or the fraction ``0.001``; a bare number of 1 or more is refused as ambiguous."""
    text = str(given)
    what = "give a percentage such as 0.1% or a fraction below 1 such as 0.001"
    t = text.strip()
    if t.endswith("%"):
        value = _number(t[:-1], what) / 100
    else:
        value = _number(t, what)
        if value >= 1:
            raise typer.BadParameter(f"{text!r} is not a share; {what} (did you mean {t}%?)")
    if not 0 <= value < 1:
        raise typer.BadParameter(f"{text!r} is not a share; {what}")
    return value


_width = _at_least(layout.MIN_WIDTH, f"give the report width in columns, at least {layout.MIN_WIDTH}")
_top = _at_least(1, "give the number of rows to show, at least 1")


class SummaryFormat(str, Enum):
    text = "text"
    markdown = "markdown"
    json = "json"


WidthOpt = Annotated[
    int | None,
    typer.Option(
        "--width",
        metavar="COLUMNS",
        parser=_width,
        help="Text width in columns, at least 40 (default: $COLUMNS, else the terminal's, else 80).",
    ),
]
QuietOpt = Annotated[
    bool, typer.Option("--quiet", "-q", help="No progress display on stderr while reading.")
]
ByOpt = Annotated[
    Grouping,
    typer.Option(
        "--by",
        metavar="|".join(g.value for g in Grouping),
        help="What makes launches one kernel: its name, or name+launch (name, grid and block, "
        "as nsys stats gpukernsum groups them).",
    ),
]
NamesOpt = Annotated[
    Names,
    typer.Option(
        "--names",
        metavar="|".join(n.value for n in Names),
        help="Kernel names: short (told apart by part of the signature where they collide), "
        "demangled, or mangled (nsys 2022.1 on; older exports keep their demangled names).",
    ),
]


def _note_unmangled(names: Names, *fps: Fingerprint) -> None:
    """Say once when ``--names mangled`` must show demangled names: the export has none."""
    if names is not Names.mangled:
        return
    missing = unmangled(*fps)
    if missing:
        _stderr(
            f"--names mangled: {', '.join(missing)} have no mangled name (nsys exports them "
            "from 2022.1 on); they show their demangled names",
            "note",
        )


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
KeepExportOpt = Annotated[
    Path | None,
    typer.Option(
        "--keep-export",
        metavar="DIR",
        help="An .nsys-rep input is exported to SQLite with nsys in a temporary directory; keep the export in DIR.",
    ),
]


@app.command(cls=_Command)
@handled
def summary(
    traces: Annotated[
        list[Path],
        typer.Argument(
            metavar="TRACE...",
            help="An nsys SQLite export, an .nsys-rep report or a saved fingerprint; several: the ranks of one "
            "job, one per trace (per-rank figures and the collective skew).",
        ),
    ],
    fmt: Annotated[
        SummaryFormat, typer.Option(
            "--format", "-f", metavar="|".join(f.value for f in SummaryFormat), help="Output format."
        )
    ] = SummaryFormat.text,
    top: Annotated[
        int, typer.Option(parser=_top, metavar="N", help="Rows in the top-kernels and NVTX tables.")
    ] = 20,
    output: Annotated[Path | None, typer.Option("--output", "-o", metavar="FILE", help="Write to FILE.")] = None,
    width: WidthOpt = None,
    quiet: QuietOpt = False,
    names: NamesOpt = Names.short,
    by: ByOpt = Grouping.name,
    window: WindowOpt = None,
    window_origin: OriginOpt = "kernel",
    skip_first: SkipOpt = 0,
    nvtx: NvtxOpt = None,
    per: PerOpt = None,
    phases: PhasesOpt = None,
    keep_export: KeepExportOpt = None,
) -> None:
    """The census of one trace: metadata, totals, top kernels, categories, copies, NVTX; of
    several traces, the ranks of one job: per-rank figures and the collective skew."""
    if len(traces) > 1:
        _job_summary(traces, fmt, output, width, keep_export, quiet,
                     given=[o for o, v in (("--window", window), ("--nvtx", nvtx), ("--per", per),
                                          ("--phases", phases), ("--skip-first", skip_first),
                                          ("--by", by is not Grouping.name)) if v])  # fmt: skip
        return
    trace = traces[0]
    opts = scope.options(
        window=window, window_origin=window_origin, skip_first=skip_first, nvtx=nvtx, per=per,
        phases_file=phases,
    )  # fmt: skip
    with progress.reading(quiet) as report_progress:
        fp = sides.read_one(
            lambda: api.load(trace, opts, progress=report_progress, by=by, keep_export=keep_export, notify=_notify)
        )
    if fmt is SummaryFormat.json:
        _write(summary_render.render_json(fp), output)  # names every way, no note needed
        return
    _note_unmangled(names, fp)
    if fmt is SummaryFormat.markdown:
        _write(summary_render.render_markdown(fp, top=top, names=names), output)
    else:
        stream = sys.stdout if output is None else None
        _write(summary_render.render_plain(fp, layout.columns(width, stream), top=top, names=names), output)


def _job_summary(
    traces: list[Path], fmt: SummaryFormat, output: Path | None, width: int | None, keep_export: Path | None,
    quiet: bool, given: list[str],
) -> None:
    """``summary`` of several traces: the ranks of one job side by side."""
    from nsysdiff.compare.ranks import view
    from nsysdiff.render import ranks as ranks_render

    if given:
        raise UsageError(f"{given[0]} applies to one trace; several traces are summarised as the ranks of one job")
    with progress.reading(quiet) as report_progress:
        v = view(sides.read_one(
            lambda: api.load_job(traces, progress=report_progress, keep_export=keep_export, notify=_notify)
        ))  # fmt: skip
    assert v is not None  # two traces are at least two ranks (one without kernels ran nothing)
    sources = [str(p) for p in traces]
    if fmt is SummaryFormat.json:
        _write(ranks_render.render_job_json(v, sources), output)
    elif fmt is SummaryFormat.markdown:
        _write(ranks_render.render_job_markdown(v, sources), output)
    else:
        stream = sys.stdout if output is None else None
        _write(ranks_render.render_job_plain(v, sources, layout.columns(width, stream)), output)


@app.command(cls=_Command)
@handled
def fingerprint(
    traces: Annotated[
        list[Path],
        typer.Argument(
            metavar="TRACE...",
            help="nsys SQLite exports or .nsys-rep reports (saved fingerprints and run sets too with --run-set).",
        ),
    ],
    output: Annotated[
        Path | None,
        typer.Option(
            "--output", "-o", metavar="FILE|DIR",
            help="Write to FILE (default: stdout); with several traces and no --run-set, a directory "
            "that receives DIR/STEM.json for each.",
        ),
    ] = None,
    jobs: Annotated[
        int,
        typer.Option("--jobs", "-j", metavar="N", min=1, help="Fingerprint N traces at once in local processes."),
    ] = 1,
    scheduler: Annotated[
        str | None,
        typer.Option(
            "--scheduler", metavar="ADDRESS",
            help="Run on an existing Dask cluster (e.g. tcp://host:8786); needs nsysdiff[dask].",
        ),
    ] = None,
    window: WindowOpt = None,
    window_origin: OriginOpt = "kernel",
    skip_first: SkipOpt = 0,
    nvtx: NvtxOpt = None,
    per: PerOpt = None,
    phases: PhasesOpt = None,
    keep_export: KeepExportOpt = None,
    run_set: Annotated[
        bool,
        typer.Option(
            "--run-set",
            help="Write all TRACEs, runs of one build, as one run-set file (a multi-run baseline); "
            "they must share scope, graph mode and GPU model.",
        ),
    ] = False,
) -> None:
    """Reduce traces to small versioned JSON fingerprints (CI baseline artifacts)."""
    opts = scope.options(
        window=window, window_origin=window_origin, skip_first=skip_first, nvtx=nvtx, per=per,
        phases_file=phases,
    )  # fmt: skip
    if run_set:
        runs = sides.read_one(lambda: api.load_runs(traces, opts, keep_export=keep_export, notify=_notify))
        _write(runset.run_set_to_json(runs), output)
        return
    if len(traces) == 1 and scheduler is None and (output is None or not output.is_dir()):
        fp = sides.read_one(lambda: api.load(traces[0], opts, keep_export=keep_export, notify=_notify))
        _write(fingerprint_to_json(fp), output)
        return
    if output is None:
        raise UsageError(
            f"{len(traces)} traces given: -o DIR writes one DIR/STEM.json each, --run-set one run-set file"
        )
    jobs_planned = batch.plan(traces, output)
    sides.read_one(lambda: batch.run(jobs_planned, opts, workers=jobs, scheduler=scheduler))


@app.command(cls=_Command)
@handled
def noise(
    runs: Annotated[
        list[Path],
        typer.Argument(
            metavar="RUN...",
            help="A/A runs of one build: traces, reports, fingerprints or run sets, at least 2 runs in all.",
        ),
    ],
    output: Annotated[
        Path | None,
        typer.Option("--output", "-o", metavar="FILE", help="Write the noise profile (JSON) to FILE."),
    ] = None,
    fmt: Annotated[
        SummaryFormat,
        typer.Option(
            "--format", "-f", metavar="|".join(f.value for f in SummaryFormat),
            help="What stdout gets: the profile as text, markdown, or its JSON document.",
        ),
    ] = SummaryFormat.text,
    top: Annotated[int, typer.Option(parser=_top, metavar="N", help="Rows of the noisiest keys.")] = 20,
    width: WidthOpt = None,
    quiet: QuietOpt = False,
    window: WindowOpt = None,
    window_origin: OriginOpt = "kernel",
    skip_first: SkipOpt = 0,
    nvtx: NvtxOpt = None,
    per: PerOpt = None,
    keep_export: KeepExportOpt = None,
) -> None:
    """Measure run-to-run noise per key from A/A runs of one build (for noise-relative rules)."""
    from nsysdiff.fingerprint import noise as noise_model
    from nsysdiff.render import noise as noise_render

    opts = scope.options(window=window, window_origin=window_origin, skip_first=skip_first, nvtx=nvtx, per=per)
    with progress.reading(quiet) as report_progress:
        profile = sides.read_one(
            lambda: api.noise_profile(runs, opts, progress=report_progress, keep_export=keep_export, notify=_notify)
        )
    document = noise_model.profile_to_json(profile)
    if output is not None:
        _write(document, output)
    if fmt is SummaryFormat.json:
        sys.stdout.write(document)
    elif fmt is SummaryFormat.markdown:
        sys.stdout.write(noise_render.render_markdown(profile, top=top))
    else:
        sys.stdout.write(noise_render.render_text(profile, layout.columns(width, sys.stdout), top=top))


_DEFAULTS = Settings()


@app.command(cls=_Command)
@handled
def diff(
    base: Annotated[
        Path | None,
        typer.Argument(
            metavar="BASE", show_default=False,
            help="Base: an nsys SQLite export, an .nsys-rep report, a saved fingerprint or run set.",
        ),
    ] = None,
    candidate: Annotated[
        Path | None,
        typer.Argument(
            metavar="CANDIDATE", show_default=False,
            help="Candidate: an nsys SQLite export, an .nsys-rep report, a saved fingerprint or run set.",
        ),
    ] = None,
    base_runs: Annotated[
        list[Path] | None,
        typer.Option(
            "--base", metavar="RUN...",
            help="Runs of the base build (traces, reports, fingerprints, run sets): every path up to the next "
            "option, so a shell glob works; repeatable. Instead of BASE.",
        ),
    ] = None,
    candidate_runs: Annotated[
        list[Path] | None,
        typer.Option(
            "--candidate", metavar="RUN...",
            help="Runs of the candidate build, as --base. Instead of CANDIDATE.",
        ),
    ] = None,
    rules: Annotated[
        list[str] | None,
        typer.Option(
            "--rules",
            "-r",
            metavar="PACK|FILE",
            help="A shipped rule pack by name or a YAML rule file; repeatable. Default: the `default` pack.",
        ),
    ] = None,
    no_rules: Annotated[
        bool,
        typer.Option("--no-rules", help="Report without judging (exit 0 unless the input is bad)."),
    ] = False,
    strict: Annotated[bool, typer.Option("--strict", help="Warnings fail the build too.")] = False,
    fmt: Annotated[
        Format,
        typer.Option(
            "--format", "-f", metavar="|".join(f.value for f in Format), help="Format printed to stdout."
        ),
    ] = Format.text,
    output: Annotated[
        list[Path] | None,
        typer.Option(
            "--output",
            "-o",
            metavar="FILE",
            help="Also write the report to FILE, format from the extension (.txt .md .json .xml .csv), "
            "or one CSV per table into an existing DIR; repeatable.",
        ),
    ] = None,
    z_threshold: Annotated[
        float,
        typer.Option(
            parser=_z_threshold, metavar="Z", help="Outlier: minimum |modified z-score| of a kernel's log ratio."
        ),
    ] = _DEFAULTS.z_threshold,
    min_deviation: Annotated[
        float,
        typer.Option(
            parser=_ratio_at_least_one,
            metavar="RATIO",
            help="Outlier: minimum ratio beyond the overall scale, either way (1.25x).",
        ),
    ] = _DEFAULTS.min_deviation,
    min_share: Annotated[
        float,
        typer.Option(
            parser=_share,
            metavar="SHARE",
            help="Outlier: minimum share of either side's kernel time (0.1% or 0.001).",
        ),
    ] = _DEFAULTS.min_share,
    noise: Annotated[
        float,
        typer.Option(
            parser=_ratio_at_least_one,
            metavar="RATIO",
            help="Total-time ratios within [1/RATIO, RATIO] count as unchanged (1.05x).",
        ),
    ] = _DEFAULTS.noise,
    width: WidthOpt = None,
    details: Annotated[
        bool,
        typer.Option("--details", help="Text: every section, not only the first screen."),
    ] = False,
    names: NamesOpt = Names.short,
    by: ByOpt = Grouping.name,
    quiet: QuietOpt = False,
    window: WindowOpt = None,
    window_origin: OriginOpt = "kernel",
    skip_first: SkipOpt = 0,
    nvtx: NvtxOpt = None,
    per: PerOpt = None,
    phases: PhasesOpt = None,
    keep_export: KeepExportOpt = None,
    require_same_gpu: Annotated[
        bool,
        typer.Option(
            "--require-same-gpu",
            help="Different GPU models (or counts) make the verdict inconclusive instead of a note.",
        ),
    ] = False,
    noise_profile: Annotated[
        Path | None,
        typer.Option(
            "--noise-profile",
            metavar="FILE",
            help="Noise profile of the base build (nsysdiff noise): budgets in noise widths, and a limit "
            "within the noise is inconclusive. Overrides noise_profile: in rule files.",
        ),
    ] = None,
) -> None:
    """Diff two traces, or several runs per side (--base RUN... --candidate RUN...): headline,
    outliers, categories, copies, variant drift, top changes."""
    from nsysdiff import rules as rule_engine
    from nsysdiff.rules import waivers

    if rules and no_rules:
        raise UsageError("--rules and --no-rules contradict each other: give one of them")
    settings = Settings(z_threshold=z_threshold, min_deviation=min_deviation, min_share=min_share, noise=noise)
    for path in (o for o in output or () if not o.is_dir()):
        format_for(path)  # an unknown extension fails before any trace is read
    # Rule files are validated before any trace is read: a typo fails in milliseconds.
    ruleset = None if no_rules else rule_engine.load_rules(rules or ["default"])
    if ruleset is not None:
        ruleset = _with_noise(ruleset, noise_profile)
    elif noise_profile is not None:
        raise UsageError("--noise-profile judges rules; --no-rules judges none: give one of them")
    opts = scope.options(
        window=window, window_origin=window_origin, skip_first=skip_first, nvtx=nvtx, per=per,
        phases_file=phases, phases=ruleset.phases if ruleset else None,
        phases_source=", ".join(ruleset.sources) if ruleset else "rules",
    )  # fmt: skip
    base_paths, candidate_paths = _sides(base, candidate, base_runs, candidate_runs)
    with progress.reading(quiet) as report_progress:
        b_runs, c_runs = sides.read_both(
            lambda: api.load_runs(base_paths, opts, progress=report_progress, side="base", by=by,
                                  keep_export=keep_export, notify=_notify),
            lambda: api.load_runs(candidate_paths, opts, progress=report_progress, side="candidate", by=by,
                                  keep_export=keep_export, notify=_notify),
        )  # fmt: skip
    # With several runs, the figures are the median runs' (docs/statistics.md).
    b, c = b_runs.runs[rundiff.median_run(b_runs)], c_runs.runs[rundiff.median_run(c_runs)]
    reasons, notes = comparability.assess(b, c, require_same_gpu=require_same_gpu)
    d = rundiff.compare_sides(b_runs, c_runs, settings)
    today = date.today()
    findings, results = rule_engine.evaluate(d, ruleset, today=today) if ruleset else ((), ())
    if ruleset is not None:
        for w in waivers.unmatched(findings, ruleset.waivers, today):
            _stderr(f"{w.source}:{w.line}: waiver for rule {w.rule!r} matches no finding ({w.subject_text})", "warning")
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
    _note_unmangled(names, b, c)
    columns = layout.columns(width, sys.stdout)
    sys.stdout.write(render(report, fmt, width=columns, details=details, names=names))
    for path in output or ():
        if path.is_dir():
            from nsysdiff.render import csv_report

            csv_report.write_dir(report, path, names=names)
            continue
        # A file keeps every section: it is read later, not on one screen.
        _write(render(report, format_for(path), width=layout.columns(width, None), details=True,
                      names=names), path)  # fmt: skip
    if os.environ.get("GITHUB_ACTIONS") == "true" or fmt is Format.github:
        from nsysdiff.render import github

        if fmt is not Format.github:
            sys.stdout.write(github.render(report))
        github.publish(report, os.environ)
    raise typer.Exit(int(report.exit_code))


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


def _with_noise(ruleset: Any, profile: Path | None) -> Any:
    """The rule set judging against ``profile`` (else its files' own), checked before any trace is read."""
    from nsysdiff.rules import noise_limits

    if profile is not None:
        ruleset = noise_limits.attach(ruleset, api.load_noise_profile(profile))
    noise_limits.require(ruleset)
    return ruleset


rules_app = typer.Typer(
    no_args_is_help=True,
    rich_markup_mode=None,
    context_settings=CONTEXT,
    help="Rule packs and kinds: list the shipped packs, explain a rule or a kind, validate files.",
)
app.add_typer(rules_app, name="rules")


@rules_app.command("list", cls=_Command)
@handled
def rules_list() -> None:
    """The shipped rule packs, with their rule counts and descriptions."""
    from nsysdiff.rules import catalog

    lines = []
    for p in catalog.packs():
        extends = f" (extends {', '.join(p.extends)})" if p.extends else ""
        lines.append(f"{p.name:<17} {p.rules:>3} {'rule ' if p.rules == 1 else 'rules'}{extends}  {p.description}")
    sys.stdout.write(layout.fit("\n".join(lines) + "\n", layout.columns(None, sys.stdout)))


@rules_app.command("explain", cls=_Command)
@handled
def rules_explain(
    name: Annotated[
        str,
        typer.Argument(
            metavar="NAME",
            help="A shipped pack, a rule id of a shipped pack, a kind (budget, ...), waivers or noise_profile.",
        ),
    ],
) -> None:
    """Print the documentation of a pack, a rule, a rule kind and its options, or waivers."""
    from nsysdiff.rules import catalog

    sys.stdout.write(layout.fit(catalog.explain(name), layout.columns(None, sys.stdout)))


@rules_app.command("validate", cls=_Command)
@handled
def rules_validate(
    files: Annotated[
        list[str],
        typer.Argument(metavar="FILE|PACK...", help="Rule files or pack names, loaded together as --rules does."),
    ],
) -> None:
    """Check rule files without reading a trace: exit 0 and 'ok', or exit 2 and the error."""
    from nsysdiff import rules as rule_engine

    ruleset = rule_engine.load_rules(files)
    rules, waivers = len(ruleset.rules), len(ruleset.waivers)
    print(f"ok: {', '.join(files)} ({rules} rule{'s' * (rules != 1)}, {waivers} waiver{'s' * (waivers != 1)})")


def _commands() -> list[str]:
    names = [c.name or (c.callback.__name__ if c.callback else "") for c in app.registered_commands]
    return sorted({*names, *(g.name for g in app.registered_groups if g.name)})


def route(argv: list[str]) -> list[str]:
    """``nsysdiff A B ...`` and ``nsysdiff --base ...`` mean ``nsysdiff diff ...``.

    A first word that is neither a command nor an existing path but is close to a command
    (``sumary``) is a typo, not a trace: say so instead of "no such file".
    """
    commands = _commands()
    if argv and argv[0].split("=")[0] in _RUNS_OPTIONS:
        return _runs_options(["diff", *argv])  # nsysdiff --base RUN... --candidate RUN...
    if argv and not argv[0].startswith("-") and argv[0] not in commands:
        if not os.path.lexists(argv[0]):
            close = difflib.get_close_matches(argv[0], commands, n=1, cutoff=0.7)
            if close:
                raise UsageError(
                    f"{argv[0]!r} is no command and no file; did you mean 'nsysdiff {close[0]}'? "
                    f"(commands: {', '.join(commands)})"
                )
        return _runs_options(["diff", *argv])
    return _runs_options(argv) if argv and argv[0] == "diff" else argv


_RUNS_OPTIONS = ("--base", "--candidate")


def _runs_options(argv: list[str]) -> list[str]:
    """``--base a b c`` as ``--base a --base b --base c``: each of --base and --candidate
    takes every path up to the next option (a shell glob's expansion), which click can't."""
    out: list[str] = []
    taking: str | None = None
    bare = False  # the last --base/--candidate has no path yet
    for i, word in enumerate(argv):
        if word == "--":
            return out + ([taking] if bare and taking else []) + argv[i:]
        if word.startswith("-"):
            if bare and taking:
                out.append(taking)  # no path: click says what is missing
            taking = word if word in _RUNS_OPTIONS else None
            bare = taking is not None
            if taking is None:
                out.append(word)
            continue
        if taking is not None:
            out.append(taking)
            bare = False
        out.append(word)
    if bare and taking:
        out.append(taking)
    return out


def _click_class(name: str) -> type[BaseException]:
    """A click exception class as typer uses it (newer typer vendors its own click)."""
    for cls in typer.BadParameter.__mro__:
        if cls.__name__ == name:
            return cls
    raise AssertionError(f"typer has no {name}")


_USAGE_ERROR = _click_class("UsageError")
_CLICK_ERROR = _click_class("ClickException")

# typer's own wording for values it converts, rewritten to say what to type.
_REWORDED = (
    ("Value error, ", ""),
    ("Input should be a valid integer, unable to parse string as an integer", "expected a whole number"),
    ("Input should be a valid number, unable to parse string as a number", "expected a number"),
)


def usage_line(e: BaseException) -> str:
    """A click usage error as one line: the option, what is wrong, and where help is."""
    ctx = getattr(e, "ctx", None)
    command = ctx.command_path if ctx is not None else "nsysdiff"
    message = str(getattr(e, "message", "") or e)
    for old, new in _REWORDED:
        message = message.replace(old, new)
    param = getattr(e, "param", None)
    if param is not None and type(e).__name__ == "MissingParameter":
        # typer says "Missing parameter: candidate"; say what to type instead.
        usage = " ".join(ctx.command.collect_usage_pieces(ctx)) if ctx is not None else ""
        what = param.metavar or (param.name or "").upper()
        message = f"missing {what}: the usage is '{command} {usage}'" if usage else f"missing {what}"
    elif param is not None and type(e).__name__ == "BadParameter":
        opts = [o for o in getattr(param, "opts", []) if o.startswith("--")]
        name = opts[0] if opts else (param.metavar or param.name or "").upper()
        message = f"{name}: {message}"
    return f"{one_line(message).rstrip('.')} (see '{command} --help')"


class _Stdout:
    """``sys.stdout`` that survives its reader: a closed pipe or a full disk ends the output, not the run.

    ``nsysdiff A B | head -1`` closes the pipe early; click would turn the EPIPE into exit 1,
    which CI reads as "regression". Here the first write error is remembered and the file
    descriptor pointed at /dev/null (so that buffered text and the interpreter's last flush
    go nowhere), and the command finishes with its own exit code.
    """

    def __init__(self, stream: Any) -> None:
        self._stream = stream
        self.error: OSError | None = None

    def write(self, text: str) -> int:
        if self.error is None:
            try:
                return int(self._stream.write(text))
            except OSError as e:
                self._lost(e)
        return len(text)

    def flush(self) -> None:
        if self.error is None:
            try:
                self._stream.flush()
            except OSError as e:
                self._lost(e)

    def _lost(self, e: OSError) -> None:
        self.error = e
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, self._stream.fileno())
            os.close(devnull)
        except (OSError, ValueError):
            pass

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def _occupy_closed_descriptors() -> None:
    """``nsysdiff ... >&-``: give fd 1 and 2 to /dev/null before anything opens a file.

    Else the next file opened (a trace, a temporary export) would get descriptor 1, and
    the report would be written into it.
    """
    for fd, name in ((0, "stdin"), (1, "stdout"), (2, "stderr")):
        try:
            os.fstat(fd)
        except OSError:
            got = os.open(os.devnull, os.O_RDONLY if fd == 0 else os.O_WRONLY)
            if got != fd:
                os.dup2(got, fd)
                os.close(got)
            setattr(sys, name, open(fd, "r" if fd == 0 else "w", encoding="utf-8", closefd=False))  # noqa: SIM115


def _run(argv: list[str]) -> int:
    try:
        rv = app(args=route(argv), prog_name="nsysdiff", standalone_mode=False)
    except _USAGE_ERROR as e:
        _stderr(usage_line(e))
        return int(ExitCode.BAD_INPUT)
    except _CLICK_ERROR as e:
        _stderr(usage_line(e))
        return int(ExitCode.BAD_INPUT)
    except typer.Exit as e:
        return int(e.exit_code)
    except (KeyboardInterrupt, typer.Abort):
        print("nsysdiff: interrupted", file=sys.stderr)
        return 130
    except NsysdiffError as e:
        _stderr(str(e))
        return int(e.exit_code)
    except Exception:
        # A bug, not a verdict: never 1, which CI reads as "regression".
        print("nsysdiff: internal error (please report it):", file=sys.stderr)
        traceback.print_exc()
        return int(ExitCode.INTERNAL)
    if rv == 130:  # typer turns Ctrl-C into Exit(130) and returns it
        print("nsysdiff: interrupted", file=sys.stderr)
    return rv if isinstance(rv, int) else 0


def main() -> None:
    _occupy_closed_descriptors()
    out = _Stdout(sys.stdout)
    sys.stdout = out
    try:
        code = _run(sys.argv[1:])
        out.flush()
    except KeyboardInterrupt:
        print("nsysdiff: interrupted", file=sys.stderr)
        code = 130
    finally:
        sys.stdout = out._stream
    if out.error is not None and out.error.errno != errno.EPIPE and code == int(ExitCode.PASS):
        # A full disk lost the report: that is not a pass. (A reader that left, EPIPE, is.)
        _stderr(f"can't write to stdout ({out.error.strerror})")
        code = int(ExitCode.BAD_INPUT)
    sys.exit(code)
