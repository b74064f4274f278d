"""Collective kernels judged on their transfer part, apart from their waiting (pure).

An NCCL kernel starts on each rank when that rank reaches the collective and ends when all
ranks have exchanged their data, so its time includes waiting for the slowest rank: a
skew between ranks (one rank's compute got slower, or its launches later) grows the
collective's time without any transfer getting slower. The median call is the best
estimate of a call without waiting that one trace gives (a rank that arrives last waits
for no one; half the calls or more are such calls when ranks take turns being late), so a
collective's **transfer part** is ``calls x median call`` (at most its total) and its
**waiting** is the rest: the time above the median call. The outlier test judges a
collective on its transfer part, and the ``collective-wait`` rule reports the waiting.

What one trace can't tell: which call waited for which rank (that needs the launches of
every rank matched per collective), and whether a uniformly slower network, where every
call is slower, hides under the median (it shows as transfer, which is what it is).
"""

from __future__ import annotations

from collections.abc import Iterable

from nsysdiff.fingerprint.model import KernelStats
from nsysdiff.trace.collectives import collective_op


def transfer_ns(k: KernelStats) -> float | None:
    """``calls x median call`` of a collective kernel, at most its total; None for any other."""
    if collective_op(k.name) is None or not k.calls:
        return None
    return min(float(k.total_ns), k.calls * k.p50_ns)


def group_transfer(kernels: Iterable[KernelStats], key: str) -> dict[str, float]:
    """Per family or category (``key``) holding collective kernels: its time with each
    collective counted at its transfer part."""
    acc: dict[str, float] = {}
    held: set[str] = set()
    for k in kernels:
        group = getattr(k, key)
        t = transfer_ns(k)
        acc[group] = acc.get(group, 0.0) + (k.total_ns if t is None else t)
        if t is not None:
            held.add(group)
    return {g: acc[g] for g in held}
