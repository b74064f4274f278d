"""Fixtures of the renderer tests: the synthetic report and the golden-file check."""

from __future__ import annotations

import difflib
import math
import re
from collections.abc import Callable
from pathlib import Path

import pytest
from render.htmlcheck import same_report
from render.synthetic import build_report

from nsysdiff.rules.report import Report

GOLDEN = Path(__file__).parent / "golden"

# A number as a report prints it: sign, digits, a fraction, an exponent.
_NUMBER = re.compile(r"[-+]?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?")
# Two printed numbers are one when they differ by less than this share of their size:
# far below any figure a report rounds to (3 to 4 significant digits), far above the last
# of the 15 to 17 digits a full-precision float prints, where numpy and scipy releases
# differ (an interval bound, a p-value, an SVG coordinate).
RELATIVE = 1e-6
# p-values and shares this close to zero are zero to any reader.
ABSOLUTE = 1e-12


def same_but_last_bits(expected: str, actual: str) -> bool:
    """Whether two renderings differ only in the last digits of full-precision floats."""
    words_e, words_a = _NUMBER.split(expected), _NUMBER.split(actual)
    if words_e != words_a:
        return False
    pairs = zip(_NUMBER.findall(expected), _NUMBER.findall(actual), strict=True)
    return all(e == a or math.isclose(float(e), float(a), rel_tol=RELATIVE, abs_tol=ABSOLUTE) for e, a in pairs)


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
        if same_but_last_bits(expected, text):
            return  # another numpy or scipy rounds the last digit of a float otherwise
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
