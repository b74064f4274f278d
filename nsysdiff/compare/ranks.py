"""The ranks of one job side by side: per-rank figures and the skew between them (pure).

A rank is one (process, device) pair of a multi-GPU trace, or one trace given as a rank of
its own (``nsysdiff summary rank*.sqlite``). Collective kernels (NCCL, told by name) are
where ranks meet: a rank that finishes its compute early waits inside the next collective
for the slowest one, so NCCL time on the fastest-compute rank is mostly waiting, not
transfer. The view therefore shows, per collective operation, the time per rank (min,
median, max and which rank) beside the spread of the non-collective compute.

Loops here run per rank or per collective operation, never per launch: the reader has
aggregated the launches in SQLite (:mod:`nsysdiff.trace.ranks`).
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from nsysdiff.fingerprint.model import Fingerprint
from nsysdiff.trace.collectives import collective_op
from nsysdiff.trace.records import CollectiveShare, JobIdentity, RankStats


@dataclass(frozen=True, slots=True)
class Spread:
    """One figure across ranks: the least, the median and the most, and which rank has them
    (the lowest rank number where several tie)."""

    min_ns: int
    median_ns: float
    max_ns: int
    least: int  # rank number with min_ns
    most: int  # rank number with max_ns

    @property
    def spread_ns(self) -> int:
        return self.max_ns - self.min_ns


def spread(ranks: Sequence[RankStats], value: Callable[[RankStats], int]) -> Spread:
    values = [value(r) for r in ranks]
    lo, hi = min(values), max(values)
    return Spread(
        min_ns=lo,
        median_ns=float(statistics.median(values)),
        max_ns=hi,
        least=next(r.rank for r, v in zip(ranks, values, strict=True) if v == lo),
        most=next(r.rank for r, v in zip(ranks, values, strict=True) if v == hi),
    )


@dataclass(frozen=True, slots=True)
class OpSkew:
    """One collective operation across ranks (a rank without it counts 0 ns)."""

    op: str
    calls: int  # over all ranks
    time: Spread


@dataclass(frozen=True, slots=True)
class RankView:
    ranks: tuple[RankStats, ...]
    kernel: Spread
    compute: Spread  # kernel time outside collectives
    collective: Spread | None  # None when no rank runs a collective kernel
    ops: tuple[OpSkew, ...]  # most time on the slowest rank first

    def rank(self, number: int) -> RankStats:
        return next(r for r in self.ranks if r.rank == number)

    @property
    def slowest(self) -> RankStats:
        """The rank with the most compute: the one the others wait for in collectives."""
        return self.rank(self.compute.most)

    @property
    def fastest(self) -> RankStats:
        return self.rank(self.compute.least)

    @property
    def waiting_ns(self) -> int:
        """Collective time of the fastest-compute rank beyond the least any rank spends in
        collectives: an estimate of its waiting for the others (0 when it spends the least)."""
        if self.collective is None:
            return 0
        return self.fastest.collective_ns - self.collective.min_ns


def view(ranks: Sequence[RankStats]) -> RankView | None:
    """The skew view of ``ranks``; None for fewer than two (nothing to compare)."""
    if len(ranks) < 2:
        return None
    rs = tuple(sorted(ranks, key=lambda r: r.rank))
    ops = sorted({c.op for r in rs for c in r.collectives})
    skews = []
    for op in ops:

        def time_of(r: RankStats, op: str = op) -> int:
            return sum(c.total_ns for c in r.collectives if c.op == op)

        calls = sum(c.calls for r in rs for c in r.collectives if c.op == op)
        skews.append(OpSkew(op, calls, spread(rs, time_of)))
    skews.sort(key=lambda s: (-s.time.max_ns, s.op))
    return RankView(
        ranks=rs,
        kernel=spread(rs, lambda r: r.kernel_ns),
        compute=spread(rs, lambda r: r.compute_ns),
        collective=spread(rs, lambda r: r.collective_ns) if ops else None,
        ops=tuple(skews),
    )


def whole_rank(fp: Fingerprint, number: int) -> RankStats:
    """A fingerprint of one rank (a trace with one process on one device, or saved without
    rank rows) as one rank, its collectives told from its kernels' names."""
    acc: dict[str, list[int]] = {}
    for k in fp.kernels:
        op = collective_op(k.name)
        if op is not None:
            a = acc.setdefault(op, [0, 0])
            a[0] += k.calls
            a[1] += k.total_ns
    devices = [d.device for d in fp.devices]
    return RankStats(
        rank=number,
        label=fp.meta.source,
        pid=None,
        device=devices[0] if len(devices) == 1 else None,
        kernels=fp.kernel_calls,
        kernel_ns=fp.kernel_ns,
        busy_ns=fp.busy_ns,
        span_ns=sum(d.span_ns for d in fp.devices),
        collectives=tuple(CollectiveShare(op, c, t) for op, (c, t) in sorted(acc.items())),
    )


