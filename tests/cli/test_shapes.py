"""The command line as a new user types it: diff options before the two files, a
mistyped option named, a window that misses the kernels, rules that judge nothing, a
noise profile given where a trace belongs, inconclusive reasons said once."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import real_trace, run_cli
from fpspec import fingerprint

from nsysdiff.fingerprint.model import fingerprint_to_json
from nsysdiff.synth.builder import Generation, TraceBuilder
from nsysdiff.trace import progress

KERNELS = {f"kernel_{i}": (100, 1_000_000 + i) for i in range(300)}


@pytest.fixture(scope="module")
def fps(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A base and a candidate whose diff fails the default rules (exit 1)."""
    d = tmp_path_factory.mktemp("fps")
    slower = dict(KERNELS, kernel_7=(100, 9_000_000))
    base, cand = d / "base.json", d / "cand.json"
    base.write_text(fingerprint_to_json(fingerprint(KERNELS)), encoding="utf-8")
    cand.write_text(fingerprint_to_json(fingerprint(slower)), encoding="utf-8")
    return base, cand


@pytest.mark.parametrize(
    "before",
    [["--no-rules"], ["--rules", "default"], ["-r", "default"], ["--strict"], ["--format", "json"], ["--details"]],
)
def test_diff_options_before_the_files(before: list[str], fps: tuple[Path, Path]) -> None:
    code, out, err = run_cli(*before, *fps)
    after = run_cli(*fps, *before)
    assert "No such option" not in err
    assert (code, out) == after[:2]
    assert code in (0, 1)


def test_output_option_before_the_files(fps: tuple[Path, Path], tmp_path: Path) -> None:
    report = tmp_path / "x.json"
    code, _, err = run_cli("-o", report, *fps)
    assert code == 1, err
    assert json.loads(report.read_text(encoding="utf-8"))["format"] == "nsysdiff-diff"


def test_root_options_keep_their_meaning() -> None:
    code, out, _ = run_cli("--version")
    assert code == 0 and out.startswith("nsysdiff ")
    code, out, _ = run_cli("--help")
    assert code == 0 and "before or after" in out


@pytest.mark.parametrize(
    ("typed", "meant"), [("--rule", "--rules"), ("--detail", "--details"), ("--no-rule", "--no-rules")]
)
def test_a_mistyped_option_gets_a_suggestion(typed: str, meant: str, fps: tuple[Path, Path]) -> None:
    for argv in ([*fps, typed, "tpot"], [typed, "tpot", *fps]):
        code, _, err = run_cli(*argv)
        assert code == 2
        assert f"No such option: {typed}; did you mean {meant}?" in err
        assert len(err.strip().splitlines()) == 1


def test_a_far_option_gets_no_guess(fps: tuple[Path, Path]) -> None:
    code, _, err = run_cli(*fps, "--bogus")
    assert code == 2 and "did you mean" not in err


def _one_ms_trace(path: Path) -> Path:
    b = TraceBuilder(Generation.V2024)
    for i in range(100):
        b.launch("gemm", 10_000 * i, 10_000 * i + 3_000, 2_000)
    return b.write(path)


def test_a_window_without_kernels_is_a_bad_scope(tmp_path: Path) -> None:
    t = _one_ms_trace(tmp_path / "t.sqlite")
    for argv in (["--window", "2s:5s", t, t], ["summary", t, "--window", "2s:5s"]):
        code, out, err = run_cli(*argv)
        assert code == 2, err
        assert out == ""
        assert "--window 2s:5s: no kernel of t.sqlite starts in it" in err
        assert "its kernels run from 0 ns to 992.00 us after the first kernel" in err


def test_rules_without_a_rule_never_pass(fps: tuple[Path, Path], tmp_path: Path) -> None:
    empty = tmp_path / "rules.yaml"
    empty.write_text("version: 1\n", encoding="utf-8")
    code, out, err = run_cli(*fps, "--rules", empty)
    assert code == 3
    assert out.startswith("nsysdiff: INCONCLUSIVE (exit 3) · one workload · nothing judged")
    assert "no rule to judge with" in err and "warning" in err
    code, out, err = run_cli("rules", "validate", empty)
    assert code == 0 and "(0 rules, 0 waivers)" in out
    assert "judges nothing and exits 3" in err


def test_a_noise_profile_as_a_side_names_the_option(fps: tuple[Path, Path], tmp_path: Path) -> None:
    profile = tmp_path / "noise.json"
    profile.write_text(json.dumps({"format": "nsysdiff-noise-profile", "version": 1}), encoding="utf-8")
    code, _, err = run_cli(profile, fps[1])
    assert code == 2
    assert "it is a noise profile (nsysdiff noise): give it with --noise-profile FILE" in err


def test_a_run_set_given_to_summary_is_named_as_one(fps: tuple[Path, Path], tmp_path: Path) -> None:
    runs = tmp_path / "runs.json"
    assert run_cli("fingerprint", "--run-set", *fps, "-o", runs).exit_code == 0
    code, out, err = run_cli("summary", runs)
    assert (code, out) == (2, "")
    assert err.count("\n") == 1
    assert "it is a run set of several runs (nsysdiff fingerprint --run-set)" in err


def test_progress_says_reading_only_of_tables() -> None:
    assert progress.describe("base", "kernels") == "reading base: kernels"
    assert progress.describe("base", "reducing to a fingerprint") == "base: reducing to a fingerprint"
    assert progress.describe("", "scoping (kernels)") == "scoping (kernels)"


def test_inconclusive_reasons_are_printed_once_and_graph_data_is_data() -> None:
    graph, node = real_trace("h100/graph_mode"), real_trace("h100/graph_node")
    code, out, _ = run_cli(graph, node, "--width", "80")
    assert code == 3
    assert out.startswith("nsysdiff: INCONCLUSIVE (exit 3) · can't compare (the reason below)")
    assert out.count("CUDA graph trace modes differ") == 1
    assert "has no kernel data" not in out
    code, md, _ = run_cli(graph, node, "--format", "markdown")
    assert code == 3 and md.count("CUDA graph trace modes differ") == 1
    assert md.startswith("**nsysdiff: INCONCLUSIVE** (exit 3) · can't compare (the reason below)")


def test_a_scoped_diff_shows_scope_and_coverage_first() -> None:
    a, b = real_trace("h100/llm_bs16"), real_trace("h100/llm_bs16_r2")
    code, out, _ = run_cli(a, b, "--nvtx", "decode_step", "--per", "decode_step", "--no-rules", "--width", "80")
    assert code == 0
    first = out.split("More with --details")[0]
    assert "scope        --nvtx decode_step --per decode_step (both)" in first
    assert "coverage     69.9% of kernel time → 69.8% of kernel time" in first
    assert "kernel time per decode_step 2.75 ms → 2.74 ms" in " ".join(out.split())
    assert "decode_step step" not in out
    compiled = real_trace("h100/llm_bs16_compile")
    scoped = ("--nvtx", "decode_step", "--per", "decode_step")
    details = run_cli(a, compiled, *scoped, "--rules", "tpot", "--details")[1]
    assert "per decode_step (32 -> 32 steps)" in " ".join(details.split())
    assert "decode_step step" not in " ".join(details.split())
