"""DataFrame views of fingerprints, diffs, reports and history stores: pandas is imported
only when one is called (docs/frames.md)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from nsysdiff.api.history import history_changes, history_trend
from nsysdiff.compare.diff import Diff
from nsysdiff.fingerprint.model import Fingerprint
from nsysdiff.rules.report import Report

if TYPE_CHECKING:  # pandas loads only when a frame is made
    import pandas as pd


def kernels_frame(fp: Fingerprint) -> pd.DataFrame:
    """One row per kernel: ``Name``, ``Demangled Name``, ``Total Time (ns)``, ``Instances``..."""
    from nsysdiff.frames import fingerprint as frames

    return frames.kernels(fp)


def families_frame(fp: Fingerprint) -> pd.DataFrame:
    """One row per kernel family, largest first."""
    from nsysdiff.frames import fingerprint as frames

    return frames.families(fp)


def categories_frame(fp: Fingerprint) -> pd.DataFrame:
    """One row per kernel category, largest first."""
    from nsysdiff.frames import fingerprint as frames

    return frames.categories(fp)


def copies_frame(fp: Fingerprint) -> pd.DataFrame:
    """One row per memcpy kind and memset, as ``nsys stats``' ``gpumemtimesum``."""
    from nsysdiff.frames import fingerprint as frames

    return frames.copies(fp)


def nvtx_frame(fp: Fingerprint) -> pd.DataFrame:
    """One row per NVTX range name and domain."""
    from nsysdiff.frames import fingerprint as frames

    return frames.nvtx(fp)


def api_frame(fp: Fingerprint) -> pd.DataFrame:
    """One row per host API name: calls, total, mean, median, min and max, as ``nsys
    stats``' ``cuda_api_sum``."""
    from nsysdiff.frames import fingerprint as frames

    return frames.api(fp)


def sync_frame(fp: Fingerprint) -> pd.DataFrame:
    """One row per synchronising CUDA API call."""
    from nsysdiff.frames import fingerprint as frames

    return frames.sync(fp)


def steps_frame(fp: Fingerprint) -> pd.DataFrame:
    """One row per step (``--per NAME``): its period split into parts, its host calls per
    family. Empty when the fingerprint has no steps."""
    from nsysdiff.frames import steps as frames

    return frames.steps(fp.steps) if fp.steps is not None else frames.steps(frames.NO_STEPS)


def step_calls_frame(fp: Fingerprint) -> pd.DataFrame:
    """One row per host-call family across the steps: calls, bytes, time per call and tail."""
    from nsysdiff.frames import steps as frames

    return frames.call_times(fp.steps) if fp.steps is not None else frames.call_times(frames.NO_STEPS)


def diff_frame(diff: Diff, table: str = "kernels") -> pd.DataFrame:
    """One row per key of a diff table (kernels, families, categories, nvtx, sync, api, graphs)."""
    from nsysdiff.frames import diff as frames

    return frames.rows(diff, table)


def diff_copies_frame(diff: Diff) -> pd.DataFrame:
    """One row per memory operation kind of a diff."""
    from nsysdiff.frames import diff as frames

    return frames.copies(diff)


def attribution_frame(diff: Diff, by: str = "kernels") -> pd.DataFrame:
    """The change split into count, per-call, new and removed parts per kernel, family,
    category or phase."""
    from nsysdiff.frames import diff as frames

    return frames.attribution(diff, by)


def runs_frame(diff: Diff) -> pd.DataFrame:
    """Several runs per side: per key and measure, the ratio, its interval, p, q and verdict."""
    from nsysdiff.frames import runs as frames

    return frames.comparisons(diff)


def run_values_frame(diff: Diff) -> pd.DataFrame:
    """Several runs per side: every run's value, one row per key, measure, side and run."""
    from nsysdiff.frames import runs as frames

    return frames.values(diff)


def findings_frame(report: Report) -> pd.DataFrame:
    """One row per finding of a judged diff: level, rule, subject, observed and limit values."""
    from nsysdiff.frames import diff as frames

    return frames.findings(report)


def history_frame(
    store: str | Path, ref: str, key: str, kind: str | None = None, *, changes: bool = True
) -> pd.DataFrame:
    """``key``'s series on ``ref`` of a history store, one row per commit, with the change
    points of a scan of ``ref`` (``changes=False`` skips the scan, which needs
    ``nsysdiff[history]``)."""
    from nsysdiff.frames import history as frames
    from nsysdiff.history.changes import DEFAULT_MAX_PVALUE, DEFAULT_WINDOW

    scan = None
    if changes:
        scan = history_changes(store, ref, max_pvalue=DEFAULT_MAX_PVALUE, window=DEFAULT_WINDOW, last=None)
    return frames.series(history_trend(store, ref, key, kind), scan)


def history_changes_frame(store: str | Path, ref: str) -> pd.DataFrame:
    """Every step and drift on ``ref`` of a history store, one row each."""
    from nsysdiff.frames import history as frames
    from nsysdiff.history.changes import DEFAULT_MAX_PVALUE, DEFAULT_WINDOW

    return frames.changes(history_changes(store, ref, max_pvalue=DEFAULT_MAX_PVALUE, window=DEFAULT_WINDOW, last=None))