def job(parts: Sequence[tuple[str, Sequence[RankStats] | Fingerprint]]) -> tuple[RankStats, ...]:
    """The ranks of a job given as several traces, numbered in the order given: a trace with
    one rank is that rank (labelled by its name), a trace with several contributes each
    (labelled ``name · GPU d · pid p``). ``parts`` pairs each trace's name with its rank rows
    (from the reader) or its fingerprint (a saved one)."""
    out: list[RankStats] = []
    for name, part in parts:
        if isinstance(part, Fingerprint):
            rows: Sequence[RankStats] = part.ranks or (whole_rank(part, 0),)
        else:
            # A trace that ran no kernel is still a rank of the job: one that did nothing.
            rows = part or (RankStats(0, name, None, None, 0, 0, 0, 0),)
        for r in rows:
            label = name if len(rows) == 1 else f"{name} · {r.label}"
            out.append(replace(r, rank=len(out), label=label))
    return tuple(out)


@dataclass(frozen=True, slots=True)
class RankDiff:
    """The ranks of both sides. Ranks are paired by number when both sides have as many
    (process ids differ between runs; the order by device and process does not)."""

    base: RankView
    candidate: RankView

    @property
    def paired(self) -> bool:
        return len(self.base.ranks) == len(self.candidate.ranks)


def compare(base: Sequence[RankStats], candidate: Sequence[RankStats]) -> RankDiff | None:
    """The rank view of both sides; None unless both have at least two ranks."""
    b, c = view(base), view(candidate)
    if b is None or c is None:
        return None
    return RankDiff(b, c)


# Ranks of one job start their nsys sessions together (one launcher starts them all);
# sessions this far apart were separate runs.
SESSION_TOLERANCE_NS = 10 * 60 * 1_000_000_000
# Ranks of one job run together, whatever their sessions' start: their kernels overlap in
# time (a collective waits for every rank). Kernels this far apart ran in separate runs;
# the margin covers the clocks of several hosts.
KERNEL_GAP_NS = 5 * 1_000_000_000


def not_one_job(parts: Sequence[tuple[str, JobIdentity]]) -> tuple[str, ...]:
    """Why traces do not look like the ranks of one job: GPUs of different models,
    sessions started more than ``SESSION_TOLERANCE_NS`` apart, kernels run more than
    ``KERNEL_GAP_NS`` apart (one trace's all before another's), or no kernel-running
    process name common to all (each check only over the traces that record it)."""
    reasons = []
    gpus = {name: ident.gpus for name, ident in parts if ident.gpus}
    if len({g for names in gpus.values() for g in names}) > 1:
        reasons.append("different GPUs (" + "; ".join(f"{n}: {', '.join(g)}" for n, g in gpus.items()) + ")")
    starts = {name: ident.session_start_ns for name, ident in parts if ident.session_start_ns is not None}
    if len(starts) > 1 and max(starts.values()) - min(starts.values()) > SESSION_TOLERANCE_NS:
        apart = (max(starts.values()) - min(starts.values())) / 1e9
        reasons.append(
            f"nsys sessions started {_duration(apart)} apart (ranks of one job start within "
            f"{SESSION_TOLERANCE_NS // 60_000_000_000} minutes)"
        )
    spans = {name: ident.kernels_ns for name, ident in parts if ident.kernels_ns is not None}
    if len(spans) > 1:
        ended = min(spans, key=lambda n: spans[n][1])
        began = max(spans, key=lambda n: spans[n][0])
        gap = spans[began][0] - spans[ended][1]
        if gap > KERNEL_GAP_NS:
            reasons.append(
                f"their kernels ran at different times ({began}'s began {_duration(gap / 1e9)} after "
                f"{ended}'s ended; the ranks of one job run together)"
            )
    procs = {name: set(ident.processes) for name, ident in parts if ident.processes}
    if len(procs) > 1 and not set.intersection(*procs.values()):
        reasons.append(
            "different programs ran the kernels ("
            + "; ".join(f"{n}: {', '.join(sorted(p))}" for n, p in procs.items())
            + ")"
        )
    return tuple(reasons)


def _duration(seconds: float) -> str:
    for unit, size in (("days", 86_400.0), ("hours", 3_600.0), ("minutes", 60.0)):
        if seconds >= size:
            return f"{seconds / size:.1f} {unit}"
    return f"{seconds:.0f} s"
