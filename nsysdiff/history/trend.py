"""One key's series on a ref: its total time and calls per commit, for ``history show``."""

from __future__ import annotations

import math
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


def trend(store: st.Store, ref: str, key: str, kind: str | None = None) -> Trend:
    """``key``'s series on ``ref`` (commits in order of first appearance). Without ``kind``
    the key is looked up among every kind; a name found under several must be told apart."""
    entries = store.entries(ref)
    if not entries:
        raise UsageError(f"{store.path}: no entries for ref {ref!r}")
    series = store.series(entries, key)
    found = sorted(k for k in series if k[1] == key and (kind is None or k[0] == kind))
    if not found and spelling(key) != key:
        # Kernels are stored under one spelling of their template arguments.
        key = spelling(key)
        series = store.series(entries, key)
        found = sorted(k for k in series if k[1] == key and (kind is None or k[0] == kind))
    if not found:
        close = _containing(store, key)
        hint = f"; keys containing it: {', '.join(repr(c[:80]) for c in close)}" if close else ""
        raise UsageError(f"{store.path}: no key {key[:120]!r} on ref {ref!r}{hint}")
    # A name of several kinds (a kernel that is its own family) is read as the first kind
    # in report order; the others are named so that --kind can ask for them.
    order = list(st.KINDS)
    found.sort(key=lambda k: order.index(k[0]))
    (k_kind, _), values = found[0], series[found[0]]
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
    also = tuple(k for k, _ in found[1:])
    return Trend(str(store.path), ref, k_kind, key, tuple(points), missing, also)


def _containing(store: st.Store, key: str) -> list[str]:
    """Up to 3 stored key names that contain ``key`` (case-insensitively), for the error."""
    rows = store.query(
        "SELECT DISTINCT name FROM keys WHERE instr(lower(name), lower(?)) > 0 AND length(name) <= ? "
        "ORDER BY name LIMIT 3",
        (key, st.MAX_TEXT),
    )
    return [str(r[0]) for r in rows]
