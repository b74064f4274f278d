#!/usr/bin/env python3
"""Speed and memory of nsysdiff on large traces, beside a bare SQLite scan.

Builds large traces (or reuses them with ``--keep DIR``), then measures, for each size:

- ``nsysdiff summary --format json TRACE`` (a subprocess, so interpreter start-up and
  imports count, as they do for a user): best wall time of ``--repeat`` runs and the
  peak RSS of that process (``os.wait4`` rusage, per child);
- the *floor*: the bare ``GROUP BY`` scan of the same tables (kernel by demangled name
  and device, memcpy by copyKind, memset by device, runtime by nameId, NVTX by text,
  textId and domain), in-process with ``sqlite3`` on a read-only connection;
- ``nsysdiff diff BASE CAND --no-rules --format json``, whole and scoped (``--window``,
  ``--nvtx``, ``--per``, ``--phases``), against the floor of both files;
- the size of ``nsysdiff fingerprint`` output and the diff of two saved fingerprints.

Two pairs of traces:

- *inflated*: the real ``nsysai_mfu_h100x2_before``/``_after`` exports (from
  ``$NSYSDIFF_TRACES`` or ``../shared/traces``), their kernel, memcpy, memset, runtime
  and NVTX rows replicated K times, each copy shifted past the previous window with its
  correlation ids shifted too, as ``../shared/tools/inflate_trace.py`` does (``--no-nvtx``
  leaves NVTX alone: the activity-only traces of earlier benchmarks). Skipped when the
  real traces are absent.
- *synthetic*: written by :class:`nsysdiff.synth.builder.TraceBuilder` with a realistic
  mix (about 50 kernels over two GPUs, memcpy, memset, runtime launch and sync calls,
  NVTX ranges with PyTorch suffixes); ``--synthetic`` adds it.

Every child runs under an address-space cap (``--mem-cap-gb``), so a runaway can't take
a shared machine's memory. The benchmark prints a table; the speed targets are reported
(PASS/MISS) but the exit status is 1 only when a command breaks the memory bound (peak RSS
of 500 MB) or fails.

Usage: ``python benchmarks/bench.py [--kernels N ...] [--repeat 3] [--keep DIR]``.
"""

from __future__ import annotations

import argparse
import math
import multiprocessing
import os
import platform
import resource
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from nsysdiff.synth.builder import Generation, Gpu, TraceBuilder

KERNEL = "CUPTI_ACTIVITY_KIND_KERNEL"
MEMCPY = "CUPTI_ACTIVITY_KIND_MEMCPY"
MEMSET = "CUPTI_ACTIVITY_KIND_MEMSET"
RUNTIME = "CUPTI_ACTIVITY_KIND_RUNTIME"
NVTX = "NVTX_EVENTS"
ACTIVITY = (KERNEL, MEMCPY, MEMSET, RUNTIME)
REPLICATED = (*ACTIVITY, NVTX)

# The bare scan nsysdiff is measured against: one aggregate pass per activity table.
FLOOR_SQL = {
    KERNEL: 'SELECT demangledName, deviceId, count(*), sum("end" - start) '
    f"FROM {KERNEL} GROUP BY demangledName, deviceId",
    MEMCPY: f'SELECT copyKind, count(*), sum(bytes), sum("end" - start) FROM {MEMCPY} GROUP BY copyKind',
    MEMSET: f'SELECT deviceId, count(*), sum(bytes), sum("end" - start) FROM {MEMSET} GROUP BY deviceId',
    RUNTIME: f'SELECT nameId, count(*), sum("end" - start) FROM {RUNTIME} GROUP BY nameId',
    # PyTorch's range names are unique per call (", seq = N"): the bare scan groups the raw
    # text, as a tool that did not fold the names would.
    NVTX: f'SELECT text, textId, domainId, count(*), sum("end" - start) FROM {NVTX} GROUP BY text, textId, domainId',
}
# kernel-heavy: kernels, copies and runtime calls replicated, NVTX as captured (about 50
# launches per NVTX row: CUDA-graph node captures, C++ engines); NVTX-dense: NVTX too.
SHAPES = ("kernel-heavy", "NVTX-dense")
MEMORY_BOUND = 500 * 1024 * 1024  # peak RSS of any command, at any size

SEEDS = ("nsysai_mfu_h100x2_before.sqlite", "nsysai_mfu_h100x2_after.sqlite")

MB = 1024 * 1024


# --- building traces --------------------------------------------------------------


def traces_dir() -> Path:
    env = os.environ.get("NSYSDIFF_TRACES")
    if env:
        return Path(env)
    return Path(__file__).resolve().parent.parent.parent / "shared" / "traces"


