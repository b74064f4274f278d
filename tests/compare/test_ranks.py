"""The rank view: collective names, skew across ranks, jobs of several traces, the CLI shape.

Expected figures follow from the constants of ``tests/jobs.py`` (one slow rank whose compute
makes the others wait inside the AllReduce), by hand.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
from conftest import run_cli
from jobs import COMPUTE_NS, GATHER_NS, SLOW_NS, STEPS, TRANSFER_NS, allreduce_ns, one_file, per_file

from nsysdiff import api
from nsysdiff.compare import ranks
from nsysdiff.errors import FingerprintError
from nsysdiff.fingerprint.model import fingerprint_from_json, fingerprint_to_json
from nsysdiff.synth.builder import TraceBuilder
from nsysdiff.synth.writer import Gpu
from nsysdiff.trace import collectives
from nsysdiff.trace.records import CollectiveShare, JobIdentity, RankStats


@pytest.mark.parametrize(
    ("name", "op"),
    [
        ("ncclDevKernel_AllReduce_Sum_f32_RING_LL", "AllReduce"),  # NCCL 2.19 on
        ("ncclKernel_ReduceScatter_RING_LL_Sum_half", "ReduceScatter"),  # 2.5 - 2.18
        ("ncclAllReduceRingLLKernel_sum_f32", "AllReduce"),  # 2.4
        ("ncclDevKernel_SendRecv", "SendRecv"),
        ("ncclKernel_Reduce_RING_LL_Sum_float", "Reduce"),
        ("ncclDevKernel_Broadcast_RING_LL", "Broadcast"),
        ("void ncclKernel_AllGather_RING_LL_Sum_int8_t(ncclWorkElem)", "AllGather"),
        ("ncclDevKernel_Generic", collectives.OTHER),
        ("sm90_xmma_gemm_bf16bf16_bf16f32", None),
        ("all_reduce_kernel", None),  # not NCCL: not told by name
    ],
)
def test_collective_op(name: str, op: str | None) -> None:
    assert collectives.collective_op(name) == op


def _rank(n: int, compute: int, coll: int) -> RankStats:
    return RankStats(
        n,
        f"r{n}",
        None,
        None,
        10,
        compute + coll,
        compute + coll,
        compute + coll,
        (CollectiveShare("AllReduce", 5, coll),) if coll else (),
    )


def test_view_names_the_slowest_rank_and_the_waiting() -> None:
    v = ranks.view([_rank(0, 100, 40), _rank(1, 130, 10), _rank(2, 100, 40), _rank(3, 110, 30)])
    assert v is not None
    assert (v.compute.min_ns, v.compute.median_ns, v.compute.max_ns) == (100, 105.0, 130)
    assert (v.compute.least, v.compute.most) == (0, 1)  # ties: the lowest rank number
    assert v.slowest.rank == 1 and v.fastest.rank == 0
    assert v.collective is not None and (v.collective.min_ns, v.collective.max_ns) == (10, 40)
    assert v.waiting_ns == 30
    assert [(s.op, s.calls, s.time.median_ns) for s in v.ops] == [("AllReduce", 20, 35.0)]


def test_view_needs_two_ranks_and_collectives_are_optional() -> None:
    assert ranks.view([_rank(0, 1, 1)]) is None
    v = ranks.view([_rank(0, 5, 0), _rank(1, 7, 0)])
    assert v is not None and v.collective is None and v.ops == () and v.waiting_ns == 0


def test_one_file_job_view(tmp_path: Path) -> None:
    fp = api.fingerprint_trace(one_file(tmp_path / "job.sqlite", ranks=4, slow=2))
    v = ranks.view(fp.ranks)
    assert v is not None
    assert v.slowest.rank == 2
    assert (v.compute.min_ns, v.compute.max_ns) == (STEPS * COMPUTE_NS, STEPS * SLOW_NS)
    # Kernel time is the same on every rank: only the split between compute and NCCL differs.
    assert v.kernel.spread_ns == 0
    # The fast rank's extra NCCL time is exactly its wait for the slow rank's compute.
    assert v.waiting_ns == STEPS * (SLOW_NS - COMPUTE_NS) == allreduce_ns(False) - allreduce_ns(True)
    gather = next(s for s in v.ops if s.op == "AllGather")
    assert gather.time.spread_ns == 0 and gather.time.max_ns == STEPS * GATHER_NS


def test_job_of_traces_numbers_ranks_in_the_order_given(tmp_path: Path) -> None:
    paths = per_file(tmp_path, ranks=3, slow=1)
    got = api.load_job([paths[2], paths[0], paths[1]])
    assert [(r.rank, r.label) for r in got] == [(0, "rank2.sqlite"), (1, "rank0.sqlite"), (2, "rank1.sqlite")]
    v = ranks.view(got)
    assert v is not None and v.slowest.label == "rank1.sqlite"


def test_job_mixes_traces_multi_gpu_traces_and_fingerprints(tmp_path: Path) -> None:
    two = one_file(tmp_path / "two.sqlite", ranks=2, slow=1)
    (single,) = per_file(tmp_path, ranks=1, slow=-1)  # no slow rank
    saved = tmp_path / "single.json"
    saved.write_text(fingerprint_to_json(api.fingerprint_trace(single)), encoding="utf-8")
    got = api.load_job([two, saved])
    assert [r.label for r in got] == ["two.sqlite · GPU 0 · pid 1000", "two.sqlite · GPU 1 · pid 1001", "single.json"]
    # A fingerprint without rank rows is one rank, its collectives told from kernel names.
    assert got[2].collective_ns == got[0].collective_ns == allreduce_ns(False) + STEPS * GATHER_NS
    assert got[2].busy_ns == got[0].busy_ns


def test_fingerprint_round_trips_ranks_and_rejects_impossible_ones(tmp_path: Path) -> None:
    fp = api.fingerprint_trace(one_file(tmp_path / "job.sqlite", ranks=2, slow=0))
    text = fingerprint_to_json(fp)
    assert fingerprint_from_json(text, "fp.json") == fp
    doc = json.loads(text)
    doc["ranks"][1]["busy_ns"] = doc["ranks"][1]["span_ns"] + 1
    with pytest.raises(FingerprintError, match=r"ranks\[1\]\.busy_ns"):
        fingerprint_from_json(json.dumps(doc), "fp.json")
    doc = json.loads(text)
    doc["ranks"][1]["rank"] = 0
    with pytest.raises(FingerprintError, match=r"ranks\[1\]: duplicate"):
        fingerprint_from_json(json.dumps(doc), "fp.json")
    doc = json.loads(text)
    doc["ranks"][0]["collectives"][0]["total_ns"] = doc["ranks"][0]["kernel_ns"] + 1
    with pytest.raises(FingerprintError, match=r"ranks\[0\]\.collectives"):
        fingerprint_from_json(json.dumps(doc), "fp.json")
    # A fingerprint saved before ranks were kept has none.
    del doc["ranks"]
    assert fingerprint_from_json(json.dumps(doc), "fp.json").ranks == ()


def test_rank_diff_pairs_by_number() -> None:
    rd = ranks.compare([_rank(0, 100, 40), _rank(1, 130, 10)], [_rank(0, 100, 10), _rank(1, 100, 10)])
    assert rd is not None and rd.paired
    assert (rd.base.waiting_ns, rd.candidate.waiting_ns) == (30, 0)
    assert ranks.compare([_rank(0, 1, 1)], [_rank(0, 1, 1), _rank(1, 1, 1)]) is None


# --- the CLI ----------------------------------------------------------------------------


def test_summary_of_several_traces_is_the_job_view(tmp_path: Path) -> None:
    paths = [str(p) for p in per_file(tmp_path, ranks=3, slow=1)]
    res = run_cli("summary", *paths, "--format", "json")
    assert res.exit_code == 0, res.stderr
    doc = json.loads(res.stdout)
    assert doc["format"] == "nsysdiff-ranks" and doc["sources"] == paths
    assert doc["slowest_rank"] == 1 and doc["fastest_rank"] == 0
    assert doc["waiting_ns"] == STEPS * (SLOW_NS - COMPUTE_NS)
    assert [r["collective_ns"] for r in doc["ranks"]] == [allreduce_ns(r == 1) + STEPS * GATHER_NS for r in range(3)]


def test_summary_of_several_traces_refuses_scope_options(tmp_path: Path) -> None:
    paths = [str(p) for p in per_file(tmp_path, ranks=2, slow=1)]
    res = run_cli("summary", *paths, "--window", "0:1s")
    assert res.exit_code == 2
    assert res.stderr.strip().splitlines() == [
        "nsysdiff: error: --window applies to one trace; several traces are summarised as the ranks of one job"
    ]


def test_summary_of_several_traces_names_a_bad_one(tmp_path: Path) -> None:
    (good,) = per_file(tmp_path, ranks=1, slow=-1)
    bad = tmp_path / "bad.sqlite"
    bad.write_bytes(b"not a database at all")
    res = run_cli("summary", str(good), str(bad))
    assert res.exit_code == 2
    assert len(res.stderr.strip().splitlines()) == 1 and "bad.sqlite" in res.stderr


def test_diff_json_carries_both_sides_ranks(tmp_path: Path) -> None:
    base = one_file(tmp_path / "base.sqlite", ranks=2, slow=1)
    cand = one_file(tmp_path / "cand.sqlite", ranks=2, slow=1, slow_ns=COMPUTE_NS)  # the skew is gone
    res = run_cli("diff", str(base), str(cand), "--no-rules", "--format", "json")
    assert res.exit_code == 0, res.stderr
    doc = json.loads(res.stdout)["ranks"]
    assert doc["paired"] is True
    assert (doc["base"]["waiting_ns"], doc["candidate"]["waiting_ns"]) == (STEPS * (SLOW_NS - COMPUTE_NS), 0)
    assert doc["base"]["slowest_rank"] == 1


def test_one_gpu_outputs_have_no_rank_section(tmp_path: Path) -> None:
    (a, b) = per_file(tmp_path, ranks=2, slow=1)
    res = run_cli("diff", str(a), str(b), "--no-rules", "--format", "json")
    assert "ranks" not in json.loads(res.stdout)
    res = run_cli("summary", str(a), "--format", "json")
    assert "ranks" not in json.loads(res.stdout)


def test_rank_stats_properties() -> None:
    r = dataclasses.replace(_rank(0, 70, 30), busy_ns=80, span_ns=100)
    assert (r.compute_ns, r.collective_ns, r.collective_calls) == (70, 30, 5)
    assert r.idle_pct == pytest.approx(20.0)


def test_a_trace_without_kernels_is_a_rank_that_ran_nothing(tmp_path: Path) -> None:
    # Two traces are two ranks even when one ran no kernel (else nothing would be compared).
    (busy,) = per_file(tmp_path, ranks=1, slow=-1)
    empty = TraceBuilder()
    empty.nvtx_range("idle", 0, 1000)
    paths = [str(busy), str(empty.write(tmp_path / "empty.sqlite"))]
    res = run_cli("summary", *paths, "--format", "json")
    assert res.exit_code == 0, res.stderr
    doc = json.loads(res.stdout)
    assert [(r["label"], r["kernels"], r["kernel_ns"]) for r in doc["ranks"]] == [
        ("rank0.sqlite", 3 * STEPS, STEPS * (SLOW_NS + TRANSFER_NS + GATHER_NS)),
        ("empty.sqlite", 0, 0),
    ]
    assert doc["slowest_rank"] == 0 and doc["fastest_rank"] == 1


START = 1_700_000_000_000_000_000


def _trace(path: Path, gpu: str = "NVIDIA H200", start: int = START, process: str = "python") -> Path:
    b = TraceBuilder(gpus=(Gpu(name=gpu),), session_start_ns=start, process_name=process)
    b.launch("ncclDevKernel_AllReduce_Sum_f32_RING_LL", 1_000, 2_000, 5_000)
    return b.write(path)


def test_traces_of_other_jobs_are_refused_as_ranks_unless_forced(tmp_path: Path) -> None:
    # An RTX 3070 trace and an A30 trace, captured days apart by other programs, are no job.
    a = _trace(tmp_path / "rtx3070.sqlite", gpu="NVIDIA GeForce RTX 3070", process="./bench")
    b = _trace(tmp_path / "a30.sqlite", gpu="NVIDIA A30", start=START + 3 * 86_400 * 10**9)
    r = run_cli("summary", str(a), str(b))
    assert r.exit_code == 2 and r.stdout == ""
    assert r.stderr.startswith("nsysdiff: error: these traces do not look like the ranks of one job: different GPUs")
    assert "nsys sessions started 3.0 days apart" in r.stderr
    assert "different programs ran the kernels (rtx3070.sqlite: ./bench; a30.sqlite: python)" in r.stderr
    assert "give --ranks to show them side by side anyway" in r.stderr and r.stderr.count("\n") == 1
    forced = run_cli("summary", str(a), str(b), "--ranks")
    assert forced.exit_code == 0 and "slowest rank" in forced.stdout
    assert "shown as ranks of one job (--ranks), although: different GPUs" in forced.stderr


def test_ranks_of_one_job_pass_the_check(tmp_path: Path) -> None:
    # Same program, same GPU model, sessions 30 s apart: one job.
    a = _trace(tmp_path / "rank0.sqlite")
    b = _trace(tmp_path / "rank1.sqlite", start=START + 30 * 10**9)
    r = run_cli("summary", str(a), str(b))
    assert r.exit_code == 0 and r.stderr == ""


def test_one_job_check_on_what_each_trace_records() -> None:
    h200 = JobIdentity(1_000, ("NVIDIA H200",), ("python",))
    assert ranks.not_one_job([("a", h200), ("b", h200)]) == ()
    # A saved fingerprint records only its GPUs; a trace without a GPU table, no GPU.
    saved, bare = JobIdentity(None, ("NVIDIA H200",), ()), JobIdentity(None, (), ())
    assert ranks.not_one_job([("a", h200), ("b", saved), ("c", bare)]) == ()
    (why,) = ranks.not_one_job([("a", h200), ("b", JobIdentity(None, ("NVIDIA A30",), ()))])
    assert why == "different GPUs (a: NVIDIA H200; b: NVIDIA A30)"
