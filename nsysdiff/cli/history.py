"""``nsysdiff history``: a store of a branch's fingerprints (add, list, show) and the
points where its keys changed (changes)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from nsysdiff import api
from nsysdiff.cli import outputs
from nsysdiff.cli.options import NvtxOpt, OriginOpt, PerOpt, QuietOpt, SkipOpt, WidthOpt, WindowOpt, rows, write
from nsysdiff.cli.root import CONTEXT, Command, app, handled, notify
from nsysdiff.errors import UsageError
from nsysdiff.fingerprint import scope
from nsysdiff.history.store import KINDS, store_path
from nsysdiff.render import layout
from nsysdiff.trace import progress, sides

history_app = typer.Typer(
    no_args_is_help=True,
    rich_markup_mode=None,
    context_settings=CONTEXT,
    help="A store of a branch's fingerprints: add runs, list them, show a key's trend, find change points. "
    "A diff takes its base from it with --base history:STORE@main~5.",
)
app.add_typer(history_app, name="history")

StoreArg = Annotated[str, typer.Argument(metavar="STORE", help="The store: a path or an sqlite:///ABSOLUTE/PATH URL.")]
RefOpt = Annotated[str, typer.Option("--ref", metavar="REF", help="The branch the runs belong to.")]
FormatOpt = Annotated[str, typer.Option("--format", "-f", metavar="text|json", help="What stdout gets.")]


@history_app.command("add", cls=Command)
@handled
def history_add(
    store: StoreArg,
    runs: Annotated[
        list[Path],
        typer.Argument(metavar="FP|TRACE...", help="Runs of one commit: traces, reports, fingerprints, run sets."),
    ],
    ref: Annotated[str, typer.Option("--ref", metavar="REF", help="The branch the runs belong to (main).")],
    commit: Annotated[str, typer.Option("--commit", metavar="SHA", help="The commit the runs were built from.")],
    failed: Annotated[
        bool, typer.Option("--failed", help="A gate failed on these runs: no baseline picks them unless asked.")
    ] = False,
    quiet: QuietOpt = False,
    window: WindowOpt = None,
    window_origin: OriginOpt = "kernel",
    skip_first: SkipOpt = 0,
    nvtx: NvtxOpt = None,
    per: PerOpt = None,
) -> None:
    """Append runs to a store (created on the first run); earlier entries are never rewritten."""
    opts = scope.options(window=window, window_origin=window_origin, skip_first=skip_first, nvtx=nvtx, per=per)
    # The store is written: it must be none of the runs, whichever link leads there.
    outputs.refuse_inputs(store_path(store), outputs.existing(runs))
    with progress.reading(quiet) as report_progress:
        added = sides.read_one(
            lambda: api.history_add(
                store,
                runs,
                ref=ref,
                commit=commit,
                failed=failed,
                options=opts,
                progress=report_progress,
                notify=notify,
            )
        )
    labels = ", ".join(e.label for e in added)
    notify(f"added {len(added)} run(s) to {store}: {labels}")


@history_app.command("list", cls=Command)
@handled
def history_list(
    store: StoreArg,
    ref: Annotated[str | None, typer.Option("--ref", metavar="REF", help="Only this branch's runs.")] = None,
    last: Annotated[int, typer.Option(parser=rows, metavar="N", help="Rows of the newest runs.")] = 20,
    width: WidthOpt = None,
) -> None:
    """The runs in a store, oldest first: commit, ref, run number, time, GPU, gate."""
    from nsysdiff.render import history as render

    s = api.open_history(store)
    try:
        entries = s.entries(ref)
    finally:
        s.close()
    sys.stdout.write(render.render_list(store, entries, layout.columns(width, sys.stdout), last))


@history_app.command("show", cls=Command)
@handled
def history_show(
    store: StoreArg,
    key: Annotated[str, typer.Argument(metavar="KEY", help="A kernel, family, category, copy kind or NVTX range.")],
    ref: RefOpt = "main",
    kind: Annotated[
        str | None,
        typer.Option("--kind", metavar="|".join(KINDS), help="Which kind KEY names (step: period or a part of it)."),
    ] = None,
    last: Annotated[int, typer.Option(parser=rows, metavar="N", help="Rows of the newest commits.")] = 30,
    width: WidthOpt = None,
) -> None:
    """A key's total time per commit with an inline trend."""
    from nsysdiff.render import history as render

    if kind is not None and kind not in KINDS:
        raise UsageError(f"--kind {kind[:40]!r}: expected one of {', '.join(KINDS)}")
    t = api.history_trend(store, ref, key, kind)
    sys.stdout.write(render.render_trend(t, layout.columns(width, sys.stdout), last))


@history_app.command("changes", cls=Command)
@handled
def history_changes(
    store: StoreArg,
    ref: RefOpt = "main",
    max_pvalue: Annotated[
        float,
        typer.Option("--max-pvalue", metavar="P", help="A step is kept when its t-test p-value is below P."),
    ] = 1e-5,
    window: Annotated[
        int, typer.Option("--window", metavar="COMMITS", help="E-Divisive's sliding window, in commits.")
    ] = 30,
    last: Annotated[int | None, typer.Option(parser=rows, metavar="N", help="Scan only the newest N commits.")] = None,
    fmt: FormatOpt = "text",
    width: WidthOpt = None,
) -> None:
    """Where each key's series stepped (commit, size with a 95% interval, p-value) or drifted."""
    from nsysdiff.render import history as render

    if fmt not in ("text", "json"):
        raise UsageError(f"--format {fmt[:40]!r}: expected text or json")
    c = api.history_changes(store, ref, max_pvalue=max_pvalue, window=window, last=last)
    if fmt == "json":
        sys.stdout.write(render.changes_json(c))
    else:
        sys.stdout.write(render.render_changes(c, layout.columns(width, sys.stdout)))


@history_app.command("report", cls=Command)
@handled
def history_report(
    store: StoreArg,
    output: Annotated[
        Path, typer.Option("--output", "-o", metavar="DIR", help="The site's folder (created when missing).")
    ],
    ref: RefOpt = "main",
    top: Annotated[
        int, typer.Option(parser=rows, metavar="N", help="Pages for the N largest categories, families, kernels.")
    ] = 10,
    max_pvalue: Annotated[
        float, typer.Option("--max-pvalue", metavar="P", help="A step is kept when its t-test p-value is below P.")
    ] = 1e-5,
    window: Annotated[
        int, typer.Option("--window", metavar="COMMITS", help="E-Divisive's sliding window, in commits.")
    ] = 30,
    last: Annotated[int | None, typer.Option(parser=rows, metavar="N", help="Only the newest N commits.")] = None,
) -> None:
    """A static site of a ref's history: an index of its change points and keys, and a page
    per key with its series, change points and commits (serve it from GitHub Pages)."""
    from nsysdiff.errors import UsageError
    from nsysdiff.render import history_html

    if output.exists() and not output.is_dir():
        raise UsageError(f"--output {output}: exists and is not a folder")
    board = api.history_dashboard(store, ref, top=top, max_pvalue=max_pvalue, window=window, last=last)
    site = history_html.pages(board)
    # By file identity, not by resolved path: a page hard-linked to the store resolves to
    # a path of its own, and writing it would replace the store's bytes.
    store_file = Path(board.store)
    outputs.files_in(output, site, outputs.existing([store_file]), "--output")
    try:
        output.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise UsageError(f"--output {output}: can't create the folder ({e.strerror or e})") from None
    for name, document in site.items():
        write(document, output / name)
    notify(f"wrote {len(site)} pages to {output} (open {output / 'index.html'})")
