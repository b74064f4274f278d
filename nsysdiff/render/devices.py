"""Per-device figures of a diff: busy time (the union of kernel intervals) and idle share.

The fingerprint keeps them per device and side; the diff does not pair them, so every
renderer pairs them here, with the verdict and noise band the kernel rows use.
"""

from __future__ import annotations

from nsysdiff import units as u
from nsysdiff.compare import notices
from nsysdiff.compare.diff import Diff, Verdict
from nsysdiff.render.sides import paired


def _n(x: int) -> str:
    return f"{x:,}"


def device_verdict(base: float | None, cand: float | None, noise: float) -> Verdict:
    """The verdict of a device's busy time, with the noise band of the kernel rows."""
    if not base:
        return Verdict.NEW if cand else Verdict.UNCHANGED
    if not cand:
        return Verdict.REMOVED
    r = cand / base
    if r > noise:
        return Verdict.REGRESSED
    if r < 1 / noise:
        return Verdict.IMPROVED
    return Verdict.UNCHANGED


def _windowed(v: Verdict, fixed: bool) -> Verdict:
    """In fixed windows a device busy less of the same window did less work per second:
    that regressed, it never improved (nor held, when its idle share doubled)."""
    return Verdict.REGRESSED if fixed and v is Verdict.IMPROVED else v


def device_rows(d: Diff) -> list[list[str]]:
    """Per device: kernels, busy time (union of kernel intervals) and idle share of its span."""
    # In fixed windows less busy time is less work done per second (the idle column says
    # how much): a regression, never an improvement.
    fixed = notices.window(d) is not None
    out = []
    for dev, b, c in paired(d.base.devices, d.candidate.devices, lambda x: x.device):
        bb = b.busy_ns if b else None
        cb = c.busy_ns if c else None
        out.append(
            [
                str(dev),
                f"{_n(b.kernels) if b else '-'} → {_n(c.kernels) if c else '-'}",
                u.ns(bb),
                u.ns(cb),
                u.ratio(cb / bb if bb and cb else None),
                f"{u.pct(b.idle_pct) if b else '-'} → {u.pct(c.idle_pct) if c else '-'}",
                _windowed(device_verdict(bb, cb, d.settings.noise), fixed).value,
            ]
        )
    return out


DEVICE_HEADER = ("device", "kernels", "busy base", "candidate", "ratio", "idle of span", "verdict")
