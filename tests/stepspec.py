"""A trace of two decode steps whose every microsecond is accounted for by hand (the
accounting of docs/steps.md), shared by the steps tests of the fingerprint and the census."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from pathlib import Path

from nsysdiff.synth.builder import TraceBuilder

US = 1_000
T = 100 * US  # the first step's start
NCCL = "ncclDevKernel_AllReduce_Sum_f32_RING_LL"


def two_steps(path: Path) -> Path:
    """Two decode steps whose every microsecond is accounted for in the comments."""
    b = TraceBuilder()
    b.launch("load_weights", 0, 10 * US, 20 * US)  # before the steps: not in any
    # Step 0, range [T, T+100us], period 120us.
    b.launch("gemm", T, T + 10 * US, 30 * US, api_duration=10 * US)  # launch-bound 0-10, compute 10-40
    b.launch(NCCL, T + 12 * US, T + 35 * US, 25 * US, api_duration=3 * US)  # communication 40-60
    copy = b.runtime("cudaMemcpyAsync_v3020", T + 60 * US, 2 * US)
    b.memcpy("DtoH", T + 55 * US, 15 * US, 4096, correlation_id=copy)  # copies 60-70
    b.runtime("cudaStreamSynchronize_v3020", T + 62 * US, 13 * US)  # sync 70-75, then host 75-80
    b.launch("relu", T + 80 * US, T + 90 * US, 5 * US, api_duration=10 * US)  # launch 80-90, compute 90-95
    b.runtime("cudaMalloc_v3020", T + 95 * US, 2 * US)  # host 95-98
    b.launch("tail", T + 98 * US, T + 105 * US, 10 * US, api_duration=1 * US)  # launch 98-99, host 99-100
    b.runtime("cudaFree_v3020", T + 110 * US, 2 * US)  # between steps: step 0's call, between time
    b.nvtx_range("decode_step", T, T + 100 * US)
    # Step 1, range [T+120us, T+200us], the last: its period is its duration.
    b.launch("gemm", T + 120 * US, T + 125 * US, 55 * US, api_duration=5 * US)  # launch 0-5, compute 5-60
    # Another thread of the process: its launch counts for the parts and the calls, but
    # its kernel is not launched inside the step's (push/pop) range.
    b.launch("other", T + 185 * US, T + 190 * US, 5 * US, api_duration=5 * US, tid=2002)
    b.nvtx_range("decode_step", T + 120 * US, T + 200 * US)
    return b.write(path)


def add_empty_steps(path: Path, n: int, length: int = 0, name: str = "decode_step") -> Path:
    """``n`` ranges of ``length`` ns named ``name``, on the thread of the trace's first such
    range (and of its kind), spread over its span: a step-range bomb (docs/steps.md)."""
    con = sqlite3.connect(path)
    lo, hi, tid, kind = con.execute(
        'SELECT min(start), max("end"), globalTid, eventType FROM NVTX_EVENTS WHERE text = ?', (name,)
    ).fetchone()
    gap = max(1, (hi - lo) // n)
    con.execute(
        "WITH RECURSIVE i(k) AS (SELECT 0 UNION ALL SELECT k + 1 FROM i WHERE k + 1 < ?) "
        'INSERT INTO NVTX_EVENTS (start, "end", eventType, text, globalTid, domainId) '
        "SELECT ? + k * ?, ? + k * ? + ?, ?, ?, ?, 0 FROM i",
        (n, lo, gap, lo, gap, length, kind, name, tid),
    )
    con.commit()
    con.close()
    return path


# An eager decode loop, its steps found with or without markers (docs/steps.md).
STEP = ["embed", "attn", "mlp", "attn", "mlp", "attn", "mlp", "head", "argmax"]
PREFILL = ["embed", "prefill_attn", "mlp", "prefill_attn", "mlp", "head", "argmax"]


def loop(b: TraceBuilder, t: int, names: Sequence[str], *, marker: bool = True, gap: int = 300_000) -> tuple[int, int]:
    """One step: its kernels launched 10 us apart (GPU 2 us behind), a host gap after."""
    start = t
    for name in names:
        b.launch(name, t, t + 2_000, 4_000)
        t += 10_000
    if marker:
        b.nvtx_range("decode_step", start, t)
    return start, t + gap


def eager(path: Path, steps: int, *, odd: int | None = None, marker: bool = True) -> tuple[Path, list[int]]:
    """A prefill, then ``steps`` decode steps (``odd``: one that launches an extra kernel),
    each marked with a decode_step range unless ``marker`` is false; and the steps' starts."""
    b = TraceBuilder()
    t = 1_000_000
    _, t = loop(b, t, PREFILL, marker=False, gap=2_000_000)
    starts = []
    for i in range(steps):
        names = [*STEP[:3], "rebalance", *STEP[3:]] if i == odd else STEP
        start, t = loop(b, t, names, marker=marker)
        starts.append(start)
    return b.write(path), starts


def zeroed(path: Path, memsets: int) -> Path:
    """Two steps of one launch each, with ``memsets`` cudaMemsetAsync calls (and their
    memsets) in every step: a buffer zeroed every token."""
    b = TraceBuilder()
    for k in range(2):
        t = T + k * 200 * US
        b.launch("gemm", t + 1 * US, t + 10 * US, 20 * US)
        for j in range(memsets):
            call = b.runtime("cudaMemsetAsync_v3020", t + (40 + 10 * j) * US, 4 * US)
            b.memset(t + (45 + 10 * j) * US, 1 * US, 65_536, correlation_id=call)
        b.nvtx_range("decode_step", t, t + 150 * US)
    return b.write(path)
