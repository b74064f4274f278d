"""History stores: runs appended, baselines picked, series and change points read."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from nsysdiff.api.reading import load_runs, quiet
from nsysdiff.fingerprint import runset
from nsysdiff.fingerprint.model import Fingerprint
from nsysdiff.fingerprint.scope import ScopeOptions
from nsysdiff.trace.progress import Step, silent

if TYPE_CHECKING:  # the history store loads only where history is used
    from nsysdiff.history.changes import Changes
    from nsysdiff.history.dashboard import Dashboard
    from nsysdiff.history.store import Entry, Store
    from nsysdiff.history.trend import Trend


def open_history(store: str | Path) -> Store:
    """A history store (a path or an ``sqlite:///`` URL), read-only and schema-checked."""
    from nsysdiff.history import store as st

    return st.open_store(store)


def history_add(
    store: str | Path,
    paths: Sequence[str | Path],
    *,
    ref: str,
    commit: str,
    failed: bool = False,
    options: ScopeOptions | None = None,
    progress: Step = silent,
    notify: Callable[[str], None] = quiet,
) -> tuple[Entry, ...]:
    """Append each run of ``paths`` (traces, reports, fingerprints, run sets) to ``store``
    as the next runs of ``commit`` on ``ref``, creating the store on its first run."""
    from nsysdiff.history import store as st

    # Before the store is created: a first add refused for its names leaves no file.
    st.check_names(ref, commit)
    runs = load_runs(paths, options, progress=progress, notify=notify)
    with st.create_or_open(store) as s:
        return tuple(s.add(fp, ref=ref, commit=commit, failed=failed) for fp in runs.runs)


def history_baseline(spec: str, like: Fingerprint | None) -> runset.RunSet:
    """The base side ``history:STORE@REF~N`` names: the last N runs of REF comparable with
    ``like`` (the candidate), never a failed one unless the spec ends in ``+failed``."""
    from nsysdiff.history import baseline
    from nsysdiff.history import store as st

    parsed = baseline.parse(spec)
    path = st.store_path(parsed.store)
    if not path.exists():
        baseline.missing_store(path)
    with open_history(parsed.store) as s:
        return baseline.pick(s, parsed, like)


def history_store_path(spec: str) -> Path:
    """The store file a ``history:STORE@REF~N`` spec names."""
    from nsysdiff.history import baseline
    from nsysdiff.history import store as st

    return st.store_path(baseline.parse(spec).store)


def history_changes(store: str | Path, ref: str, *, max_pvalue: float, window: int, last: int | None) -> Changes:
    """Every step and drift on ``ref`` (:mod:`nsysdiff.history.changes`)."""
    from nsysdiff.history import changes

    with open_history(store) as s:
        return changes.scan(s, ref, max_pvalue=max_pvalue, window=window, last=last)


def history_dashboard(
    store: str | Path, ref: str, *, top: int, max_pvalue: float, window: int, last: int | None
) -> Dashboard:
    """``ref``'s change points and the series worth a page (:mod:`nsysdiff.history.dashboard`)."""
    from nsysdiff.history import dashboard

    with open_history(store) as s:
        return dashboard.build(s, ref, top=top, max_pvalue=max_pvalue, window=window, last=last)


def history_trend(store: str | Path, ref: str, key: str, kind: str | None = None) -> Trend:
    """``key``'s series on ``ref``, one point per commit."""
    from nsysdiff.history import trend

    with open_history(store) as s:
        return trend.trend(s, ref, key, kind)
