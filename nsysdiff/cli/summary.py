"""``nsysdiff summary``: the census of one trace, or the ranks of one job side by side."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from nsysdiff import api
from nsysdiff.cli import options, outputs
from nsysdiff.cli.options import ScopeArgs, SummaryFormat, note_unmangled, write
from nsysdiff.cli.root import app, handled, notify
from nsysdiff.errors import UsageError
from nsysdiff.render import layout
from nsysdiff.render import summary as summary_render
from nsysdiff.render.names import Names
from nsysdiff.trace import progress, sides
from nsysdiff.trace.launches import Grouping


@app.command("summary")
@handled
@options.paths(
    "traces",
    "TRACE...",
    "An nsys SQLite export, an .nsys-rep report or a saved fingerprint; several: the ranks of one "
    "job, one per trace (per-rank figures and the collective skew).",
)
@options.fmt(SummaryFormat, "Output format.")
@options.top("Rows in the top-kernels and NVTX tables.", 20)
@options.output("FILE", "Write to FILE.")
@options.width
@options.quiet
@options.names
@options.by
@options.scope_options
@options.phases
@options.keep_export
@click.option(
    "--ranks",
    "force_ranks",
    is_flag=True,
    help="Show several traces as the ranks of one job even when they do not look like one "
    "(other GPUs, sessions started apart, other programs).",
)
def summary(
    traces: list[Path],
    fmt: SummaryFormat,
    top: int,
    output: Path | None,
    width: int | None,
    quiet: bool,
    names: Names,
    by: Grouping,
    scope_args: ScopeArgs,
    phases: Path | None,
    keep_export: Path | None,
    force_ranks: bool,
) -> None:
    """The census of one trace: metadata, totals, top kernels, categories, copies, NVTX; of
    several traces, the ranks of one job: per-rank figures and the collective skew."""
    if output is not None:
        outputs.file(output, outputs.existing([*traces, phases, keep_export]))
    if len(traces) > 1:
        _job_summary(
            traces,
            fmt,
            output,
            width,
            keep_export,
            quiet,
            force_ranks,
            given=[
                o
                for o, v in (
                    ("--window", scope_args.window),
                    ("--nvtx", scope_args.nvtx),
                    ("--per", scope_args.per),
                    ("--phases", phases),
                    ("--skip-first", scope_args.skip_first),
                    ("--by", by is not Grouping.name),
                )
                if v
            ],
        )
        return
    trace = traces[0]
    opts = scope_args.options(phases_file=phases)
    with progress.reading(quiet) as report_progress:
        fp = sides.read_one(
            lambda: api.load(trace, opts, progress=report_progress, by=by, keep_export=keep_export, notify=notify)
        )
    if fmt is SummaryFormat.json:
        write(summary_render.render_json(fp), output)  # names every way, no note needed
        return
    note_unmangled(names, fp)
    if fmt is SummaryFormat.markdown:
        write(summary_render.render_markdown(fp, top=top, names=names), output)
    else:
        stream = sys.stdout if output is None else None
        write(summary_render.render_plain(fp, layout.columns(width, stream), top=top, names=names), output)


def _job_summary(
    traces: list[Path],
    fmt: SummaryFormat,
    output: Path | None,
    width: int | None,
    keep_export: Path | None,
    quiet: bool,
    force: bool,
    given: list[str],
) -> None:
    """``summary`` of several traces: the ranks of one job side by side."""
    from nsysdiff.compare.ranks import view
    from nsysdiff.render import ranks as ranks_render

    if given:
        raise UsageError(f"{given[0]} applies to one trace; several traces are summarised as the ranks of one job")
    with progress.reading(quiet) as report_progress:
        v = view(
            sides.read_one(
                lambda: api.load_job(
                    traces, progress=report_progress, keep_export=keep_export, notify=notify, force=force
                )
            )
        )
    assert v is not None  # two traces are at least two ranks (one without kernels ran nothing)
    sources = [str(p) for p in traces]
    if fmt is SummaryFormat.json:
        write(ranks_render.render_job_json(v, sources), output)
    elif fmt is SummaryFormat.markdown:
        write(ranks_render.render_job_markdown(v, sources), output)
    else:
        stream = sys.stdout if output is None else None
        write(ranks_render.render_job_plain(v, sources, layout.columns(width, stream)), output)
