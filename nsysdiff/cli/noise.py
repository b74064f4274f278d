"""``nsysdiff noise``: the run-to-run noise profile of one build, from its A/A runs."""

from __future__ import annotations

import sys
from pathlib import Path

from nsysdiff import api
from nsysdiff.cli import options, outputs
from nsysdiff.cli.options import ScopeArgs, SummaryFormat, write
from nsysdiff.cli.root import app, handled, notify
from nsysdiff.render import layout
from nsysdiff.trace import progress, sides


@app.command("noise")
@handled
@options.paths(
    "runs", "RUN...", "A/A runs of one build: traces, reports, fingerprints or run sets, at least 2 runs in all."
)
@options.output("FILE", "Write the noise profile (JSON) to FILE.")
@options.fmt(SummaryFormat, "What stdout gets: the profile as text, markdown, or its JSON document.")
@options.top("Rows of the noisiest keys.", 20)
@options.width
@options.quiet
@options.scope_options
@options.keep_export
def noise(
    runs: list[Path],
    output: Path | None,
    fmt: SummaryFormat,
    top: int,
    width: int | None,
    quiet: bool,
    scope_args: ScopeArgs,
    keep_export: Path | None,
) -> None:
    """Measure run-to-run noise per key from A/A runs of one build (for noise-relative rules)."""
    from nsysdiff.fingerprint import noise as noise_model
    from nsysdiff.render import noise as noise_render

    if output is not None:
        outputs.file(output, outputs.existing([*runs, keep_export]))
    opts = scope_args.options()
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
