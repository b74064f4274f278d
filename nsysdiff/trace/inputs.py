"""What an input file is, told by its content: an SQLite export, a fingerprint, or an nsys report.

The extension says nothing reliable: a fingerprint saved as ``fp.txt`` or read through
``<(cat fp.json)`` is still a fingerprint, and an ``.nsys-rep`` renamed ``.sqlite`` is
still a report that must be exported first. An ``.nsys-rep``/``.qdrep`` report is
exported with ``nsys`` when it is on PATH, into a temporary directory (never beside the
input, which may be read-only or shared).
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import re
import shlex
import shutil
import stat
import subprocess
import tempfile
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from enum import Enum
from pathlib import Path

from nsysdiff.errors import FingerprintError, TraceError, UsageError

SQLITE_MAGIC = b"SQLite format 3\x00"
# How an Nsight Systems report file (.nsys-rep, .qdrep) starts.
NSYS_REPORT_MAGIC = b"NVIDIA Tegra Profiler Report"
REPORT_SUFFIXES = (".nsys-rep", ".qdrep")
MAX_STREAM_BYTES = 256_000_000  # a fingerprint read from a pipe; real ones are well under 1 MB
_HEAD = 64


class Kind(str, Enum):
    SQLITE = "sqlite"
    FINGERPRINT = "fingerprint"
    NSYS_REPORT = "nsys-report"


@dataclass(frozen=True, slots=True)
class Input:
    path: Path
    kind: Kind
    text: str | None = None  # a fingerprint read from a pipe: it can't be read twice


def _looks_like_json(head: bytes) -> bool:
    return head.removeprefix(b"\xef\xbb\xbf").lstrip(b" \t\r\n").startswith(b"{")


def _kind(head: bytes, path: Path) -> Kind:
    if head.startswith(SQLITE_MAGIC):
        return Kind.SQLITE
    if head.startswith(NSYS_REPORT_MAGIC) or path.suffix.lower() in REPORT_SUFFIXES:
        return Kind.NSYS_REPORT
    if _looks_like_json(head) or path.suffix.lower() == ".json":
        return Kind.FINGERPRINT
    return Kind.SQLITE  # the reader says why it is not one


def _read_stream(path: Path) -> bytes:
    """All of a pipe or FIFO, without blocking forever on a FIFO that nobody writes."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError as e:
        raise TraceError(f"{path}: can't be read ({e.strerror})") from None
    try:
        # Blocking again once open: a FIFO with no writer reads as empty instead of hanging.
        fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) & ~os.O_NONBLOCK)
        chunks: list[bytes] = []
        size = 0
        while chunk := os.read(fd, 1 << 20):
            size += len(chunk)
            if size > MAX_STREAM_BYTES:
                raise TraceError(f"{path}: more than {MAX_STREAM_BYTES:,} bytes from a pipe")
            chunks.append(chunk)
    except OSError as e:
        raise TraceError(f"{path}: can't be read ({e.strerror})") from None
    finally:
        os.close(fd)
    return b"".join(chunks)


def recognise(path: Path) -> Input:
    """The input's kind, from its first bytes (all of them, for a pipe)."""
    try:
        mode = path.stat().st_mode
    except OSError:
        # Missing or unreadable: the reader's message names it.
        return Input(path, _kind(b"", path))
    if stat.S_ISREG(mode):
        try:
            with path.open("rb") as fh:
                head = fh.read(_HEAD)
        except OSError as e:
            raise TraceError(f"{path}: can't be read ({e.strerror})") from None
        return Input(path, _kind(head, path))
    if stat.S_ISFIFO(mode) or stat.S_ISCHR(mode):
        data = _read_stream(path)
        if not data:
            raise TraceError(f"{path}: is empty, not an nsys SQLite export or a fingerprint")
        if _looks_like_json(data[:_HEAD]):
            try:
                return Input(path, Kind.FINGERPRINT, data.decode("utf-8-sig"))
            except UnicodeDecodeError as e:
                raise TraceError(f"{path}: not UTF-8 JSON (byte {e.start})") from None
        raise TraceError(f"{path}: a pipe holds only a fingerprint; save an SQLite export or a report to a file first")
    return Input(path, _kind(b"", path))  # a directory: the reader says so


