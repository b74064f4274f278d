"""Ranks read from a trace: per (process, device) pair, on synthetic jobs and the real 2-GPU traces.

Synthetic expectations come from the constants in ``tests/jobs.py``; real-trace ones from
sqlite3 queries written here, independent of the reader's query.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from conftest import real_trace
from jobs import (
    ALLREDUCE,
    COMPUTE_NS,
    GATHER_NS,
    PID,
    SLOW_NS,
    STEP_NS,
    STEPS,
    TRANSFER_NS,
    allreduce_ns,
    one_file,
)

from nsysdiff.api import fingerprint_trace
from nsysdiff.errors import TraceError
from nsysdiff.synth.builder import Gpu, TraceBuilder
from nsysdiff.synth.writer import tamper
from nsysdiff.trace import ranks
from nsysdiff.trace.reader import open_trace
from nsysdiff.trace.records import CollectiveShare


def _read(path: Path) -> tuple[ranks.RankStats, ...]:
    with open_trace(path) as r:
        return ranks.read(r)


def test_one_process_per_device_is_one_rank_each(tmp_path: Path) -> None:
    got = _read(one_file(tmp_path / "job.sqlite", ranks=4, slow=2))
    assert [(r.rank, r.device, r.pid, r.label) for r in got] == [
        (d, d, PID + d, f"GPU {d} · pid {PID + d}") for d in range(4)
    ]
    busy = STEPS * (SLOW_NS + TRANSFER_NS + GATHER_NS)  # each step's kernels back to back
    for r in got:
        slow = r.rank == 2
        assert r.kernels == 3 * STEPS
        assert r.kernel_ns == busy == r.busy_ns
        assert r.span_ns == (STEPS - 1) * STEP_NS + SLOW_NS + TRANSFER_NS + GATHER_NS
        assert r.collectives == (
            CollectiveShare("AllGather", STEPS, STEPS * GATHER_NS),
            CollectiveShare("AllReduce", STEPS, allreduce_ns(slow)),
        )
        assert r.compute_ns == STEPS * (SLOW_NS if slow else COMPUTE_NS)


def test_one_process_driving_several_devices_is_one_rank_per_device(tmp_path: Path) -> None:
    got = _read(one_file(tmp_path / "job.sqlite", ranks=2, slow=1, one_process=True))
    assert [(r.device, r.pid) for r in got] == [(0, PID), (1, PID)]
    assert [r.collective_ns for r in got] == [
        allreduce_ns(False) + STEPS * GATHER_NS,
        allreduce_ns(True) + STEPS * GATHER_NS,
    ]


def test_busy_is_the_union_per_rank_not_per_device(tmp_path: Path) -> None:
    # Two processes on one device, overlapping: each rank's busy time is its own union.
    b = TraceBuilder(gpus=[Gpu(id=0), Gpu(id=1)], pid=PID)
    b.kernel("a", 0, 100, device=0)
    b.kernel("a", 50, 100, device=0)  # overlaps the first: union 150
    b.kernel("b", 40, 100, device=0, stream=8)  # becomes pid PID+1 below
    b.kernel("c", 0, 10, device=1)
    path = b.write(tmp_path / "t.sqlite")
    tamper(path, "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET globalPid = globalPid + (1 << 24) WHERE streamId = 8")
    got = _read(path)
    assert [(r.device, r.pid, r.kernels, r.kernel_ns, r.busy_ns, r.span_ns) for r in got] == [
        (0, PID, 2, 200, 150, 150),
        (0, PID + 1, 1, 100, 100, 100),
        (1, PID, 1, 10, 10, 10),
    ]
    assert all(r.collectives == () for r in got)
    # A device of two processes: the fingerprint's ranks come from the scan, not the devices.
    assert fingerprint_trace(path).ranks == got


@pytest.mark.parametrize("one_process", [False, True])
def test_ranks_from_the_devices_equal_the_scan(tmp_path: Path, one_process: bool) -> None:
    # One process per device: the fingerprint derives its ranks from the devices' figures
    # (no scan); they must be the scan's, to the nanosecond.
    path = one_file(tmp_path / "job.sqlite", ranks=3, slow=1, one_process=one_process)
    assert fingerprint_trace(path).ranks == _read(path)


def test_fingerprint_carries_ranks_only_for_several_gpus(tmp_path: Path) -> None:
    fp = fingerprint_trace(one_file(tmp_path / "job.sqlite", ranks=2, slow=0))
    assert len(fp.ranks) == 2
    assert sum(r.kernel_ns for r in fp.ranks) == fp.kernel_ns
    single = TraceBuilder()
    single.kernel(ALLREDUCE, 0, 10)
    assert fingerprint_trace(single.write(tmp_path / "one.sqlite")).ranks == ()


def test_an_impossible_row_fails_with_one_line(tmp_path: Path) -> None:
    path = one_file(tmp_path / "job.sqlite", ranks=2, slow=0)
    tamper(path, 'UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET "end" = start - 1 WHERE rowid = 3')
    with pytest.raises(TraceError) as e:
        _read(path)
    assert "\n" not in str(e.value) and "job.sqlite" in str(e.value)


# --- the real nsys-ai 2-GPU traces: two ranks in one file, one process per GPU ------------

NSYSAI = ("nsysai_mfu_h100x2_before", "nsysai_mfu_h100x2_after", "nsysai_perf_h100x2_sp2_fa3")


@pytest.mark.parametrize("name", NSYSAI)
def test_real_two_gpu_traces_match_sqlite(name: str) -> None:
    path = real_trace(name)
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        want = con.execute(
            'SELECT deviceId, (globalPid >> 24) & 16777215, count(*), sum("end" - start), max("end") - min(start) '
            "FROM CUPTI_ACTIVITY_KIND_KERNEL GROUP BY 1, 2 ORDER BY 1, 2"
        ).fetchall()
        nccl = con.execute(
            'SELECT k.deviceId, count(*), sum(k."end" - k.start) FROM CUPTI_ACTIVITY_KIND_KERNEL k '
            "JOIN StringIds s ON s.id = k.shortName WHERE s.value LIKE 'ncclDevKernel_SendRecv%' GROUP BY 1"
        ).fetchall()
    finally:
        con.close()
    got = _read(path)
    assert fingerprint_trace(path).ranks == got  # derived from the devices, as scanned
    assert [(r.device, r.pid, r.kernels, r.kernel_ns, r.span_ns) for r in got] == want
    # One process per GPU: each rank's busy union is its device's, from the reader's own scan.
    devices = fingerprint_trace(path).devices
    assert [(r.device, r.busy_ns) for r in got] == [(d.device, d.busy_ns) for d in devices]
    assert [(r.device, r.collective_calls, r.collective_ns) for r in got if r.collectives] == nccl


def test_real_before_pair_figures() -> None:
    # The figures quoted in docs/ranks.md, recomputed by the sqlite3 queries above.
    got = _read(real_trace("nsysai_mfu_h100x2_before"))
    assert [(r.label, r.kernel_ns, r.collective_ns, r.busy_ns) for r in got] == [
        ("GPU 0 · pid 144", 270_875_926, 17_172_652, 270_863_484),
        ("GPU 1 · pid 145", 264_324_724, 8_229_100, 264_324_724),
    ]


@pytest.mark.parametrize(
    "sql",
    [
        "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET globalPid = 'x' WHERE rowid = 2",
        "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET globalPid = 1.5 WHERE rowid = 2",
    ],
)
def test_a_process_id_that_is_not_an_integer_is_named(tmp_path: Path, sql: str) -> None:
    # A stray text pid would otherwise become a rank of its own ("pid 0").
    path = tamper(one_file(tmp_path / "job.sqlite", ranks=2, slow=0), sql)
    for read in (_read, lambda p: fingerprint_trace(p).ranks):
        with pytest.raises(TraceError, match=r"job\.sqlite: CUPTI_ACTIVITY_KIND_KERNEL: 1 row.*globalPid.*rowid 2"):
            read(path)


def test_a_null_process_id_is_a_rank_without_one(tmp_path: Path) -> None:
    path = tamper(
        one_file(tmp_path / "job.sqlite", ranks=2, slow=0), "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET globalPid = NULL"
    )
    got = _read(path)
    assert [(r.device, r.pid, r.label) for r in got] == [(0, None, "GPU 0"), (1, None, "GPU 1")]
    assert fingerprint_trace(path).ranks == got
