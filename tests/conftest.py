"""Shared fixtures: where the real traces are, and the trace builder."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

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