def inflate(src: Path, dst: Path, min_kernels: int, *, nvtx: bool = True) -> dict[str, int]:
    """Copy `src` to `dst` and replicate its rows until it has `min_kernels` kernels.

    Each copy of the kernel, memcpy, memset, runtime (and NVTX) rows is shifted past the
    previous one in time, and its correlation ids past the previous copy's, so that a
    (process, correlationId) pair stays unique as in a real long capture (what
    inflate_trace.py does). Written to `dst`.tmp first, so an interrupted build is never
    reused. Returns the row count of each replicated table.
    """
    tmp = dst.with_name(dst.name + ".tmp")
    shutil.copyfile(src, tmp)
    tmp.chmod(0o644)  # the seed may be read-only
    con = sqlite3.connect(tmp, isolation_level=None)
    try:
        con.execute("PRAGMA journal_mode = OFF")
        con.execute("PRAGMA synchronous = OFF")
        tables = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        acts = [t for t in (REPLICATED if nvtx else ACTIVITY) if t in tables]
        (base_kernels,) = con.execute(f"SELECT count(*) FROM {KERNEL}").fetchone()
        lo = min(con.execute(f"SELECT min(start) FROM {t}").fetchone()[0] for t in acts)
        hi = max(con.execute(f'SELECT max(coalesce("end", start)) FROM {t}').fetchone()[0] for t in acts)
        copies = max(1, math.ceil(min_kernels / base_kernels))
        span = (hi - lo) + 1000
        with_corr = [t for t in acts if "correlationId" in _columns(con, t)]
        cstep = 1 + max(
            con.execute(f"SELECT coalesce(max(correlationId), 0) FROM {t}").fetchone()[0] for t in with_corr
        )
        con.execute("BEGIN")
        for t in acts:
            rest = [c for c in _columns(con, t) if c not in ("start", "end", "correlationId")]
            names, picks = ["start", '"end"'], ["start + :off", '"end" + :off']
            if t in with_corr:
                names.append("correlationId")
                picks.append("correlationId + :coff")
            names += [f'"{c}"' for c in rest]
            picks += [f'"{c}"' for c in rest]
            con.execute(f"CREATE TEMP TABLE base_{t} AS SELECT * FROM {t}")
            for i in range(1, copies):
                con.execute(
                    f"INSERT INTO {t} ({', '.join(names)}) SELECT {', '.join(picks)} FROM temp.base_{t}",
                    {"off": i * span, "coff": i * cstep},
                )
            con.execute(f"DROP TABLE temp.base_{t}")
        con.execute("COMMIT")
        counts = {t: con.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in acts}
    finally:
        con.close()
    tmp.rename(dst)
    return counts


def _columns(con: sqlite3.Connection, table: str) -> list[str]:
    return [r[1] for r in con.execute(f'PRAGMA table_info("{table}")')]


@dataclass(frozen=True)
class Kernel:
    short: str
    demangled: str
    weight: float  # share of launches
    mean_ns: float
    grid: tuple[int, int, int]
    block: tuple[int, int, int]


