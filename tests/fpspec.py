"""Build small fingerprints from compact specs, for tests that need no trace at all."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from nsysdiff.fingerprint.categories import categorize
from nsysdiff.fingerprint.families import family
from nsysdiff.fingerprint.model import (
    DeviceShare,
    DeviceStats,
    Fingerprint,
    KernelStats,
    RangeStats,
    TraceMeta,
    fingerprint_to_json,
)
from nsysdiff.fingerprint.reduce import group_by
from nsysdiff.fingerprint.steps import HostCalls, Step, StepPart, StepParts, Steps
from nsysdiff.trace.records import QUANTILE_GRID, ApiStats, CallTimes, CopyStats, GpuInfo, HostFamily, LaunchConfig


def kernel(
    name: str,
    calls: int,
    total_ns: int,
    *,
    demangled: str | None = None,
    family_key: str | None = None,
    category: str | None = None,
    grid: tuple[int, int, int] = (1, 1, 1),
    block: tuple[int, int, int] = (128, 1, 1),
    spread: float = 0.2,
) -> KernelStats:
    """One kernel whose per-call times are uniform in ``mean * (1 +/- spread/2)``."""
    mean = total_ns / calls
    dem = demangled or name
    return KernelStats(
        name=name,
        demangled=dem,
        family=family_key or family(name),
        category=category or categorize(name, dem),
        calls=calls,
        total_ns=total_ns,
        quantiles_ns=tuple(mean * (1 - spread / 2 + spread * q / 100) for q in QUANTILE_GRID),
        devices=(DeviceShare(0, calls, total_ns),),
        configs=(LaunchConfig(grid, block, 32, 0, 0),),
    )


def skewed_quantiles(median_ns: float, mean_ns: float) -> tuple[float, ...]:
    """A per-call sketch with this median and (about) this mean: calls near the median up
    to p50, then a tail that carries the rest (a collective whose late calls waited)."""
    low = [median_ns * (0.9 + 0.2 * q / 100) for q in QUANTILE_GRID if q <= 50]
    tail = [q for q in QUANTILE_GRID if q > 50]
    top = median_ns + 4 * max(mean_ns - median_ns, 0.0)
    return (*low, *(median_ns + (top - median_ns) * (q - 50) / 50 for q in tail))


def fingerprint(
    kernels: Mapping[str, tuple[int, int]] | Iterable[KernelStats],
    *,
    memcpy: Mapping[str, tuple[int, int, int]] = {},
    sync: Mapping[str, tuple[int, int]] = {},
    nvtx: Mapping[str, tuple[int, int]] = {},
    source: str = "spec.sqlite",
    **meta: Any,
) -> Fingerprint:
    """``kernels`` maps name -> (calls, total_ns); ``memcpy`` kind -> (ops, bytes, ns)."""
    ks = tuple(kernel(n, c, t) for n, (c, t) in kernels.items()) if isinstance(kernels, Mapping) else tuple(kernels)
    total = sum(k.total_ns for k in ks)
    calls = sum(k.calls for k in ks)
    return Fingerprint(
        meta=TraceMeta(
            source=source,
            nsys_version=meta.get("nsys_version", "2024.6.2.25"),
            schema_version=meta.get("schema_version", "3.16.1"),
            gpus=(GpuInfo(0, meta.get("gpu", "NVIDIA H200"), 132),),
            capture_start_ns=0,
            capture_end_ns=2 * total,
            has_kernels=bool(ks),
        ),
        kernels=ks,
        categories=group_by(ks, "category"),
        memcpy=tuple(CopyStats(k, o, b, t) for k, (o, b, t) in sorted(memcpy.items())),
        memset=(),
        sync=tuple(ApiStats(n, c, t) for n, (c, t) in sorted(sync.items())),
        nvtx=tuple(RangeStats(n, "", c, t) for n, (c, t) in sorted(nvtx.items())),
        devices=(DeviceStats(0, calls, total, total, 2 * total),) if ks else (),
    )


def saved_pair(
    folder: Path,
    base: Mapping[str, tuple[int, int]] | Fingerprint,
    cand: Mapping[str, tuple[int, int]] | Fingerprint,
) -> tuple[str, str]:
    """Two specs (or fingerprints) saved as fingerprint files (``b.json``, ``c.json``)."""
    paths = []
    for name, spec in (("b", base), ("c", cand)):
        p = folder / f"{name}.json"
        p.write_text(fingerprint_to_json(spec if isinstance(spec, Fingerprint) else fingerprint(spec)))
        paths.append(str(p))
    return paths[0], paths[1]


def steps(
    count: int,
    period_ns: int,
    duration_ns: int,
    *,
    parts: Mapping[str, int] = {},
    calls: Mapping[str, tuple[int, int]] = {},
    nbytes: Mapping[str, int] = {},
    slow_every: int = 0,
    slow_ns: int = 0,
    name: str = "decode_step",
) -> Steps:
    """``count`` steps of one period and range duration. ``parts`` maps a part (compute,
    launch_bound, ...) to its time per step; the rest of the range is host time and the
    rest of the period is between. ``calls`` maps a host family to (calls, ns per call)
    per step, ``nbytes`` to bytes per step. Every ``slow_every``-th step is ``slow_ns``
    longer (host time), for tails. The last step's period is its range duration (there is
    no next step to measure to), as the reader makes it."""
    out = []
    for i in range(count):
        extra = slow_ns if slow_every and i % slow_every == slow_every - 1 else 0
        inside = {p.value: parts.get(p.value, 0) for p in StepPart if p is not StepPart.BETWEEN}
        inside["host"] = duration_ns + extra - sum(v for k, v in inside.items() if k != "host")
        last = i == count - 1
        between = 0 if last else period_ns - duration_ns
        sp = StepParts(**{f"{k}_ns": v for k, v in inside.items()}, between_ns=between)
        hc = tuple(
            HostCalls(f, calls[f.value][0], calls[f.value][0] * calls[f.value][1], nbytes.get(f.value, 0))
            for f in HostFamily
            if f.value in calls and calls[f.value][0]
        )
        period = duration_ns + extra + between
        out.append(Step(i * period_ns, duration_ns + extra, period, sp, hc, parts.get("compute", 0)))
    times = []
    for f in HostFamily:
        if f.value in calls and calls[f.value][0]:
            n, each = calls[f.value]
            moved = nbytes.get(f.value, 0) * count
            times.append(CallTimes(f, n * count, n * each * count, moved, each, each, each, each))
    return Steps(name, "", tuple(out), tuple(times))
