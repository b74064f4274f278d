"""The options several commands share, each declared once as a click decorator; their value
parsers; and where output goes (stdout or ``--output FILE``).

A command stacks the decorators it takes (``@options.scope_options``, ``@options.width``, ...), so
an option reads, parses and helps the same in every command that has it. The scope options
reach the command as one :class:`ScopeArgs`, whose :meth:`ScopeArgs.options` makes the
:class:`~nsysdiff.fingerprint.scope.ScopeOptions` a read takes.
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import math
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import click

from nsysdiff.cli.root import stderr
from nsysdiff.errors import NsysdiffError
from nsysdiff.fingerprint import scope
from nsysdiff.fingerprint.model import Fingerprint
from nsysdiff.render import layout
from nsysdiff.render.names import Names, unmangled
from nsysdiff.trace.launches import Grouping

F = TypeVar("F", bound=Callable[..., Any])
E = TypeVar("E", bound=enum.Enum)

# --- option values ------------------------------------------------------------------
# click calls these with the text given (and with the default); BadParameter becomes one
# usage line (see nsysdiff.cli.entry.usage_line).


def _number(text: str, what: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise click.BadParameter(f"{text!r} is not a number; {what}") from None
    if not math.isfinite(value):
        raise click.BadParameter(f"{text!r} is not a finite number; {what}")
    return value


def at_least(low: int, what: str) -> Callable[[str | int], int]:
    def parse(given: str | int) -> int:
        text = str(given)
        try:
            value = int(text)
        except ValueError:
            raise click.BadParameter(f"{text!r} is not a whole number; {what}") from None
        if value < low:
            raise click.BadParameter(f"{value} is too small; {what}")
        return value

    return parse


def z_score(given: str | float) -> float:
    text = str(given)
    value = _number(text, "give a positive number such as 3.5")
    if value <= 0:
        raise click.BadParameter(f"{text!r} is not positive; give a positive number such as 3.5")
    return value


def ratio(given: str | float) -> float:
    """``1.25x`` or ``1.25``: a ratio of 1 or more (the README and rule files write the x)."""
    text = str(given)
    what = "give a ratio of at least 1, such as 1.25x"
    value = _number(text.strip().removesuffix("x"), what)
    if value < 1:
        raise click.BadParameter(f"{text!r} is below 1; {what}")
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
            raise click.BadParameter(f"{text!r} is not a share; {what} (did you mean {t}%?)")
    if not 0 <= value < 1:
        raise click.BadParameter(f"{text!r} is not a share; {what}")
    return value


def whole(given: str | int) -> int:
    """A whole number, any sign: the command says which are allowed."""
    try:
        return int(str(given))
    except ValueError:
        raise click.BadParameter("expected a whole number") from None


def number(given: str | float) -> float:
    try:
        return float(str(given))
    except ValueError:
        raise click.BadParameter("expected a number") from None


_width = at_least(layout.MIN_WIDTH, f"give the report width in columns, at least {layout.MIN_WIDTH}")
rows = at_least(1, "give the number of rows to show, at least 1")


class Choice(click.ParamType[E]):
    """One member of an enum, given by its value (``name+launch``, not ``name_launch``)."""

    def __init__(self, members: type[E]) -> None:
        self.members = members
        self.name = members.__name__

    def get_metavar(self, param: click.Parameter, ctx: click.Context) -> str:
        return "|".join(str(m.value) for m in self.members)

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> E:
        if isinstance(value, self.members):
            return value
        try:
            return self.members(value)
        except ValueError:
            choices = ", ".join(repr(m.value) for m in self.members)
            self.fail(f"{value!r} is not one of {choices}", param, ctx)


class SummaryFormat(str, enum.Enum):
    text = "text"
    markdown = "markdown"
    json = "json"


def listed(ctx: click.Context, param: click.Parameter, value: tuple[Any, ...]) -> list[Any] | None:
    """The values of a repeatable option, or of an argument that takes several, as a list
    (None when there are none), as the commands' code reads them."""
    return list(value) or None


# A path as given (an existing one must be readable), as a Path.
PATH = click.Path(path_type=Path)


def paths(name: str, metavar: str, help: str) -> Callable[[F], F]:
    """An argument of one or more paths (``TRACE...``), as a list."""
    return click.argument(name, nargs=-1, required=True, type=PATH, callback=listed, metavar=metavar, help=help)


def output(metavar: str, help: str, *, type: Any = PATH, **more: Any) -> Callable[[F], F]:
    """``--output/-o``, which each command documents and types its own way."""
    return click.option("--output", "-o", "output", type=type, metavar=metavar, help=help, **more)


