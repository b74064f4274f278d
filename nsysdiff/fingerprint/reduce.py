"""Reduce what the reader returns to a :class:`~nsysdiff.fingerprint.model.Fingerprint` (pure numpy).

Loops here run per kernel name or per device, never per launch: the reader has aggregated
the launches in SQLite.
"""

from __future__ import annotations

import dataclasses
import re
from collections import defaultdict
from collections.abc import Iterable, Sequence
from pathlib import Path

from nsysdiff.fingerprint.categories import categorize
from nsysdiff.fingerprint.families import family
from nsysdiff.fingerprint.model import (
    DeviceShare,
    DeviceStats,
    Fingerprint,
    GroupStats,
    KernelStats,
    RangeStats,
    Scope,
    TraceMeta,
)
from nsysdiff.trace.collectives import collective_op, label
from nsysdiff.trace.records import CollectiveShare, KernelGroups, LaunchConfig, RangeRow, RankStats, Tables

# PyTorch's emit_nvtx / record_function append per-call ids ("aten::mm, seq = 12,
# op_id = 345, sizes = [...]"); without folding every call is its own range name.
# The suffix runs from the first such key to the end of the name, as long as no line break
# follows the key (one final line break is kept, as `$` would). Written as `key.*$` the regex
# rescans the rest of the name from every key it tries, quadratic in a hostile name (a
# 65,536-character name of ", seq=" repeats took seconds); the key alone cannot backtrack
# beyond one whitespace run, and the line-break test is a string search.
_NVTX_KEY = re.compile(r",\s*(?:seq|op_id|stashed seq|sizes|input_op_ids)\s*=")


def fold_nvtx(name: str) -> str:
    body = name[:-1] if name.endswith("\n") else name
    last_break = body.rfind("\n")
    # Matches never overlap (each holds one comma, its first character), so the first one
    # that ends after the last line break is the leftmost place the whole suffix starts.
    for m in _NVTX_KEY.finditer(body):
        if m.end() > last_break:
            return name[: m.start()] + name[len(body) :]
    return name


def reduce_kernels(groups: KernelGroups) -> tuple[KernelStats, ...]:
    by_name: dict[str, list[int]] = defaultdict(list)
    for i, name in enumerate(groups.demangled):
        by_name[name].append(i)
    configs: dict[str, set[LaunchConfig]] = defaultdict(set)
    for name, cfg in groups.configs:
        configs[name].add(cfg)
    out = []
    for name, idx in by_name.items():
        calls = int(groups.calls[idx].sum())
        if not calls:
            continue
        short = groups.short[idx[0]]
        shares = sorted(
            (DeviceShare(int(groups.device[i]), int(groups.calls[i]), int(groups.total_ns[i])) for i in idx),
            key=lambda x: x.device,
        )
        out.append(
            KernelStats(
                name=short,
                demangled=name,
                family=family(short),
                category=categorize(short, name),
                calls=calls,
                total_ns=int(groups.total_ns[idx].sum()),
                quantiles_ns=tuple(float(q) for q in groups.quantiles[idx[0]]),
                devices=tuple(shares),
                configs=tuple(sorted(configs.get(name, ()), key=_config_key)),
                mangled=next((m for m in (groups.mangled[i] for i in idx) if m is not None), None),
            )
        )
    return tuple(sorted(out, key=lambda k: (-k.total_ns, k.demangled)))


def _config_key(c: LaunchConfig) -> tuple[int, ...]:
    # Every field but the launches, in their order: a kernel's configurations are distinct
    # in them (their launches are summed over devices and processes), so the order is
    # total, and a field added to LaunchConfig joins it. Unknown (None) sorts first.
    key: list[int] = []
    for f in dataclasses.fields(c):
        if f.name != "calls":
            value = getattr(c, f.name)
            key.extend(value if isinstance(value, tuple) else (-1 if value is None else value,))
    return tuple(key)


