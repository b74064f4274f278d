"""Steps without markers (``--per auto``): built loops, and the ground truth of the H100
captures' ``decode_step`` ranges."""

from __future__ import annotations

import random
import shutil
import sqlite3
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from conftest import real_trace, run_cli
from stepspec import STEP
from stepspec import eager as _eager
from stepspec import loop as _loop

from nsysdiff.api import fingerprint_trace
from nsysdiff.fingerprint import scope
from nsysdiff.fingerprint.step_figures import periods
from nsysdiff.synth.builder import TraceBuilder
from nsysdiff.trace.autosteps import NoStepsError
from nsysdiff.trace.reader import open_trace


def _auto(path: Path) -> np.ndarray:
    with open_trace(path) as r:
        return r.auto_steps().starts


def test_an_eager_loop_is_found_at_its_markers(tmp_path: Path) -> None:
    path, starts = _eager(tmp_path / "t.sqlite", 20)
    assert list(_auto(path)) == starts  # the prefill is left apart
    fp = fingerprint_trace(path, scope.options(per="auto"))
    nvtx = fingerprint_trace(path, scope.options(per="decode_step"))
    assert fp.steps is not None and nvtx.steps is not None
    assert fp.scope.steps == nvtx.scope.steps == 20
    assert "20 repetitions of a 9-kernel sequence" in fp.steps.found
    assert periods(fp.steps).p50 == periods(nvtx.steps).p50
    assert fp.steps.steps.column("kernel_ns").tolist() == nvtx.steps.steps.column("kernel_ns").tolist()


def test_a_step_that_takes_another_path_stays_a_step(tmp_path: Path) -> None:
    path, starts = _eager(tmp_path / "t.sqlite", 20, odd=9)
    assert list(_auto(path)) == starts


def test_two_interleaved_loops_are_refused(tmp_path: Path) -> None:
    b = TraceBuilder()
    rng = random.Random(7)
    a, c = ["a1", "a2", "a3"], ["b1", "b2", "b3", "b4", "b5"]
    ia = ic = 0
    t = 1_000_000
    for _ in range(400):
        if rng.random() < 0.5:
            name, ia = a[ia % 3], ia + 1
        else:
            name, ic = c[ic % 5], ic + 1
        b.launch(name, t, t + 2_000, 4_000)
        t += 10_000
    path = b.write(tmp_path / "t.sqlite")
    with pytest.raises(NoStepsError, match=r"no period stands out|two periods stand out"):
        _auto(path)


def test_a_layer_loop_inside_each_step_is_not_taken_as_steps(tmp_path: Path) -> None:
    b = TraceBuilder()
    t = 1_000_000
    starts = []
    for _ in range(12):
        start, t = _loop(b, t, ["embed", *["attn", "mlp"] * 16, "head", "argmax"], marker=False)
        starts.append(start)
    path = b.write(tmp_path / "t.sqlite")
    assert list(_auto(path)) == starts


def test_a_sequence_too_small_to_be_a_step_is_refused(tmp_path: Path) -> None:
    b = TraceBuilder()
    t = 1_000_000
    for _ in range(50):
        _, t = _loop(b, t, ["gemm", "add", "relu", "copy"], marker=False, gap=5_000)
    path = b.write(tmp_path / "t.sqlite")
    with pytest.raises(NoStepsError, match=r"too small to be a step"):
        _auto(path)


def test_a_trace_too_short_for_a_period_is_refused(tmp_path: Path) -> None:
    b = TraceBuilder()
    t = 1_000_000
    for _ in range(2):
        _, t = _loop(b, t, STEP, marker=False)
    path = b.write(tmp_path / "t.sqlite")
    with pytest.raises(NoStepsError, match=r"repeats every 9 launches only 2 times"):
        _auto(path)


def test_graph_replays_are_steps(tmp_path: Path) -> None:
    b = TraceBuilder()
    t = 1_000_000
    for i in range(13):
        b.graph_launch(t + 5_000, 50_000, graph_id=1 if i < 10 else 2, cpu_start=t)
        t += 100_000
    path = b.write(tmp_path / "t.sqlite")
    with open_trace(path) as r:
        found = r.auto_steps()
    assert len(found) == 10 and found.how == "graph"
    assert found.starts[0] == 1_000_000 and int(np.diff(found.starts)[0]) == 100_000


