"""What is being compared: built traces of each kind get their kind, their first line and
their verdict (docs/comparisons.md); an inconclusive comparison lists no failed rule."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest
from conftest import run_cli

from nsysdiff import api
from nsysdiff.compare import geometry
from nsysdiff.rules.comparison import Kind
from nsysdiff.synth.builder import TraceBuilder

# name, calls, ns per call, grid, block
Launch = tuple[str, int, int, tuple[int, int, int], tuple[int, int, int]]


def _trace(
    path: Path,
    launches: Sequence[Launch],
    copies: int = 0,
    copy_bytes: int = 0,
    window: tuple[int, int] | None = None,
) -> Path:
    b = TraceBuilder(derived_window=window)
    t = 1_000_000
    for name, calls, ns, grid, block in launches:
        starts = t + np.arange(calls, dtype=np.int64) * (ns + 1_000)
        b.kernels(name, starts, np.full(calls, ns, dtype=np.int64), grid=grid, block=block)
        t = int(starts[-1]) + ns + 10_000
    for i in range(copies):
        b.memcpy("HtoD", t + i * 2_000, 1_000, copy_bytes // copies)
    return b.write(path)


def _first_line(out: str) -> str:
    """The verdict line, unwrapped."""
    lines = out.splitlines()
    head = [lines[0]]
    for line in lines[1:]:
        if not line.startswith("  ") or line.startswith("  note:"):
            break
        head.append(line.strip())
    return " ".join(head)


# --- the same work split differently -----------------------------------------------------


def test_one_launch_split_into_10000_of_the_same_work_fails_named(tmp_path: Path) -> None:
    # A vector add of 10M elements: 1 launch of 39,063 blocks against 10,000 launches of 4
    # blocks (40,000 in all), 3 copies against 30,000 of the same bytes: 42.7x the time.
    base = _trace(tmp_path / "one.sqlite", [("vectorAdd", 1, 500_000, (39_063, 1, 1), (256, 1, 1))], 3, 120_000_000)
    cand = _trace(tmp_path / "many.sqlite", [("vectorAdd", 10_000, 2_135, (4, 1, 1), (256, 1, 1))], 30_000, 120_000_000)
    report = api.diff(base, cand)
    c = report.comparison
    assert c.kind is Kind.SPLIT
    assert c.geometry is not None and c.geometry.conserved
    assert "1 launch → 10,000 smaller launches, the same 10M threads (1.02x)" in c.why
    assert int(report.exit_code) == 1
    assert [f.rule_id for f in report.failed] == ["total-time"]
    code, out, _ = run_cli(base, cand)
    assert code == 1
    assert _first_line(out).startswith(
        "nsysdiff: FAIL (exit 1) · the same work split differently (1 launch → 10,000 smaller launches"
    )
    assert "Outliers" not in out  # a count effect is never an outlier


def _ngp(path: Path, chunk: int, calls: int, density_ns: int, mlp_ns: int) -> Path:
    """An instant-ngp-like inference: the density grid, an MLP and compositing, launched
    once per chunk of rays."""
    return _trace(
        path,
        [
            ("extract_density", calls, density_ns, (chunk, 1, 1), (128, 1, 1)),
            ("kernel_mlp_fused", calls, mlp_ns, (chunk, 1, 1), (128, 1, 1)),
            ("composite_kernel_nerf", calls, mlp_ns // 2, (chunk, 1, 1), (128, 1, 1)),
            ("generate_grid_samples", calls, mlp_ns // 3, (chunk, 1, 1), (128, 1, 1)),
        ],
    )


def test_a_halved_chunk_with_doubled_calls_is_no_outlier(tmp_path: Path) -> None:
    # Grid 16,200 -> 8,100 with twice the calls: extract_density's total grows 1.64x at
    # 0.82x per call while the rest fall; a count effect of the chunking, never an outlier.
    base = _ngp(tmp_path / "b.sqlite", 16_200, 905, 20_000, 400_000)
    cand = _ngp(tmp_path / "c.sqlite", 8_100, 1_810, 16_400, 80_000)
    old = api.check(api.compare(api.load(base), api.load(cand)))
    report = api.diff(base, cand)
    assert report.comparison.kind is Kind.SPLIT
    assert not report.diff.outliers
    assert not [f for f in report.failed if f.rule_id == "outlier"]
    assert int(report.exit_code) == 0
    assert int(old.exit_code) == 0  # the notebook path agrees


# --- different programs -----------------------------------------------------------------


@pytest.fixture
def two_programs(tmp_path: Path) -> tuple[Path, Path]:
    a = _trace(
        tmp_path / "a.sqlite",
        [
            ("omp_offload_jacobi", 200, 300_000, (512, 1, 1), (128, 1, 1)),
            ("omp_reduce", 200, 20_000, (64, 1, 1), (256, 1, 1)),
        ],
    )
    b = _trace(
        tmp_path / "b.sqlite",
        [
            ("stream_triad", 500, 600_000, (1024, 1, 1), (256, 1, 1)),
            ("stream_copy", 500, 400_000, (1024, 1, 1), (256, 1, 1)),
        ],
    )
    return a, b


@pytest.mark.parametrize("rules", ["default", "tpot", "batch-invariance"])
def test_two_programs_with_no_kernel_in_common_exit_3_both_ways(two_programs: tuple[Path, Path], rules: str) -> None:
    a, b = two_programs
    for base, cand in ((a, b), (b, a)):
        code, out, err = run_cli(base, cand, "--rules", rules)
        assert (code, err) == (3, ""), out
        first = _first_line(out)
        assert first.startswith("nsysdiff: INCONCLUSIVE (exit 3) · "), first
        assert "different programs" in first or "can't compare" in first
        assert "Failed rules" not in out and "Outliers" not in out


def test_an_inconclusive_report_lists_no_failed_rule_in_any_format(two_programs: tuple[Path, Path]) -> None:
    a, b = two_programs
    report = api.diff(a, b)  # 3.3x slower: total-time would have failed
    assert report.comparison.kind is Kind.DIFFERENT_PROGRAMS
    assert not report.failed and not report.diff.outliers
    total = next(r for r in report.rules if r.rule_id == "total-time")
    assert total.remark == "not judged"
    assert total.remark_reason.startswith("different programs (no kernel runs on both sides)")
    assert "it would have failed: whole trace 7.81x" in total.remark_reason
    code, out, _ = run_cli(a, b, "--format", "json")
    doc = json.loads(out)
    assert code == 3 and doc["comparison"]["kind"] == "different_programs"
    assert not [f for f in doc["findings"] if f["failing"]]
    assert "total-time" in [n["rule"] for n in doc["comparison"]["not_judged"]]
    code, md, _ = run_cli(a, b, "--format", "markdown")
    assert code == 3 and "different programs" in md.splitlines()[0] and "Failed rules" not in md


# --- a resized workload -------------------------------------------------------------------


def _decoder(path: Path, batch: int, gather_ns: int) -> Path:
    """A decode step at ``batch``: grids scale with the batch, times less than linearly;
    the gather's time given on its own (a kernel that scales wrong)."""
    scale = 1 + 0.6 * (batch - 1) / 15  # 1.6x of the time for 16x the work
    return _trace(
        path,
        [
            ("vectorized_elementwise_kernel", 400, int(8_000 * scale), (392 * batch, 1, 1), (128, 1, 1)),
            ("layer_norm_kernel", 200, int(10_000 * scale), (batch, 1, 1), (512, 1, 1)),
            ("softmax_warp_forward", 200, int(12_000 * scale), (batch * 8, 1, 1), (128, 1, 1)),
            (
                "ampere_bf16_s16816gemm_bf16_128x128_ldg8_f2f_tn",
                200,
                int(50_000 * scale),
                (8 * batch, 4, 1),
                (256, 1, 1),
            ),
            ("indexSelectSmallIndex", 8, gather_ns, (batch * 4, 1, 1), (128, 1, 1)),
        ],
    )


