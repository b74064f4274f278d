"""``python -m nsysdiff`` and the console script: what the entry point sets before the CLI loads."""

from __future__ import annotations

import subprocess
import sys

import pytest

from nsysdiff import __main__ as entry
from nsysdiff import cli


@pytest.mark.parametrize(("given", "seen"), [(None, "1"), ("4", "4")], ids=["unset", "the user's"])
def test_one_blas_thread_unless_the_user_says(monkeypatch: pytest.MonkeyPatch, given: str | None, seen: str) -> None:
    # numpy's OpenBLAS spins a thread per core from its import on: CPU for nothing here.
    if given is None:
        monkeypatch.delenv("OPENBLAS_NUM_THREADS", raising=False)
    else:
        monkeypatch.setenv("OPENBLAS_NUM_THREADS", given)
    got: list[str | None] = []
    monkeypatch.setattr(cli, "main", lambda: got.append(__import__("os").environ.get("OPENBLAS_NUM_THREADS")))
    entry.main()
    assert got == [seen]


_IMPORTED = """
import sys
from nsysdiff.__main__ import main
sys.argv = ["nsysdiff", *sys.argv[1:]]
try:
    main()
except SystemExit:
    pass
print(" ".join(sorted(m for m in sys.modules if m.split(".")[0] in ("numpy", "rich", "nsysdiff"))), file=sys.stderr)
"""


@pytest.mark.parametrize("args", [["--help"], ["-h"], ["--version"], []], ids=["--help", "-h", "--version", "bare"])
def test_help_and_version_import_no_command(args: list[str]) -> None:
    """The first commands anyone types cost what click does: no numpy, no rich, no command's
    module (benchmarks/README.md has the CPU figures)."""
    done = subprocess.run([sys.executable, "-c", _IMPORTED, *args], capture_output=True, text=True, timeout=60)
    loaded = done.stderr.strip().splitlines()[-1].split()
    heavy = [
        m for m in loaded if m.split(".")[0] in ("numpy", "rich") or m.startswith(("nsysdiff.cli.", "nsysdiff.api"))
    ]
    assert sorted(heavy) == ["nsysdiff.cli.entry", "nsysdiff.cli.root"], heavy
    assert "nsysdiff" in done.stdout + done.stderr
