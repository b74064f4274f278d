"""The batch-invariance pack: one finding per cause, on built traces and real H100 pairs."""

from __future__ import annotations

from datetime import date
from pathlib import Path

import pytest
from conftest import traces_dir

from nsysdiff import api
from nsysdiff.compare.diff import compare
from nsysdiff.rules import evaluate, load_rules
from nsysdiff.rules.report import Finding, Level
from nsysdiff.synth.builder import TraceBuilder

H100 = traces_dir() / "h100"
CASCADE = Path(__file__).resolve().parents[2] / "examples" / "cascade"
RULES = load_rules(["batch-invariance"])
TODAY = date(2025, 1, 1)

RMS = "void vllm::rms_norm_kernel<c10::BFloat16>(c10::BFloat16 *, const c10::BFloat16 *, float, int)"
REDUCE = "void at::native::reduce_kernel<(int)512, (int)1, R>(R)"
ADD = "void at::native::vectorized_elementwise_kernel<(int)4, AddFunctor<float>>(int, F)"


def _trace(
    path: Path,
    *,
    scale: float = 1.0,
    gemm: str = "nvjet_sm90_tst_64x8_64x16_4x1_v_bz_TNT",
    split: str = "nvjet_sm90_tst_64x8_64x16_2x1_v_bz_splitK_TNT",
    reduce_grid: tuple[int, int, int] = (4, 1, 1),
    lean: bool = False,
    merge: bool = False,
    add_grid: tuple[int, int, int] = (8, 1, 1),
) -> Path:
    """A decode step repeated 32 times: GEMMs, a split-K pair, attention, norm, reduce.

    Every argument left at its default gives the same kernels and launch shapes, so two
    traces that differ only in ``scale`` (all times multiplied) are batch invariant by
    construction.
    """
    b = TraceBuilder()
    t = 1_000_000
    step: list[tuple[str, str | None, int, tuple[int, int, int], tuple[int, int, int]]] = [
        (gemm, None, 9_000, (132, 1, 1), (384, 1, 1)),
        (split, None, 4_000, (66, 1, 1), (384, 1, 1)),
        ("splitKreduce_kernel", None, 1_500, (16, 1, 1), (256, 1, 1)),
        ("flash_fwd_splitkv_kernel", None, 6_000, (1, 8, 1), (128, 1, 1)),
        ("rms_norm_kernel", RMS, 2_000, (1, 1, 1), (256, 1, 1)),
        ("reduce_kernel", REDUCE, 1_000, reduce_grid, (512, 1, 1)),
        ("vectorized_elementwise_kernel", ADD, 800, add_grid, (128, 1, 1)),
    ]
    if lean:
        step.append(("lean_reduction_kernel", None, 1_200, (2, 1, 1), (256, 1, 1)))
    if merge:
        step.append(("merge_attn_states_kernel", None, 1_100, (8, 1, 1), (128, 1, 1)))
    for _ in range(32):
        for name, dem, dur, grid, block in step:
            d = round(dur * scale)
            b.launch(name, t - 5_000, t, d, demangled=dem, grid=grid, block=block)
            t += d + 500
    return b.write(path)


def _findings(base: Path, cand: Path) -> list[Finding]:
    diff = compare(api.load(base), api.load(cand))
    found, _ = evaluate(diff, RULES, today=TODAY)
    return [f for f in found if not f.waived]


def test_invariant_pair_by_construction_gives_no_finding(tmp_path: Path) -> None:
    base = _trace(tmp_path / "bs1.sqlite")
    for scale in (0.7, 1.0, 2.5):
        assert _findings(base, _trace(tmp_path / f"bs16_{scale}.sqlite", scale=scale)) == []


def test_element_wise_grid_growth_is_no_cause(tmp_path: Path) -> None:
    """An element-wise kernel's grid follows the tensor size: no summation order changes."""
    base = _trace(tmp_path / "bs1.sqlite")
    cand = _trace(tmp_path / "bs16.sqlite", scale=2.0, add_grid=(128, 1, 1))
    assert _findings(base, cand) == []