def reduce_devices(groups: KernelGroups) -> tuple[DeviceStats, ...]:
    return tuple(
        DeviceStats(
            device=d.device,
            kernels=d.kernels,
            kernel_ns=d.kernel_ns,
            busy_ns=d.busy_ns,
            span_ns=d.last_ns - d.first_ns,
        )
        for d in groups.devices
        if d.kernels
    )


def group_by(kernels: Iterable[KernelStats], key: str) -> tuple[GroupStats, ...]:
    """Sum kernels by ``category`` or ``family``, largest first."""
    acc: dict[str, list[int]] = {}
    for k in kernels:
        a = acc.setdefault(getattr(k, key), [0, 0, 0])
        a[0] += k.calls
        a[1] += k.total_ns
        a[2] += 1
    return tuple(
        sorted(
            (GroupStats(n, c, t, m) for n, (c, t, m) in acc.items()),
            key=lambda g: (-g.total_ns, g.name),
        )
    )


def reduce_nvtx(rows: Sequence[RangeRow]) -> tuple[RangeStats, ...]:
    acc: dict[tuple[str, str], list[int]] = {}
    for r in rows:
        a = acc.setdefault((fold_nvtx(r.name), r.domain), [0, 0])
        a[0] += r.count
        a[1] += r.total_ns
    return tuple(
        sorted(
            (RangeStats(n, d, c, t) for (n, d), (c, t) in acc.items()),
            key=lambda r: (-r.total_ns, r.name, r.domain),
        )
    )


def assemble(source: str | Path, tables: Tables, scope: Scope | None = None) -> Fingerprint:
    """The fingerprint of what one read returned (:func:`nsysdiff.fingerprint.read.read`)."""
    meta, groups = tables.meta, tables.groups
    kernels = reduce_kernels(groups)
    start, end = meta.capture_start_ns, meta.capture_end_ns
    if start is None and groups.devices:
        start = min(d.first_ns for d in groups.devices)
        end = max(d.last_ns for d in groups.devices)
    return Fingerprint(
        meta=TraceMeta(
            source=Path(source).name,
            nsys_version=meta.nsys_version,
            schema_version=meta.schema_version,
            gpus=meta.gpus,
            capture_start_ns=start,
            capture_end_ns=end,
            has_kernels=tables.has_kernels,
            graph_mode=meta.graph_mode,
            graph_launches=meta.graph_launches,
            graph_total_ns=meta.graph_total_ns,
            window_start_ns=meta.window[0] if meta.window else None,
            window_end_ns=meta.window[1] if meta.window else None,
        ),
        kernels=kernels,
        categories=group_by(kernels, "category"),
        memcpy=tables.memcpy,
        memset=tables.memset,
        sync=tables.sync,
        nvtx=reduce_nvtx(tables.nvtx),
        devices=reduce_devices(groups),
        scope=scope or Scope(),
        api=tables.api,
        tails=tables.tails,
    )


def per_device(fp: Fingerprint, pids: dict[int, int | None]) -> tuple[RankStats, ...]:
    """The ranks of a trace in which every device ran the kernels of one process (``pids``:
    that process per device), from the fingerprint alone: a rank's figures are then its
    device's, and its collectives the per-device shares of the NCCL kernels. The same
    numbers as :func:`nsysdiff.trace.ranks.read`, without its scan."""
    acc: dict[int, dict[str, list[int]]] = {}
    for k in fp.kernels:
        op = collective_op(k.name)
        if op is None:
            continue
        for share in k.devices:
            a = acc.setdefault(share.device, {}).setdefault(op, [0, 0])
            a[0] += share.calls
            a[1] += share.total_ns
    out = []
    for n, d in enumerate(sorted(fp.devices, key=lambda x: x.device)):
        device = None if d.device == -1 else d.device
        pid = pids.get(d.device)
        out.append(
            RankStats(
                rank=n,
                label=label(device, pid),
                pid=pid,
                device=device,
                kernels=d.kernels,
                kernel_ns=d.kernel_ns,
                busy_ns=d.busy_ns,
                span_ns=d.span_ns,
                collectives=tuple(CollectiveShare(op, c, t) for op, (c, t) in sorted(acc.get(d.device, {}).items())),
            )
        )
    return tuple(out)
