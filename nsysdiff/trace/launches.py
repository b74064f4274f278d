"""Kernels grouped by name *and* launch shape, as ``nsys stats``' ``gpukernsum`` groups them.

``nsysdiff`` keys a kernel by its demangled name; ``gpukernsum`` prints one row per
(name, grid, block). With ``--by name+launch`` each launch shape becomes a kernel of its
own, its key the demangled name followed by ``[grid X,Y,Z, block X,Y,Z]``, so a diff shows
a kernel that kept its name but changed its launch (a split-K factor, a batch dimension in
the grid) as one shape gone and one new.

The reader's grouped scan carries no grid or block per launch; one more bulk scan of the
kernel table, in the same order, does, and the groups are split in numpy.
"""

from __future__ import annotations

import enum
import re

import numpy as np

from nsysdiff.errors import TraceError
from nsysdiff.model import LaunchConfig
from nsysdiff.trace import schema as s
from nsysdiff.trace.reader import KernelGroups, TraceReader, _blob, _ints

_SHAPE = ("gridX", "gridY", "gridZ", "blockX", "blockY", "blockZ")
LAUNCH_SUFFIX = re.compile(r" \[grid -?\d+,-?\d+,-?\d+, block -?\d+,-?\d+,-?\d+\]$")


class Grouping(str, enum.Enum):
    """What makes two launches the same kernel (``--by``)."""

    name = "name"  # the demangled name, as nsys stats' cudagpukernsum without shapes
    name_launch = "name+launch"  # name, grid and block, as gpukernsum


def suffix(grid: tuple[int, ...], block: tuple[int, ...]) -> str:
    return f" [grid {','.join(map(str, grid))}, block {','.join(map(str, block))}]"


def _shapes(r: TraceReader, count: int) -> np.ndarray:
    """``(count, 6)`` grid and block of every launch, in the order of the reader's scan."""
    cols = r.schema.tables[s.KERNEL]
    exprs = [f'coalesce("{c}", 0)' if c in cols else "0" for c in _SHAPE]
    ((n, *blobs),) = r._query(f"SELECT count(*), {', '.join(_blob(e) for e in exprs)} FROM {s.KERNEL}")
    arrays = [_ints(b) for b in blobs]  # type: ignore[arg-type]
    if n != count or any(len(a) != count for a in arrays):
        raise TraceError(f"{r.path}: {s.KERNEL}: the kernel table changed while it was read")
    return np.stack(arrays, axis=1) if count else np.empty((0, 6), dtype=np.int64)


def by_launch(r: TraceReader, groups: KernelGroups) -> KernelGroups:
    """``groups`` (read from the whole kernel table) split by launch shape."""
    count = len(groups.start)
    if not count:
        return groups
    # The reader sorts its scan by (name, device) with a stable sort; rebuilding that
    # permutation from the group offsets is not possible, so the scan order is
    # recovered by matching the start times, which the scan carries too.
    cols = r.schema.tables[s.KERNEL]
    name_col = "demangledName" if "demangledName" in cols else "shortName"
    ((_, names_blob, devs_blob, start_blob),) = r._query(
        f"SELECT count(*), {_blob(f'coalesce({name_col}, -1)')}, {_blob('deviceId')}, {_blob('start')} FROM {s.KERNEL}"
    )
    names, devs, start = _ints(names_blob), _ints(devs_blob), _ints(start_blob)  # type: ignore[arg-type]
    order = np.lexsort((devs, names))
    shapes = _shapes(r, count)[order]
    if not np.array_equal(start[order], groups.start):
        raise TraceError(f"{r.path}: {s.KERNEL}: the kernel table changed while it was read")
    # One id per distinct shape; within each (name, device) group, launches sorted by it.
    _, shape_id = np.unique(shapes, axis=0, return_inverse=True)
    shape_id = shape_id.reshape(-1)
    group_id = np.repeat(np.arange(len(groups.offsets) - 1), np.diff(groups.offsets))
    regroup = np.lexsort((shape_id, group_id))
    gid, sid = group_id[regroup], shape_id[regroup]
    first = np.flatnonzero(np.concatenate(([True], (gid[1:] != gid[:-1]) | (sid[1:] != sid[:-1]))))
    rows = shapes[regroup][first]
    demangled = tuple(
        groups.demangled[int(g)] + suffix(tuple(map(int, sh[:3])), tuple(map(int, sh[3:])))
        for g, sh in zip(gid[first], rows, strict=True)
    )
    configs = tuple((name + suffix(cfg.grid, cfg.block), cfg) for name, cfg in groups.configs)
    return KernelGroups(
        short=tuple(groups.short[int(g)] for g in gid[first]),
        demangled=demangled,
        device=groups.device[gid[first]],
        offsets=np.append(first, count).astype(np.int64),
        start=groups.start[regroup],
        end=groups.end[regroup],
        configs=_matching(configs, set(demangled)),
    )


def _matching(configs: tuple[tuple[str, LaunchConfig], ...], keys: set[str]) -> tuple[tuple[str, LaunchConfig], ...]:
    return tuple((k, cfg) for k, cfg in configs if k in keys)
