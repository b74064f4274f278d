"""What the first screen says before any kernel row: new or multiplied copies, tails,
fixed windows, tiny traces, workload changes, graph against node mode (issue: verdicts round 3)."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import numpy as np
from conftest import real_trace, run_cli
from fpspec import fingerprint, saved_pair

from nsysdiff.synth.builder import TraceBuilder

MS = 1_000_000
REST = {f"op{i}_kernel": (100, (10 + i) * MS) for i in range(12)}


def first_screen(*args: str) -> tuple[int, list[str]]:
    """The exit code and the report's lines, the verdict (up to the first blank line) as one."""
    r = run_cli(*args, "--width", "200")
    lines = r.stdout.splitlines()
    head = lines.index("") if "" in lines else len(lines)
    return r.exit_code, [" ".join(line.strip() for line in lines[:head]), *lines[head:]]


def with_copies(src: Path, dst: Path, after: str = "reduce_kernel", nbytes: int = 2_160_000, ns: int = 2_600) -> int:
    """A copy of ``src`` with a device-to-device copy after every launch of ``after`` (a
    norm that now copies its input); returns how many copies were added."""
    shutil.copy(src, dst)
    dst.chmod(0o644)
    con = sqlite3.connect(dst)
    rows = con.execute(
        'SELECT k."end", k.deviceId, k.contextId, k.streamId, k.globalPid FROM CUPTI_ACTIVITY_KIND_KERNEL k '
        "JOIN StringIds s ON s.id = k.shortName WHERE s.value = ? ORDER BY k.start",
        (after,),
    ).fetchall()
    con.executemany(
        'INSERT INTO CUPTI_ACTIVITY_KIND_MEMCPY (start, "end", deviceId, contextId, streamId, globalPid, bytes, '
        "copyKind, srcKind, dstKind) VALUES (?, ?, ?, ?, ?, ?, ?, 8, 2, 2)",
        [(end + 10, end + 10 + ns, dev, ctx, stream, pid, nbytes) for end, dev, ctx, stream, pid in rows],
    )
    con.commit()
    con.close()
    return len(rows)


def test_new_device_copies_are_on_the_first_screen(tmp_path: Path) -> None:
    base = real_trace("h100/llm_bs16")
    n = with_copies(base, tmp_path / "copies.sqlite")
    code, lines = first_screen(str(base), str(tmp_path / "copies.sqlite"))
    copies = next(line for line in lines if line.startswith("copies "))
    assert f"new DtoD copies: {n:,} ops, 2.42 GB, 2.92 ms" in copies
    assert code == 0


def test_multiplied_copies_of_the_same_bytes_are_on_the_first_screen(tmp_path: Path) -> None:
    # One kernel over a big array -> 10,000 launches over slices: 3 -> 30,000 copies.
    b = fingerprint(
        {"vecAdd": (1, 5 * MS)}, memcpy={"HtoD": (2, 800_000_000, 60 * MS), "DtoH": (1, 400_000_000, 30 * MS)}
    )
    c = fingerprint(
        {"vecAdd": (10_000, 5 * MS)},
        memcpy={"HtoD": (20_000, 800_000_000, 90 * MS), "DtoH": (10_000, 400_000_000, 45 * MS)},
    )
    _, lines = first_screen(*saved_pair(tmp_path, b, c))
    text = "\n".join(lines)
    assert "copies       HtoD copies 2 → 20,000 ops (10000.00x), 800.00 MB → 800.00 MB, 60.00 ms → 90.00 ms" in text
    assert "DtoH copies 1 → 10,000 ops (10000.00x), 400.00 MB → 400.00 MB, 30.00 ms → 45.00 ms" in text


def test_unchanged_copies_stay_in_details() -> None:
    base = real_trace("h100/llm_bs16")
    _, lines = first_screen(str(base), str(real_trace("h100/llm_bs16_r2")))
    assert not any(line.startswith("copies ") for line in lines)


def test_equal_fixed_windows_are_compared_as_rates_and_fewer_calls_is_no_improvement() -> None:
    b, c = real_trace("nsysai_mfu_h100x2_before"), real_trace("nsysai_mfu_h100x2_after")
    code, lines = first_screen(str(b), str(c))
    assert code == 0
    # The windows come from the exports' metadata (DERIVED_WINDOW_NS: 300 ms each).
    assert "fixed windows (300.00 ms windows: less work per second 0.91x" in lines[0]
    assert "GPU busy 89.2% → 81.5%" in lines[0] and "fewer calls" not in lines[0]
    assert any(line.startswith("window ") and "compared as rates, not totals" in line for line in lines)


def test_a_tiny_trace_is_not_headlined_by_one_call() -> None:
    # One 11 us call that got faster on another GPU is no evidence: no outlier, no headline.
    b, c = real_trace("fuser_h100_report1"), real_trace("fuser_h200_report1")
    code, lines = first_screen(str(b), str(c))
    assert code == 0 and "top improvement" not in lines[0] and "top outlier" not in lines[0]
    assert lines[0].startswith("nsysdiff: PASS (exit 0) · one workload")


