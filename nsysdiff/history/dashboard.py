"""What the history dashboard shows: a ref's change points and the series of the keys
worth a page (every key with a step or a drift, then the largest by time)."""

from __future__ import annotations

from dataclasses import dataclass

from nsysdiff.history import changes as ch
from nsysdiff.history import store as st
from nsysdiff.history import trend as tr

# The kinds whose largest keys get a page of their own besides the changed ones.
LARGEST_KINDS = ("category", "family", "kernel")


@dataclass(frozen=True, slots=True)
class Dashboard:
    store: str
    ref: str
    changes: ch.Changes
    trends: tuple[tr.Trend, ...]  # the changed keys first (as the scan lists them), then the largest


def build(store: st.Store, ref: str, *, top: int, max_pvalue: float, window: int, last: int | None) -> Dashboard:
    """The change points of ``ref`` and the series of the keys to show: those that changed
    and the ``top`` largest of each of :data:`LARGEST_KINDS` at the newest commit."""
    changes = ch.scan(store, ref, max_pvalue=max_pvalue, window=window, last=last)
    wanted = dict.fromkeys([*((s.kind, s.key) for s in changes.steps), *((d.kind, d.key) for d in changes.drifts)])
    entries = store.entries(ref)
    newest = entries[-1].provenance.commit
    latest = [e.id for e in entries if e.provenance.commit == newest]
    series = store.series(entries)
    for kind in LARGEST_KINDS:
        sized = sorted(
            (
                (max(v[i][1] for i in latest if i in v), key)
                for (k, key), v in series.items()
                if k == kind and any(i in v for i in latest)
            ),
            key=lambda t: (-t[0], t[1]),
        )
        for _, key in sized[:top]:
            wanted.setdefault((kind, key))
    # One read of every key's figures serves every page (a read per key re-read the
    # entries each time: seconds on a long history).
    kinds: dict[str, list[str]] = {}
    for kind, key in series:
        kinds.setdefault(key, []).append(kind)
    order = list(st.KINDS)
    trends = tuple(
        tr.of_series(
            store,
            ref,
            entries,
            (kind, key),
            series[(kind, key)],
            tuple(sorted((k for k in kinds[key] if k != kind), key=order.index)),
        )
        for kind, key in wanted
        if (kind, key) in series
    )
    return Dashboard(str(store.path), ref, changes, trends)
