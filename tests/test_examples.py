"""The bundled example's reports are kept as golden files beside it."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import ROOT
from typer.testing import CliRunner

from nsysdiff.cli import app, route

EXAMPLE = ROOT / "examples" / "cascade"
ARGS = [str(EXAMPLE / "bs1.sqlite"), str(EXAMPLE / "bs16.sqlite"), "--rules", "batch-invariance"]


@pytest.mark.parametrize(("fmt", "suffix"), [("text", "txt"), ("markdown", "md"), ("json", "json")])
def test_cascade_report_matches_golden(fmt: str, suffix: str, update_golden: bool) -> None:
    # The committed report is the whole one (--details), as `-o report.txt` writes it.
    result = CliRunner().invoke(app, route([*ARGS, "--format", fmt, "--width", "120", "--details"]))
    assert result.exit_code == 1, result.output
    # Reports name the inputs by file name only, so the golden is the same from any checkout.
    golden: Path = EXAMPLE / f"report.{suffix}"
    if update_golden:
        golden.write_text(result.stdout)
    assert result.stdout == golden.read_text()


def test_regenerating_the_example_reproduces_the_committed_traces(tmp_path: Path) -> None:
    from nsysdiff.examples.cascade import write

    for made in write(tmp_path):
        assert made.read_bytes() == (EXAMPLE / made.name).read_bytes()
