"""One trace as DataFrames: kernels, families, categories, copies, NVTX ranges, sync calls.

Columns are named as ``nsys stats`` names them (``gpukernsum``, ``gpumemtimesum``,
``nvtxsum``, ``cudaapisum``) where the concept is the same, so a frame's totals can be
checked against NVIDIA's own output.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from nsysdiff.compare.labels import short_labels
from nsysdiff.fingerprint.model import Fingerprint, GroupStats
from nsysdiff.fingerprint.reduce import group_by
from nsysdiff.frames.columns import COUNT, NS, RATIO, TEXT, expect, frame, ns

if TYPE_CHECKING:  # pandas loads when a frame is made (frames.columns.frame)
    import pandas as pd


def _share(total_ns: int, whole_ns: int) -> float | None:
    return 100.0 * total_ns / whole_ns if whole_ns else None


def kernels_frame(fp: Fingerprint) -> pd.DataFrame:
    """One row per kernel (by demangled name, as ``gpukernsum`` sums its rows by name)."""
    expect(fp, Fingerprint, "kernels_frame")
    ks = fp.kernels
    whole = fp.kernel_ns
    # The CSV's and the text's label: a short name told apart from its namesakes.
    label = short_labels((k.demangled, k.name) for k in ks)
    return frame(
        {
            "Name": (TEXT, [label[k.demangled] for k in ks]),
            "Demangled Name": (TEXT, [k.demangled for k in ks]),
            "Family": (TEXT, [k.family for k in ks]),
            "Category": (TEXT, [k.category for k in ks]),
            "Time (%)": (RATIO, [_share(k.total_ns, whole) for k in ks]),
            "Total Time (ns)": (NS, [k.total_ns for k in ks]),
            "Instances": (COUNT, [k.calls for k in ks]),
            "Avg (ns)": (NS, [ns(k.mean_ns) for k in ks]),
            "Med (ns)": (NS, [ns(k.p50_ns) for k in ks]),
            "Min (ns)": (NS, [ns(k.min_ns) for k in ks]),
            "Max (ns)": (NS, [ns(k.max_ns) for k in ks]),
            "P90 (ns)": (NS, [ns(k.p90_ns) for k in ks]),
            "P99 (ns)": (NS, [ns(k.p99_ns) for k in ks]),
        }
    )


def _groups(groups: Sequence[GroupStats], first: str, whole: int) -> pd.DataFrame:
    return frame(
        {
            first: (TEXT, [g.name for g in groups]),
            "Kernels": (COUNT, [g.kernels for g in groups]),
            "Time (%)": (RATIO, [_share(g.total_ns, whole) for g in groups]),
            "Total Time (ns)": (NS, [g.total_ns for g in groups]),
            "Instances": (COUNT, [g.calls for g in groups]),
            "Avg (ns)": (NS, [ns(g.total_ns / g.calls) if g.calls else None for g in groups]),
        }
    )


def families_frame(fp: Fingerprint) -> pd.DataFrame:
    """One row per kernel family (the variants of one operation), largest first."""
    expect(fp, Fingerprint, "families_frame")
    return _groups(group_by(fp.kernels, "family"), "Family", fp.kernel_ns)


def categories_frame(fp: Fingerprint) -> pd.DataFrame:
    """One row per kernel category, largest first."""
    expect(fp, Fingerprint, "categories_frame")
    return _groups(fp.categories, "Category", fp.kernel_ns)


def copies_frame(fp: Fingerprint) -> pd.DataFrame:
    """One row per memory operation kind (memcpy kinds, then ``memset``), as ``gpumemtimesum``."""
    expect(fp, Fingerprint, "copies_frame")
    ops = (*fp.memcpy, *fp.memset)
    return frame(
        {
            "Operation": (TEXT, [c.kind for c in ops]),
            "Count": (COUNT, [c.ops for c in ops]),
            "Total (bytes)": (COUNT, [c.bytes for c in ops]),
            "Total Time (ns)": (NS, [c.total_ns for c in ops]),
            "Avg (ns)": (NS, [ns(c.total_ns / c.ops) if c.ops else None for c in ops]),
            "Throughput (GB/s)": (RATIO, [c.gbps for c in ops]),
        }
    )


def nvtx_frame(fp: Fingerprint) -> pd.DataFrame:
    """One row per NVTX range name and domain, as ``nvtxsum`` (pushpop and start/end ranges)."""
    expect(fp, Fingerprint, "nvtx_frame")
    rs = fp.nvtx
    return frame(
        {
            "Range": (TEXT, [r.name for r in rs]),
            "Domain": (TEXT, [r.domain for r in rs]),
            "Instances": (COUNT, [r.count for r in rs]),
            "Total Time (ns)": (NS, [r.total_ns for r in rs]),
            "Avg (ns)": (NS, [ns(r.total_ns / r.count) if r.count else None for r in rs]),
        }
    )


def api_frame(fp: Fingerprint) -> pd.DataFrame:
    """One row per host API name, as ``nsys stats --report cuda_api_sum`` (``cudaapisum``):
    the name as the trace spells it; empty for a fingerprint saved without the census."""
    expect(fp, Fingerprint, "api_frame")
    calls = fp.api or ()
    return frame(
        {
            "Name": (TEXT, [c.name for c in calls]),
            "Num Calls": (COUNT, [c.calls for c in calls]),
            "Total Time (ns)": (NS, [c.total_ns for c in calls]),
            "Avg (ns)": (RATIO, [c.mean_ns for c in calls]),
            "Med (ns)": (RATIO, [c.median_ns for c in calls]),
            "Min (ns)": (NS, [c.min_ns for c in calls]),
            "Max (ns)": (NS, [c.max_ns for c in calls]),
        }
    )


def sync_frame(fp: Fingerprint) -> pd.DataFrame:
    """One row per synchronising CUDA API call (version suffix stripped), as ``cudaapisum``."""
    expect(fp, Fingerprint, "sync_frame")
    calls = fp.sync
    return frame(
        {
            "Name": (TEXT, [c.name for c in calls]),
            "Num Calls": (COUNT, [c.calls for c in calls]),
            "Total Time (ns)": (NS, [c.total_ns for c in calls]),
            "Avg (ns)": (NS, [ns(c.total_ns / c.calls) if c.calls else None for c in calls]),
        }
    )