def test_a_resized_workload_is_judged_by_scale_and_names_the_abnormal_scaler(tmp_path: Path) -> None:
    base = _decoder(tmp_path / "bs1.sqlite", 1, 5_000)
    cand = _decoder(tmp_path / "bs16.sqlite", 16, 25_000)  # 5x where the rest took 1.6x
    report = api.diff(base, cand)
    assert report.comparison.kind is Kind.RESIZED
    g = report.comparison.geometry
    assert g is not None and g.ratio > 2 and g.work_ratio > 2
    assert [r.name for r in report.diff.outliers][:1] == ["indexSelectSmallIndex"]
    assert [f.rule_id for f in report.failed] == ["outlier"]
    total = next(r for r in report.rules if r.rule_id == "total-time")
    assert total.remark == "not judged" and "absolute times measure the workload" in total.remark_reason
    code, out, _ = run_cli(base, cand)
    first = _first_line(out)
    assert code == 1 and first.startswith("nsysdiff: FAIL (exit 1) · resized workload (blocks per launch")
    assert "top outlier indexSelectSmallIndex" in first


def test_the_same_decoder_at_two_sizes_without_a_wrong_scaler_passes(tmp_path: Path) -> None:
    base = _decoder(tmp_path / "bs1.sqlite", 1, 5_000)
    cand = _decoder(tmp_path / "bs16.sqlite", 16, 8_000)
    report = api.diff(base, cand)
    assert report.comparison.kind is Kind.RESIZED and int(report.exit_code) == 0


