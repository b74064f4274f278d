"""One width policy for every command; nothing cut, names wrapped, README command 1 on
one 80x40 screen."""

from __future__ import annotations

import io
import re
from pathlib import Path

import pytest
from conftest import run_cli, traces_dir
from render.test_render import MakeReport

from nsysdiff import api
from nsysdiff.render import layout, summary, text
from nsysdiff.synth.builder import Gpu, TraceBuilder

ROOT = Path(__file__).resolve().parents[2]
CASCADE = ROOT / "examples" / "cascade"


class Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_width_policy() -> None:
    assert layout.columns(100, io.StringIO(), {"COLUMNS": "150"}) == 100
    assert layout.columns(None, io.StringIO(), {"COLUMNS": "150"}) == 150
    assert layout.columns(None, io.StringIO(), {}) == 80  # piped: never 120, never the tty's
    assert layout.columns(None, None, {"COLUMNS": "junk"}) == 80
    assert layout.columns(10, None, {}) == layout.MIN_WIDTH
    assert layout.columns(None, Tty(), {}) >= layout.MIN_WIDTH


def test_readme_command_1_fits_one_80x40_screen() -> None:
    args = [str(CASCADE / "bs1.sqlite"), str(CASCADE / "bs16.sqlite"), "--no-rules"]
    res = run_cli(*args, env={"COLUMNS": "80"})
    assert res.exit_code == 0, res.stderr
    lines = res.stdout.splitlines()
    assert lines[0].startswith("nsysdiff: NOT JUDGED (exit 0)")
    assert len(lines) <= 40 and max(len(line) for line in lines) <= 80
    assert "Outliers (1)" in res.stdout and lines[-1].endswith("comparability, method.")


def test_diff_honours_columns() -> None:
    args = [str(CASCADE / "bs1.sqlite"), str(CASCADE / "bs16.sqlite"), "--no-rules", "--details"]
    for cols in (60, 100, 200):
        res = run_cli(*args, env={"COLUMNS": str(cols)})
        assert max(len(line) for line in res.stdout.splitlines()) <= cols
    wide = run_cli(*args, env={"COLUMNS": "200"}).stdout
    assert "nvjet_tst_192x128_64x4_2x1_v_bz_coopA_TNN" in wide


_NUMBER = re.compile(r"(?<![\w.])\d[\d,]*(?:\.\d*)?(?: (?:ns|us|ms|s)\b|%)?")


@pytest.mark.parametrize("width", [60, 80, 200])
def test_text_diff_keeps_names_and_whole_numbers(make_report: MakeReport, width: int) -> None:
    out = text.render(make_report(), width=width, details=True)
    assert max(len(line) for line in out.splitlines()) <= width
    assert "…" not in out.split("Top changes", 1)[1].split("Method:", 1)[0]
    table = out.split("Top changes", 1)[1].splitlines()
    assert table[1].startswith("kernel")  # the name column is there at any width


def _summary_trace(tmp_path: Path) -> Path:
    b = TraceBuilder(gpus=tuple(Gpu(id=i, name="NVIDIA H100 80GB HBM3") for i in range(8)))
    long = "very_long_kernel_name_that_never_fits_" * 3
    b.kernels(long, [i * 10_000_000 for i in range(3)], [7_512_345] * 3)
    b.kernels("short_kernel", [100_000_000 + i * 1000 for i in range(5)], [527] * 5)
    path = tmp_path / "run1_2024.sqlite"
    b.write(path)
    return path


@pytest.mark.parametrize("width", [60, 80, 140])
def test_summary_never_cuts_a_number(tmp_path: Path, width: int) -> None:
    path = _summary_trace(tmp_path)
    res = run_cli("summary", str(path), "--width", str(width))
    assert res.exit_code == 0, res.stderr
    lines = res.stdout.splitlines()
    assert max(len(line) for line in lines) <= width
    # Every number shown is whole: each is one the widest rendering shows too.
    wide = set(_NUMBER.findall(summary.render_plain(api.load(path), 400)))
    assert set(_NUMBER.findall(res.stdout)) <= wide
    assert "22.54 ms" in res.stdout
    assert "short_kernel" in res.stdout and "…" not in res.stdout


