"""Reports at 80 columns: every table keeps its names and whole numbers, names break where
a name breaks (after `_`, at a space or a bracket), a finding's subject is never broken,
and a kernel has one label in the text, the rule subjects, GitHub annotations and JUnit."""

from __future__ import annotations

import itertools
import re
from pathlib import Path

from conftest import real_trace, run_cli

from nsysdiff.render.layout import break_name


def test_names_break_where_names_break() -> None:
    assert break_name("vectorized_elementwise_kernel", 28) == ["vectorized_elementwise_", "kernel"]
    assert break_name("cudnn_generated_fort_native_sdpa_sm80", 30) == ["cudnn_generated_fort_native_", "sdpa_sm80"]
    assert break_name("elementwise_kernel ⟨CUDAFunctor_add⟩", 28) == ["elementwise_kernel", "⟨CUDAFunctor_add⟩"]
    assert break_name("reduce_kernel<512,1>", 15) == ["reduce_kernel", "<512,1>"]
    assert break_name("abcdefghij", 4) == ["abcd", "efgh", "ij"]  # no place to break: cut


def _joined_pieces(table: str) -> list[tuple[str, str]]:
    """(end of a name line, start of its continuation) in the first column of a table."""
    lines = table.splitlines()
    out = []
    for above, below in itertools.pairwise(lines[2:]):  # after the header and its rule
        if below and not below.startswith(" ") and "  " not in below.strip() and "  " in above:
            out.append((above.split("  ")[0], below.strip()))
    return out


def test_h100_tables_at_80_columns(tmp_path: Path) -> None:
    phases = tmp_path / "phases.yaml"
    phases.write_text("phases:\n  prefill: prefill\n  decode: decode_step\n", encoding="utf-8")
    a, b = real_trace("h100/llm_bs1"), real_trace("h100/llm_bs16")
    out = run_cli(a, b, "--phases", phases, "--details", "--no-rules", "--width", "80").stdout
    assert "…" not in out  # numbers are never cut
    section = out.split("\nPhases\n")[1].split("\n\n")[0]
    assert re.search(r"^prefill +1 → 1 +3\.72 ms +37\.81 ms +10\.16x", section, re.M)
    assert "decode: top outlier CatArrayBatchedCopy_vectorized ⟨OpaqueType<2>⟩ 5.13x" in section
    copies = out.split("\nMemory operations\n")[1].split("\n\n")[0]
    assert copies.splitlines()[0].split() == ["kind", "ops", "bytes", "time", "verdict"]
    assert "4.22 MB → 4.22 MB" in copies
    top = out.split("\nTop changes by absolute time")[1].split("\n\n")[0]
    for end, start in _joined_pieces(top):
        # A name continues after `_`, a space or before a bracket, never mid-word.
        at_space = "⟨" in end and "⟩" not in end  # between the words of a label's hint
        assert end.endswith("_") or start.startswith(("⟨", "<", "(", "[")) or at_space, (end, start)
    assert re.search(r"^nvjet_sm90_tst_256x128_64x4_1x2_ .*\nh_bz_coopA_TNT$", top, re.M)


def test_noise_at_80_columns_keeps_kind_and_robust() -> None:
    a, b = real_trace("h100/llm_bs16"), real_trace("h100/llm_bs16_r2")
    out = run_cli("noise", a, b, "--width", "80").stdout
    table = out.split("noise width)\n")[1]
    assert table.splitlines()[0].split() == ["key", "kind", "mean/call", "width", "robust"]
    assert "void at::native" not in out  # kernels by their labels, as the diff names them
    assert re.search(r"^CatArrayBatchedCopy ⟨OpaqueType<4>⟩ +kernel ", table, re.M)
    assert re.search(r"^nvjet_sm90_tst_64x16_64x16_4x1_v_bz_ +kernel .*\nTNT$", table, re.M)
    wide = run_cli("noise", a, b, "--width", "200").stdout.split("noise width)\n")[1].splitlines()[0]
    # Each column says which width it is: the mean's, then the whole scope's total's.
    assert re.split(r"  +", wide.strip()) == ["key", "kind", "mean/call", "width", "robust", "total", "total width"]


def test_one_label_per_kernel_in_every_output(tmp_path: Path) -> None:
    a, b = real_trace("h100/llm_bs1"), real_trace("h100/llm_bs16")
    junit = tmp_path / "r.xml"
    text = run_cli(a, b, "--rules", "batch-invariance", "--details", "--width", "200", "-o", junit).stdout
    github = run_cli(a, b, "--rules", "batch-invariance", "--format", "github").stdout
    label = "elementwise_kernel ⟨CUDAFunctor_add⟩"
    assert f"outlier · {label}" in text
    assert f"title=outlier%3A {label}" in github
    assert f'name="outlier[{label}]"' in junit.read_text(encoding="utf-8")
    assert "void at::native::elementwise_kernel<" not in github


def test_a_subject_is_never_broken() -> None:
    a, b = real_trace("h100/example_bs1"), real_trace("h100/example_bs16")
    out = run_cli(a, b, "--rules", "batch-invariance", "--width", "80").stdout
    subject = "cudnn_generated_fort_native_sdpa_sm80_flash_fprop_wmma_f16_knob_*_cga1x1x1_kernel0"
    assert f"  {subject}\n" in out
    assert "gemm-selection · nvjet_sm90_tst_*_bz\n" in out


def test_a_budget_on_each_kernel_names_it_by_its_label(tmp_path: Path) -> None:
    rules = tmp_path / "each.yaml"
    rules.write_text(
        "version: 1\nrules:\n  - id: each-add\n    kind: budget\n    kernel: CUDAFunctor_add\n    each: true\n"
        "    metric: total_time\n    max_ratio: 1.0x\n",
        encoding="utf-8",
    )
    # A repeat of one build (one workload: its time budgets judge; batch 1 against 16 is a
    # resized workload whose absolute times are not judged).
    a, b = real_trace("h100/llm_bs16_r2"), real_trace("h100/llm_bs16")
    out = run_cli(a, b, "--rules", rules, "--details", "--width", "200").stdout
    assert "each-add · vectorized_elementwise_kernel ⟨CUDAFunctor_add⟩\n" in out
    assert "each-add · void " not in out


def test_a_failed_rule_of_several_words_wraps_at_80_columns(tmp_path: Path) -> None:
    """The failed rule's subject is the line a CI log is read for: a phrase wraps between
    its words, and every name in it stays whole (one longer than the line runs past it,
    alone on its line)."""
    import planted_steps

    base = real_trace("h100/llm_bs16")
    fp32 = planted_steps.fp32_head(base, tmp_path / "fp32.sqlite")
    out = run_cli(base, fp32, "--rules", "tpot", "--width", "80").stdout
    failed = out.split("Failed rules", 1)[1].split("\n\n", 1)[0]
    assert all(len(line) <= 80 or " " not in line.strip() for line in failed.splitlines()), failed
    assert "\n  decode_step GPU time per step:\n" in failed, failed
    gemm = "sm80_xmma_gemm_f32f32_f32f32_f32_tn_n_tilesize128x128x8_stage3_warpsize2x2x1_ffma_execute_kernel"
    assert f"\n  {gemm}\n  (new)\n" in failed, failed