# The named kernels of the mix: (short, demangled or "" for the short name, launch weight,
# mean ns, grid x, block x). Demangled names are what PyTorch, vLLM, cuBLAS and NCCL emit.
_NAMED: tuple[tuple[str, str, float, int, int, int], ...] = (
    ("device_kernel", "void cutlass::device_kernel<flash::FlashAttnFwdSm90<128, 64>>(Params)", 2.0, 110_000, 132, 384),
    (
        "flash_fwd_kernel",
        "void flash::flash_fwd_kernel<Flash_fwd_kernel_traits<128, 128, 64, 4>, true>(Flash_fwd_params)",
        1.5,
        95_000,
        132,
        128,
    ),
    (
        "flash_bwd_dq_dk_dv_loop_seqk_parallel_kernel",
        "void flash::flash_bwd_dq_dk_dv_loop_seqk_parallel_kernel<Flash_bwd_kernel_traits<128>>(Flash_bwd_params)",
        1.0,
        180_000,
        132,
        256,
    ),
    (
        "reshape_and_cache_flash_kernel",
        "void vllm::reshape_and_cache_flash_kernel<__nv_bfloat16, __nv_bfloat16, "
        "(vllm::Fp8KVCacheDataType)0>(const __nv_bfloat16 *, long)",
        1.0,
        3_000,
        64,
        256,
    ),
    (
        "rms_norm_kernel",
        "void vllm::rms_norm_kernel<c10::BFloat16>(c10::BFloat16 *, const c10::BFloat16 *, float, int, int)",
        2.0,
        5_000,
        64,
        1024,
    ),
    (
        "fused_add_rms_norm_kernel",
        "void vllm::fused_add_rms_norm_kernel<c10::BFloat16, 8>(c10::BFloat16 *, "
        "c10::BFloat16 *, const c10::BFloat16 *, float, int, int)",
        2.0,
        6_000,
        64,
        1024,
    ),
    (
        "vectorized_layer_norm_kernel",
        "void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<c10::BFloat16, "
        "float>(int, float, const c10::BFloat16 *, const c10::BFloat16 *, c10::BFloat16 *)",
        1.0,
        7_000,
        64,
        256,
    ),
    (
        "softmax_warp_forward",
        "void softmax_warp_forward<c10::BFloat16, c10::BFloat16, float, 10, false, false>"
        "(c10::BFloat16 *, const c10::BFloat16 *, int, int, int, const bool *, int, bool)",
        1.0,
        12_000,
        256,
        128,
    ),
    (
        "radixSortKVInPlace",
        "void at::native::radixSortKVInPlace<-2, -1, 128, 32, float, long>"
        "(at::cuda::detail::TensorInfo<float, unsigned int>, unsigned int)",
        0.3,
        25_000,
        64,
        128,
    ),
    (
        "ncclDevKernel_AllReduce_Sum_bf16_RING_LL",
        "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevComm *, unsigned long, ncclWork *)",
        1.0,
        150_000,
        16,
        544,
    ),
    (
        "ncclDevKernel_SendRecv",
        "ncclDevKernel_SendRecv(ncclDevComm *, unsigned long, ncclWork *)",
        0.6,
        120_000,
        2,
        640,
    ),
    (
        "ncclDevKernel_AllGather_RING_LL",
        "ncclDevKernel_AllGather_RING_LL(ncclDevComm *, unsigned long, ncclWork *)",
        0.4,
        90_000,
        16,
        544,
    ),
    (
        "indexSelectLargeIndex",
        "void at::native::indexSelectLargeIndex<c10::BFloat16, long, unsigned int, 2, 2, -2, "
        "true>(at::cuda::detail::TensorInfo<c10::BFloat16, unsigned int>)",
        0.5,
        6_000,
        512,
        128,
    ),
    (
        "index_elementwise_kernel",
        "void at::native::index_elementwise_kernel<128, 4, at::native::gpu_index_kernel<"
        "at::native::index_kernel_impl<at::native::OpaqueType<2>>>>(long, "
        "at::native::gpu_index_kernel<at::native::index_kernel_impl<at::native::OpaqueType<2>>>)",
        0.5,
        4_000,
        512,
        128,
    ),
    (
        "cunn_SoftMaxForward",
        "void at::native::(anonymous namespace)::cunn_SoftMaxForward<4, float, float, float, "
        "at::native::(anonymous namespace)::SoftMaxForwardEpilogue>(float *, const float *, int)",
        0.3,
        30_000,
        256,
        1024,
    ),
    (
        "gemv2T_kernel_val",
        "void gemv2T_kernel_val<int, int, __nv_bfloat16, __nv_bfloat16, float, float, 128, 16, "
        "4, 4, false, false>(cublasGemvParamsEx<int, cublasGemvTensorStridedBatched<"
        "const __nv_bfloat16>>, float, float)",
        0.5,
        15_000,
        128,
        128,
    ),
    (
        "splitKreduce_kernel",
        "void cublasLt::splitKreduce_kernel<32, 16, int, float, __nv_bfloat16, float, "
        "__nv_bfloat16, true, false, false>(cublasLt::cublasSplitKParams<float>, const float *, "
        "__nv_bfloat16 *)",
        0.4,
        5_000,
        64,
        512,
    ),
    (
        "rotary_embedding_kernel",
        "void vllm::rotary_embedding_kernel<c10::BFloat16, true>(const long *, c10::BFloat16 *, "
        "c10::BFloat16 *, const c10::BFloat16 *, int, long, long, int, int, int)",
        1.0,
        4_500,
        256,
        128,
    ),
    (
        "act_and_mul_kernel",
        "void vllm::act_and_mul_kernel<c10::BFloat16, &vllm::silu_kernel<c10::BFloat16>, false>"
        "(c10::BFloat16 *, const c10::BFloat16 *, int)",
        1.0,
        7_500,
        256,
        1024,
    ),
)

_NVJET_TILES = (
    "192x192_64x4_2x1_v_bz_coopB_TNN",
    "256x128_64x4_1x2_h_bz_coopA_NTT",
    "128x256_64x4_2x1_v_bz_coopA_NTN",
    "128x128_64x4_1x1_v_bz_NNT",
    "64x256_64x4_1x2_h_bz_TNT",
    "256x64_64x4_2x1_v_bz_coopB_NTN",
)
_ELEMENTWISE_OPS = (
    "CUDAFunctor_add<c10::BFloat16>",
    "MulFunctor<float>",
    "silu_kernel",
    "gelu_kernel",
    "copy_kernel",
    "fill_kernel",
)


