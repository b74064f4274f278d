"""Options shared by several commands: value parsers, their annotated types, and where
output goes (stdout or ``--output FILE``)."""

from __future__ import annotations

import math
import sys
from collections.abc import Callable
from enum import Enum
from pathlib import Path
from typing import Annotated

import typer

from nsysdiff.cli.root import stderr
from nsysdiff.errors import NsysdiffError
from nsysdiff.fingerprint.model import Fingerprint
from nsysdiff.render import layout
from nsysdiff.render.names import Names, unmangled
from nsysdiff.trace.launches import Grouping

# --- option values ------------------------------------------------------------------
# typer calls these with the text given (and with the default); BadParameter becomes one
# usage line (see nsysdiff.cli.entry.usage_line).


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


def z_score(given: str | float) -> float:
    text = str(given)
    value = _number(text, "give a positive number such as 3.5")
    if value <= 0:
        raise typer.BadParameter(f"{text!r} is not positive; give a positive number such as 3.5")
    return value


def ratio(given: str | float) -> float:
    """``1.25x`` or ``1.25``: a ratio of 1 or more (the README and rule files write the x)."""
    text = str(given)
    what = "give a ratio of at least 1, such as 1.25x"
    value = _number(text.strip().removesuffix("x"), what)
    if value < 1:
        raise typer.BadParameter(f"{text!r} is below 1; {what}")
    return value


def share(given: str | float) -> float:
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
rows = _at_least(1, "give the number of rows to show, at least 1")


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
QuietOpt = Annotated[bool, typer.Option("--quiet", "-q", help="No progress display on stderr while reading.")]
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


def note_unmangled(names: Names, *fps: Fingerprint) -> None:
    """Say once when ``--names mangled`` must show demangled names: the export has none."""
    if names is not Names.mangled:
        return
    missing = unmangled(*fps)
    if missing:
        stderr(
            f"--names mangled: {', '.join(missing)} have no mangled name (nsys exports them "
            "from 2022.1 on); they show their demangled names",
            "note",
        )


def write(text: str, output: Path | None) -> None:
    if output is None:
        sys.stdout.write(text)
        return
    try:
        output.write_text(text, encoding="utf-8")
    except OSError as e:
        raise NsysdiffError(f"{output}: can't write ({e.strerror})") from None


# Scope options, shared by summary, fingerprint, noise and diff (see docs/scopes.md).
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
