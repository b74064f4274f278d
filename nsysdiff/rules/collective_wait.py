"""Rule kind ``collective-wait``: collective time that grew by waiting for other ranks."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from nsysdiff.compare.diff import Diff, Row
from nsysdiff.fingerprint.model import Fingerprint
from nsysdiff.rules import options as opt
from nsysdiff.rules import units
from nsysdiff.rules.comparison import Measure
from nsysdiff.rules.model import Kind, Rule
from nsysdiff.rules.report import Finding

OPTIONS = (
    opt.time_floor("The waiting must grow by at least this much (per step when the diff is per step).", "1ms"),
    opt.written(
        "min_share",
        "percent",
        opt.percent,
        "The waiting must be at least this share of the collective's growth.",
        "50%",
    ),
)


@dataclass(frozen=True, slots=True)
class CollectiveWaitOptions:
    min_time_ns: float
    min_share: float


build = opt.taken(CollectiveWaitOptions, min_time_ns="min_time")


def _per_rank(fp: Fingerprint) -> str:
    """``#0 17.17 ms, #1 8.23 ms``: each rank's collective time, for a trace of several ranks."""
    return ", ".join(f"#{r.rank} {units.fmt_time(r.collective_ns)}" for r in fp.ranks)


def check(diff: Diff, rule: Rule) -> Iterator[Finding]:
    o: CollectiveWaitOptions = rule.options
    for row in diff.kernels:
        b, c = row.base, row.candidate
        if b is None or c is None or b.transfer_ns is None or c.transfer_ns is None:
            continue
        growth, waited = c.total_ns - b.total_ns, c.waiting_ns - b.waiting_ns
        if growth <= 0 or waited < o.min_time_ns or waited < o.min_share * growth:
            continue
        yield _finding(diff, rule, o, row, growth, waited)


def _finding(diff: Diff, rule: Rule, o: CollectiveWaitOptions, row: Row, growth: float, waited: float) -> Finding:
    b, c = row.base, row.candidate
    assert b is not None and c is not None and b.transfer_ns is not None and c.transfer_ns is not None
    share = waited / growth
    evidence = (
        f"total {units.fmt_time(b.total_ns)} -> {units.fmt_time(c.total_ns)}, calls "
        f"{units.fmt_count(b.calls)} -> {units.fmt_count(c.calls)}; transfer (calls x median call) "
        f"{units.fmt_time(b.transfer_ns)} -> {units.fmt_time(c.transfer_ns)}"
    )
    if b.transfer_ns and c.transfer_ns:
        evidence += f" ({units.fmt_ratio(c.transfer_ns / b.transfer_ns)})"
    evidence += (
        f"; waiting (time above the median call) {units.fmt_time(b.waiting_ns)} -> {units.fmt_time(c.waiting_ns)}"
    )
    if len(diff.base.ranks) > 1 and len(diff.candidate.ranks) > 1:
        evidence += f"; collective time per rank {_per_rank(diff.base)} -> {_per_rank(diff.candidate)}"
    grew, waiting = units.fmt_signed_time(growth), units.fmt_signed_time(waited)
    why = (
        f"{row.name} grew by {grew}, of which {waiting} ({units.fmt_percent(share)}) is "
        "waiting for other ranks (a skew between the ranks: one reached the collective later), not "
        "slower transfers; look at what the late rank ran before it"
    )
    return rule.finding(
        diff.kernel_label(row),
        f"waiting {waiting} of {grew} ({units.fmt_percent(share)})",
        f"waiting growth under {units.fmt_time(o.min_time_ns)} or under {units.fmt_percent(o.min_share)} of the growth",
        evidence,
        why,
        observed_value=waited,
        limit_value=o.min_time_ns,
        unit="ns",
    )


KIND = Kind(
    name="collective-wait",
    summary="Reports collective (NCCL) time that grew by waiting for other ranks, not by transfers.",
    doc="""\
A collective kernel runs on every rank until all ranks have exchanged their data, so its
time includes waiting for the slowest rank. Per collective kernel on both sides, the diff
splits its time into a transfer part (calls x median call, at most the total: the best
estimate of a call without waiting one trace gives) and waiting (the time above the median
call); the outlier test judges a collective on its transfer part. This rule reports a
collective whose waiting grew by at least `min_time` and by at least `min_share` of its
growth: the job's ranks drifted apart (one rank's compute got slower, or it reached the
collective later), which is not a slower collective. The finding says how much of the
growth is waiting, with the transfer part's ratio and each rank's collective time.
""",
    options=OPTIONS,
    build=build,
    check=check,
    measure=lambda _: Measure.TIME,
)
