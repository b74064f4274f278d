"""Where a command writes (``-o FILE``, ``-o DIR``), checked before any input is read.

An output path that names an input (the same file, through any link) would replace a
trace, a fingerprint or a rule file with a report, and a path that can't be written would
only fail after the diff was computed and its report printed, turning a verdict into an
error. So every output is checked first, in one place: its directory exists and is
writable, it is not a directory where a file is meant (nor a file where a directory is),
and it is none of the inputs (``os.path.samefile``). A write that still fails later (a
full disk) keeps a failed or inconclusive verdict's exit code: see :func:`settle`.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from nsysdiff.errors import ExitCode, UsageError


def existing(paths: Iterable[Path | str | None]) -> tuple[Path, ...]:
    """The paths among ``paths`` that name something on disk (inputs a write could hit)."""
    out = []
    for p in paths:
        if p is None:
            continue
        path = Path(p)
        try:
            if path.exists():
                out.append(path)
        except OSError:  # a name too long to stat can't be an input that exists
            continue
    return tuple(out)


def refuse_inputs(output: Path, inputs: Sequence[Path]) -> None:
    """``output`` must not be one of ``inputs``, whichever links lead there."""
    for inp in inputs:
        try:
            same = os.path.samefile(output, inp)
        except OSError:
            same = False
        if same:
            raise UsageError(f"{output}: is the input {inp}; nsysdiff never writes over an input, give another path")


def _no_pipe(output: Path, option: str) -> None:
    """An existing ``output`` is no FIFO, socket or block device: opening a FIFO that
    nobody reads blocks for ever (a restored artifact directory can carry one). A
    character device (``/dev/null``, a terminal) takes a write at once and stays allowed."""
    try:
        mode = output.stat().st_mode
    except OSError:  # a dangling link or no file: created as a plain file
        return
    if stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) or stat.S_ISBLK(mode):
        raise UsageError(f"{option} {output}: is a FIFO, socket or device, not a file; give a file path")


def file(output: Path, inputs: Sequence[Path], option: str = "-o") -> None:
    """``output`` can be created or replaced as a file, and is no input."""
    try:
        is_dir = output.is_dir()
        exists = output.exists() or output.is_symlink()
    except OSError as e:
        raise UsageError(f"{option} {output}: unusable path ({e.strerror})") from None
    if is_dir:
        raise UsageError(f"{option} {output}: is a directory; give a file name")
    parent = output.parent
    if not parent.is_dir():
        raise UsageError(f"{option} {output}: no such directory {parent}; create it first")
    if exists:
        refuse_inputs(output, inputs)
        _no_pipe(output, option)
        if not os.access(output, os.W_OK):
            raise UsageError(f"{option} {output}: can't be written (permission denied)")
    elif not os.access(parent, os.W_OK | os.X_OK):
        raise UsageError(f"{option} {output}: can't write in {parent} (permission denied)")


def directory(output: Path, inputs: Sequence[Path], option: str = "-o", *, create: bool = True) -> None:
    """``output`` is, or can be made, a writable directory; no input is it."""
    try:
        exists = output.exists()
    except OSError as e:
        raise UsageError(f"{option} {output}: unusable path ({e.strerror})") from None
    if exists and not output.is_dir():
        refuse_inputs(output, inputs)
        raise UsageError(f"{option} {output}: is a file, not a directory")
    if not exists:
        if not create:
            raise UsageError(f"{option} {output}: no such directory")
        ancestor = output.parent
        while not ancestor.exists() and ancestor != ancestor.parent:
            ancestor = ancestor.parent
        if not ancestor.is_dir() or not os.access(ancestor, os.W_OK | os.X_OK):
            raise UsageError(f"{option} {output}: can't create the directory in {ancestor}")
    elif not os.access(output, os.W_OK | os.X_OK):
        raise UsageError(f"{option} {output}: can't write in this directory (permission denied)")


def files_in(out_dir: Path, names: Iterable[str], inputs: Sequence[Path], option: str = "-o") -> None:
    """The files a command will write into ``out_dir`` are no input."""
    for name in names:
        target = out_dir / name
        if target.exists():
            refuse_inputs(target, inputs)
            if target.is_dir():
                raise UsageError(f"{option} {out_dir}: {target} is a directory, where a file would be written")
            _no_pipe(target, option)


def github_files(environ: Mapping[str, str], inputs: Sequence[Path]) -> None:
    """The job summary and step outputs that GitHub's runner names (appended to on GitHub)
    are no input and no FIFO: the environment comes from the job, which a workflow step
    before nsysdiff can point anywhere."""
    for name in ("GITHUB_STEP_SUMMARY", "GITHUB_OUTPUT"):
        value = environ.get(name)
        if value:
            refuse_inputs(Path(value), inputs)
            _no_pipe(Path(value), f"${name}")


def settle(verdict: int, errors: Sequence[str]) -> int:
    """The exit code once the report is out and some ``-o`` files could not be written:
    a failed or inconclusive verdict keeps its code (never turned into 2 after the report
    said FAIL); a pass whose report was lost is not a pass (2)."""
    if not errors or verdict != int(ExitCode.PASS):
        return verdict
    return int(ExitCode.BAD_INPUT)
