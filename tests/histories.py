"""Simulated histories of main: fingerprints of one build with run-to-run noise, and the
planted changes a change-point scan must find (a step, a drift, a return to the old level).

The noise of each kernel is what two real repeats of one build show: the standard
deviation of a key's log total is |log(r2 / r1)| / sqrt(2) for the pair (floored at
0.05%), so a history built from h100/llm_bs16 and its repeat llm_bs16_r2 is as noisy as
those captures, key by key. Without the real captures, a fingerprint built from a spec
with noise in the same range stands in.
"""

from __future__ import annotations

import dataclasses
import math
import sqlite3
from collections.abc import Callable, Mapping
from pathlib import Path

import numpy as np

from nsysdiff.fingerprint.model import DeviceShare, Fingerprint, KernelStats
from nsysdiff.fingerprint.reduce import group_by
from nsysdiff.history import store as st

NOISE_FLOOR = 0.0005

# factor(commit index, kernel name) -> the planted level of that kernel at that commit.
Plan = Callable[[int, str], float]


def noise_of(first: Fingerprint, repeat: Fingerprint) -> dict[str, float]:
    """Per kernel, the log-scale standard deviation two repeats of one build show."""
    b = {k.demangled: k.total_ns for k in repeat.kernels}
    return {
        k.demangled: max(NOISE_FLOOR, abs(math.log(b[k.demangled] / k.total_ns)) / math.sqrt(2))
        for k in first.kernels
        if b.get(k.demangled, 0) > 0
    }


def scaled(fp: Fingerprint, factors: Mapping[str, float]) -> Fingerprint:
    """``fp`` with each kernel's times scaled by its factor (1 where none), kept consistent:
    per-device shares, quantiles, categories and device totals follow the kernels."""
    kernels: list[KernelStats] = []
    for k in fp.kernels:
        f = factors.get(k.demangled, 1.0)
        total = max(k.calls, round(k.total_ns * f))
        shares = _shares(k.devices, total)
        q = tuple(v * total / k.total_ns for v in k.quantiles_ns)
        kernels.append(dataclasses.replace(k, total_ns=total, devices=shares, quantiles_ns=q))
    ks = tuple(kernels)
    total = sum(k.total_ns for k in ks)
    devices = tuple(
        dataclasses.replace(d, kernel_ns=total, busy_ns=min(total, d.busy_ns), span_ns=max(d.span_ns, total))
        for d in fp.devices[:1]
    )
    # NVTX ranges (a decode step) wrap the kernels: they follow the kernel time as a whole.
    grown = total / max(1, sum(k.total_ns for k in fp.kernels))
    nvtx = tuple(dataclasses.replace(r, total_ns=max(r.count, round(r.total_ns * grown))) for r in fp.nvtx)
    return dataclasses.replace(
        fp, kernels=ks, categories=group_by(ks, "category"), devices=devices, phases=(), nvtx=nvtx
    )


def _shares(devices: tuple[DeviceShare, ...], total: int) -> tuple[DeviceShare, ...]:
    if len(devices) == 1:
        return (dataclasses.replace(devices[0], total_ns=total),)
    whole = sum(d.total_ns for d in devices) or 1
    parts = [round(d.total_ns * total / whole) for d in devices]
    parts[-1] = total - sum(parts[:-1])
    return tuple(dataclasses.replace(d, total_ns=p) for d, p in zip(devices, parts, strict=True))


def history(
    base: Fingerprint,
    noise: Mapping[str, float],
    plan: Plan,
    *,
    commits: int = 60,
    runs: int = 3,
    seed: int = 0,
) -> list[tuple[str, list[Fingerprint]]]:
    """``commits`` commits of ``runs`` runs each: every kernel at ``plan``'s level times
    log-normal noise of its measured width."""
    rng = np.random.default_rng(seed)
    names = [k.demangled for k in base.kernels]
    sd = np.array([noise.get(n, NOISE_FLOOR) for n in names])
    out = []
    for c in range(commits):
        level = np.array([plan(c, n) for n in names])
        fps = []
        for _ in range(runs):
            f = level * np.exp(rng.normal(0.0, sd))
            fps.append(scaled(base, dict(zip(names, f.tolist(), strict=True))))
        out.append((f"{c:04d}" + "c0ffee" * 6, fps))
    return out


