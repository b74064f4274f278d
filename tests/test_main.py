"""``python -m nsysdiff`` and the console script: what the entry point sets before the CLI loads."""

from __future__ import annotations

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
