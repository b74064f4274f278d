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
from collections.abc import Callable, Mapping

import numpy as np

from nsysdiff.fingerprint.model import DeviceShare, Fingerprint, KernelStats
from nsysdiff.fingerprint.reduce import group_by

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
    return dataclasses.replace(fp, kernels=ks, categories=group_by(ks, "category"), devices=devices, phases=())


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