def test_a_built_sub_millisecond_pair_is_not_headlined_by_single_calls(tmp_path: Path) -> None:
    us = 1_000
    base = {f"conv{i}_kernel": (1, (20 + i) * us) for i in range(6)} | {"winograd_kernel": (1, 7 * us)}
    cand = {f"conv{i}_kernel": (1, (20 + i) * us) for i in range(3)} | {"winograd_kernel": (1, 44 * us)}
    cand |= {f"relu{i}_kernel": (1, 10 * us) for i in range(9)}
    _, lines = first_screen(*saved_pair(tmp_path, base, cand))
    # winograd 6.3x in one call: under the floor and no evidence of its own.
    assert "top outlier" not in lines[0]


def _workload(path: Path, scale: int) -> Path:
    """Four kernels of one model, 200 calls each; ``scale`` multiplies every grid and,
    the work per call with it, every duration."""
    b = TraceBuilder()
    grids = {
        "batch_norm_transform_input_kernel": (8, 1, 1),
        "elementwise_kernel": (392, 1, 1),
        "conv_implicit_gemm_kernel": (96, 1, 1),
        "reduce_kernel": (16, 1, 1),
    }
    t = 1_000_000
    for i, (name, (x, y, z)) in enumerate(grids.items()):
        dur = (20_000 + 5_000 * i) * scale // 4
        starts = t + np.arange(200, dtype=np.int64) * (dur + 2_000)
        b.kernels(name, starts, np.full(200, dur), grid=(x, y * scale, z) if i == 0 else (x * scale, y, z))
        t = int(starts[-1]) + dur + 10_000
    return b.write(path)


def test_grids_many_times_larger_are_a_resized_workload_judged_by_scale(tmp_path: Path) -> None:
    # Every grid 64x larger and every kernel 16x slower: a resized workload, judged by
    # scale; nothing scaled unlike the rest, and its absolute times are not judged.
    b, c = _workload(tmp_path / "b.sqlite", 1), _workload(tmp_path / "c.sqlite", 64)
    code, lines = first_screen(str(b), str(c))
    assert code == 0
    first = " ".join(lines[:2])
    assert "resized workload (blocks per launch 64.00x, threads launched 64.00x)" in first
    assert "top outlier" not in first
    assert any("total-time: resized workload: absolute times measure the workload" in line for line in lines)
    # The same kernels at the same grids: one workload.
    code, lines = first_screen(str(b), str(b))
    assert code == 0 and "· one workload ·" in lines[0]


def test_graph_mode_against_node_mode_compares_the_graph_level_time() -> None:
    b, c = real_trace("h100/graph_mode"), real_trace("h100/graph_node")
    code, lines = first_screen(str(b), str(c))
    assert code == 3
    assert "graph-level GPU time 19.37 ms → 18.68 ms (0.96x, graph replays against node kernels and copies)" in lines[0]
    assert "0 ns → 18.39 ms" not in "\n".join(lines) and "top change" not in lines[0]
    graphs = next(line for line in lines if line.startswith("CUDA graphs"))
    assert "200 launches (19.37 ms of graph replays) → 200 (18.68 ms of node kernels and copies)" in graphs


def test_graph_mode_against_node_mode_per_step_compares_the_graph_level_time() -> None:
    b, c = real_trace("h100/graph_mode"), real_trace("h100/graph_node")
    code, lines = first_screen(str(b), str(c), "--per", "decode_step")
    assert code == 3
    assert "graph-level GPU time 19.37 ms → 18.68 ms (0.96x" in " ".join(lines[:3])
    graphs = next(line for line in lines if line.startswith("CUDA graphs"))
    assert "200 launches (19.37 ms of graph replays) → 200 (18.68 ms of node" in graphs


def test_batch_invariance_says_once_that_eager_against_compile_is_not_its_premise() -> None:
    b, c = real_trace("h100/llm_bs1"), real_trace("h100/llm_bs1_compile")
    code, lines = first_screen(str(b), str(c), "--rules", "batch-invariance")
    assert code == 3 and "warnings" not in lines[0]
    said = [line for line in lines if "assume one build at two batch sizes" in line]
    assert len(said) == 1 and "only 25% of the kernel names are shared" in said[0]
    assert not any("low kernel-set overlap" in line for line in lines)
    # One build at two batch sizes is the pack's premise: it judges as before.
    code, lines = first_screen(str(b), str(real_trace("h100/llm_bs16")), "--rules", "batch-invariance")
    assert code == 1 and not any("assume one build" in line for line in lines)


def test_fixed_windows_details_judge_rows_per_call_and_quote_the_window() -> None:
    b, c = real_trace("nsysai_mfu_h100x2_before"), real_trace("nsysai_mfu_h100x2_after")
    _, lines = first_screen(str(b), str(c), "--details")
    # Fewer calls in the same window at the same time per call: no category, kernel or
    # device improved.
    categories = lines[lines.index("Categories") + 2 : lines.index("Categories") + 9]
    assert categories and not any(line.endswith("improved") for line in categories)
    assert not any(line.startswith("flash_fwd_kernel") and "improved" in line for line in lines)
    capture = next(line.strip() for line in lines if line.strip().startswith("capture "))
    assert "window 300.00 ms → 300.00 ms (of captures 119.443 s → 138.034 s)" in capture


def test_a_tiny_trace_lists_no_outlier_in_any_section() -> None:
    b, c = real_trace("fuser_h100_report1"), real_trace("fuser_h200_report1")
    _, lines = first_screen(str(b), str(c), "--details")
    assert not any(line.startswith("Outliers") for line in lines)
    assert not any("OUTLIER" in line for line in lines)
