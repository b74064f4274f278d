"""Steps from the reader's step scan: periods, the parts each period splits into, and the
host calls per family (the accounting of ``docs/steps.md``)."""

from __future__ import annotations

from nsysdiff.fingerprint.steps import CallTimes, HostCalls, HostFamily, Step, StepParts, Steps
from nsysdiff.trace.steps import StepRows


def build(name: str, domain: str, rows: StepRows, skipped: int = 0) -> Steps:
    """:class:`Steps` from a scan: times from the first step's start, each period split
    into parts that add up to it exactly."""
    origin = rows.start_ns[0]
    n = len(rows.start_ns)
    steps = []
    for i in range(n):
        start, end = rows.start_ns[i], rows.end_ns[i]
        duration = end - start
        period = rows.start_ns[i + 1] - start if i + 1 < n else duration
        inside = min(duration, period)
        compute, comm, copies, launch, sync, host = rows.parts[i]
        parts = StepParts(compute, comm, copies, launch, sync, host, period - inside)
        if parts.total_ns != period:
            raise RuntimeError(  # a bug in the scan: exit 70
                f"step {i}: parts add up to {parts.total_ns} ns, not the period {period} ns"
            )
        calls = tuple(HostCalls(HostFamily(f), c, t, b) for f, c, t, b in rows.calls[i])
        steps.append(Step(start - origin, duration, period, parts, calls, rows.kernel_ns[i]))
    times = tuple(
        CallTimes(HostFamily(t.family), t.calls, t.total_ns, t.bytes, t.p50_ns, t.p90_ns, t.p99_ns, t.max_ns)
        for t in rows.times
    )
    return Steps(name, domain, tuple(steps), times, skipped=skipped, last_period_is_duration=True)
