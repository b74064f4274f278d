"""Verdicts a CI gate can trust: direction, size floor, no scale, on hand-made and real pairs."""

from __future__ import annotations

from datetime import date
from pathlib import Path

from conftest import real_trace, run_cli, traces_dir
from fpspec import fingerprint, saved_pair

from nsysdiff import api
from nsysdiff.compare.diff import compare
from nsysdiff.rules import evaluate, load_rules
from nsysdiff.rules.report import Level, Outcome

MS = 1_000_000
T = traces_dir()
# The whole text report (--details), 120 columns wide, whatever the terminal.
WHOLE = ("--details", "--width", "120")


REST = {f"op{i}_kernel": (100, (10 + i) * MS) for i in range(12)}


def test_a_faster_outlier_is_an_improvement_and_passes(tmp_path: Path) -> None:
    b, c = saved_pair(tmp_path, REST | {"odd_kernel": (50, 20 * MS)}, REST | {"odd_kernel": (50, 5 * MS)})
    code, out, _ = run_cli(b, c, *WHOLE)
    assert code == 0
    assert "info           improvement · odd_kernel" in out
    assert "0.25x of scale (improvement)" in out and "odd_kernel  [other]  improvement" in out
    assert "top improvement" in out.split("\n\n")[0].replace("\n  ", " ")
    assert run_cli(b, c, "--strict", *WHOLE)[0] == 0  # info never fails, even with --strict


def test_a_slower_outlier_fails(tmp_path: Path) -> None:
    b, c = saved_pair(tmp_path, REST | {"odd_kernel": (50, 5 * MS)}, REST | {"odd_kernel": (50, 20 * MS)})
    code, out, _ = run_cli(b, c, *WHOLE)
    assert code == 1 and "ERROR          outlier · odd_kernel" in out


def test_the_pack_floor_applies_to_the_outlier_rule_unless_the_calls_are_evidence(tmp_path: Path) -> None:
    # 4x slower but 200 us -> 800 us: under the default pack's 1 ms floor on both sides.
    # In 2 calls that is no evidence; in 50 calls, every one of them slower, it is.
    b, c = saved_pair(tmp_path, REST | {"odd_kernel": (2, 200_000)}, REST | {"odd_kernel": (2, 800_000)})
    d = compare(fingerprint(REST | {"odd_kernel": (2, 200_000)}), fingerprint(REST | {"odd_kernel": (2, 800_000)}))
    assert [r.name for r in d.outliers] == ["odd_kernel"]  # the diff still shows it
    code, out, _ = run_cli(b, c, *WHOLE)
    assert code == 0 and "outlier · odd_kernel" not in out
    (tmp_path / "50").mkdir()
    b50, c50 = saved_pair(tmp_path / "50", REST | {"odd_kernel": (50, 200_000)}, REST | {"odd_kernel": (50, 800_000)})
    code, out, _ = run_cli(b50, c50, *WHOLE)
    assert code == 1 and "ERROR          outlier · odd_kernel" in out
    # Without the floor (a rule file of its own) the same change fails.
    rules = tmp_path / "r.yaml"
    rules.write_text("version: 1\nrules:\n  - id: any-outlier\n    kind: outlier\n    direction: slower\n")
    assert run_cli(b, c, "--rules", str(rules), *WHOLE)[0] == 1


def test_strict_keeps_failing_on_warnings(tmp_path: Path) -> None:
    rules = tmp_path / "r.yaml"
    rules.write_text("version: 1\nrules:\n  - id: slow\n    kind: outlier\n    level: warning\n")
    b, c = saved_pair(tmp_path, REST | {"odd_kernel": (50, 5 * MS)}, REST | {"odd_kernel": (50, 20 * MS)})
    assert run_cli(b, c, "--rules", str(rules), *WHOLE)[0] == 0
    assert run_cli(b, c, "--rules", str(rules), "--strict", *WHOLE)[0] == 1


def test_no_kernel_in_common_is_two_programs_whatever_a_rule_says(tmp_path: Path) -> None:
    b, c = saved_pair(tmp_path, {"a_kernel": (10, 10 * MS)}, {"b_kernel": (10, 10_200_000)})
    code, out, _ = run_cli(b, c, *WHOLE)
    assert code == 3 and "different programs (no kernel runs on both sides)" in out
    rules = tmp_path / "r.yaml"
    rules.write_text("version: 1\nrules:\n  - id: same-set\n    kind: structure\n    check: kernel-set\n")
    code, out, _ = run_cli(b, c, "--rules", str(rules), *WHOLE)
    assert code == 3 and "Failed rules" not in out
    assert (
        "not judged: same-set: different programs (no kernel runs on both sides); it would have failed"
        in out.replace("\n    ", " ")
    )


def test_torch_compile_speedup_fails_only_on_the_attention_kernel_it_slowed() -> None:
    # torch.compile made decode 0.70x: it used to fail on two outliers, one of them faster.
    # Its faster kernels are improvements; the prefill's cuDNN attention kernel runs 1.60x
    # slower in every one of its 16 calls (176 us -> 283 us, under the 1 ms floor, but
    # its calls are the evidence), and is the one finding that fails.
    b, c = real_trace("h100/llm_bs1"), real_trace("h100/llm_bs1_compile")
    diff = compare(api.load(b), api.load(c))
    findings, results = evaluate(diff, load_rules(["default"]), today=date(2026, 1, 1))
    report = api.judge(diff, findings, results)
    assert report.outcome is Outcome.FAIL
    improvements = [f for f in findings if f.rule_id == "improvement"]
    assert improvements and all(f.level is Level.INFO for f in improvements)
    (slower,) = [f for f in findings if f.rule_id == "outlier"]
    assert slower.subject.startswith("cudnn_generated_fort_native_sdpa_sm90_flash_fprop")


