"""``nsysdiff fingerprint``: traces reduced to saved fingerprints, one file, one per trace
(see :mod:`nsysdiff.cli.batch`), or one run set."""

from __future__ import annotations

import os
from pathlib import Path

import click

from nsysdiff import api
from nsysdiff.cli import batch, options, outputs
from nsysdiff.cli.options import ScopeArgs, write
from nsysdiff.cli.root import app, handled, notify
from nsysdiff.errors import UsageError
from nsysdiff.fingerprint import runset
from nsysdiff.fingerprint.model import fingerprint_to_json
from nsysdiff.trace import sides


@app.command("fingerprint")
@handled
@options.paths(
    "traces",
    "TRACE...",
    "nsys SQLite exports or .nsys-rep reports (saved fingerprints and run sets too with --run-set).",
)
@options.output(
    "FILE|DIR",
    "Write to FILE (default: stdout); with several traces and no --run-set, or a name ending "
    "in /, a directory that receives DIR/STEM.json for each.",
    # A string: a trailing slash says "directory", and a Path would drop it.
    type=str,
)
@click.option(
    "--jobs",
    "-j",
    type=options.at_least(1, "give the number of processes, at least 1"),
    metavar="N",
    default=1,
    help="Fingerprint N traces at once in local processes.",
)
@click.option(
    "--scheduler",
    metavar="ADDRESS",
    help="Run on an existing Dask cluster (e.g. tcp://host:8786); needs nsysdiff[dask].",
)
@options.scope_options
@options.phases
@options.keep_export
@click.option(
    "--run-set",
    is_flag=True,
    help="Write all TRACEs, runs of one build, as one run-set file (a multi-run baseline); "
    "they must share scope, graph mode and GPU model.",
)
def fingerprint(
    traces: list[Path],
    output: str | None,
    jobs: int,
    scheduler: str | None,
    scope_args: ScopeArgs,
    phases: Path | None,
    keep_export: Path | None,
    run_set: bool,
) -> None:
    """Reduce traces to small versioned JSON fingerprints (CI baseline artifacts)."""
    # Every output is checked before any trace is read: it can be written and is no input.
    given = outputs.existing([*traces, phases, keep_export])
    out = None if output is None else Path(output)
    # A trailing slash says "directory" (Path drops it), as does an existing directory.
    as_dir = output is not None and (output.endswith(("/", os.sep)) or Path(output).is_dir())
    if out is not None and not as_dir and (run_set or (len(traces) == 1 and scheduler is None)):
        outputs.file(out, given)
    opts = scope_args.options(phases_file=phases)
    if run_set:
        if as_dir:
            raise UsageError(f"-o {output}: --run-set writes one file; give a file name such as runs.json")
        runs = sides.read_one(lambda: api.load_runs(traces, opts, keep_export=keep_export, notify=notify))
        write(runset.run_set_to_json(runs), out)
        return
    if len(traces) == 1 and scheduler is None and not as_dir:
        fp = sides.read_one(lambda: api.load(traces[0], opts, keep_export=keep_export, notify=notify))
        write(fingerprint_to_json(fp), out)
        return
    if out is None:
        raise UsageError(
            f"{len(traces)} traces given: -o DIR writes one DIR/STEM.json each, --run-set one run-set file"
        )
    if not as_dir and out.suffix.lower() == ".json":
        raise UsageError(
            f"-o {output}: {len(traces)} traces make {len(traces)} fingerprints; use --run-set for one file, "
            f"or -o DIR for one DIR/STEM.json each"
        )
    outputs.directory(out, given)
    jobs_planned = batch.plan(traces, out)
    outputs.files_in(out, [j.output.name for j in jobs_planned], given)
    if scheduler is not None:
        # On the main thread: the cluster's calls wait in short steps there, so a Ctrl-C stops them.
        batch.run(jobs_planned, opts, scheduler=scheduler, keep_export=keep_export)
        return
    sides.read_one(lambda: batch.run(jobs_planned, opts, workers=jobs, keep_export=keep_export))
