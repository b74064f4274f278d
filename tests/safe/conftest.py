"""Fixtures of the neutralisation tests: a whole report to scrub, from the renderer tests."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from render.synthetic import build_report

from nsysdiff.rules.report import Report


@pytest.fixture
def make_report() -> Callable[..., Report]:
    return build_report
