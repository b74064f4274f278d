"""DataFrame views of fingerprints, diffs, reports and history stores (docs/frames.md).

The views of one fingerprint, diff or report live in :mod:`nsysdiff.frames`, which imports
pandas only when a frame is made; the views of a history store read the store first.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from nsysdiff.api.history import history_changes, history_trend
from nsysdiff.frames import history as frames
from nsysdiff.frames.diff import attribution_frame, diff_copies_frame, diff_frame, findings_frame
from nsysdiff.frames.fingerprint import (
    api_frame,
    categories_frame,
    copies_frame,
    families_frame,
    kernels_frame,
    nvtx_frame,
    sync_frame,
)
from nsysdiff.frames.runs import run_values_frame, runs_frame
from nsysdiff.frames.steps import step_calls_frame, steps_frame
from nsysdiff.history.changes import DEFAULT_MAX_PVALUE, DEFAULT_WINDOW

if TYPE_CHECKING:  # pandas loads only when a frame is made
    import pandas as pd

__all__ = [
    "api_frame",
    "attribution_frame",
    "categories_frame",
    "copies_frame",
    "diff_copies_frame",
    "diff_frame",
    "families_frame",
    "findings_frame",
    "history_changes_frame",
    "history_frame",
    "kernels_frame",
    "nvtx_frame",
    "run_values_frame",
    "runs_frame",
    "step_calls_frame",
    "steps_frame",
    "sync_frame",
]


def history_frame(
    store: str | Path, ref: str, key: str, kind: str | None = None, *, changes: bool = True
) -> pd.DataFrame:
    """``key``'s series on ``ref`` of a history store, one row per commit, with the change
    points of a scan of ``ref`` (``changes=False`` skips the scan, which needs
    ``nsysdiff[history]``)."""
    scan = None
    if changes:
        scan = history_changes(store, ref, max_pvalue=DEFAULT_MAX_PVALUE, window=DEFAULT_WINDOW, last=None)
    return frames.series(history_trend(store, ref, key, kind), scan)


def history_changes_frame(store: str | Path, ref: str) -> pd.DataFrame:
    """Every step and drift on ``ref`` of a history store, one row each."""
    return frames.changes(history_changes(store, ref, max_pvalue=DEFAULT_MAX_PVALUE, window=DEFAULT_WINDOW, last=None))
