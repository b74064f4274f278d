"""Progress while a trace is read: which side, which table.

A read of a large trace takes seconds, a scoped one minutes; silence looks like a hang.
The readers report through :data:`Step`, a plain callback, so that nothing below the CLI
imports rich. The display goes to stderr, only when stderr is a terminal and the run is not
in CI (``CI`` or ``GITHUB_ACTIONS`` set), and disappears when the read is done: stdout
stays the report alone, and logs stay clean.
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import TextIO

Step = Callable[[str, str], None]  # (side, what is being read now)


def silent(side: str, what: str) -> None:
    """A :data:`Step` that shows nothing."""


def describe(side: str, what: str) -> str:
    """``reading base: kernels`` for a table; a step that names its own work
    (``scoping ...``, ``reducing ...``) is not "read": ``base: reducing ...``."""
    where = f"{side}: " if side else ""
    first = what.split(" ", 1)[0]
    return f"{where}{what}" if first.endswith("ing") else f"reading {where}{what}"


def wanted(quiet: bool, stream: TextIO, environ: Mapping[str, str]) -> bool:
    if quiet or environ.get("CI") or environ.get("GITHUB_ACTIONS"):
        return False
    isatty = getattr(stream, "isatty", None)
    return bool(isatty is not None and isatty())


@contextmanager
def reading(
    quiet: bool = False,
    stream: TextIO | None = None,
    environ: Mapping[str, str] = os.environ,
) -> Iterator[Step]:
    """A :data:`Step` that drives a transient progress line on ``stream`` (stderr)."""
    out = sys.stderr if stream is None else stream
    if not wanted(quiet, out, environ):
        yield silent
        return
    from rich.console import Console
    from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    console = Console(file=out, force_terminal=True, highlight=False, markup=False)
    with Progress(
        SpinnerColumn(),
        TextColumn("{task.description}", markup=False),
        TimeElapsedColumn(),
        console=console,
        transient=True,
    ) as bar:
        task = bar.add_task("reading", total=None)
        # The two sides of a diff are read on threads of their own: without the lock, one
        # side's step could replace the other's description before it was ever drawn.
        drawing = threading.Lock()

        def step(side: str, what: str) -> None:
            with drawing:
                bar.update(task, description=describe(side, what))
                bar.refresh()  # each step is seen, however fast the next one comes

        yield step