def test_summary_to_a_file_uses_the_same_policy(tmp_path: Path) -> None:
    path = _summary_trace(tmp_path)
    out = tmp_path / "summary.txt"
    res = run_cli("summary", str(path), "-o", str(out), env={"COLUMNS": "72"})
    assert res.exit_code == 0, res.stderr
    assert max(len(line) for line in out.read_text().splitlines()) <= 72


def test_summary_header_counts_identical_gpus(tmp_path: Path) -> None:
    fp = api.load(_summary_trace(tmp_path))
    assert summary.gpu_line(fp) == "8x NVIDIA H100 80GB HBM3 (#0-7)"
    assert summary.render_plain(fp, 80).count("H100") == 1


def test_summary_markdown(tmp_path: Path) -> None:
    path = _summary_trace(tmp_path)
    res = run_cli("summary", str(path), "--format", "markdown")
    assert res.exit_code == 0, res.stderr
    assert res.stdout.startswith("### <code>run1_2024.sqlite</code>")
    assert "| kernel | calls | total | mean | p50 | p90 | max | % |" in res.stdout
    assert "| short_kernel | 5 |" in res.stdout


@pytest.mark.skipif(not (traces_dir() / "ecf_nvtxonly_baseline.sqlite").exists(), reason="real traces not found")
def test_nvtx_only_pair_shows_its_ranges() -> None:
    args = [str(traces_dir() / f"ecf_nvtxonly_{n}.sqlite") for n in ("baseline", "poolformer")]
    first = run_cli(*args, "--no-rules", env={"COLUMNS": "80"})
    assert first.exit_code == 0, first.stderr
    assert "NVTX ranges by absolute change (10 of 113)" in first.stdout
    assert "find_centers" in first.stdout and "103 more NVTX ranges" in first.stdout
    full = run_cli(*args, "--no-rules", "--details", env={"COLUMNS": "80"})
    assert full.stdout.count("NVTX ranges by absolute") == 1  # the compared ranges, once
    md = run_cli(*args, "--no-rules", "--format", "markdown")
    assert "### NVTX ranges" in md.stdout and "<summary>NVTX ranges" not in md.stdout  # once


def test_by_name_and_launch_needs_the_whole_trace(tmp_path: Path) -> None:
    path = _summary_trace(tmp_path)
    res = run_cli("summary", str(path), "--by", "name+launch", "--window", "0:1s")
    assert res.exit_code == 2
    split = run_cli("summary", str(path), "--by", "name+launch", "--width", "120")
    assert split.exit_code == 0, split.stderr
    assert "short_kernel [grid 1,1,1, block 128,1,1]" in split.stdout


def test_summary_names_demangled(tmp_path: Path) -> None:
    b = TraceBuilder()
    b.kernels("k", [0, 10_000], [1_000, 1_000], demangled="void ns::k<float>(int)")
    b.kernels("k", [20_000], [2_000], demangled="void ns::k<double>(int)")
    path = b.write(tmp_path / "two.sqlite")
    short = run_cli("summary", str(path), "--width", "100").stdout
    assert "k ⟨double⟩" in short and "k ⟨float⟩" in short
    full = run_cli("summary", str(path), "--width", "100", "--names", "demangled").stdout
    assert "void ns::k<double>(int)" in full and "void ns::k<float>(int)" in full


def test_by_name_and_launch_refuses_a_saved_fingerprint(tmp_path: Path) -> None:
    path = _summary_trace(tmp_path)
    saved = tmp_path / "fp.json"
    assert run_cli("fingerprint", str(path), "-o", str(saved)).exit_code == 0
    res = run_cli("summary", str(saved), "--by", "name+launch")
    assert res.exit_code == 2
    assert "needs the trace" in res.stderr
