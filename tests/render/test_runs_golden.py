"""Golden reports of several runs per side (tests/runs.py writes the runs), and the proof
that a diff of one run per side reads exactly as before.

The ``single.*`` goldens were written by nsysdiff before it took several runs per side
(the same traces and options): every option of one run per side must still print them.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
import runs
from conftest import run_cli

FORMATS = {
    "screen.80.txt": ("--width", "80"),
    "details.80.txt": ("--width", "80", "--details"),
    "md": ("--format", "markdown"),
    "json": ("--format", "json"),
}
# Several runs also draw the intervals and the runs' points (the HTML report).
RUN_FORMATS = {**FORMATS, "html": ("--format", "html")}


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("runs")
    runs.write_runs(directory)
    return directory


@pytest.mark.parametrize("suffix", FORMATS)
@pytest.mark.parametrize(
    "sides",
    [("base1.sqlite", "cand1.sqlite"), ("--base", "base1.sqlite", "--candidate", "cand1.sqlite")],
    ids=["positional", "options"],
)
def test_one_run_per_side_is_unchanged(
    monkeypatch: pytest.MonkeyPatch,
    golden: Callable[[str, str], None],
    run_dir: Path,
    suffix: str,
    sides: tuple[str, ...],
) -> None:
    monkeypatch.chdir(run_dir)
    code, out, err = run_cli(*sides, *FORMATS[suffix])
    # The gather 3x slower in all 8 of its calls is evidence under the 1 ms floor: it fails.
    assert (code, err) == (1, "")
    golden(f"runs/single.{suffix}", out)


@pytest.mark.parametrize("suffix", ["screen.80.txt", "details.80.txt", "md", "html"])
def test_three_runs_against_three(
    monkeypatch: pytest.MonkeyPatch,
    golden: Callable[[str, str], None],
    run_dir: Path,
    suffix: str,
) -> None:
    monkeypatch.chdir(run_dir)
    argv = (
        "--base",
        "base1.sqlite",
        "base2.sqlite",
        "base3.sqlite",
        "--candidate",
        "cand1.sqlite",
        "cand2.sqlite",
        "cand3.sqlite",
    )
    code, out, err = run_cli(*argv, *RUN_FORMATS[suffix])
    assert (code, err) == (1, "")
    golden(f"runs/3v3.{suffix}", out)


def test_the_statistics_docs_show_the_golden_report() -> None:
    # docs/statistics.md prints the 3-vs-3 first screen as it is: the golden file, verbatim.
    root = Path(__file__).parents[2]
    docs = (root / "docs" / "statistics.md").read_text(encoding="utf-8")
    screen = (root / "tests" / "render" / "golden" / "runs" / "3v3.screen.80.txt").read_text(encoding="utf-8")
    assert f"```\n{screen}```" in docs