def _kernel_mix() -> list[Kernel]:
    """About fifty kernels with the name shapes and time shares of an LLM step."""
    mix: list[Kernel] = []
    for i, tile in enumerate(_NVJET_TILES):
        name = f"nvjet_tst_{tile}"
        mix.append(Kernel(name, name, 3.0 - 0.3 * i, 60_000 + 9_000 * i, (132, 1, 1), (384, 1, 1)))
    for i, tile in enumerate(("64x256x8", "128x128x8", "256x64x8")):
        short = f"sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize{tile}_stage3_warpsize2x2x1_execute_kernel"
        demangled = f"void {short}_cublas<cutlass::bfloat16_t>(Params)"
        mix.append(Kernel(short, demangled, 1.2, 45_000 + 5_000 * i, (132, 1, 1), (256, 1, 1)))
    for i in range(3):
        short = f"cutlass_80_tensorop_bf16_s16816gemm_relu_bf16_{64 * (i + 1)}x64_32x{i + 3}_nn_align8"
        demangled = f"void cutlass::Kernel2<{short}>(Params)"
        mix.append(Kernel(short, demangled, 0.8, 30_000 + 4_000 * i, (132, 1, 1), (128, 1, 1)))
    for i in range(8):
        name = f"triton_poi_fused_add_mul_{i}"
        mix.append(Kernel(name, name, 1.5, 4_000 + 700 * i, (1024, 1, 1), (128, 1, 1)))
    for i in range(4):
        name = f"triton_red_fused_native_layer_norm_{i}"
        mix.append(Kernel(name, name, 1.0, 9_000 + 1_000 * i, (2048, 1, 1), (512, 1, 1)))
    for i, op in enumerate(_ELEMENTWISE_OPS):
        demangled = (
            f"void at::native::vectorized_elementwise_kernel<4, at::native::{op}, "
            f"at::detail::Array<char *, 3>>(int, at::native::{op}, at::detail::Array<char *, 3>)"
        )
        mix.append(
            Kernel(
                "vectorized_elementwise_kernel", demangled, 3.0 - 0.3 * i, 2_500 + 400 * i, (4096, 1, 1), (128, 1, 1)
            )
        )
    for i, op in enumerate(("sum", "max", "mean")):
        functor = f"at::native::ReduceOp<float, at::native::{op}_functor<float>>"
        demangled = f"void at::native::reduce_kernel<512, 1, {functor}>({functor})"
        mix.append(Kernel("reduce_kernel", demangled, 0.8, 8_000 + 1_000 * i, (264, 1, 1), (512, 1, 1)))
    for short, demangled, weight, mean, grid, block in _NAMED:
        mix.append(Kernel(short, demangled or short, weight, mean, (grid, 1, 1), (block, 1, 1)))
    return mix


