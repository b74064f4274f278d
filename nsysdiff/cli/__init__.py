"""The command line: a thin shell over :mod:`nsysdiff.api`, and the only package that imports
click or decides an exit code."""

from __future__ import annotations

# Importing a command's module registers it on the app; --help lists them in this order.
# isort: off
from nsysdiff.cli import summary, fingerprint, noise, diff, comment, rules, history

# isort: on
from nsysdiff.cli.entry import main, route
from nsysdiff.cli.options import SummaryFormat
from nsysdiff.cli.root import app

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