def test_each_cause_is_one_finding_with_its_restatements_folded(tmp_path: Path) -> None:
    base = _trace(tmp_path / "bs1.sqlite", lean=True)
    cand = _trace(
        tmp_path / "bs16.sqlite",
        scale=2.0,
        gemm="nvjet_sm90_tst_64x16_64x16_4x1_v_bz_TNT",
        split="nvjet_sm90_tst_64x16_64x16_2x1_v_bz_splitK_TNT",
        reduce_grid=(1, 1, 1),
        merge=True,
    )
    found = _findings(base, cand)
    by = {(f.rule_id, f.subject): f for f in found}
    assert sorted(by) == [
        ("attention-path", "merge_attn_states_kernel"),
        ("gemm-selection", "nvjet_sm90_tst_*_bz"),
        ("gemm-selection", "nvjet_sm90_tst_*_bz_splitK"),
        ("launch-split", "reduce_kernel"),
        ("reduction-one-side", "lean_reduction_kernel"),
    ]
    assert all(f.level is Level.ERROR and not f.statistical for f in found)
    tile = by[("gemm-selection", "nvjet_sm90_tst_*_bz")]
    assert tile.observed == "1 variant -> 1: tile 64x8 -> 64x16"
    assert "also flagged by dz-cublas-gemm x2, same-kernel-set x2" in tile.evidence
    split = by[("gemm-selection", "nvjet_sm90_tst_*_bz_splitK")]
    assert split.observed == "1 variant -> 1: tile 64x8 -> 64x16; split-K variant swapped"
    # The split-K reduce kernel is part of the split-K cause, not a danger zone of its own.
    assert "its reduce kernel splitKreduce_kernel: calls 32 -> 32" in split.evidence
    assert by[("launch-split", "reduce_kernel")].observed == "grid x 4 -> 1"
    assert by[("reduction-one-side", "lean_reduction_kernel")].observed == "runs only in base"


def test_a_gemm_call_mix_change_is_a_cause(tmp_path: Path) -> None:
    """The same two GEMM variants, chosen for other calls: a selection change."""

    def trace(path: Path, small: int, large: int) -> Path:
        b = TraceBuilder()
        t = 1_000
        for name, n in (
            ("nvjet_sm90_tst_64x8_64x16_4x1_v_bz_TNT", small),
            ("nvjet_sm90_tst_128x64_64x8_1x2_h_bz_TNT", large),
        ):
            for _ in range(n):
                b.launch(name, t, t, 5_000)
                t += 6_000
        return b.write(path)

    found = _findings(trace(tmp_path / "a.sqlite", 30, 10), trace(tmp_path / "b.sqlite", 10, 30))
    assert [(f.rule_id, f.observed) for f in found] == [("gemm-selection", "same variants, other call mix (2 changed)")]
    # All variants scaling alike (more steps) is no selection change.
    assert not [
        f
        for f in _findings(trace(tmp_path / "c.sqlite", 10, 10), trace(tmp_path / "d.sqlite", 20, 20))
        if f.rule_id == "gemm-selection"
    ]


def test_a_waived_cause_does_not_swallow_other_findings(tmp_path: Path) -> None:
    base = _trace(tmp_path / "bs1.sqlite")
    cand = _trace(tmp_path / "bs16.sqlite", gemm="nvjet_sm90_tst_64x16_64x16_4x1_v_bz_TNT")
    yaml = tmp_path / "rules.yaml"
    yaml.write_text(
        "version: 1\nextends: batch-invariance\nwaivers:\n"
        "  - rule: gemm-selection\n    subject: nvjet_sm90_tst_*_bz\n"
        "    reason: pinned in the next release\n    expires: 2099-01-01\n",
        encoding="utf-8",
    )
    diff = compare(api.load(base), api.load(cand))
    found, results = evaluate(diff, load_rules([str(yaml)]), today=TODAY)
    assert [f.rule_id for f in found if f.waived] == ["gemm-selection"]
    active = sorted(f.rule_id for f in found if not f.waived)
    assert active == ["dz-cublas-gemm", "dz-cublas-gemm", "same-kernel-set", "same-kernel-set"]
    counts = {r.rule_id: r.findings for r in results}
    assert counts["gemm-selection"] == 0 and counts["dz-cublas-gemm"] == 2


def _pair(name: str) -> tuple[Path, Path]:
    b, c = H100 / f"{name}_bs1.sqlite", H100 / f"{name}_bs16.sqlite"
    if not (b.exists() and c.exists()):
        pytest.skip(f"real H100 traces {name}_bs1/_bs16 not found")
    return b, c


