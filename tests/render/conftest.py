"""Fixtures of the renderer tests: the synthetic report and the golden-file check."""

from __future__ import annotations

import difflib
from collections.abc import Callable
from pathlib import Path

import pytest
from render.htmlcheck import same_report
from render.synthetic import build_report

from nsysdiff.rules.report import Report

GOLDEN = Path(__file__).parent / "golden"


@pytest.fixture
def report() -> Report:
    return build_report()


@pytest.fixture
def make_report() -> Callable[..., Report]:
    return build_report


@pytest.fixture
def golden(update_golden: bool) -> Callable[[str, str], None]:
    """Compare ``text`` with ``golden/<name>``, or rewrite it under ``--update-golden``."""

    def check(name: str, text: str) -> None:
        path = GOLDEN / name
        if update_golden:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(text.encode("utf-8"))
            return
        if not path.exists():
            pytest.fail(f"{path} is missing; run pytest with --update-golden to create it")
        expected = path.read_bytes().decode("utf-8")
        if name.endswith(".html") and same_report(expected, text):
            return  # charts drawn by another matplotlib release: compared by their words
        if text != expected:
            delta = "".join(
                difflib.unified_diff(
                    expected.splitlines(keepends=True),
                    text.splitlines(keepends=True),
                    f"golden/{name}",
                    "rendered",
                )
            )
            pytest.fail(f"{name} differs from its golden file (rerun with --update-golden if intended):\n{delta}")

    return check