def choice(*decls: str, members: type[E], default: E | None = None, help: str) -> Callable[[F], F]:
    """An option taking one member of an enum, by its value."""
    return click.option(*decls, type=Choice(members), default=default, help=help)


def fmt(members: type[E], help: str) -> Callable[[F], F]:
    """``--format/-f``, one of ``members``, the first by default."""
    return choice("--format", "-f", "fmt", members=members, default=next(iter(members)), help=help)


def top(help: str, default: int | None, name: str = "--top") -> Callable[[F], F]:
    """A number of rows to show (``--top``, ``--last``), at least 1."""
    return click.option(name, type=rows, metavar="N", default=default, help=help)


width = click.option(
    "--width",
    type=_width,
    metavar="COLUMNS",
    help="Text width in columns, at least 40 (default: $COLUMNS, else the terminal's, else 80).",
)
quiet = click.option("--quiet", "-q", is_flag=True, help="No progress display on stderr while reading.")
by = choice(
    "--by",
    members=Grouping,
    default=Grouping.name,
    help="What makes launches one kernel: its name, or name+launch (name, grid and block, "
    "as nsys stats gpukernsum groups them).",
)
names = choice(
    "--names",
    members=Names,
    default=Names.short,
    help="Kernel names: short (told apart by part of the signature where they collide), "
    "demangled, or mangled (nsys 2022.1 on; older exports keep their demangled names).",
)


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


# --- the scope of a read (docs/scopes.md) ---------------------------------------------


@dataclass(frozen=True, slots=True)
class ScopeArgs:
    """The scope options as given: ``--window --window-origin --skip-first --nvtx --per``."""

    window: str | None
    window_origin: str
    skip_first: int
    nvtx: str | None
    per: str | None

    def options(self, **more: Any) -> scope.ScopeOptions:
        """The validated scope; ``more`` are :func:`nsysdiff.fingerprint.scope.options`'
        other arguments (``phases_file``, ``step_ranges``, ...)."""
        return scope.options(**{f.name: getattr(self, f.name) for f in dataclasses.fields(self)}, **more)


_SCOPE = (
    click.option(
        "--window",
        metavar="START:END",
        help="Keep GPU work starting in this window, e.g. 2s:5s, 500ms: or :3s (units ns, us, ms, s), "
        "relative to --window-origin.",
    ),
    click.option(
        "--window-origin",
        metavar="kernel|capture",
        default="kernel",
        help="What --window counts from: the first kernel's start (kernel) or the capture start (capture).",
    ),
    click.option(
        "--skip-first",
        type=whole,
        metavar="N",
        default=0,
        help="Drop warm-up: per process, all work launched before the (N+1)-th instance of the --per range "
        "(else the --nvtx range).",
    ),
    click.option(
        "--nvtx",
        metavar="NAME[@DOMAIN]",
        help="Keep only GPU work launched inside matching NVTX ranges (exact name or regex; PyTorch suffixes folded).",
    ),
    click.option(
        "--per",
        metavar="RANGE",
        help="Count the instances of this NVTX range as steps (auto: steps found without a marker, one per "
        "replay of the graph replayed most often or per period of the kernel sequence); a diff of two such "
        "sides compares per step.",
    ),
)


def bundle(
    keyword: str, make: Callable[..., Any], fields: Sequence[str], decls: Sequence[Callable[[Any], Any]]
) -> Callable[[F], F]:
    """The options ``decls``, in that order in the help, handed to the command as one value
    ``make(**{field: value})`` named ``keyword``; ``fields`` are the options' parameter names."""

    def apply(fn: F) -> F:
        @functools.wraps(fn)
        def bundled(*args: Any, **kwargs: Any) -> Any:
            given = make(**{name: kwargs.pop(name) for name in fields})
            return fn(*args, **{keyword: given}, **kwargs)

        for option in reversed(decls):
            bundled = option(bundled)
        return bundled  # type: ignore[return-value]

    return apply


# The scope options, handed to the command as one :class:`ScopeArgs` named ``scope_args``.
scope_options = bundle("scope_args", ScopeArgs, [f.name for f in dataclasses.fields(ScopeArgs)], _SCOPE)


phases = click.option(
    "--phases",
    type=PATH,
    metavar="FILE",
    help="YAML file with a `phases:` mapping (phase name -> NVTX patterns): per-phase sections.",
)
keep_export = click.option(
    "--keep-export",
    type=PATH,
    metavar="DIR",
    help="An .nsys-rep input is exported to SQLite with nsys in a temporary directory; keep the export in DIR.",
)
