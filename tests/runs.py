"""Several runs of two builds, written as nsys-shaped traces with realistic jitter.

The base and the candidate run the same five kernels of a decoder layer; in every
candidate run the GEMM is 6% slower per call, a small gather is 3x slower (an outlier
against the overall scale), the rest is unchanged, and one kernel runs only in the
candidate. Each run draws its own clock factor (0.3%), each kernel its own run-to-run
factor (0.2%) and each launch its own jitter (2%), from fixed seeds: the same files
every time.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from nsysdiff.synth.builder import Gpu, TraceBuilder

# name: (calls, base ns per call, candidate factor); factor None: base only
KERNELS: dict[str, tuple[int, int, float]] = {
    "ampere_bf16_s16816gemm_bf16_128x128_ldg8_f2f_tn": (40, 50_000, 1.06),
    "vectorized_elementwise_kernel": (80, 8_000, 1.00),
    "softmax_warp_forward": (40, 12_000, 1.00),
    "layer_norm_kernel": (40, 10_000, 1.00),
    "indexSelectSmallIndex": (8, 5_000, 3.00),
}
CANDIDATE_ONLY = ("fused_rope_kernel", 40, 3_000)


def write_run(path: Path, candidate: bool, seed: int, gpu: str = "NVIDIA H100 80GB HBM3") -> Path:
    """One run of the base (or candidate) build."""
    rng = np.random.default_rng(seed)
    clock = np.exp(rng.normal(0.0, 0.003))
    b = TraceBuilder(gpus=(Gpu(name=gpu),))
    t = 0
    kernels = [(name, calls, ns * (factor if candidate else 1.0)) for name, (calls, ns, factor) in KERNELS.items()]
    if candidate:
        name, calls, ns = CANDIDATE_ONLY
        kernels.append((name, calls, float(ns)))
    for name, calls, ns in kernels:
        own = np.exp(rng.normal(0.0, 0.002))
        durations = np.rint(ns * clock * own * np.exp(rng.normal(0.0, 0.02, calls))).astype(np.int64)
        starts = t + np.cumsum(np.concatenate([[0], durations[:-1] + 1_000]))
        b.kernels(name, starts, durations)
        t = int(starts[-1] + durations[-1]) + 10_000
    return b.write(path)


def write_runs(directory: Path, n: int = 3) -> tuple[list[Path], list[Path]]:
    """``n`` base runs and ``n`` candidate runs: base1.sqlite... and cand1.sqlite..."""
    base = [write_run(directory / f"base{i + 1}.sqlite", False, 100 + i) for i in range(n)]
    cand = [write_run(directory / f"cand{i + 1}.sqlite", True, 200 + i) for i in range(n)]
    return base, cand