def export_command(report: Path, output: Path) -> str:
    # Absolute paths: a report named "-x.nsys-rep" must not reach nsys as an option.
    return shlex.join(
        ["nsys", "export", "--type", "sqlite", "--output", os.path.abspath(output), os.path.abspath(report)]
    )


def _claim(directory: Path, stem: str) -> Path:
    """A new file name in ``directory`` for an export, created empty so that nothing else
    takes it: ``STEM.sqlite``, else ``STEM-2.sqlite``... An existing file (an input, another
    side's export of a report with the same name, an earlier run's) is never written over."""
    for n in range(1, 1000):
        candidate = directory / (f"{stem}.sqlite" if n == 1 else f"{stem}-{n}.sqlite")
        try:
            fd = os.open(candidate, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        except FileExistsError:
            continue
        except OSError as e:
            raise TraceError(f"{candidate}: can't create the export ({e.strerror})") from None
        os.close(fd)
        return candidate
    raise TraceError(f"{directory}: {stem}.sqlite and 998 numbered variants exist; give another --keep-export DIR")


@contextlib.contextmanager
def exported(report: Path, keep: Path | None, notify: Callable[[str], None]) -> Iterator[Path]:
    """An nsys report exported to SQLite with ``nsys``; removed afterwards unless ``keep``.

    nsys writes into a private temporary directory (with ``--force-overwrite``, so it
    must never be pointed at a name that exists); a kept export is then moved under a name
    claimed in ``keep`` that no file had. The note on stderr comes once the export worked,
    so that a failed export is one line.
    """
    stem = report.name.removesuffix(report.suffix)
    nsys = shutil.which("nsys")
    if nsys is None:
        target_name = stem + ".sqlite"
        if target_name == report.name:
            # A report named .sqlite: the suggested command must not export over its input.
            target_name = stem + "-export.sqlite"
        raise TraceError(
            f"{report}: an Nsight Systems report, not an SQLite export, and nsys is not on PATH; "
            f"export it first: {export_command(report, report.with_name(target_name))}"
        )
    with contextlib.ExitStack() as stack:
        if keep is not None:
            try:
                keep.mkdir(parents=True, exist_ok=True)
            except OSError as e:
                raise TraceError(f"{keep}: can't create the export directory ({e.strerror})") from None
            if not keep.is_dir():
                raise TraceError(f"{keep}: not a directory, so --keep-export can't keep the export there")
        # In DIR itself when kept, so that the final rename stays on one file system.
        private = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix=".nsysdiff-", dir=keep)))
        output = private / "export.sqlite"
        command = [nsys, "export", "--type", "sqlite", "--force-overwrite", "true", "--output", str(output)]
        try:
            done = subprocess.run(
                [*command, os.path.abspath(report)],
                stdin=subprocess.DEVNULL,
                capture_output=True,
                text=True,
                errors="replace",
                check=False,
            )
        except OSError as e:
            raise TraceError(f"{report}: nsys export could not run ({e.strerror})") from None
        if done.returncode != 0 or not output.is_file():
            newer = _newer_writer(done.stderr)
            if newer is not None:
                raise TraceError(
                    f"{report}: written by Nsight Systems {newer}, newer than the nsys on PATH "
                    f"({_nsys_version(nsys)}), which can't read it; export it with nsys {newer} or later "
                    f"(where it was captured: {export_command(report, report.with_name(stem + '.sqlite'))}) "
                    "and give nsysdiff the .sqlite"
                )
            last = next((line for line in reversed(done.stderr.splitlines()) if line.strip()), "")
            raise TraceError(
                f"{report}: nsys export failed (exit {done.returncode}){': ' + last.strip() if last else ''}; "
                f"the command was: {export_command(report, output)}"
            )
        if keep is None:
            notify(f"exported {report} to SQLite with nsys, in a temporary directory (--keep-export DIR keeps it)")
            yield output
            return
        final = _claim(keep, stem)
        try:
            os.replace(output, final)
        except OSError as e:
            raise TraceError(f"{final}: can't keep the export ({e.strerror})") from None
        notify(f"exported {report} to SQLite with nsys, kept as {final}")
        yield final


