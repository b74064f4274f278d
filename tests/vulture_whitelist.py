"""The names of nsysdiff that are used, but not by a name vulture can see called.

tests/test_dead_code.py reads this file as a caller, so a name listed here counts as used.
It lists only what a framework, a library or a field-by-field reader uses: the public API
is used by the tests and the example notebook, and click's commands are known by their
decorators. Each entry looks its name up, so that importing this file (as the test does)
fails on an entry whose name is gone: delete the entry with the name.
"""

from __future__ import annotations

import sqlite3

from nsysdiff import cli
from nsysdiff.cli import options, root
from nsysdiff.fingerprint import steps
from nsysdiff.history import changes
from nsysdiff.render import charts, html, layout
from nsysdiff.safe import regex

USED = (
    # click calls these while it builds the help, and reads the classes a group makes.
    root.Command.format_arguments,
    root.Group.command_class,
    root.Group.group_class,
    root.Group.list_commands,
    root.Group.format_commands,
    root.Group.get_command,
    # Python calls a module's __getattr__ for a name the module does not hold.
    cli.__getattr__,
    options.Choice.get_metavar,
    # textwrap.TextWrapper calls it for a word longer than the line.
    layout._Wrapper._handle_long_word,
    # Read by the libraries they configure: RE2 from its options, sqlite3 from the connection.
    regex._OPTIONS.log_errors,
    sqlite3.Connection.text_factory,
    # Fields read by name: StepParts.of looks a part's field up by the part's value, and the
    # history's JSON writes every slot of a Step.
    steps.StepParts.sync_ns,
    steps.StepParts.host_ns,
    changes.Step.before_runs,
    changes.Step.after_runs,
    # Fields the Jinja2 templates read (nsysdiff/render/templates/), where vulture can't look.
    charts.Chart.caption,
    html.Section.last_class,
    # No caller: delete each with its entry here.
    steps.StepParts.gpu_busy_ns,
)
