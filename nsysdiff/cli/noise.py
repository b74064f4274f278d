"""``nsysdiff noise``: the run-to-run noise profile of one build, from its A/A runs."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from nsysdiff import api
from nsysdiff.cli import outputs
from nsysdiff.cli.options import (
    KeepExportOpt,
    NvtxOpt,
    OriginOpt,
    PerOpt,
    QuietOpt,
    SkipOpt,
    SummaryFormat,
    WidthOpt,
    WindowOpt,
    rows,
    write,
)
from nsysdiff.cli.root import Command, app, handled, notify
from nsysdiff.fingerprint import scope
from nsysdiff.render import layout
from nsysdiff.trace import progress, sides


@app.command(cls=Command)
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
            "--format",
            "-f",
            metavar="|".join(f.value for f in SummaryFormat),
            help="What stdout gets: the profile as text, markdown, or its JSON document.",
        ),
    ] = SummaryFormat.text,
    top: Annotated[int, typer.Option(parser=rows, metavar="N", help="Rows of the noisiest keys.")] = 20,
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

    if output is not None:
        outputs.file(output, outputs.existing([*runs, keep_export]))
    opts = scope.options(window=window, window_origin=window_origin, skip_first=skip_first, nvtx=nvtx, per=per)
    with progress.reading(quiet) as report_progress:
        profile = sides.read_one(
            lambda: api.noise_profile(runs, opts, progress=report_progress, keep_export=keep_export, notify=notify)
        )
    document = noise_model.profile_to_json(profile)
    if output is not None:
        write(document, output)
    if fmt is SummaryFormat.json:
        sys.stdout.write(document)
    elif fmt is SummaryFormat.markdown:
        sys.stdout.write(noise_render.render_markdown(profile, top=top))
    else:
        sys.stdout.write(noise_render.render_text(profile, layout.columns(width, sys.stdout), top=top))
