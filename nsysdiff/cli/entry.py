"""The console entry point: argv routed to a command (``nsysdiff A B`` is ``nsysdiff diff A B``),
click's usage errors worded as one line, and every outcome turned into an exit code."""

from __future__ import annotations

import difflib
import errno
import os
import sys
import traceback
from typing import Any

import click

from nsysdiff.cli.root import app, one_line, stderr
from nsysdiff.errors import ExitCode, NsysdiffError, UsageError


def _commands() -> list[str]:
    return sorted(app.list_commands(click.Context(app)))


def route(argv: list[str]) -> list[str]:
    """``nsysdiff A B ...`` and ``nsysdiff --base ...`` mean ``nsysdiff diff ...``.

    A first word that is neither a command nor an existing path but is close to a command
    (``sumary``) is a typo, not a trace: say so instead of "no such file".
    """
    commands = _commands()
    if argv and argv[0].split("=")[0] in _RUNS_OPTIONS:
        return _runs_options(["diff", *argv])  # nsysdiff --base RUN... --candidate RUN...
    if argv and argv[0].startswith("-") and argv[0] not in _ROOT_OPTIONS and not _names_command(argv, commands):
        # nsysdiff --no-rules A B, --rules tpot A B, -o x.json A B: options of the diff
        # before its files, as `nsysdiff diff` takes them.
        return _runs_options(["diff", *argv])
    if argv and not argv[0].startswith("-") and argv[0] not in commands:
        # history:STORE@main~5 is a base side, not a file (docs/history.md).
        if not os.path.lexists(argv[0]) and not argv[0].startswith("history:"):
            close = difflib.get_close_matches(argv[0], commands, n=1, cutoff=0.7)
            if close:
                raise UsageError(
                    f"{argv[0]!r} is no command and no file; did you mean 'nsysdiff {close[0]}'? "
                    f"(commands: {', '.join(commands)})"
                )
        return _runs_options(["diff", *argv])
    return _runs_options(argv) if argv and argv[0] == "diff" else argv


_RUNS_OPTIONS = ("--base", "--candidate")
_ROOT_OPTIONS = ("--version", "-h", "--help")


def _names_command(argv: list[str], commands: list[str]) -> bool:
    """Whether a command word follows the leading options (``nsysdiff --width 80 summary T``
    is a misplaced option of ``summary``, not a diff of files named ``summary``)."""
    return any(word in commands and not os.path.lexists(word) for word in argv[1:])


def _runs_options(argv: list[str]) -> list[str]:
    """``--base a b c`` as ``--base a --base b --base c``: each of --base and --candidate
    takes every path up to the next option (a shell glob's expansion), which click can't."""
    out: list[str] = []
    taking: str | None = None
    bare = False  # the last --base/--candidate has no path yet
    for i, word in enumerate(argv):
        if word == "--":
            return out + ([taking] if bare and taking else []) + argv[i:]
        if word.startswith("-"):
            if bare and taking:
                out.append(taking)  # no path: click says what is missing
            taking = word if word in _RUNS_OPTIONS else None
            bare = taking is not None
            if taking is None:
                out.append(word)
            continue
        if taking is not None:
            out.append(taking)
            bare = False
        out.append(word)
    if bare and taking:
        out.append(taking)
    return out


def _closest(e: click.NoSuchOption) -> str | None:
    """The one option a mistyped one most likely meant (``--rule`` -> ``--rules``): click
    lists loose candidates (``--bogus`` -> ``--base``), so only a close one is named."""
    close = difflib.get_close_matches(e.option_name, e.possibilities or [], n=1, cutoff=0.75)
    return close[0] if close else None


def usage_line(e: click.ClickException) -> str:
    """A click usage error as one line: the option, what is wrong, and where help is."""
    ctx = getattr(e, "ctx", None)
    command = ctx.command_path if ctx is not None else "nsysdiff"
    message = e.message
    if isinstance(e, click.MissingParameter) and isinstance(e.param, click.Option):
        # A required option is named as an option, with its value, never as an argument.
        flags = [o for o in e.param.opts if o.startswith("--")] or list(e.param.opts)
        what = e.param.metavar or (e.param.name or "").upper()
        message = f"missing option {flags[0]} {what}: give it, e.g. {flags[0]} {what}"
    elif isinstance(e, click.MissingParameter) and e.param is not None:
        # click says "Missing argument 'CANDIDATE'."; say what to type instead.
        usage = " ".join(ctx.command.collect_usage_pieces(ctx)) if ctx is not None else ""
        what = e.param.metavar or (e.param.name or "").upper()
        message = f"missing {what}: the usage is '{command} {usage}'" if usage else f"missing {what}"
    elif isinstance(e, click.NoSuchOption):
        close = _closest(e)
        message = f"No such option: {e.option_name}" + (f"; did you mean {close}?" if close else "")
    elif isinstance(e, click.BadParameter) and e.param is not None:
        opts = [o for o in getattr(e.param, "opts", []) if o.startswith("--")]
        name = opts[0] if opts else (e.param.metavar or e.param.name or "").upper()
        message = f"{name}: {message}"
    return f"{one_line(message).rstrip('.')} (see '{command} --help')"


