"""What the first screen must say besides the kernel rows: the changes an engineer reads
first and the kernel-level figures hide.

Each notice is one (label, text) line under the headline, in every text-like format:
copies that are new or multiplied (they can outweigh the kernel change and sit in no
kernel row), kernels whose tail grew while their median held (nsysdiff.compare.tails).
Pure: built from a :class:`~nsysdiff.compare.diff.Diff`, no formatting but ``units``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from nsysdiff import units as u
from nsysdiff.compare import tails
from nsysdiff.compare.diff import CopyDelta, Diff, Row, Verdict

# A copy kind whose operations multiplied at least this much is news, like a new kind.
COPY_GROWTH = 2.0
# Below this share of the candidate's kernel time a copy change is left to --details.
COPY_SHARE = 0.01


@dataclass(frozen=True, slots=True)
class Notice:
    label: str
    text: str


def _count(x: float) -> str:
    return f"{int(x):,}" if float(x).is_integer() else f"{x:,.2f}"


def copy_changes(d: Diff) -> tuple[CopyDelta, ...]:
    """Copy (and memset) kinds that are new or whose operations multiplied, and that are
    worth a line: at least ``COPY_SHARE`` of the candidate's kernel time."""
    floor = COPY_SHARE * max(d.headline.candidate_total_ns, 1)
    out = []
    for x in (*d.memcpy, *d.memset):
        c = x.candidate
        if c is None or c.total_ns < floor:
            continue
        if x.base is None or (x.ops_ratio is not None and x.ops_ratio >= COPY_GROWTH):
            out.append(x)
    return tuple(sorted(out, key=lambda x: (-(x.candidate.total_ns if x.candidate else 0), x.kind)))


def _copy_text(x: CopyDelta, kernel_delta_ns: float) -> str:
    c = x.candidate
    assert c is not None
    what = "memset" if x.kind == "memset" else f"{x.kind} copies"
    if x.base is None:
        text = f"new {what}: {_count(c.ops)} ops, {u.nbytes(c.bytes)}, {u.ns(c.total_ns)}"
        added = c.total_ns
    else:
        b = x.base
        text = (
            f"{what} {_count(b.ops)} → {_count(c.ops)} ops ({u.ratio(x.ops_ratio)}), "
            f"{u.nbytes(b.bytes)} → {u.nbytes(c.bytes)}, {u.ns(b.total_ns)} → {u.ns(c.total_ns)}"
        )
        added = c.total_ns - b.total_ns
    if kernel_delta_ns and added > abs(kernel_delta_ns):
        text += f"; more than the kernel time changed ({u.signed_ns(kernel_delta_ns)})"
    return text


def _tail_text(t: tails.TailChange, label: str) -> str:
    share = t.extra_ns / t.base_total_ns if t.base_total_ns else 0.0
    return (
        f"{label} {t.where}: {t.beyond:,} of {t.calls:,} calls over {t.multiple:g}x the median "
        f"({t.base_beyond:,} of {t.base_calls:,} in the base, Fisher p {_p(t.p_value)}), {u.signed_ns(t.extra_ns)} "
        f"({share:+.0%}); p50 {u.ns(t.base_p50_ns)} → {u.ns(t.candidate_p50_ns)}"
    )


def _p(p: float) -> str:
    """A p-value to one digit; one under a float's reach reads as a bound, not as 0."""
    return f"{p:.0e}" if p >= 1e-300 else "< 1e-300"


def notices(d: Diff, labels: Mapping[str, str] | None = None) -> tuple[Notice, ...]:
    """The first screen's extra lines, most telling first. What kind of comparison this is
    (resized, split, windows) is the verdict's first line (nsysdiff.rules.comparison)."""
    named = labels or {}
    b, c = d.headline.base_total_ns, d.headline.candidate_total_ns
    if d.per_step and d.headline.base_per_step_ns is not None and d.headline.candidate_per_step_ns is not None:
        delta = d.headline.candidate_per_step_ns - d.headline.base_per_step_ns
    else:
        delta = c - b
    out = []
    w = window(d)
    if w is not None:
        out.append(Notice("window", window_text(w)))
    out += [Notice("copies" if i == 0 else "", _copy_text(x, delta)) for i, x in enumerate(copy_changes(d))]
    found = tail_changes(d)
    out += [Notice("tail" if i == 0 else "", _tail_text(t, named.get(t.key, t.name))) for i, t in enumerate(found)]
    return tuple(out)


