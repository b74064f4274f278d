"""Synthetic multi-rank jobs: one slow rank that makes NCCL look expensive on the others.

Each rank runs ``STEPS`` steps of ``STEP_NS``: a GEMM (``COMPUTE_NS``, ``SLOW_NS`` on the
slow rank), then an AllReduce that ends at the same instant on every rank (the collective
completes when the slowest rank arrives), then a short AllGather of ``GATHER_NS`` everywhere.
So the fast ranks' AllReduce lasts ``SLOW_NS - COMPUTE_NS + TRANSFER_NS`` (waiting plus
transfer) and the slow rank's only ``TRANSFER_NS``. Every expected figure follows from
these constants, by hand, not from the code under test.
"""

from __future__ import annotations

from pathlib import Path

from nsysdiff.synth.builder import Gpu, TraceBuilder
from nsysdiff.synth.writer import tamper

STEPS = 4
STEP_NS = 10_000_000
COMPUTE_NS = 5_000_000
SLOW_NS = 7_000_000
TRANSFER_NS = 500_000
GATHER_NS = 200_000
T0 = 1_000_000_000
ALLREDUCE = "ncclDevKernel_AllReduce_Sum_bf16_RING_LL"
GATHER = "ncclDevKernel_AllGather_RING_LL"
GEMM = "sm90_xmma_gemm_bf16bf16_bf16f32"
PID = 1000  # the builder's process; rank r's process is PID + r in the one-file shape


def _rank(b: TraceBuilder, device: int, slow: bool, compute: int = COMPUTE_NS, slow_ns: int = SLOW_NS) -> None:
    for s in range(STEPS):
        start = T0 + s * STEP_NS
        b.kernel(GEMM, start, slow_ns if slow else compute, device=device)
        meet = start + slow_ns + TRANSFER_NS  # every rank leaves the AllReduce together
        own = start + (slow_ns if slow else compute)
        b.kernel(ALLREDUCE, own, meet - own, device=device, stream=9)
        b.kernel(GATHER, meet, GATHER_NS, device=device, stream=9)


def allreduce_ns(slow: bool, compute: int = COMPUTE_NS, slow_ns: int = SLOW_NS) -> int:
    """One rank's AllReduce time over the job."""
    return STEPS * (TRANSFER_NS if slow else slow_ns - compute + TRANSFER_NS)


def one_file(
    path: Path, ranks: int, slow: int, *, one_process: bool = False, compute: int = COMPUTE_NS, slow_ns: int = SLOW_NS
) -> Path:
    """``ranks`` GPUs in one trace, rank ``slow`` the slow one; each GPU driven by a process
    of its own (pid PID + device), or all by one process (``one_process``)."""
    b = TraceBuilder(gpus=[Gpu(id=d) for d in range(ranks)], pid=PID)
    for d in range(ranks):
        _rank(b, d, d == slow, compute, slow_ns)
    b.write(path)
    if not one_process:
        # The builder writes one process; a multi-process job gives each device its own.
        tamper(path, "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET globalPid = globalPid + (deviceId << 24)")
    return path


def per_file(folder: Path, ranks: int, slow: int) -> list[Path]:
    """``ranks`` traces of one GPU each (``rank0.sqlite``...), rank ``slow`` the slow one."""
    out = []
    for r in range(ranks):
        b = TraceBuilder(gpus=[Gpu(id=0)], pid=PID + r)
        _rank(b, 0, r == slow)
        out.append(b.write(folder / f"rank{r}.sqlite"))
    return out
