"""Shared fixtures: where the real traces are, and how a test runs the command line."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import NamedTuple
from unittest import mock

import pytest
from click.testing import CliRunner

from nsysdiff import cli

ROOT = Path(__file__).resolve().parent.parent


def traces_dir() -> Path:
    """Real nsys exports: $NSYSDIFF_TRACES, else ../shared/traces beside the checkout."""
    env = os.environ.get("NSYSDIFF_TRACES")
    return Path(env) if env else ROOT.parent / "shared" / "traces"


def real_traces() -> list[Path]:
    d = traces_dir()
    return sorted(d.glob("*.sqlite")) if d.is_dir() else []


def real_trace(name: str) -> Path:
    """``name`` (e.g. ``h100/llm_bs1``) under the real traces; skips the test when absent."""
    p = traces_dir() / f"{name}.sqlite"
    if not p.exists():
        pytest.skip(f"{p} not found")
    return p


needs_traces = pytest.mark.skipif(
    not real_traces(), reason="real traces not found (set NSYSDIFF_TRACES or add ../shared/traces)"
)


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--update-golden", action="store_true", help="Rewrite golden files.")


@pytest.fixture
def update_golden(request: pytest.FixtureRequest) -> bool:
    return bool(request.config.getoption("--update-golden"))


# --- the command line -----------------------------------------------------------------


class Result(NamedTuple):
    """One run of the command line: its exit code and its two streams, kept apart.

    A tuple, so that ``code, out, err = run_cli(...)`` and ``run_cli(...) == (2, "", "...")``
    read as plainly as ``result.stdout``.
    """

    exit_code: int
    stdout: str
    stderr: str


def run_cli(*args: str | Path, env: Mapping[str, str | None] | None = None, input: str | None = None) -> Result:
    """``nsysdiff ARGS`` in this process, through the console script's own entry point.

    ``main`` rather than the typer app, so that a test sees what a user sees: the argv
    routing (``nsysdiff A B`` is a diff), usage errors in one line, Ctrl-C as 130 and a
    bug as 70, never a traceback counted as exit 1. In this process, so that it is fast
    and a monkeypatch reaches the code. ``env`` overrides variables for this run only
    (None unsets one); ``input`` is stdin.
    """
    # click's isolation: stdin, stdout and stderr swapped for buffers, help text 80 columns
    # wide whatever the terminal, and os.environ restored afterwards.
    with (
        CliRunner().isolation(input=input, env=env) as streams,
        mock.patch.object(sys, "argv", ["nsysdiff", *map(str, args)]),
    ):
        try:
            cli.main()
        except SystemExit as e:
            code = e.code
        else:
            raise AssertionError("nsysdiff's main returned instead of exiting with a code")
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
        out, err = streams[0].getvalue(), streams[1].getvalue()
    assert isinstance(code, int), f"exit code {code!r}"
    return Result(code, out.decode(), err.decode())


NSYSDIFF = (sys.executable, "-m", "nsysdiff")
"""The command as a real process runs it, for Popen and shell lines of their own."""


def run_process(
    *args: str | Path,
    env: Mapping[str, str | None] | None = None,
    input: str | None = None,
    command: Sequence[str] = NSYSDIFF,
    timeout: float = 120,
) -> Result:
    """``python -m nsysdiff ARGS`` (or ``command ARGS``: the installed console script) in a
    real process, for what only a process shows: the interpreter's start and imports, its
    own stdout and stderr, the entry points themselves.

    Signals and closed or full descriptors need a process handle or a shell: use
    :data:`NSYSDIFF` with ``subprocess`` for those. ``env`` as :func:`run_cli` takes it.
    """
    full = dict(os.environ)
    for name, value in (env or {}).items():
        if value is None:
            full.pop(name, None)
        else:
            full[name] = value
    p = subprocess.run(
        [*command, *map(str, args)],
        input=input,
        capture_output=True,
        text=True,
        env=full,
        timeout=timeout,
        check=False,
    )
    return Result(p.returncode, p.stdout, p.stderr)