def tail_changes(d: Diff) -> Sequence[tails.TailChange]:
    """The diff's tail changes (whole scope: the counts are not per step)."""
    return tails.changes(d.base, d.candidate) if d.headline.basis == "kernels" else ()


@dataclass(frozen=True, slots=True)
class Window:
    """Both sides are windows cut from longer captures (their exports' metadata says so)
    without steps: compare rates, not totals."""

    base_span_ns: int
    candidate_span_ns: int
    base_rate: float  # kernel time per second of window
    candidate_rate: float
    base_busy: float  # share of the window some kernel runs, over the devices
    candidate_busy: float

    @property
    def rate_ratio(self) -> float:
        return self.candidate_rate / self.base_rate if self.base_rate else float("inf")


def window(d: Diff) -> Window | None:
    """The windows of both sides, when both exports say they were cut to one (whole
    captures never are) and no steps divide the time."""
    if d.per_step or d.steps is not None or d.headline.basis != "kernels":
        return None
    bs, cs = d.base.meta.window_ns, d.candidate.meta.window_ns
    if not bs or not cs:
        return None
    nb, nc = max(len(d.base.devices), 1), max(len(d.candidate.devices), 1)
    return Window(
        bs,
        cs,
        d.headline.base_total_ns / bs,
        d.headline.candidate_total_ns / cs,
        sum(x.busy_ns for x in d.base.devices) / (bs * nb),
        sum(x.busy_ns for x in d.candidate.devices) / (cs * nc),
    )


def window_phrase(w: Window) -> str:
    """The first line's words for fixed windows: the rate and what it means."""
    what = "less" if w.rate_ratio < 1 else "more"
    return (
        f"{u.ns(w.base_span_ns)} windows: {what} work per second {u.ratio(w.rate_ratio)}, GPU busy "
        f"{100 * w.base_busy:.1f}% → {100 * w.candidate_busy:.1f}%"
    )


def window_text(w: Window) -> str:
    return (
        f"both sides are {u.ns(w.base_span_ns)} / {u.ns(w.candidate_span_ns)} windows cut from longer captures "
        "(their exports' metadata says so), "
        f"without steps: compared as rates, not totals. Kernel time per second "
        f"{w.base_rate:.3f} → {w.candidate_rate:.3f} ({u.ratio(w.candidate_rate / w.base_rate)}), "
        f"GPU busy {100 * w.base_busy:.1f}% → {100 * w.candidate_busy:.1f}%"
    )


_MOVED = (Verdict.IMPROVED, Verdict.REGRESSED)


def as_rates(d: Diff) -> Diff:
    """The diff of equal fixed windows with each row judged by its time per call: fewer
    calls in the same window is less work done, not faster work, so a row whose time per
    call held is unchanged, never improved (nor regressed by more calls)."""
    if window(d) is None:
        return d
    noise = d.settings.noise

    def held(per_call: float | None) -> bool:
        return per_call is not None and 1 / noise <= per_call <= noise

    def row(r: Row) -> Row:
        return dataclasses.replace(r, verdict=Verdict.UNCHANGED) if r.verdict in _MOVED and held(r.mean_ratio) else r

    def copy(x: CopyDelta) -> CopyDelta:
        per_op = x.ratio / x.ops_ratio if x.ratio is not None and x.ops_ratio else None
        return dataclasses.replace(x, verdict=Verdict.UNCHANGED) if x.verdict in _MOVED and held(per_op) else x

    return dataclasses.replace(
        d,
        rates=True,
        kernels=tuple(map(row, d.kernels)),
        families=tuple(map(row, d.families)),
        categories=tuple(map(row, d.categories)),
        sync=tuple(map(row, d.sync)),
        nvtx=tuple(map(row, d.nvtx)),
        memcpy=tuple(map(copy, d.memcpy)),
        memset=tuple(map(copy, d.memset)),
    )