def synthetic(path: Path, kernels: int, *, candidate: bool) -> dict[str, int]:
    """A TraceBuilder export (2024.6 schema, two H100s) with `kernels` launches.

    The candidate differs as a real regression would: per-call noise, one kernel
    (reshape_and_cache_flash_kernel) 5x slower per call, and a GEMM variant swap.
    """
    rng = np.random.default_rng(2 if candidate else 1)
    mix = _kernel_mix()
    if candidate:  # variant drift: one nvjet tile replaced by another of the same family
        old = mix[1]
        new = "nvjet_tst_256x192_64x4_1x2_h_bz_coopB_TNT"
        mix[1] = Kernel(new, new, old.weight, old.mean_ns * 1.3, old.grid, old.block)
    gpus = (Gpu(0, "NVIDIA H100 80GB HBM3"), Gpu(1, "NVIDIA H100 80GB HBM3"))
    b = TraceBuilder(Generation.V2024, gpus=gpus)
    weights = np.array([k.weight for k in mix])
    which = rng.choice(len(mix), size=kernels, p=weights / weights.sum())
    means = np.array([k.mean_ns for k in mix])
    if candidate:
        slow = next(i for i, k in enumerate(mix) if k.short == "reshape_and_cache_flash_kernel")
        means[slow] *= 5.0
    dur = np.maximum(500, rng.lognormal(np.log(means[which]), 0.25)).astype(np.int64)
    gap = rng.integers(1_000, 4_000, size=kernels)
    device = np.arange(kernels) % 2
    # Each GPU runs its kernels back to back with small gaps; the two GPUs in parallel.
    start = np.empty(kernels, dtype=np.int64)
    t0 = 10_000_000
    for d in (0, 1):
        m = device == d
        step = dur[m] + gap[m]
        start[m] = t0 + np.concatenate(([0], np.cumsum(step)[:-1]))
    for k, spec in enumerate(mix):
        for d in (0, 1):
            m = (which == k) & (device == d)
            if m.any():
                b.kernels(
                    spec.short,
                    start[m],
                    dur[m],
                    demangled=spec.demangled,
                    device=d,
                    grid=spec.grid,
                    block=spec.block,
                    api="cudaLaunchKernel_v7000",
                    tid=1001 + d,
                )
    end = int((start + dur).max())
    # Memory operations, sync calls and NVTX ranges, spread over the window.
    kinds = ("HtoD", "DtoH", "DtoD", "DtoD", "DtoD", "PtoP")
    for i, t in enumerate(np.linspace(t0, end, kernels // 20, dtype=np.int64)):
        kind = kinds[i % len(kinds)]
        size = int(rng.integers(4, 64)) * 65_536
        b.memcpy(kind, int(t), 2_000 + size // 50_000, size, device=i % 2)
    for i, t in enumerate(np.linspace(t0 + 500, end, kernels // 50, dtype=np.int64)):
        b.memset(int(t), 1_500, 1 << 20, device=i % 2)
    syncs = (
        "cudaStreamSynchronize_v3020",
        "cudaDeviceSynchronize_v3020",
        "cudaEventSynchronize_v3020",
    )
    for i, t in enumerate(np.linspace(t0 + 700, end, kernels // 100, dtype=np.int64)):
        b.runtime(syncs[i % 3], int(t), 20_000, tid=1001 + i % 2)
    ops = (
        "aten::mm",
        "aten::add",
        "aten::layer_norm",
        "aten::_flash_attention_forward",
        "aten::copy_",
    )
    ticks = np.linspace(t0, end, kernels // 20 + 1, dtype=np.int64)
    for i in range(len(ticks) - 1):
        name = f"{ops[i % len(ops)]}, seq = {i}, op_id = {100_000 + i}"
        b.nvtx_range(name, int(ticks[i]), int(ticks[i + 1]) - 10, tid=1001 + i % 2, registered=i % 3 == 0)
    b.write(path)
    return {t: n for t, n in _counts(path).items() if n}


def build_apart(path: Path, kernels: int, *, candidate: bool) -> None:
    """:func:`synthetic` in a fresh process.

    A child's ru_maxrss counts what it inherited across fork+exec, so a parent that held
    a million builder rows would inflate every peak RSS measured after it.
    """
    ctx = multiprocessing.get_context("spawn")
    proc = ctx.Process(target=synthetic, args=(path, kernels), kwargs={"candidate": candidate})
    proc.start()
    proc.join()
    if proc.exitcode != 0:
        raise RuntimeError(f"building {path} failed (exit {proc.exitcode})")


def _counts(path: Path) -> dict[str, int]:
    con = _ro(path)
    try:
        have = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        return {t: con.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in REPLICATED if t in have}
    finally:
        con.close()


# --- measuring ---------------------------------------------------------------------


def _ro(path: Path) -> sqlite3.Connection:
    return sqlite3.connect(path.resolve().as_uri() + "?mode=ro&immutable=1", uri=True)


def bare_scan(paths: Sequence[Path]) -> None:
    for path in paths:
        con = _ro(path)
        try:
            have = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
            for table, sql in FLOOR_SQL.items():
                if table in have:
                    con.execute(sql).fetchall()
        finally:
            con.close()


def median_with_cpu(repeat: int, fn: Callable[[], object]) -> tuple[float, float]:
    """Median wall time and median CPU time (user + system, this process) of `repeat` calls."""
    walls, cpus = [], []
    for _ in range(repeat):
        r0 = resource.getrusage(resource.RUSAGE_SELF)
        t = time.perf_counter()
        fn()
        walls.append(time.perf_counter() - t)
        r1 = resource.getrusage(resource.RUSAGE_SELF)
        cpus.append((r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime))
    return statistics.median(walls), statistics.median(cpus)


def floor_parts(path: Path) -> dict[str, float]:
    """CPU seconds of each table's GROUP BY of the floor, one call (for the README)."""
    out: dict[str, float] = {}
    con = _ro(path)
    try:
        have = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        for table, sql in FLOOR_SQL.items():
            if table in have:
                r0 = resource.getrusage(resource.RUSAGE_SELF)
                con.execute(sql).fetchall()
                r1 = resource.getrusage(resource.RUSAGE_SELF)
                out[table] = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
    finally:
        con.close()
    return out


@dataclass(frozen=True)
class Run:
    seconds: float  # median wall time of the runs
    peak_rss: int  # bytes
    out_bytes: int
    cpu: float = math.nan  # user + system seconds of the child, median of the runs


class Failed(RuntimeError):
    """A command exited non-zero (a MemoryError under the cap shows up here)."""


def run_cli(args: Sequence[str], out: Path, repeat: int, cap_bytes: int) -> Run:
    """Median wall and CPU time of `repeat` runs of `python -m nsysdiff ARGS`, and the largest peak RSS."""
    cmd = [sys.executable, "-m", "nsysdiff", *args]
    walls: list[float] = []
    cpus: list[float] = []
    rss = 0

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (cap_bytes, cap_bytes))

    for _ in range(repeat):
        with out.open("wb") as fh, tempfile.TemporaryFile() as err:
            t = time.perf_counter()
            proc = subprocess.Popen(cmd, stdout=fh, stderr=err, preexec_fn=limit)
            # wait4 gives this child's own rusage (RUSAGE_CHILDREN would be the max of all).
            _, status, usage = os.wait4(proc.pid, 0)
            elapsed = time.perf_counter() - t
            proc.returncode = os.waitstatus_to_exitcode(status)
            if proc.returncode not in (0, 1):  # 1: a diff that found a change is still a run
                err.seek(0)
                raise Failed(f"{' '.join(cmd)} exited {proc.returncode}:\n{err.read().decode()[-2000:]}")
        walls.append(elapsed)
        cpus.append(usage.ru_utime + usage.ru_stime)
        # ru_maxrss is KiB on Linux, bytes on macOS.
        rss = max(rss, usage.ru_maxrss * (1 if sys.platform == "darwin" else 1024))
    return Run(statistics.median(walls), rss, out.stat().st_size, statistics.median(cpus))


@dataclass(frozen=True)
class Row:
    case: str
    rows: str
    seconds: float | None  # None: the command failed
    floor: float | None
    rss: int | None
    target: str
    ok: bool
    cpu: float | None = None  # CPU seconds of the command
    floor_cpu: float | None = None  # CPU seconds of the floor

    @property
    def within_memory(self) -> bool:
        return self.seconds is not None and (self.rss is None or self.rss < MEMORY_BOUND)

    def cells(self) -> list[str]:
        ratio = f"{self.seconds / self.floor:.2f}x" if self.floor and self.seconds else "-"
        return [
            self.case,
            self.rows,
            f"{self.seconds:.2f} s" if self.seconds is not None else "FAILED",
            f"{self.floor:.2f} s" if self.floor is not None else "-",
            ratio,
            f"{self.cpu:.1f} / {self.floor_cpu:.1f} s" if self.cpu is not None and self.floor_cpu else "-",
            f"{self.cpu / self.floor_cpu:.2f}x" if self.cpu is not None and self.floor_cpu else "-",
            f"{self.rss / MB:.0f} MB" if self.rss is not None else "-",
            self.target,
            "PASS" if self.ok and self.within_memory else "MISS",
        ]


def _rows(counts: dict[str, int]) -> str:
    short = {KERNEL: "k", MEMCPY: "cp", MEMSET: "set", RUNTIME: "rt", NVTX: "nvtx"}
    return " ".join(f"{counts[t] / 1e6:.2f}M{short[t]}" for t in REPLICATED if t in counts)


# Scoped diffs: the range names are those of the nsys-ai training traces (PyTorch
# emit_nvtx ranges); the window is one second of the inflated capture.
SCOPES: dict[str, tuple[str, ...]] = {
    "--window 1s:2s": ("--window", "1s:2s"),
    "--nvtx aten::linear": ("--nvtx", "aten::linear"),
    "--per FlashAttnFunc": ("--per", "FlashAttnFunc"),
    "--phases": ("--phases", "{phases}"),
}
PHASES_YAML = "phases:\n  attention: FlashAttnFunc\n  linear: [aten::linear, aten::addmm]\n"


@dataclass(frozen=True)
class Plan:
    repeat: int
    cap_bytes: int
    scoped: bool
    work: Path
    fingerprints: bool = True
    scoped_summary: bool = False  # scoped summaries of the base instead of scoped diffs
    scoped_repeat: int | None = None  # runs per scoped command (None: repeat)


def _case(
    rows: list[Row],
    label: str,
    counts: str,
    floor: float | None,
    target: str,
    ratio: float | None,
    args: Sequence[str],
    plan: Plan,
    out: str,
    repeat: int | None = None,
    floor_cpu: float | None = None,
) -> Run | None:
    """Run one command, append its row; a failure is a row too, never an exception."""
    try:
        run = run_cli(args, plan.work / out, plan.repeat if repeat is None else repeat, plan.cap_bytes)
    except Failed as e:
        print(e, file=sys.stderr, flush=True)
        rows.append(Row(label, counts, None, floor, None, target, False))
        return None
    # The targets are on CPU time (the work done), which the load of a shared machine
    # and the number of cores change far less than the wall time.
    ok = ratio is None or floor_cpu is None or run.cpu <= ratio * floor_cpu
    rows.append(Row(label, counts, run.seconds, floor, run.peak_rss, target, ok, run.cpu, floor_cpu))
    print(f"  {label}: {run.seconds:.2f} s ({run.cpu:.1f} s CPU), {run.peak_rss / MB:.0f} MB", flush=True)
    return run


def measure_pair(label: str, base: Path, cand: Path, plan: Plan) -> list[Row]:
    rows: list[Row] = []
    counts = _rows(_counts(base))
    floor, fcpu = median_with_cpu(plan.repeat, lambda: bare_scan([base]))
    parts = ", ".join(f"{t.removeprefix('CUPTI_ACTIVITY_KIND_').lower()} {c:.2f}" for t, c in floor_parts(base).items())
    print(f"{label}: floor {floor:.2f} s ({fcpu:.2f} s CPU) per file; CPU s per table: {parts}", flush=True)
    _case(
        rows,
        f"{label} summary",
        counts,
        floor,
        "<=1.3x CPU",
        1.3,
        ["summary", "--format", "json", str(base)],
        plan,
        "summary.json",
        floor_cpu=fcpu,
    )
    # The floor of a diff: both files scanned one after the other.
    cand_floor, cand_cpu = median_with_cpu(plan.repeat, lambda: bare_scan([cand]))
    floor2, fcpu2 = floor + cand_floor, fcpu + cand_cpu
    diff = ["diff", str(base), str(cand), "--no-rules", "--format", "json"]
    _case(rows, f"{label} diff", f"{counts} x2", floor2, "<=1.3x CPU", 1.3, diff, plan, "diff.json", floor_cpu=fcpu2)
    fps = [plan.work / "base.fp.json", plan.work / "cand.fp.json"]
    run = None
    if plan.fingerprints:
        run = _case(
            rows,
            f"{label} fingerprint",
            counts,
            floor,
            "<=1.3x CPU",
            1.3,
            ["fingerprint", str(base), "-o", str(fps[0])],
            plan,
            "fp.out",
            floor_cpu=fcpu,
        )
    if run is not None:
        size = fps[0].stat().st_size
        last = rows[-1]
        rows[-1] = Row(
            **{
                **last.__dict__,
                "case": f"{label} fingerprint ({size / 1024:.0f} KiB)",
                "target": "<=1.3x CPU, < 5 MB",
                "ok": last.ok and size < 5 * MB,
            }
        )
        run_cli(["fingerprint", str(cand), "-o", str(fps[1])], plan.work / "fp.out", 1, plan.cap_bytes)
        _case(
            rows,
            f"{label} diff of saved fingerprints",
            "2 files",
            None,
            "<=0.5 s wall",
            None,
            ["diff", str(fps[0]), str(fps[1]), "--no-rules", "--format", "json"],
            plan,
            "fpdiff.json",
        )
        fast = rows[-1].seconds is not None and rows[-1].seconds <= 0.5
        rows[-1] = Row(**{**rows[-1].__dict__, "ok": fast})
    if plan.scoped:
        phases = plan.work / "phases.yaml"
        phases.write_text(PHASES_YAML, encoding="utf-8")
        for name, extra in SCOPES.items():
            options = [x.format(phases=phases) for x in extra]
            if plan.scoped_summary:
                summary = ["summary", "--format", "json", str(base), *options]
                _case(
                    rows,
                    f"{label} summary {name}",
                    counts,
                    floor,
                    "<=2x CPU",
                    2.0,
                    summary,
                    plan,
                    "scoped.json",
                    repeat=plan.scoped_repeat,
                    floor_cpu=fcpu,
                )
            else:
                scoped = [*diff, *options]
                _case(
                    rows,
                    f"{label} diff {name}",
                    f"{counts} x2",
                    floor2,
                    "<=2x CPU",
                    2.0,
                    scoped,
                    plan,
                    "scoped.json",
                    repeat=plan.scoped_repeat,
                    floor_cpu=fcpu2,
                )
    return rows


def measure_many(label: str, pair: Sequence[Path], count: int, plan: Plan) -> list[Row]:
    """`nsysdiff fingerprint` of `count` traces (links to the pair, alternately) into a
    directory: one process after the other, then with -j 2."""
    many = plan.work / "many"
    shutil.rmtree(many, ignore_errors=True)
    many.mkdir()
    names = []
    for i in range(count):
        link = many / f"rank{i:02d}.sqlite"
        os.link(pair[i % 2], link)
        names.append(str(link))
    rows: list[Row] = []
    counts = f"{count} x {_rows(_counts(pair[0])).split()[0]}"
    seq = _case(
        rows,
        f"{label} fingerprint {count} traces",
        counts,
        None,
        "-",
        None,
        ["fingerprint", *names, "-o", str(many / "out")],
        plan,
        "many.out",
        repeat=1,
    )
    par = _case(
        rows,
        f"{label} fingerprint {count} traces -j 2",
        counts,
        None,
        "faster than -j 1",
        None,
        ["fingerprint", *names, "-o", str(many / "out"), "-j", "2"],
        plan,
        "many.out",
        repeat=1,
    )
    if seq is not None and par is not None:
        rows[-1] = Row(**{**rows[-1].__dict__, "floor": seq.seconds, "ok": par.seconds < seq.seconds})
    shutil.rmtree(many, ignore_errors=True)
    return rows


def phases(path: Path) -> dict[str, float]:
    """Seconds of each reader call and of the reduction, in-process (one cold-ish run)."""
    from nsysdiff.fingerprint.reduce import assemble
    from nsysdiff.trace.reader import open_trace
    from nsysdiff.trace.records import Tables

    spent: dict[str, float] = {}

    def timed(name: str, fn: Callable[[], object]) -> Any:
        t = time.perf_counter()
        value = fn()
        spent[name] = time.perf_counter() - t
        return value

    with open_trace(path) as r:
        groups = timed("kernels", r.kernels)
        meta = timed("metadata", r.metadata)
        memcpy, memset, sync, nvtx = (
            timed(n, getattr(r, n)) for n in ("memcpy", "memset", "sync_calls", "nvtx_summary")
        )
        tables = Tables(meta, groups, r.has_kernels(), memcpy, memset, sync, nvtx, None)
    timed("reduce", lambda: assemble(path, tables))
    return spent


def table(rows: Sequence[Row]) -> str:
    head = ["case", "rows", "time", "floor", "ratio", "CPU / floor CPU", "CPU ratio", "peak RSS", "target", "result"]
    body = [r.cells() for r in rows]
    widths = [max(len(x) for x in col) for col in zip(head, *body, strict=True)]

    def line(cells: Sequence[str]) -> str:
        return "| " + " | ".join(c.ljust(w) for c, w in zip(cells, widths, strict=True)) + " |"

    rule = "|" + "|".join("-" * (w + 2) for w in widths) + "|"
    return "\n".join([line(head), rule, *map(line, body)])


def _size(n: int) -> str:
    return f"{n // 1_000_000}M" if n % 1_000_000 == 0 else f"{n / 1e6:g}M"


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--kernels",
        type=int,
        nargs="+",
        default=[1_000_000],
        help="kernel rows per trace, one pair per size (default 1M)",
    )
    ap.add_argument("--repeat", type=int, default=3, help="runs per measurement; the median counts")
    ap.add_argument("--scoped-repeat", type=int, help="runs per scoped diff (default: --repeat)")
    ap.add_argument("--keep", type=Path, help="build traces in DIR and keep them (reused if present)")
    ap.add_argument(
        "--shape",
        nargs="+",
        choices=SHAPES,
        default=list(SHAPES),
        help="kernel-heavy (NVTX as captured) and/or NVTX-dense (default: both)",
    )
    ap.add_argument("--no-nvtx", action="store_true", help="the kernel-heavy shape alone (--shape kernel-heavy)")
    ap.add_argument("--no-scoped", action="store_true", help="skip the scoped diffs")
    ap.add_argument("--synthetic", action="store_true", help="also the TraceBuilder pair (at each size)")
    ap.add_argument("--no-fingerprint", action="store_true", help="skip the fingerprint rows")
    ap.add_argument("--many", type=int, default=0, help="also fingerprint N traces of each size, with and without -j 2")
    ap.add_argument("--only-many", action="store_true", help="only the --many measurement")
    ap.add_argument("--scoped-summary", action="store_true", help="scoped summaries instead of scoped diffs")
    ap.add_argument("--mem-cap-gb", type=float, default=4.0, help="address-space cap of every child")
    ap.add_argument("--phases", action="store_true", help="also time each reader call in-process")
    return ap


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)

    tmp = None
    if args.keep:
        work = args.keep
        work.mkdir(parents=True, exist_ok=True)
    else:
        tmp = tempfile.TemporaryDirectory(prefix="nsysdiff-bench-")
        work = Path(tmp.name)
    plan = Plan(
        args.repeat,
        int(args.mem_cap_gb * 1024 * MB),
        not args.no_scoped,
        work,
        fingerprints=not args.no_fingerprint,
        scoped_summary=args.scoped_summary,
        scoped_repeat=args.scoped_repeat,
    )
    # The children import nsysdiff as an installed package does: from compiled bytecode
    # (pip compiles it at install time). Where PYTHONDONTWRITEBYTECODE is set, each child
    # would compile every module from source again (about 0.1 s per command).
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    os.environ["PYTHONPYCACHEPREFIX"] = str(work / "pycache")
    try:
        run_cli(["--version"], work / "version.out", 1, plan.cap_bytes)  # writes the bytecode
        startup = run_cli(["--version"], work / "version.out", args.repeat, plan.cap_bytes)
        print(
            f"python {platform.python_version()}, {os.cpu_count()} CPUs, {platform.machine()}, "
            f"SQLite {sqlite3.sqlite_version}; `nsysdiff --version` (start-up): "
            f"{startup.seconds:.2f} s ({startup.cpu:.2f} s CPU), {startup.peak_rss / MB:.0f} MB",
            flush=True,
        )
        rows: list[Row] = []
        for n in args.kernels:
            rows += _measure_size(n, args, plan)
        return _report(rows, args, work)
    finally:
        if tmp is not None:
            tmp.cleanup()


def _measure_size(n: int, args: argparse.Namespace, plan: Plan) -> list[Row]:
    """The rows of one trace size: the inflated real traces per shape, and the synthetic pair."""
    rows: list[Row] = []
    real, work = traces_dir(), plan.work
    shapes = ["kernel-heavy"] if args.no_nvtx else args.shape
    if not all((real / s).is_file() for s in SEEDS):
        print(f"real traces not found in {real}: inflated case skipped", flush=True)
    for shape in shapes if all((real / s).is_file() for s in SEEDS) else ():
        nvtx = shape == "NVTX-dense"
        kind = "nvtx" if nvtx else "activity"
        pair = [work / f"inflated_{kind}_{n}_{side}.sqlite" for side in ("before", "after")]
        for seed, dst in zip(SEEDS, pair, strict=True):
            if not dst.exists():
                t = time.perf_counter()
                inflate(real / seed, dst, n, nvtx=nvtx)
                print(f"inflated {seed} -> {dst.name} in {time.perf_counter() - t:.1f} s", flush=True)
        label = f"{_size(n)} {shape}"
        if not args.only_many:
            rows += measure_pair(label, pair[0], pair[1], plan)
        if args.many:
            rows += measure_many(label, pair, args.many, plan)
    if args.synthetic:
        pair = [work / f"synthetic_{n}_{side}.sqlite" for side in ("base", "cand")]
        for dst, cand in zip(pair, (False, True), strict=True):
            if not dst.exists():
                t = time.perf_counter()
                build_apart(dst, n, candidate=cand)
                print(f"built {dst.name} in {time.perf_counter() - t:.1f} s", flush=True)
        rows += measure_pair(f"{_size(n)} synthetic", pair[0], pair[1], plan)
    return rows


def _report(rows: Sequence[Row], args: argparse.Namespace, work: Path) -> int:
    """The table, the phases when asked, and the targets met; 1 when a memory bound broke."""
    print()
    print(table(rows))
    if args.phases:
        print("\nin-process seconds per phase (reader calls, then the numpy reduction):")
        for path in sorted(work.glob("*.sqlite")):
            spent = phases(path)
            cells = ", ".join(f"{k} {v:.3f}" for k, v in spent.items())
            print(f"  {path.name}: {cells}; total {sum(spent.values()):.3f}")
    missed = [r.case for r in rows if not (r.ok and r.within_memory)]
    print(
        f"\n{len(rows) - len(missed)} of {len(rows)} targets met" + (f"; missed: {', '.join(missed)}" if missed else "")
    )
    broken = [r.case for r in rows if not r.within_memory]
    if broken:
        print(f"memory bound ({MEMORY_BOUND // MB} MB) broken or command failed: {', '.join(broken)}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