class _Stdout:
    """``sys.stdout`` that survives its reader: a closed pipe or a full disk ends the output, not the run.

    ``nsysdiff A B | head -1`` closes the pipe early; click would turn the EPIPE into exit 1,
    which CI reads as "regression". Here the first write error is remembered and the file
    descriptor pointed at /dev/null (so that buffered text and the interpreter's last flush
    go nowhere), and the command finishes with its own exit code.
    """

    def __init__(self, stream: Any) -> None:
        self._stream = stream
        self.error: OSError | None = None

    def write(self, text: str) -> int:
        if self.error is None:
            try:
                return int(self._stream.write(text))
            except OSError as e:
                self._lost(e)
        return len(text)

    def flush(self) -> None:
        if self.error is None:
            try:
                self._stream.flush()
            except OSError as e:
                self._lost(e)

    def _lost(self, e: OSError) -> None:
        self.error = e
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, self._stream.fileno())
            os.close(devnull)
        except (OSError, ValueError):
            pass

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def _occupy_closed_descriptors() -> None:
    """``nsysdiff ... >&-``: give fd 1 and 2 to /dev/null before anything opens a file.

    Else the next file opened (a trace, a temporary export) would get descriptor 1, and
    the report would be written into it.
    """
    for fd, name in ((0, "stdin"), (1, "stdout"), (2, "stderr")):
        try:
            os.fstat(fd)
        except OSError:
            got = os.open(os.devnull, os.O_RDONLY if fd == 0 else os.O_WRONLY)
            if got != fd:
                os.dup2(got, fd)
                os.close(got)
            setattr(sys, name, open(fd, "r" if fd == 0 else "w", encoding="utf-8", closefd=False))  # noqa: SIM115


def _run(argv: list[str]) -> int:
    try:
        # The group's context and invocation, as click's main() makes them, without its
        # handlers: every outcome is turned into an exit code here.
        with app.make_context("nsysdiff", route(argv)) as ctx:
            rv = app.invoke(ctx)
    except click.exceptions.Exit as e:
        return int(e.exit_code)
    except click.exceptions.NoArgsIsHelpError as e:
        # A bare `nsysdiff` (or `nsysdiff history`) is someone asking what there is: the
        # usage and the command list as --help prints them, not one squashed error line.
        sys.stderr.write(e.ctx.get_help() + "\n")
        return int(ExitCode.BAD_INPUT)
    except click.ClickException as e:  # usage errors and the like
        stderr(usage_line(e))
        return int(ExitCode.BAD_INPUT)
    except (KeyboardInterrupt, click.exceptions.Abort):
        print("nsysdiff: interrupted", file=sys.stderr)
        return 130
    except NsysdiffError as e:
        stderr(str(e))
        return int(e.exit_code)
    except Exception:
        # A bug, not a verdict: never 1, which CI reads as "regression".
        print("nsysdiff: internal error (please report it):", file=sys.stderr)
        traceback.print_exc()
        return int(ExitCode.INTERNAL)
    return rv if isinstance(rv, int) else 0


def main() -> None:
    _occupy_closed_descriptors()
    out = _Stdout(sys.stdout)
    sys.stdout = out
    try:
        code = _run(sys.argv[1:])
        out.flush()
    except KeyboardInterrupt:
        print("nsysdiff: interrupted", file=sys.stderr)
        code = 130
    finally:
        sys.stdout = out._stream
    if out.error is not None and out.error.errno != errno.EPIPE and code == int(ExitCode.PASS):
        # A full disk lost the report: that is not a pass. (A reader that left, EPIPE, is.)
        stderr(f"can't write to stdout ({out.error.strerror})")
        code = int(ExitCode.BAD_INPUT)
    sys.exit(code)