# What nsys says of a report written by a newer nsys: "Version number is invalid:
# 2024@4@2@133-..." (the writer's version, its parts joined by @).
_NEWER = re.compile(r"Version number is invalid:\s*(\d+(?:@\d+)+)")


def _newer_writer(stderr: str) -> str | None:
    """The version of the nsys that wrote a report the nsys on PATH refused as too new."""
    m = _NEWER.search(stderr)
    return m[1].replace("@", ".") if m else None


def _nsys_version(nsys: str) -> str:
    """``nsys --version``'s version (``2023.2.3.1001``), or what is known without it."""
    try:
        out = subprocess.run(
            [nsys, "--version"], stdin=subprocess.DEVNULL, capture_output=True, text=True, errors="replace", timeout=30
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return "version unknown"
    m = re.search(r"\d{4}\.\d+(?:\.\d+)*", out)
    return f"version {m[0]}" if m else "version unknown"


def check_distinct_files(paths: Sequence[Path]) -> None:
    """Raise naming two paths that are one file (a link, the same path twice) or two
    byte-identical copies: the runs of a side must be captures of their own. Only files of
    equal size are hashed, so distinct traces cost one ``stat`` each."""
    by_size: dict[int, list[Path]] = {}
    seen: dict[tuple[int, int], Path] = {}
    for p in paths:
        try:
            st = p.stat()
        except OSError:
            continue  # the reader says what is wrong with it
        if not stat.S_ISREG(st.st_mode):
            continue
        if (st.st_dev, st.st_ino) in seen:
            raise UsageError(f"{p}: the same file as {seen[st.st_dev, st.st_ino]}; give each run once")
        seen[st.st_dev, st.st_ino] = p
        by_size.setdefault(st.st_size, []).append(p)
    for group in (g for g in by_size.values() if len(g) > 1):
        digests: dict[str, Path] = {}
        for p in group:
            digest = _digest(p)
            if digest in digests:
                raise UsageError(f"{p}: a byte-identical copy of {digests[digest]}; give each run once")
            digests[digest] = p


def _digest(path: Path) -> str:
    h = hashlib.sha256()
    try:
        with path.open("rb") as fh:
            while chunk := fh.read(1 << 20):
                h.update(chunk)
    except OSError as e:
        raise TraceError(f"{path}: can't be read ({e.strerror})") from None
    return h.hexdigest()


# A 1M-kernel trace's fingerprint is tens of KiB; a saved input past this is not one.
FINGERPRINT_MAX_BYTES = 256 << 20


def saved_text(src: Input) -> str:
    """The text of a saved fingerprint or run set, bounded in size."""
    p = src.path
    text = src.text
    if text is None:
        if not p.is_file():
            raise FingerprintError(f"{p}: no such file" if not p.exists() else f"{p}: not a file")
        try:
            # A 1M-kernel trace's fingerprint is tens of KiB; a file past the limit is not one
            # (and reading it whole would take the memory of the job).
            if p.stat().st_size > FINGERPRINT_MAX_BYTES:
                raise FingerprintError(f"{p}: {p.stat().st_size} bytes, larger than a fingerprint can be (256 MiB)")
            text = p.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as e:
            raise FingerprintError(f"{p}: can't be read ({e})") from None
    return text
