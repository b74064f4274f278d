"""One width policy for every command that prints text.

``--width`` wins; else ``COLUMNS`` (what shells and ``less`` export, and what a user sets
to ask for a width); else the terminal's width when stdout is a terminal; else 80, the
width nearly every terminal opens with, so that a report piped to a file or a CI log reads
the same as on a screen.
"""

from __future__ import annotations

import os
import re
import shutil
import textwrap
from collections.abc import Mapping, Sequence
from typing import TextIO

from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

DEFAULT_WIDTH = 80
MIN_WIDTH = 40  # narrower than this, no table can keep a name and its numbers
MIN_NAME = 20  # the narrowest name column a table is given
WANTED_NAME = 28  # optional columns give way while the name column is narrower than this


def columns(width: int | None, stream: TextIO | None, environ: Mapping[str, str] = os.environ) -> int:
    """The width a report printed to ``stream`` gets."""
    if width is not None:
        return max(MIN_WIDTH, width)
    env = environ.get("COLUMNS", "").strip()
    if env.isdigit() and int(env) > 0:
        return max(MIN_WIDTH, int(env))
    isatty = getattr(stream, "isatty", None)
    if isatty is not None and isatty():
        return max(MIN_WIDTH, shutil.get_terminal_size((DEFAULT_WIDTH, 24)).columns)
    return DEFAULT_WIDTH


def fit(text: str, width: int) -> str:
    """Plain text (help-like documentation) with every line longer than ``width`` wrapped
    between words, its continuation lines indented past the line's own indent."""
    out: list[str] = []
    for line in text.splitlines():
        if len(line) <= width:
            out.append(line)
            continue
        indent = line[: len(line) - len(line.lstrip())]
        out += textwrap.wrap(line, width, subsequent_indent=indent + "    ", break_on_hyphens=False)
    return "\n".join(out) + ("\n" if text.endswith("\n") else "")


def plain_console(file: TextIO, width: int) -> Console:
    """A rich console for deterministic plain text: no colour, markup, emoji or
    highlighting (names are data, and digits inside a file name are not numbers)."""
    return Console(
        file=file,
        width=width,
        color_system=None,
        force_terminal=False,
        markup=False,
        emoji=False,
        highlight=False,
        soft_wrap=False,
    )


_NBSP = "\xa0"  # textwrap never breaks at it; replaced by a space once wrapped


def _break_points(word: str) -> list[int]:
    """Where a long name may break: after `_`, `,` or `::`, before a bracket."""
    return [
        i
        for i in range(1, len(word))
        if word[i - 1] in "_," or word[i] in "<([⟨" or (word[i - 1] == ":" and word[i] != ":")
    ]


class _Wrapper(textwrap.TextWrapper):
    """textwrap, except that a word too long for a line breaks where a name does (after
    `_`, before a bracket: ``nvjet_sm90_tst_`` / ``64x16_v_bz_TNT``), never mid-word
    unless it has no such place."""

    def _handle_long_word(self, reversed_chunks: list[str], cur_line: list[str], cur_len: int, width: int) -> None:
        chunk = reversed_chunks[-1]
        room = max(width - cur_len, 1)
        fits = [i for i in _break_points(chunk) if i <= room]
        if fits:
            cut = fits[-1]
        elif cur_line:
            return  # on a line of its own it may find a place to break
        else:
            cut = room
        cur_line.append(chunk[:cut])
        reversed_chunks[-1] = chunk[cut:]


def break_name(name: str, width: int) -> list[str]:
    """A name as lines of at most ``width`` cells, broken between words, else where a name
    breaks (``_``, brackets)."""
    return _Wrapper(width=max(1, width), break_on_hyphens=False).wrap(name) or [""]


_GLUE = re.compile(r"\S+ → \S+|\d (?:ns|us|ms|s|B|KB|MB|GB)\b")


def wrap(
    console: Console,
    text: str,
    width: int,
    indent: str = "",
    hang: str | None = None,
    bold: bool = False,
    max_lines: int | None = None,
) -> None:
    """``text`` as lines of at most ``width`` cells, continuation lines indented by ``hang``.

    A number stays with its unit and an arrow with both its ends: ``392 → 392`` and
    ``1.20 ms`` never break across lines."""
    glued = _GLUE.sub(lambda g: g.group(0).replace(" ", _NBSP), text)
    lines = _Wrapper(
        width=width,
        initial_indent=indent,
        subsequent_indent=indent if hang is None else hang,
        break_on_hyphens=False,
        break_long_words=True,
        # Cut only between words, so a number is shown whole or not at all.
        max_lines=max_lines,
        placeholder=" …",
    ).wrap(glued)
    for line in lines or [""]:
        console.print(Text(line.replace(_NBSP, " "), style="bold" if bold else ""))


def grid(
    title: str,
    header: Sequence[str],
    rows: Sequence[Sequence[str]],
    width: int,
    optional: Sequence[int] = (),
) -> Table:
    """A table whose first column (a name) wraps within what the other columns leave of
    ``width``; ``optional`` columns are dropped, in order, while the name would get
    narrower than ``WANTED_NAME``. Number columns never wrap and are never cut."""
    keep = list(range(len(header)))

    def name_room() -> int:
        others = sum(max(len(header[i]), *(len(r[i]) for r in rows)) for i in keep[1:])
        return width - others - 3 * (len(keep) - 1)

    longest = max(len(header[0]), *(len(r[0]) for r in rows))

    def width_of(i: int) -> int:
        return max(len(header[i]), *(len(r[i]) for r in rows)) + 3

    needed = min(WANTED_NAME, longest)
    for col in optional:
        if name_room() >= needed:
            # One more optional column goes when that alone lets every name fit unwrapped.
            if name_room() < longest <= name_room() + width_of(col):
                keep.remove(col)
            break
        keep.remove(col)
    t = Table(title=title, title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False, show_edge=False)
    room = max(1, min(longest, name_room()))
    for i in keep:
        if i == 0:
            t.add_column(header[i], justify="left", overflow="fold", min_width=room)
        else:
            t.add_column(header[i], justify="right", no_wrap=True)
    for r in rows:
        # Broken here, where a name breaks, rather than by rich at the column's edge.
        t.add_row(Text("\n".join(break_name(r[0], room))), *(r[i] for i in keep[1:]))
    return t