def test_two_graphs_replayed_equally_often_are_refused(tmp_path: Path) -> None:
    b = TraceBuilder()
    t = 1_000_000
    for i in range(8):
        b.graph_launch(t + 5_000, 50_000, graph_id=1 + i % 2, cpu_start=t)
        t += 100_000
    path = b.write(tmp_path / "t.sqlite")
    with pytest.raises(NoStepsError, match="two CUDA graphs"):
        _auto(path)


def test_the_cli_refuses_in_one_line(tmp_path: Path) -> None:
    b = TraceBuilder()
    _loop(b, 1_000_000, [f"k{i}" for i in range(12)], marker=False)  # nothing repeats
    path = b.write(tmp_path / "t.sqlite")
    res = run_cli("summary", str(path), "--per", "auto")
    assert res.exit_code == 2
    assert res.stderr.count("\n") == 1 and "--per auto" in res.stderr and "Traceback" not in res.stderr
    res = run_cli("diff", str(path), str(path), "--per", "auto", "--no-rules")
    assert res.exit_code == 3, res.stderr


# --- ground truth: the H100 captures' decode_step ranges -------------------------------

CAPTURES = ["llm_bs1", "llm_bs16", "llm_bs16_r2", "llm_bs1_compile", "llm_bs16_compile", "example_bs1", "example_bs16"]


@pytest.mark.parametrize("name", [*CAPTURES, "graph_node", "graph_mode"])
def test_auto_steps_match_the_decode_step_ranges(name: str) -> None:
    path = real_trace(f"h100/{name}")
    auto = fingerprint_trace(path, scope.options(per="auto"))
    nvtx = fingerprint_trace(path, scope.options(per="decode_step"))
    assert auto.steps is not None and nvtx.steps is not None
    assert auto.scope.steps is not None and nvtx.scope.steps is not None
    assert abs(auto.scope.steps - nvtx.scope.steps) <= 1  # the prefill may be one apart
    if name.startswith("graph"):
        assert auto.scope.steps == 200
    a, n = periods(auto.steps), periods(nvtx.steps)
    assert a.p50 == pytest.approx(n.p50, rel=0.03)
    # The kernels a step launches, and the host calls it makes, are the marker's.
    ak = auto.steps.steps.column("kernel_ns")
    nk = nvtx.steps.steps.column("kernel_ns")
    assert float(np.median(ak)) == pytest.approx(float(np.median(nk)), rel=0.03)


def _unmarked(src: Path, dst: Path) -> Path:
    shutil.copyfile(src, dst)
    dst.chmod(0o644)
    con = sqlite3.connect(dst)
    con.execute("DELETE FROM NVTX_EVENTS")
    con.commit()
    con.close()
    return dst


def test_the_tpot_pack_judges_an_unmarked_pair_by_auto_steps(tmp_path: Path) -> None:
    import planted_steps as ps

    base = _unmarked(real_trace("h100/llm_bs16"), tmp_path / "base.sqlite")
    cand = _unmarked(real_trace("h100/llm_bs16_r2"), tmp_path / "cand.sqlite")
    res = run_cli("diff", str(base), str(cand), "--rules", "tpot")
    first = " ".join(res.stdout.split("\n\n")[0].split())  # the verdict line, unwrapped
    assert res.exit_code == 0, res.stdout
    assert "found without a marker" in first
    item = _unmarked(ps.item(real_trace("h100/llm_bs16_r2"), tmp_path / "i.sqlite"), tmp_path / "item.sqlite")
    res = run_cli("diff", str(base), str(item), "--rules", "tpot")
    assert res.exit_code == 1, res.stdout
    assert "+1 sync call and +1 D2H copy per step" in res.stdout


def test_a_marker_is_never_compared_with_auto_steps(tmp_path: Path) -> None:
    marked = real_trace("h100/example_bs1")
    unmarked = _unmarked(marked, tmp_path / "u.sqlite")
    res = run_cli("diff", str(marked), str(unmarked), "--rules", "tpot", "--format", "json")
    assert res.exit_code in (0, 1), res.stdout
    import json

    doc = json.loads(res.stdout)
    assert doc["scope"]["base"]["per"] == doc["scope"]["candidate"]["per"] == "auto"