def spec_build() -> tuple[Fingerprint, dict[str, float]]:
    """A build of 24 kernels shaped like a decode step (GEMMs, attention, elementwise), and
    per-kernel noise in the range the real repeats show (0.05% to 1.2%, the largest
    kernels the steadiest), for runs without the real captures."""
    import fpspec

    kernels = {
        "nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_TNT": (112, 15_600_000),
        "nvjet_sm90_tst_64x8_64x16_4x2_h_bz_TNT": (1_792, 12_470_000),
        "nvjet_sm90_tst_64x16_64x16_4x1_v_bz_TNT": (1_792, 12_190_000),
        "cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_f16_knob_7": (896, 7_900_000),
        "void at::native::reduce_kernel<512, 1>(at::native::ReduceOp<float>)": (1_820, 7_220_000),
        "void at::native::CatArrayBatchedCopy_vectorized<float, 4>(CatArrInputTensorMetadata)": (896, 6_030_000),
        "nvjet_sm90_tst_64x16_64x16_2x1_v_bz_splitK_TNT": (896, 5_720_000),
        "void at::native::unrolled_elementwise_kernel<at::native::copy_device_to_device>()": (2_688, 5_260_000),
    }
    for i in range(16):
        kernels[f"void at::native::vectorized_elementwise_kernel<4, at::native::op_{i}>()"] = (
            900 + 60 * i,
            3_000_000 // (i + 1),
        )
    # 32 decode steps of about 3 ms each around the kernels (82.5 ms of kernel time).
    fp = fpspec.fingerprint(kernels, gpu="NVIDIA H100 80GB HBM3", nvtx={"decode_step": (32, 95_000_000)})
    rng = np.random.default_rng(25)
    noise = {}
    for k in fp.kernels:
        # Big kernels are steady (0.05%..0.4%), small ones noisier (up to 1.2%).
        top = 0.004 if k.total_ns > 4_000_000 else 0.012
        noise[k.demangled] = float(rng.uniform(NOISE_FLOOR, top))
    return fp, noise


def done_when_plan(step: str, drift: str, back: str) -> Plan:
    """The planted history: ``step`` +8% from commit 40 on; ``drift`` +0.15% per commit
    throughout; ``back`` +5% for commits 15..27, then back to its old level."""

    def plan(c: int, name: str) -> float:
        if name == step:
            return 1.08 if c >= 40 else 1.0
        if name == drift:
            return float(1.0015**c)
        if name == back:
            return 1.05 if 15 <= c < 28 else 1.0
        return 1.0

    return plan


def with_steps(fp: Fingerprint, periods: list[int]) -> Fingerprint:
    """``fp`` read per ``decode_step``: one step per period, each all compute."""
    from nsysdiff.fingerprint.model import Scope
    from nsysdiff.fingerprint.steps import Step, StepParts, Steps

    steps = tuple(
        Step(start_ns=sum(periods[:i]), duration_ns=p, period_ns=p, parts=StepParts(p, 0, 0, 0, 0, 0, 0), calls=())
        for i, p in enumerate(periods)
    )
    return dataclasses.replace(
        fp, steps=Steps("decode_step", "", steps, ()), scope=Scope(per="decode_step", steps=len(periods))
    )


def tamper_store(path: Path, sql: str, params: tuple[object, ...] = ()) -> None:
    """Change a store's rows or schema behind its triggers' back, as a hostile job could."""
    con = sqlite3.connect(path)
    con.execute("PRAGMA writable_schema = ON")
    for name in ("entries_append_only_update", "series_append_only_update"):
        con.execute(f"DROP TRIGGER IF EXISTS {name}")
    con.execute(sql, params)
    con.commit()
    # Put the triggers back so that only the rows are wrong.
    for text in st._SCHEMA:
        if "_update BEFORE UPDATE" in text:
            con.execute(text)
    con.commit()
    con.close()
