"""The ``tpot`` pack on llm_bs16: GPU-side regressions planted, repeats, a renamed step
range and an asynchronous graph loop, each judged as the user waits for the tokens.

* the lm_head GEMM forced to fp32 (2.8x per call, +91 us of GPU time per step) fails on
  the GPU time per step, the fp32 kernel named;
* a slower RMSNorm (+1 elementwise kernel and +1 2.16 MB D2D copy after each of the 33
  norms per step) fails on the exact counts;
* repeats of one build pass in both directions, the traces and the saved fingerprints;
* ``decode_step`` renamed on one side is exit 3 with the reason on the first line;
* the CUDA-graph replay loop is timed by its GPU (92-105 us per step), GPU-bound.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import planted_steps as ps
import pytest
from conftest import real_trace, run_cli
from test_planted import TRACES
from test_planted_steps import first, tpot

from nsysdiff import api
from nsysdiff.fingerprint.scope import ScopeOptions
from nsysdiff.trace.records import HostFamily

EXAMPLES = Path(__file__).parents[1] / "examples" / "ci"


@pytest.fixture(scope="module")
def bs16() -> Path:
    return real_trace("h100/llm_bs16")


@pytest.fixture(scope="module")
def gpu_planted(bs16: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("gpu_planted")
    return {"fp32_head": ps.fp32_head(bs16, d / "fp32.sqlite"), "slow_norm": ps.slow_norm(bs16, d / "norm.sqlite")}


def failed_section(out: str) -> str:
    return out.split("Failed rules")[1].split("More with")[0]


def test_fp32_lm_head_fails_on_gpu_time_per_step_named(bs16: Path, gpu_planted: dict[str, Path]) -> None:
    code, out, _ = tpot(bs16, gpu_planted["fp32_head"])
    assert code == 1, out
    failed = failed_section(out)
    assert "step-gpu-time" in failed and "sm80_xmma_gemm_f32f32" in failed, out
    assert "GPU time per step 2.75 ms → 2.84 ms" in first(out), out


def test_slower_norm_fails_on_launch_and_d2d_counts(bs16: Path, gpu_planted: dict[str, Path]) -> None:
    code, out, _ = tpot(bs16, gpu_planted["slow_norm"])
    assert code == 1, out
    assert "+33 launches and +33 D2D copies per step" in first(out), out
    failed = failed_section(out)
    for rule in ("step-launches", "step-d2d-copies", "step-d2d-bytes"):
        assert rule in failed, out


@pytest.mark.parametrize("order", [("llm_bs16", "llm_bs16_r2"), ("llm_bs16_r2", "llm_bs16")])
def test_repeats_pass_both_ways_with_the_noise_said(order: tuple[str, str]) -> None:
    code, out, _ = tpot(*(real_trace(f"h100/{n}") for n in order))
    assert code == 0, out
    if order[0] == "llm_bs16_r2":  # the slower run as the candidate: +23% per step
        assert "within run-to-run noise" in first(out) and "one run per side can" in out, out


def test_two_base_runs_are_said_as_two_on_the_first_line(tmp_path: Path) -> None:
    r1, r2 = real_trace("h100/llm_bs16"), real_trace("h100/llm_bs16_r2")
    # A run of the base is no candidate (refused): r1 with 1 ns between its steps is another capture.
    again = ps.gap(r1, tmp_path / "llm_bs16_again.sqlite", [1])
    code, out, _ = tpot([r1, r2], [again])
    assert code == 0, out
    head = " ".join(first(out).split())
    # Each side's runs, and the ratio of their geometric means: not the median run's 1.23x.
    assert "time per decode_step 26.52-32.59 ms (2 runs) → 32.59 ms (1 run), 1.11x geomean" in head, out
    assert "(1.23x)" not in head.split("traces")[0], out
    flat = " ".join(out.split())
    assert "2 base runs and 1 candidate run can detect" in flat and "one run per side" not in flat, out


@pytest.mark.parametrize("order", [("main_r2", "main"), ("main", "main_r2")])
def test_the_ci_examples_repeats_pass_both_ways(order: tuple[str, str]) -> None:
    code, out, _ = tpot(*(EXAMPLES / f"{n}.json" for n in order))
    assert code == 0, out


def renamed(src: Path, dst: Path) -> Path:
    con = ps._copy(src, dst)
    con.execute("UPDATE NVTX_EVENTS SET text = 'decode' WHERE text = ?", (ps.STEP,))
    con.execute("UPDATE StringIds SET value = 'decode' WHERE value = ?", (ps.STEP,))
    con.commit()
    con.close()
    return dst


@pytest.mark.parametrize("side", ["base", "candidate"])
def test_a_step_range_renamed_on_one_side_is_never_a_silent_pass(bs16: Path, tmp_path: Path, side: str) -> None:
    other = renamed(bs16, tmp_path / "renamed.sqlite")
    code, out, _ = tpot(other, bs16) if side == "base" else tpot(bs16, other)
    # Never a marker's steps against a whole trace: both sides are judged per step found
    # without a marker, which the first line says, and a note says why.
    assert code == 0, out
    head = " ".join(out.split("\n\n")[0].split())
    assert "time per step (found without a marker)" in head, out
    assert "note: steps on one side only" in head and "both sides are judged per step found without a marker" in head


def test_rules_that_judged_nothing_are_listed_in_json(bs16: Path) -> None:
    _, out, _ = run_cli(bs16, bs16, "--rules", "tpot", "--format", "json")
    rules = {r["rule_id"]: r for r in json.loads(out)["rules"]}
    assert rules["norm-per-call"]["judged"] is False
    assert "nothing matched" in rules["norm-per-call"]["not_judged"]
    assert rules["step-launches"]["judged"] is True and rules["step-launches"]["not_judged"] is None


def test_github_annotations_say_what_was_not_judged_and_what_moved_within_noise() -> None:
    r1, r2 = real_trace("h100/llm_bs16"), real_trace("h100/llm_bs16_r2")
    code, out, _ = run_cli(r2, r1, "--rules", "tpot", "--format", "github")
    assert code == 0, out
    notices = [line for line in out.splitlines() if line.startswith("::notice title=nsysdiff%3A ")]
    assert any("not judged::" in n and "norm-per-call" in n and "nothing matched" in n for n in notices), out
    assert any("within run-to-run noise::step-time" in n and "can detect" in n for n in notices), out


def test_a_tail_over_its_limit_on_both_sides_is_not_read_as_within_it() -> None:
    # graph_mode's step periods have p99/p50 2.56x on both sides, over step-tail's 1.5x.
    g = real_trace("h100/graph_mode")
    code, out, _ = tpot(g, g)
    assert code == 0, out
    flat = " ".join(out.split())
    assert "step-tail: tail 2.56x -> 2.56x, over max_value 1.50x on both sides: one run per side" in flat, out


def test_graph_replay_is_timed_by_its_gpu_and_gpu_bound() -> None:
    node = real_trace("h100/graph_node")
    code, out, _ = tpot(node, node)
    assert code == 0, out
    line = next(x for x in out.splitlines() if "time per step " in x and "time/step" in x)
    per_step_us = float(line.split("time per step ")[1].split(" us")[0])
    assert 92 <= per_step_us <= 105, line
    assert "loop: GPU-bound" in first(out), out


def test_the_eager_decoder_is_host_or_launch_bound() -> None:
    bs16 = real_trace("h100/llm_bs16")
    _, out, _ = tpot(bs16, bs16)
    assert "loop: host-bound" in first(out) or "loop: launch-bound" in first(out), out


def test_gpu_period_of_the_eager_loop_agrees_with_its_host_period(bs16: Path) -> None:
    # A synchronous loop (an .item() per token): the GPU finishes a step as often as the
    # host starts one, so the time per step is the host period, its parts exact.
    from nsysdiff.api.reading import load
    from nsysdiff.fingerprint import scope

    fp = load(bs16, scope.options(per="decode_step"))
    assert fp.steps is not None and fp.steps.gpu_period_ns is not None
    mean = fp.steps.steps.column("period_ns").mean()
    assert abs(fp.steps.gpu_period_ns / mean - 1) < 0.05


def test_sqlite_of_plants_keeps_the_kernel_count(bs16: Path, gpu_planted: dict[str, Path]) -> None:
    def kernels(p: Path) -> int:
        with sqlite3.connect(p) as con:
            return int(con.execute("SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL").fetchone()[0])

    assert kernels(gpu_planted["fp32_head"]) == kernels(bs16)
    assert kernels(gpu_planted["slow_norm"]) == kernels(bs16) + 33 * 32


@pytest.mark.skipif(not TRACES, reason="real traces not found (set NSYSDIFF_TRACES or add ../shared/traces)")
@pytest.mark.parametrize("path", TRACES, ids=[p.stem for p in TRACES])
def test_every_trace_against_itself_passes_the_tpot_pack(path: Path) -> None:
    # Through the CLI, so that the pack's step range applies where a trace has it; a
    # graph-mode capture compared by its steps and ranges is valid on both sides.
    code, out, _ = run_cli(path, path, "--rules", "tpot", "--width", "120")
    assert code == 0, out


@pytest.mark.parametrize("name", ["llm_bs1", "llm_bs16", "llm_bs16_r2", "llm_bs1_compile", "llm_bs16_compile"])
def test_the_steps_count_the_sync_calls_of_their_periods(name: str) -> None:
    """Each decode step's cudaStreamSynchronize lies between its range and the next: the
    steps count it by name, as plain SQL over the steps' periods does."""
    path = real_trace(f"h100/{name}")
    fp = api.load(path, ScopeOptions(per="decode_step"))
    assert fp.steps is not None and fp.steps.sync is not None
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    (lo, hi) = con.execute(
        'SELECT min(n.start), max(n."end") FROM NVTX_EVENTS n LEFT JOIN StringIds s ON s.id = n.textId '
        "WHERE coalesce(n.text, s.value) = 'decode_step'"
    ).fetchone()
    want = dict(
        con.execute(
            "SELECT s.value, count(*) FROM CUPTI_ACTIVITY_KIND_RUNTIME r JOIN StringIds s ON s.id = r.nameId "
            "WHERE r.start >= ? AND r.start < ? AND (s.value LIKE '%Synchronize%' OR s.value LIKE '%WaitEvent%' "
            "OR s.value LIKE 'cudaStreamQuery%') GROUP BY s.value",
            (lo, hi),
        ).fetchall()
    )
    con.close()
    got = {a.name: a.calls for a in fp.steps.sync}
    assert got == {n.split("_v")[0]: c for n, c in want.items()} and got, (got, want)
    # The steps' sync family (the blocking calls) is the same count, step by step.
    blocking = sum(c for n, c in got.items() if n.endswith("Synchronize"))
    assert blocking == sum(t.calls for t in fp.steps.call_times if t.family is HostFamily.SYNC)
    # Inside the ranges there is none: what the scope's own sync calls hold.
    assert not any(a.name == "cudaStreamSynchronize" for a in fp.sync)


