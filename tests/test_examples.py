"""The bundled examples' reports are kept as golden files beside them: the generated
cascade pair, and a real H100 bs1/bs16 capture whose logits really diverge."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import ROOT, run_cli
from render.htmlcheck import same_report

EXAMPLE = ROOT / "examples" / "cascade"
ARGS = [str(EXAMPLE / "bs1.sqlite"), str(EXAMPLE / "bs16.sqlite"), "--rules", "batch-invariance"]


@pytest.mark.parametrize(("fmt", "suffix"), [("text", "txt"), ("markdown", "md"), ("json", "json")])
def test_cascade_report_matches_golden(fmt: str, suffix: str, update_golden: bool) -> None:
    # The committed report is the whole one (--details), as `-o report.txt` writes it.
    result = run_cli(*ARGS, "--format", fmt, "--width", "120", "--details")
    assert result.exit_code == 1, result.stderr
    # Reports name the inputs by file name only, so the golden is the same from any checkout.
    golden: Path = EXAMPLE / f"report.{suffix}"
    if update_golden:
        golden.write_text(result.stdout)
    assert result.stdout == golden.read_text()


H100 = ROOT / "examples" / "h100"
H100_ARGS = [str(H100 / "bs1.sqlite"), str(H100 / "bs16.sqlite"), "--rules", "batch-invariance"]


@pytest.mark.parametrize(
    ("golden", "options"),
    [
        ("screen-80.txt", ["--width", "80"]),
        ("report.txt", ["--width", "120", "--details"]),
        ("report.md", ["--format", "markdown"]),
        ("report.json", ["--format", "json"]),
        ("report.html", ["--format", "html"]),
    ],
)
def test_h100_report_matches_golden(golden: str, options: list[str], update_golden: bool) -> None:
    result = run_cli(*H100_ARGS, *options)
    assert result.exit_code == 1, result.stderr
    path = H100 / golden
    if update_golden:
        path.write_text(result.stdout)
    if golden.endswith(".html"):
        # Drawn by another matplotlib release, the charts are compared by their words.
        assert same_report(path.read_text(), result.stdout)
        assert len(result.stdout.encode("utf-8")) < 2_000_000
        return
    assert result.stdout == path.read_text()


def test_h100_first_screen_names_what_breaks_batch_invariance() -> None:
    """README: the verdict on line 1, what is being compared first in it, then the
    attribution, the outlier and every failed rule, all within one 80-column screen of
    about 40 lines (41: the verdict says the comparison is of a resized workload)."""
    lines = (H100 / "screen-80.txt").read_text().splitlines()
    assert lines[0].startswith("nsysdiff: FAIL (exit 1) · resized workload (blocks per launch")
    assert "· 3 failed rules ·" in " ".join(lines[:3])
    # One 80x40 screen; a finding's subject is never broken (it pastes into a waiver), so
    # the one longer than a line runs past it, on a line of its own.
    subjects = [line for line in lines if len(line) > 80]
    assert subjects == ["  cudnn_generated_fort_native_sdpa_sm80_flash_fprop_wmma_f16_knob_*_cga1x1x1_kernel0"]
    assert len(lines) <= 41
    text = "\n".join(lines)
    for subject in (
        "gemm-selection · nvjet_sm90_tst_*_bz",
        "nvjet_sm90_tst_*_bz_splitK",
        "launch-split · reduce_kernel",
        "attention-path",
    ):
        assert subject in text


def test_regenerating_the_example_reproduces_the_committed_traces(tmp_path: Path) -> None:
    from nsysdiff.synth.cascade import write

    for made in write(tmp_path):
        assert made.read_bytes() == (EXAMPLE / made.name).read_bytes()


def test_readme_shows_the_h100_first_screen_as_it_is() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "```\n" + (H100 / "screen-80.txt").read_text() + "```\n" in readme


@pytest.mark.parametrize("report", ["h100/report.txt", "h100/report.md", "cascade/report.txt", "h100/screen-80.txt"])
def test_reports_say_1_call_not_1_calls(report: str) -> None:
    import re

    text = (ROOT / "examples" / report).read_text(encoding="utf-8")
    assert not re.search(r"(?<![\d.,])1 (calls|rules|waivers|families|variants)\b", text)
    assert "1 call," in (ROOT / "examples" / "h100" / "report.txt").read_text(encoding="utf-8")


def test_the_first_screen_says_its_marks_and_statistics_in_words() -> None:
    """A newcomer reads every mark and number on the first screen without the docs: FACT
    is explained where it is first seen, the outlier's deviation is a z against a named
    spread, and the call distributions are a share of call pairs, not "score" and "KS"."""
    screen = (H100 / "screen-80.txt").read_text(encoding="utf-8")
    assert "FACT: by exact counts, not a statistic" in screen.splitlines()[23]
    assert "ERROR, FACT" in screen
    words = " ".join(screen.split())
    assert "z=+3.6 against the families' spread" in words
    assert "slower than base in 100% of call pairs" in words
    for jargon in ("score", "KS", "P(candidate call slower)"):
        assert jargon not in screen
    # --details says what the marks are and what the KS distance measures.
    details = (H100 / "report.txt").read_text(encoding="utf-8")
    assert "the mark is the rule's level, in capitals where it fails the build" in " ".join(details.split())
    assert "Kolmogorov-Smirnov distance: 0 the same, 1 no overlap" in " ".join(details.split())


def test_the_markdown_first_line_is_a_log_line() -> None:
    """The Action's log and a notification show the first line alone: the kernel's label,
    not its demangled signature as a tooltip (600 characters for a template)."""
    first = run_cli(*H100_ARGS, "--format", "markdown").stdout.splitlines()[0]
    assert "title=" not in first and len(first) < 300, first
    assert "<code>indexSelectSmallIndex</code>" in first
