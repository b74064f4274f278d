"""``nsysdiff history``: a store of a branch's fingerprints (add, list, show) and the
points where its keys changed (changes, report)."""

from __future__ import annotations

import enum
import sys
from pathlib import Path

import click

from nsysdiff import api
from nsysdiff import units as u
from nsysdiff.cli import options, outputs
from nsysdiff.cli.options import ScopeArgs, write
from nsysdiff.cli.root import app, handled, notify
from nsysdiff.errors import UsageError
from nsysdiff.fingerprint.runset import KeyKind
from nsysdiff.history.changes import DEFAULT_MAX_PVALUE, DEFAULT_WINDOW
from nsysdiff.history.store import store_path
from nsysdiff.render import layout
from nsysdiff.trace import progress, sides


@app.group("history")
def history_app() -> None:
    """A store of a branch's fingerprints: add runs, list them, show a key's trend, find change points.
    A diff takes its base from it with --base history:STORE@main~5."""


class ChangesFormat(str, enum.Enum):
    text = "text"
    json = "json"


def _renamed(ctx: click.Context, param: click.Parameter, value: str | None) -> None:
    # --window is a time range in every other command; here it was E-Divisive's window.
    if value is not None:
        raise click.BadParameter("the window of commits is --commits N here; --window is a time range elsewhere")


store = click.argument("store", help="The store: a path or an sqlite:///ABSOLUTE/PATH URL.")
ref = click.option("--ref", metavar="REF", default="main", help="The branch the runs belong to.")
max_pvalue = click.option(
    "--max-pvalue",
    type=options.number,
    metavar="P",
    default=DEFAULT_MAX_PVALUE,
    help="A step is kept when its t-test p-value is below P.",
)


def commits(fn: options.F) -> options.F:
    """``--commits``, E-Divisive's window; a ``--window`` given here says its new name."""
    fn = click.option("--window", hidden=True, expose_value=False, callback=_renamed)(fn)
    return click.option(
        "--commits",
        type=options.whole,
        metavar="N",
        default=DEFAULT_WINDOW,
        help="E-Divisive's sliding window, in commits.",
    )(fn)


@history_app.command("add")
@handled
@store
@options.paths("runs", "FP|TRACE...", "Runs of one commit: traces, reports, fingerprints, run sets.")
@click.option("--ref", metavar="REF", required=True, help="The branch the runs belong to (main).")
@click.option("--commit", metavar="SHA", required=True, help="The commit the runs were built from.")
@click.option("--failed", is_flag=True, help="A gate failed on these runs: no baseline picks them unless asked.")
@options.quiet
@options.scope_options
def history_add(
    store: str, runs: list[Path], ref: str, commit: str, failed: bool, quiet: bool, scope_args: ScopeArgs
) -> None:
    """Append runs to a store (created on the first run); earlier entries are never rewritten."""
    opts = scope_args.options()
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
    notify(f"added {u.plural(len(added), 'run')} to {store}: {labels}")


@history_app.command("list")
@handled
@store
@click.option("--ref", metavar="REF", help="Only this branch's runs.")
@options.top("Rows of the newest runs.", 20, "--last")
@options.width
def history_list(store: str, ref: str | None, last: int, width: int | None) -> None:
    """The runs in a store, oldest first: commit, ref, run number, time, GPU, gate."""
    from nsysdiff.render import history as render

    with api.open_history(store) as s:
        entries = s.entries(ref)
    sys.stdout.write(render.render_list(store, entries, layout.columns(width, sys.stdout), last))


@history_app.command("show")
@handled
@store
@click.argument("key", help="A kernel, family, category, copy kind or NVTX range.")
@ref
@options.choice("--kind", members=KeyKind, help="Which kind KEY names (step: period or a part of it).")
@options.top("Rows of the newest commits.", 30, "--last")
@options.width
def history_show(store: str, key: str, ref: str, kind: KeyKind | None, last: int, width: int | None) -> None:
    """A key's total time per commit with an inline trend."""
    from nsysdiff.render import history as render

    t = api.history_trend(store, ref, key, None if kind is None else kind.value)
    sys.stdout.write(render.render_trend(t, layout.columns(width, sys.stdout), last))


@history_app.command("changes")
@handled
@store
@ref
@max_pvalue
@commits
@options.top("Scan only the newest N commits.", None, "--last")
@options.fmt(ChangesFormat, "What stdout gets.")
@options.width
def history_changes(
    store: str, ref: str, max_pvalue: float, commits: int, last: int | None, fmt: ChangesFormat, width: int | None
) -> None:
    """Where each key's series stepped (commit, size with a 95% interval, p-value) or drifted."""
    from nsysdiff.render import history as render

    c = api.history_changes(store, ref, max_pvalue=max_pvalue, window=commits, last=last)
    if fmt is ChangesFormat.json:
        sys.stdout.write(render.changes_json(c))
    else:
        sys.stdout.write(render.render_changes(c, layout.columns(width, sys.stdout)))


@history_app.command("report")
@handled
@store
@options.output("DIR", "The site's folder (created when missing).", required=True)
@ref
@options.top("Pages for the N largest categories, families, kernels.", 10)
@max_pvalue
@commits
@options.top("Only the newest N commits.", None, "--last")
def history_report(
    store: str, output: Path, ref: str, top: int, max_pvalue: float, commits: int, last: int | None
) -> None:
    """A static site of a ref's history: an index of its change points and keys, and a page
    per key with its series, change points and commits (serve it from GitHub Pages)."""
    from nsysdiff.render import history_html

    # The folder is checked before the store is read, and may never hold the store.
    given = outputs.existing([store_path(store)])
    outputs.directory(output, given)
    board = api.history_dashboard(store, ref, top=top, max_pvalue=max_pvalue, window=commits, last=last)
    site = history_html.pages(board)
    # By file identity (outputs.refuse_inputs), not by resolved path: a page hard-linked to
    # the store resolves to a path of its own, and writing it would replace the store's bytes.
    outputs.files_in(output, site, given)
    try:
        output.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise UsageError(f"-o {output}: can't create the folder ({e.strerror or e})") from None
    for name, document in site.items():
        write(document, output / name)
    notify(f"wrote {len(site)} pages to {output} (open {output / 'index.html'})")