def test_h100_llm_pair_names_each_cause_once() -> None:
    """Request 0's logits differ bitwise at 32 of 33 steps (../shared/traces/h100/README)."""
    found = _findings(*_pair("llm"))
    errors = [f for f in found if f.level is Level.ERROR]
    assert 1 <= len(errors) <= 5
    assert len(found) <= 8  # readable in one screen
    subjects = {(f.rule_id, f.subject): f for f in errors}
    tile = subjects[("gemm-selection", "nvjet_sm90_tst_*_bz")]
    assert "tile 64x8" in tile.observed and "64x16" in tile.observed
    split = subjects[("gemm-selection", "nvjet_sm90_tst_*_bz_splitK")]
    assert "split-K variant swapped" in split.observed and "64x8 -> 64x16" in split.observed
    assert subjects[("reduction-one-side", "lean_reduction_kernel")].observed == "runs only in base"
    # No kernel is reported twice: every nvjet finding was folded into a GEMM cause.
    assert not [f for f in found if f.subject.startswith("nvjet") and f.kind != "invariance"]


def test_h100_example_pair_names_each_cause_once() -> None:
    found = _findings(*_pair("example"))
    errors = [f for f in found if f.level is Level.ERROR]
    assert 1 <= len(errors) <= 5
    assert {"nvjet_sm90_tst_*_bz", "nvjet_sm90_tst_*_bz_splitK"} <= {f.subject for f in errors}


@pytest.mark.parametrize("name", ["llm_bs1", "llm_bs16", "example_bs1", "graph_node"])
def test_h100_trace_against_itself_gives_no_finding(name: str) -> None:
    path = H100 / f"{name}.sqlite"
    if not path.exists():
        pytest.skip(f"{path} not found")
    assert _findings(path, path) == []


@pytest.mark.skipif(not (CASCADE / "bs16.sqlite").exists(), reason="cascade example not generated")
def test_cascade_names_the_outlier_the_variant_swap_and_the_danger_zone() -> None:
    found = _findings(CASCADE / "bs1.sqlite", CASCADE / "bs16.sqlite")
    errors = {f.rule_id: f for f in found if f.level is Level.ERROR}
    assert set(errors) == {"gemm-selection"}
    # The outlier is a hint where to look, not a cause of different numbers: a warning.
    (outlier,) = [f for f in found if f.rule_id == "outlier"]
    assert outlier.level is Level.WARNING and "reshape_and_cache" in outlier.subject
    swap = errors["gemm-selection"]
    assert swap.subject == "nvjet_tst_*_bz" and "7 variants -> 7" in swap.observed
    assert "also flagged by dz-cublas-gemm" in swap.evidence


def _conv_trace(path: Path, conv: str, block: tuple[int, int, int], scale: float = 1.0) -> Path:
    """A convolution step (a cuDNN kernel fused with its ReLU) and an element-wise add, 32 times."""
    b = TraceBuilder()
    t = 1_000_000
    for _ in range(32):
        step = ((conv, None, 9_000, block), ("vectorized_elementwise_kernel", ADD, 800, (128, 1, 1)))
        for name, dem, dur, blk in step:
            d = round(dur * scale)
            b.launch(name, t - 5_000, t, d, demangled=dem, grid=(64, 1, 1), block=blk)
            t += d + 500
    return b.write(path)


def test_a_relu_fused_convolution_is_judged_as_a_convolution(tmp_path: Path) -> None:
    """A cuDNN convolution with `relu` in its name used to be an element-wise kernel, which
    launch-split leaves out: its changed block shape (another split of the reduction over
    channels) went unseen, and a swap of convolution algorithm was no selection change."""
    conv = "volta_scudnn_128x64_relu_interior_nn_v1"
    base = _conv_trace(tmp_path / "bs1.sqlite", conv, (256, 1, 1))
    reshaped = _conv_trace(tmp_path / "bs16.sqlite", conv, (128, 1, 1), scale=2.0)
    by = {f.rule_id: f for f in _findings(base, reshaped)}
    assert by["launch-split"].subject == "volta_scudnn_*_relu_interior_*_v1"
    assert by["launch-split"].observed == "block 256x1x1 -> 128x1x1"
    swapped = _conv_trace(tmp_path / "bs16_swap.sqlite", "volta_scudnn_128x128_relu_interior_nn_v1", (256, 1, 1))
    by = {f.rule_id: f for f in _findings(base, swapped)}
    assert by["gemm-selection"].observed == "1 variant -> 1: tile 128x64 -> 128x128"
    assert "cuDNN picks convolution kernels the same way" in by["gemm-selection"].message
