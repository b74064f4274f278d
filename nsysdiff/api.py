"""The entry points the CLI, the GitHub Action and notebooks share."""

from __future__ import annotations

from pathlib import Path

from nsysdiff.errors import FingerprintError
from nsysdiff.fingerprint import assemble
from nsysdiff.model import Fingerprint, fingerprint_from_json
from nsysdiff.trace.reader import open_trace


def fingerprint_trace(path: str | Path) -> Fingerprint:
    """Read an nsys SQLite export and reduce it to a fingerprint."""
    with open_trace(path) as r:
        return assemble(
            path,
            r.metadata(),
            r.kernels(),
            r.has_kernels(),
            r.memcpy(),
            r.memset(),
            r.sync_calls(),
            r.nvtx_summary(),
        )


def is_fingerprint_file(path: str | Path) -> bool:
    return Path(path).suffix.lower() == ".json"


def load(path: str | Path) -> Fingerprint:
    """A fingerprint from either a trace or a saved ``.json`` fingerprint."""
    p = Path(path)
    if not is_fingerprint_file(p):
        return fingerprint_trace(p)
    if not p.is_file():
        raise FingerprintError(f"{p}: no such file" if not p.exists() else f"{p}: not a file")
    try:
        text = p.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise FingerprintError(f"{p}: can't be read ({e})") from None
    return fingerprint_from_json(text, str(p))
