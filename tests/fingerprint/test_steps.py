"""Steps read from a trace: periods, the parts they split into (to the nanosecond), and the
host calls per family, on a trace built by hand and on every real trace with steps."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import real_trace, run_cli
from stepspec import US, T, two_steps, zeroed

from nsysdiff import api
from nsysdiff.errors import FingerprintError
from nsysdiff.fingerprint.model import fingerprint_from_json, fingerprint_to_json
from nsysdiff.fingerprint.scope import ScopeOptions
from nsysdiff.fingerprint.steps import COUNTED_BEFORE_MEMSETS, HostCalls, StepPart, StepParts
from nsysdiff.synth.builder import TraceBuilder
from nsysdiff.trace.records import CallTimes, HostFamily


def test_parts_by_hand(tmp_path: Path) -> None:
    fp = api.load(two_steps(tmp_path / "t.sqlite"), ScopeOptions(per="decode_step"))
    assert fp.steps is not None
    first, last = fp.steps.steps
    assert (fp.steps.name, fp.steps.domain) == ("decode_step", "")
    assert (first.start_ns, first.duration_ns, first.period_ns) == (0, 100 * US, 120 * US)
    assert first.parts == StepParts(
        compute_ns=35 * US,
        communication_ns=20 * US,
        copies_ns=10 * US,
        launch_bound_ns=21 * US,
        sync_ns=5 * US,
        host_ns=9 * US,
        between_ns=20 * US,
    )
    assert first.kernel_ns == (30 + 25 + 5 + 10) * US  # the tail kernel ran between steps
    assert first.calls == (
        HostCalls(HostFamily.LAUNCH, 4, 24 * US),
        HostCalls(HostFamily.SYNC, 1, 13 * US),
        HostCalls(HostFamily.COPY_D2H, 1, 2 * US, 4096),
        HostCalls(HostFamily.ALLOC, 2, 4 * US),
    )
    assert (last.start_ns, last.duration_ns, last.period_ns) == (120 * US, 80 * US, 80 * US)
    assert last.parts == StepParts(60 * US, 0, 0, 10 * US, 0, 10 * US, 0)
    assert last.kernel_ns == 55 * US
    assert last.calls == (HostCalls(HostFamily.LAUNCH, 2, 10 * US),)
    launches = [1, 3, 5, 5, 10, 10]  # per call, in us: nearest-rank p50 is the 3rd, p90 the 6th
    assert fp.steps.call_times[0] == CallTimes(
        HostFamily.LAUNCH, 6, sum(launches) * US, 0, 5 * US, 10 * US, 10 * US, 10 * US
    )
    assert [c.family for c in fp.steps.call_times] == [
        HostFamily.LAUNCH,
        HostFamily.SYNC,
        HostFamily.COPY_D2H,
        HostFamily.ALLOC,
    ]
    assert fingerprint_from_json(fingerprint_to_json(fp), "x.json") == fp


def test_skip_first_and_nvtx_scope_the_steps(tmp_path: Path) -> None:
    path = two_steps(tmp_path / "t.sqlite")
    fp = api.load(path, ScopeOptions(per="decode_step", skip_first=1))
    assert fp.steps is not None and fp.steps.skipped == 1
    assert [s.duration_ns for s in fp.steps.steps] == [80 * US]
    assert fp.steps.steps[0].start_ns == 0
    assert api.load(path).steps is None  # no step range, no steps


def test_overlapping_ranges_stop_at_the_next_start(tmp_path: Path) -> None:
    b = TraceBuilder()
    b.launch("k", T, T + 5 * US, 50 * US)
    b.nvtx_range("step", T, T + 40 * US)
    b.nvtx_range("step", T + 30 * US, T + 60 * US, tid=1001)
    fp = api.load(b.write(tmp_path / "o.sqlite"), ScopeOptions(per="step"))
    assert fp.steps is not None
    first, last = fp.steps.steps
    assert first.period_ns == 30 * US and first.parts.between_ns == 0
    assert first.parts == StepParts(25 * US, 0, 0, 3 * US, 0, 2 * US, 0)
    assert last.parts.total_ns == last.period_ns == 30 * US


H100 = [
    "llm_bs1",
    "llm_bs1_compile",
    "llm_bs16",
    "llm_bs16_r2",
    "llm_bs16_compile",
    "graph_mode",
    "graph_node",
    "example_bs1",
    "example_bs16",
]


@pytest.mark.parametrize("name", H100)
def test_real_parts_add_up_to_the_period(name: str) -> None:
    fp = api.load(real_trace(f"h100/{name}"), ScopeOptions(per="decode_step"))
    assert fp.steps is not None and len(fp.steps.steps) == fp.scope.steps
    for st in fp.steps.steps:
        assert sum(st.parts.of(p) for p in StepPart) == st.period_ns
        assert st.parts.between_ns == max(0, st.period_ns - st.duration_ns)
    # Counts are exact: the same in every step but the last, whose period (its range
    # duration) misses what the others issue between their range's end and the next start.
    launches = {st.calls_of(HostFamily.LAUNCH).calls for st in fp.steps.steps[:-1]}
    assert len(launches) == 1
    assert fingerprint_from_json(fingerprint_to_json(fp), name) == fp


# Issue figures: range durations (p50, max), kernel time per step, launches per step.
REAL = {
    "llm_bs1": (27_880_000, 33_780_000, 2_003_253, 696),
    "llm_bs1_compile": (14_550_000, 15_630_000, 1_413_833, 311),
    "llm_bs16": (30_940_000, 36_190_000, 2_751_905, 680),
    "llm_bs16_r2": (26_310_000, 27_480_000, 2_741_170, 680),
    "llm_bs16_compile": (13_400_000, 15_460_000, 2_931_151, 295),
}


@pytest.mark.parametrize("name", REAL)
def test_real_step_figures(name: str) -> None:
    import numpy as np

    fp = api.load(real_trace(f"h100/{name}"), ScopeOptions(per="decode_step"))
    assert fp.steps is not None
    durations = np.array([s.duration_ns for s in fp.steps.steps])
    p50, top, kernel, launches = REAL[name]
    assert round(float(np.percentile(durations, 50)), -4) == p50
    assert round(int(durations.max()), -4) == top
    assert round(sum(s.kernel_ns for s in fp.steps.steps) / len(durations)) == kernel
    assert [s.calls_of(HostFamily.LAUNCH).calls for s in fp.steps.steps[:-1]] == [launches] * (len(durations) - 1)


def test_fingerprint_command_saves_the_steps(tmp_path: Path) -> None:
    trace, out = two_steps(tmp_path / "t.sqlite"), tmp_path / "t.json"
    result = run_cli("fingerprint", str(trace), "--per", "decode_step", "-o", str(out))
    assert result.exit_code == 0, result.stderr
    saved = api.load(out)
    assert saved == api.load(trace, ScopeOptions(per="decode_step"))
    assert saved.steps is not None and [s.period_ns for s in saved.steps.steps] == [120 * US, 80 * US]


def test_the_thread_with_the_most_instances_has_the_steps(tmp_path: Path) -> None:
    b = TraceBuilder()
    for i in range(2):  # a second thread's two ranges
        b.nvtx_range("step", T + i * 100 * US, T + i * 100 * US + 50 * US, tid=2002)
    for i in range(3):
        b.launch("k", T + i * 100 * US + 10 * US, T + i * 100 * US + 20 * US, 5 * US, api_duration=1 * US)
        b.nvtx_range("step", T + i * 100 * US + 10 * US, T + i * 100 * US + 40 * US)
    fp = api.load(b.write(tmp_path / "m.sqlite"), ScopeOptions(per="step"))
    assert fp.steps is not None and fp.scope.steps == 5  # every thread's instances count
    assert [s.duration_ns for s in fp.steps.steps] == [30 * US] * 3
    assert [s.kernel_ns for s in fp.steps.steps] == [5 * US] * 3
    assert all(s.parts.compute_ns == 5 * US and s.parts.launch_bound_ns == 1 * US for s in fp.steps.steps)


def test_an_impossible_call_in_a_step_is_one_line(tmp_path: Path) -> None:
    import sqlite3

    from nsysdiff.errors import TraceError

    path = two_steps(tmp_path / "t.sqlite")
    con = sqlite3.connect(path)
    # The cudaMalloc launched nothing (no correlation id for the scope's checks to see).
    con.execute(
        'UPDATE CUPTI_ACTIVITY_KIND_RUNTIME SET correlationId = NULL, "end" = start - 5 WHERE nameId = '
        "(SELECT id FROM StringIds WHERE value = 'cudaMalloc_v3020')"
    )
    con.commit()
    con.close()
    with pytest.raises(TraceError, match=r"CUPTI_ACTIVITY_KIND_RUNTIME: 1 row ending before they start"):
        api.load(path, ScopeOptions(per="decode_step"))


# The shared third-party traces, each with its most frequent NVTX range as the step: push/pop
# and start/end ranges, one process and several, steps with and without GPU work.
SHARED = {
    "ecf_nvtxonly_baseline": "3D_backbone",
    "ecf_nvtxonly_poolformer": "myelinTensorGetMemory",
    "fuser_h100_report1": "ExpressionEvaluator::evaluate",
    "fuser_h200_2025": "getTerminatingOutputs",
    "nsysai_mfu_h100x2_before": "ncclRecv",
    "nsysai_perf_h100x2_sp2_fa3": "aten::add",
    "pipit_saxpy_mpi_a100": "MPI_Send",
}


@pytest.mark.parametrize("name", SHARED)
def test_shared_traces_parts_add_up(name: str) -> None:
    fp = api.load(real_trace(name), ScopeOptions(per=SHARED[name]))
    assert fp.steps is not None and 0 < len(fp.steps.steps) <= (fp.scope.steps or 0)
    for st in fp.steps.steps:
        assert sum(st.parts.of(p) for p in StepPart) == st.period_ns
    assert fingerprint_from_json(fingerprint_to_json(fp), name) == fp


def test_a_whole_graph_launch_is_compute(tmp_path: Path) -> None:
    b = TraceBuilder()
    b.graph_launch(T + 10 * US, 30 * US, cpu_start=T + 5 * US)  # launch-bound 5-8, compute 10-40
    b.nvtx_range("step", T, T + 50 * US)
    fp = api.load(b.write(tmp_path / "g.sqlite"), ScopeOptions(per="step"))
    assert fp.steps is not None
    (only,) = fp.steps.steps
    assert only.parts == StepParts(30 * US, 0, 0, 3 * US, 0, 17 * US, 0)
    assert only.kernel_ns == 30 * US
    assert only.calls == (HostCalls(HostFamily.LAUNCH, 1, 3 * US),)


def test_memset_calls_are_counted_per_step(tmp_path: Path) -> None:
    fp = api.load(zeroed(tmp_path / "t.sqlite", 2), ScopeOptions(per="decode_step"))
    assert fp.steps is not None and HostFamily.MEMSET in fp.steps.counted
    for step in fp.steps.steps:
        memset = next(c for c in step.calls if c.family is HostFamily.MEMSET)
        assert (memset.calls, memset.total_ns, memset.bytes) == (2, 8 * US, 0)
    saved = fingerprint_from_json(fingerprint_to_json(fp), "saved.json")
    assert saved.steps is not None and saved.steps.counted == tuple(HostFamily)


def test_steps_saved_before_memsets_were_counted_say_so(tmp_path: Path) -> None:
    # A fingerprint written without `counted` never counted memset calls: none listed is
    # not "none", so it reads as every family but memset.
    fp = api.load(zeroed(tmp_path / "t.sqlite", 0), ScopeOptions(per="decode_step"))
    doc = json.loads(fingerprint_to_json(fp))
    del doc["steps"]["counted"]
    old = fingerprint_from_json(json.dumps(doc), "old.json")
    assert old.steps is not None and HostFamily.MEMSET not in old.steps.counted
    assert old.steps.counted == COUNTED_BEFORE_MEMSETS


def test_memset_calls_in_steps_that_did_not_count_them_are_malformed(tmp_path: Path) -> None:
    fp = api.load(zeroed(tmp_path / "t.sqlite", 1), ScopeOptions(per="decode_step"))
    doc = json.loads(fingerprint_to_json(fp))
    del doc["steps"]["counted"]
    with pytest.raises(FingerprintError) as e:
        fingerprint_from_json(json.dumps(doc), "bad.json")
    assert "bad.json" in str(e.value) and "$.steps.counted" in str(e.value) and "memset" in str(e.value)
    assert "\n" not in str(e.value)