# --- the search's own row rules: what it groups, joins and measures ----------------------


def _update(path: Path, sql: str) -> Path:
    con = sqlite3.connect(path)
    con.execute(sql)
    con.commit()
    con.close()
    return path


def _graphs(path: Path) -> Path:
    b = TraceBuilder()
    t = 1_000_000
    for _ in range(10):
        b.graph_launch(t + 5_000, 50_000, graph_id=1, cpu_start=t)
        t += 100_000
    return b.write(path)


def _nodes(path: Path) -> Path:
    """A node-mode capture: each replay's kernels share its launch's correlation id."""
    b = TraceBuilder()
    t = 1_000_000
    for _ in range(10):
        cid = b.runtime("cudaGraphLaunch_v10000", t, 3_000)
        for j, name in enumerate(STEP):
            b.kernel(name, t + 5_000 + j * 6_000, 4_000, correlation_id=cid, graph_node_id=100 + j)
        t += 100_000
    return b.write(path)


def _refused(path: Path, *words: str) -> None:
    res = run_cli("summary", str(path), "--per", "auto")
    assert res.exit_code == 2, res.stderr
    assert res.stderr.count("\n") == 1 and "Traceback" not in res.stderr
    assert all(w in res.stderr for w in words), res.stderr


def test_a_period_whose_matches_never_form_a_run_is_refused(tmp_path: Path) -> None:
    # Period 4 matches half the positions (A and B), but only in runs of 2: no loop.
    b = TraceBuilder()
    t = 1_000_000
    for i in range(40):
        for name in ("A", "B", f"x{i}", f"x{i}"):
            b.launch(name, t, t + 2_000, 4_000)
            t += 10_000
    _refused(b.write(tmp_path / "t.sqlite"), "--per auto", "no loop")
    b = TraceBuilder()
    for i in range(40):
        for name in ("A", f"x{i}"):
            b.launch(name, t, t + 2_000, 4_000)
            t += 10_000
    _refused(b.write(tmp_path / "u.sqlite"), "--per auto", "no loop")


@pytest.mark.parametrize("value", ["'abc'", "1.5", "x'01'"])
def test_a_graph_id_that_is_no_integer_is_refused(tmp_path: Path, value: str) -> None:
    path = _update(_graphs(tmp_path / "t.sqlite"), f"UPDATE CUPTI_ACTIVITY_KIND_GRAPH_TRACE SET graphId = {value}")
    _refused(path, "CUPTI_ACTIVITY_KIND_GRAPH_TRACE", "graphId")


@pytest.mark.parametrize("value", ["'abc'", "1.5", "x'01'"])
def test_a_graph_node_id_that_is_no_integer_is_refused(tmp_path: Path, value: str) -> None:
    path = _update(_nodes(tmp_path / "t.sqlite"), f"UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET graphNodeId = {value}")
    _refused(path, "CUPTI_ACTIVITY_KIND_KERNEL", "graphNodeId")


@pytest.mark.parametrize(
    ("make", "table"),
    [
        (_graphs, "CUPTI_ACTIVITY_KIND_GRAPH_TRACE"),
        (_nodes, "CUPTI_ACTIVITY_KIND_KERNEL"),
        (lambda p: _eager(p, 20, marker=False)[0], "CUPTI_ACTIVITY_KIND_KERNEL"),
    ],
)
def test_a_null_process_id_is_refused(tmp_path: Path, make: Callable[[Path], Path], table: str) -> None:
    path = _update(make(tmp_path / "t.sqlite"), f"UPDATE {table} SET globalPid = NULL")
    _refused(path, table, "globalPid")


@pytest.mark.parametrize(
    ("make", "sql"),
    [
        (lambda p: _eager(p, 20, marker=False)[0], 'UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET "end" = start'),
        (_nodes, 'UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET start = 2000000, "end" = 2000000'),
    ],
)
def test_steps_with_no_kernel_time_are_refused(tmp_path: Path, make: Callable[[Path], Path], sql: str) -> None:
    path = _update(make(tmp_path / "t.sqlite"), sql)
    _refused(path, "--per auto", "no GPU time")
    res = run_cli("diff", str(path), str(path), "--rules", "tpot")
    assert res.exit_code in (0, 3) and "Traceback" not in res.stderr, res.stderr
