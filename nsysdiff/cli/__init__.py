"""The command line: a thin shell over :mod:`nsysdiff.api`, and the only package that imports
click or decides an exit code.

A command's module is imported when the command runs (:class:`nsysdiff.cli.root.Group`),
so that ``nsysdiff summary`` or ``--version`` does not import every command's libraries.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from nsysdiff.cli.entry import main, route
from nsysdiff.cli.root import COMMANDS, app

if TYPE_CHECKING:
    from nsysdiff.cli import comment, diff, fingerprint, history, noise, rules, summary
    from nsysdiff.cli.options import SummaryFormat

__all__ = [
    "SummaryFormat",
    "app",
    "comment",
    "diff",
    "fingerprint",
    "history",
    "main",
    "noise",
    "route",
    "rules",
    "summary",
]


def __getattr__(name: str) -> Any:
    # A command's module (or SummaryFormat) on first use, as its command loads it.
    if name in COMMANDS:
        return importlib.import_module(f"nsysdiff.cli.{name}")
    if name == "SummaryFormat":
        return importlib.import_module("nsysdiff.cli.options").SummaryFormat
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