@pytest.mark.parametrize(
    "order", [("llm_bs16", "llm_bs16_r2"), ("llm_bs1", "llm_bs16"), ("llm_bs1", "llm_bs1_compile")]
)
def test_the_sync_budgets_judge_the_steps_sync(order: tuple[str, str]) -> None:
    """The tpot pack's sync-calls and sync-time judge the one sync of each step, where
    they said 'nothing matched its selector'."""
    _, out, _ = tpot(*(real_trace(f"h100/{n}") for n in order))
    note = " ".join(first(out).split())
    assert "not judged" in note, out
    # Never "nothing matched its selector": batch 1 against 16 is a resized workload, whose
    # sync time is not judged for that reason, and its sync calls are judged.
    unmatched = [part for part in note.split("; ") if "nothing matched its selector" in part]
    assert not any("sync-calls" in part or "sync-time" in part for part in unmatched), out
    assert "sync-calls" not in note, out


def test_the_same_finding_against_either_repeat_has_the_same_subject(tmp_path: Path) -> None:
    """A finding's subject holds no measured value: the fp32 head's GPU time per step is
    the same subject against each of two runs of the base build, so a waiver copied from
    one run's report matches the next (the growth per step is in the finding's cause)."""
    fp32 = ps.fp32_head(real_trace("h100/llm_bs16"), tmp_path / "fp32.sqlite")
    subjects = []
    for base in ("h100/llm_bs16", "h100/llm_bs16_r2"):
        report = api.diff(real_trace(base), fp32, "tpot")
        (gpu,) = [f for f in report.findings if f.rule_id == "step-gpu-time"]
        assert "per step in sm80_xmma_gemm_f32f32" in gpu.message
        subjects.append(gpu.subject)
    assert subjects[0] == subjects[1], subjects
    assert subjects[0].startswith("decode_step GPU time per step: sm80_xmma_gemm_f32f32") and "us" not in subjects[0]
