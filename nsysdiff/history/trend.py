"""One key's series on a ref: its total time and calls per commit, for ``history show``."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from nsysdiff.errors import UsageError
from nsysdiff.history import store as st
from nsysdiff.trace.names import spelling


@dataclass(frozen=True, slots=True)
class Point:
    commit: str
    runs: int
    total_ns: float  # geometric mean over the commit's runs
    low_ns: int  # the fastest and slowest run
    high_ns: int
    calls: int  # the commit's median run's
    failed: int  # runs a gate failed
    per_call_ns: float = 0.0  # geometric mean of the runs' total / calls: for a step's NVTX range, the time per step


@dataclass(frozen=True, slots=True)
class Trend:
    store: str
    ref: str
    kind: str
    key: str
    points: tuple[Point, ...]
    missing: int  # commits whose runs lack the key
    also: tuple[str, ...] = ()  # other kinds with a key of this name (--kind picks one)
    label: str = ""  # a kernel's short label, as the diff names it (the key is its signature)


def trend(store: st.Store, ref: str, key: str, kind: str | None = None) -> Trend:
    """``key``'s series on ``ref`` (commits in order of first appearance). Without ``kind``
    the key is looked up among every kind; a name found under several must be told apart.
    A kernel is found by its signature or by its label (:meth:`Store.kernel_labels`)."""
    entries = store.entries(ref)
    if not entries:
        raise UsageError(f"{store.path}: no entries for ref {ref!r}{st.unknown_ref(store, ref)}")
    labels = store.kernel_labels()
    signature = next((k for k, v in labels.items() if v == key), None) if kind in (None, st.KERNEL) else None
    series = store.series(entries, key)
    if signature is not None and signature != key:
        series |= {k: v for k, v in store.series(entries, signature).items() if k[0] == st.KERNEL}
    found = sorted(k for k in series if (k[1] == key or k == (st.KERNEL, signature)) and (kind is None or k[0] == kind))
    if not found and spelling(key) != key:
        # Kernels are stored under one spelling of their template arguments.
        key = spelling(key)
        series = store.series(entries, key)
        found = sorted(k for k in series if k[1] == key and (kind is None or k[0] == kind))
    if not found:
        close = _containing(store, key, labels)
        hint = f"; keys containing it: {', '.join(close)}" if close else ""
        raise UsageError(f"{store.path}: no key {key[:120]!r} on ref {ref!r}{hint}")
    # A name of several kinds (a kernel that is its own family) is read as the first kind
    # in report order; the others are named so that --kind can ask for them.
    order = list(st.KINDS)
    found.sort(key=lambda k: order.index(k[0]))
    (k_kind, k_key), values = found[0], series[found[0]]
    also = tuple(k for k, _ in found[1:])
    return of_series(store, ref, entries, (k_kind, k_key), values, also)


def of_series(
    store: st.Store,
    ref: str,
    entries: Sequence[st.Entry],
    key: tuple[str, str],
    values: Mapping[int, tuple[int, int]],
    also: tuple[str, ...] = (),
) -> Trend:
    """The trend of ``key`` (kind, name) from its figures per entry id (``Store.series``):
    for a caller that has read every key's figures at once (the dashboard)."""
    groups: dict[str, list[st.Entry]] = {}
    for e in entries:
        groups.setdefault(e.provenance.commit, []).append(e)
    points: list[Point] = []
    missing = 0
    for commit, runs in groups.items():
        got = [values[e.id] for e in runs if e.id in values and values[e.id][1] > 0]
        if not got:
            missing += 1
            continue
        totals = sorted(t for _, t in got)
        calls = sorted(c for c, _ in got)[len(got) // 2]
        geo = math.exp(sum(math.log(t) for t in totals) / len(totals))
        per_call = math.exp(sum(math.log(t / c) for c, t in got if c > 0) / max(1, sum(c > 0 for c, _ in got)))
        failed = sum(e.provenance.failed for e in runs)
        points.append(Point(commit, len(got), geo, totals[0], totals[-1], calls, failed, per_call))
    kind, name = key
    label = store.kernel_labels().get(name, name) if kind == st.KERNEL else name
    return Trend(str(store.path), ref, kind, name, tuple(points), missing, also, label)


def _containing(store: st.Store, key: str, labels: dict[str, str]) -> list[str]:
    """Up to 3 stored keys that contain ``key`` (case-insensitively), each as it can be
    given back: a kernel by its label, whole and quoted for a shell."""
    rows = store.query(
        "SELECT DISTINCT kind, name FROM keys WHERE instr(lower(name), lower(?)) > 0 AND length(name) <= ? "
        "ORDER BY name LIMIT 3",
        (key, st.MAX_TEXT),
    )
    named = {labels.get(str(n), str(n)) if k == st.KERNEL else str(n): None for k, n in rows}
    # A label holds words its signature lacks (``⟨2 args⟩``): labels are searched too.
    wanted = key.lower()
    named |= {v: None for v in sorted(labels.values()) if wanted in v.lower()}
    return [_quoted(n) for n in list(named)[:3]]


def _quoted(name: str) -> str:
    """``name`` in single quotes, as a shell takes it back whole."""
    return "'" + name.replace("'", "'\\''") + "'"