def test_one_small_kernel_faster_on_another_gpu_passes() -> None:
    # One 11 us kernel got faster in a 402 us trace: an improvement, and too small anyway.
    code, out, _ = run_cli(str(real_trace("fuser_h100_report1")), str(real_trace("fuser_h200_report1")), *WHOLE)
    assert code == 0 and "FAIL" not in out


def test_traces_with_nothing_in_common_are_two_programs_in_both_directions() -> None:
    # No kernel in common: kernel time grew 25.84x, but nothing is judged across two
    # programs, faster or slower; the budget that would have failed says so, not judged.
    b, c = str(real_trace("fuser_h200_report1")), str(real_trace("fuser_h200_2025"))
    for base, cand in ((b, c), (c, b)):
        code, out, _ = run_cli(base, cand, *WHOLE)
        assert code == 3 and "different programs (no kernel runs on both sides" in out
        assert "Failed rules" not in out and "ERROR" not in out
    assert "it would have failed: whole trace 25.84x" in run_cli(b, c, *WHOLE).stdout.replace("\n    ", " ")


def test_two_offload_builds_with_no_kernel_in_common_exit_3_in_both_directions(tmp_path: Path) -> None:
    # 696 ms -> 2.543 s with no kernel in common used to fail on total time, and the
    # reverse to be inconclusive: two programs are not judged whichever is faster.
    a, b = {"__omp_offloading_a_l10": (40, 696 * MS)}, {"__omp_offloading_b_l12": (40, 2543 * MS)}
    for i, (base, cand) in enumerate(((a, b), (b, a))):
        (tmp_path / str(i)).mkdir()
        x, y = saved_pair(tmp_path / str(i), base, cand)
        code, out, _ = run_cli(x, y, *WHOLE)
        assert code == 3 and "different programs" in out.splitlines()[0], out


def test_a_failed_budget_fails_without_a_scale(tmp_path: Path) -> None:
    # The same two kernels, changed so unevenly (0.1x and 4.2x) that no scale exists, and
    # kernel time 3.59x: a total-time budget needs no scale, so the verdict is FAIL.
    b, c = saved_pair(
        tmp_path,
        {"a_kernel": (40, 100 * MS), "b_kernel": (40, 600 * MS)},
        {"a_kernel": (40, 10 * MS), "b_kernel": (40, 2500 * MS)},
    )
    code, out, _ = run_cli(b, c, *WHOLE)
    assert code == 1, out
    assert "ERROR          total-time · whole trace" in out
    assert "note: no meaningful overall scale" in out


def test_without_a_scale_only_scale_free_findings_decide(tmp_path: Path) -> None:
    # The kernels changed too unevenly for a scale (0.1x and 1.05x), the total within
    # budget: the statistics judge nothing, so the outcome stays inconclusive.
    b, c = saved_pair(
        tmp_path,
        {"a_kernel": (10, 10 * MS), "b_kernel": (10, 10 * MS)},
        {"a_kernel": (10, MS), "b_kernel": (10, 10_500_000)},
    )
    code, out, _ = run_cli(b, c, *WHOLE)
    assert code == 3 and "no meaningful overall scale" in out


def test_with_no_outlier_the_verdict_line_names_the_top_contributor(tmp_path: Path) -> None:
    # The lm_head run in fp32: +21.69 ms, of which a new fp32 GEMM is +20.68 ms in place
    # of a 1.60 ms bf16 one. No kernel on both sides scaled abnormally: the verdict line
    # names the cause and its share of the change, not only "total-time 1.17x".
    rest = {f"op{i}_kernel": (160, 12 * MS) for i in range(10)}
    fp32 = (
        "sm80_xmma_gemm_f32f32_f32f32_f32_tn_n_tilesize128x128x8_stage3_warpsize2x2x1_ffma_aligna4_"
        "alignc4_execute_kernel__5x_cublas"
    )
    b, c = saved_pair(
        tmp_path,
        rest | {"nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_TNT": (32, 1_600_000)},
        {k: (n, t + 61_000) for k, (n, t) in rest.items()} | {fp32: (32, 20_680_000)},
    )
    _, out, _ = run_cli(b, c, *WHOLE)
    first = out.split("\n\n")[0].replace("\n  ", " ")
    assert "top outlier" not in first
    assert "top change new sm80_xmma_gemm_f32f32" in first and "(97% of +19.69 ms)" in first, first


def test_nccl_growth_that_is_waiting_says_so_on_the_first_screen() -> None:
    # The job got faster (0.91x); SendRecv +8.34 ms is mostly waiting for the other rank.
    b, c = real_trace("nsysai_mfu_h100x2_before"), real_trace("nsysai_mfu_h100x2_after")
    r = run_cli(str(b), str(c), "--width", "120")
    assert r.exit_code == 0, r.stdout
    assert "ncclDevKernel_SendRecv +8.34 ms (slower calls, +7.52 ms of it waiting for other ranks)" in r.stdout
    assert "outlier" not in r.stdout.split("\n")[0]