# --- fixed windows ------------------------------------------------------------------------

WINDOW = (1_000_000, 301_000_000)


def _window(path: Path, steps: int) -> Path:
    return _trace(
        path,
        [
            ("flash_fwd_kernel", steps, 1_000_000, (132, 1, 1), (128, 1, 1)),
            ("gemm_kernel", steps, 500_000, (132, 1, 1), (256, 1, 1)),
        ],
        window=WINDOW,
    )


def test_fixed_windows_follow_their_rate(tmp_path: Path) -> None:
    fast, slow = _window(tmp_path / "fast.sqlite", 180), _window(tmp_path / "slow.sqlite", 135)
    worse = api.diff(fast, slow)  # less work in the same 300 ms: 0.75x per second
    assert worse.comparison.kind is Kind.WINDOWS
    assert worse.comparison.window is not None and worse.comparison.window.rate_ratio == pytest.approx(0.75)
    assert "less work per second 0.75x" in worse.comparison.why
    assert int(worse.exit_code) == 1 and [f.rule_id for f in worse.failed] == ["total-time"]
    better = api.diff(slow, fast)
    assert better.comparison.kind is Kind.WINDOWS and int(better.exit_code) == 0


def test_a_whole_capture_is_never_a_window(tmp_path: Path) -> None:
    # Kernels spanning a small part of a whole capture are still a whole capture.
    a = _trace(tmp_path / "a.sqlite", [("k", 10, 10_000, (4, 1, 1), (128, 1, 1))])
    b = _trace(tmp_path / "b.sqlite", [("k", 10, 10_000, (4, 1, 1), (128, 1, 1))])
    assert api.diff(a, b).comparison.kind is Kind.ONE_WORKLOAD


def test_a_window_against_a_whole_capture_cant_be_compared(tmp_path: Path) -> None:
    w, whole = (
        _window(tmp_path / "w.sqlite", 100),
        _trace(tmp_path / "c.sqlite", [("flash_fwd_kernel", 100, 1_000_000, (132, 1, 1), (128, 1, 1))]),
    )
    report = api.diff(w, whole)
    assert report.comparison.kind is Kind.CANT_COMPARE and int(report.exit_code) == 3
    assert "only the base is a window" in report.reasons[0]


# --- too little evidence, per finding -------------------------------------------------------


def test_a_3x_slowdown_of_every_call_is_found_in_a_tiny_trace(tmp_path: Path) -> None:
    kernels: list[Launch] = [
        ("implicit_convolve_sgemm", 6, 30_000, (64, 1, 1), (128, 1, 1)),
        ("bn_fw_inf_kernel", 6, 8_000, (32, 1, 1), (256, 1, 1)),
        ("relu_kernel", 6, 4_000, (32, 1, 1), (256, 1, 1)),
        ("pooling_fw_4d_kernel", 4, 6_000, (16, 1, 1), (256, 1, 1)),
    ]
    base = _trace(tmp_path / "b.sqlite", kernels)
    slowed = [(n, c, ns * 3 if n == "bn_fw_inf_kernel" else ns, g, bl) for n, c, ns, g, bl in kernels]
    cand = _trace(tmp_path / "c.sqlite", slowed)
    report = api.diff(base, cand)
    assert report.diff.headline.base_total_ns < 350_000
    assert [f.subject for f in report.failed if f.rule_id == "outlier"] == ["bn_fw_inf_kernel"]
    # One slow call among a few is no evidence.
    one = [(n, c, ns, g, bl) for n, c, ns, g, bl in kernels]
    assert int(api.diff(base, _trace(tmp_path / "same.sqlite", one)).exit_code) == 0


# --- the geometry, measured right ----------------------------------------------------------


def test_geometry_is_call_weighted_over_launch_shapes(tmp_path: Path) -> None:
    # One kernel: 9 calls of 10 blocks and 1 of 1,000 (mean per call 109, not the shapes' 505).
    b = TraceBuilder()
    b.kernels("k", np.arange(9) * 10_000, np.full(9, 1_000), grid=(10, 1, 1))
    b.kernels("k", [200_000], [1_000], grid=(1_000, 1, 1))
    fp = api.load(b.write(tmp_path / "k.sqlite"))
    (k,) = fp.kernels
    assert sorted(c.calls or 0 for c in k.configs) == [1, 9]
    assert geometry.blocks_per_launch(k) == pytest.approx(109.0)
    assert geometry.threads(k) == 9 * 10 * 128 + 1_000 * 128
