"""How the ranks of a job are told apart: NCCL kernel names to collective operations, and
a rank's label. Kept apart from the rank scan so that the rank view needs no reader."""

from __future__ import annotations

import re

# NCCL device kernels, as every NCCL release since 2.x names them: ncclDevKernel_AllReduce_Sum_f32_RING_LL
# (2.19 on), ncclKernel_AllReduce_RING_LL_Sum_float (2.5-2.18), ncclAllReduceRingLLKernel_sum_f32 (2.4).
# Longer names first: "ReduceScatter" and "AllReduce" before "Reduce", "SendRecv" before "Send".
_OPS = ("AllReduce", "AllGather", "ReduceScatter", "AllToAll", "Broadcast", "SendRecv", "Reduce", "Send", "Recv")
_OP = re.compile(r"nccl(?:Dev)?(?:Kernel)?_?(" + "|".join(_OPS) + ")")
OTHER = "other NCCL"


def collective_op(name: str) -> str | None:
    """The collective operation an NCCL kernel performs (``AllReduce``...), ``OTHER`` for an
    NCCL kernel of no known operation, None for any other kernel. Every NCCL device kernel's
    name starts with ``nccl`` (after ``void`` in some demangled names)."""
    name = name.removeprefix("void ")
    if not name.startswith("nccl"):
        return None
    m = _OP.match(name)
    return m.group(1) if m else OTHER


def label(device: int | None, pid: int | None) -> str:
    """How a rank of a multi-GPU trace is named: ``GPU 1 · pid 145``."""
    where = "GPU ?" if device is None else f"GPU {device}"
    return where if pid is None else f"{where} · pid {pid}"
