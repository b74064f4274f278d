"""``nsysdiff history``: a store's entries, a key's trend and a ref's change points as
text, and the change points as JSON."""

from __future__ import annotations

import io
import json
import math
from collections.abc import Sequence

from nsysdiff import units as u
from nsysdiff.history.changes import FALSE_ALARM, FALSE_ALARM_UPPER, Changes, Drift, Step, Structural
from nsysdiff.history.store import PER_STEP, STEP, Entry, scope_words
from nsysdiff.history.trend import Trend
from nsysdiff.render.cells import finite
from nsysdiff.render.layout import grid, plain_console, wrap
from nsysdiff.safe import neutral

_BARS = "▁▂▃▄▅▆▇█"


def sparkline(values: Sequence[float]) -> str:
    """One character per value, the lowest ▁ and the highest █ (all ▄ when flat)."""
    if not values:
        return ""
    lo, hi = min(values), max(values)
    if hi <= lo:
        return _BARS[3] * len(values)
    return "".join(_BARS[min(7, int((v - lo) / (hi - lo) * 8))] for v in values)


def _lines(buf: io.StringIO) -> str:
    """What was printed, without the spaces rich pads a table's lines with."""
    return "".join(line.rstrip() + "\n" for line in buf.getvalue().splitlines())


def _pct(r: float | None, digits: int = 2) -> str:
    return "-" if r is None else f"{(r - 1) * 100:+.{digits}f}%"


def render_list(path: str, entries: Sequence[Entry], width: int, last: int) -> str:
    entries = neutral.scrub(tuple(entries), neutral.text)
    buf = io.StringIO()
    console = plain_console(buf, width)
    refs = sorted({e.provenance.ref for e in entries})
    commits = len({(e.provenance.ref, e.provenance.commit) for e in entries})
    wrap(
        console,
        f"nsysdiff history: {neutral.text(path)} · {len(entries):,} runs of {commits:,} commits "
        f"on {u.plural(len(refs), 'ref')}: {', '.join(refs) or 'none'}",
        width,
        hang="  ",
        bold=True,
    )
    shown = entries[-last:] if last else entries
    if shown:
        rows = [
            [
                e.provenance.commit[:12],
                e.provenance.ref,
                str(e.provenance.run),
                e.provenance.added,
                e.provenance.gpu,
                e.provenance.graph_mode,
                "failed" if e.provenance.failed else "",
            ]
            for e in shown
        ]
        console.print()
        title = f"Last {len(shown):,} of {len(entries):,} runs, oldest first"
        console.print(
            grid(title, ("commit", "ref", "run", "added", "GPU", "graphs", "gate"), rows, width, optional=(5, 3, 4))
        )
    return _lines(buf)


def render_trend(t: Trend, width: int, last: int) -> str:
    t = neutral.scrub(t, neutral.text)
    buf = io.StringIO()
    console = plain_console(buf, width)
    # A step figure trends by its time per step; every other key by its total time.
    by_step = t.kind in PER_STEP
    values = [p.per_call_ns if by_step else p.total_ns for p in t.points]
    wrap(console, f"nsysdiff history: {t.kind} {t.label or t.key}", width, hang="  ", bold=True)
    if t.label and t.label != t.key:
        wrap(console, f"signature: {t.key}", width, indent="  ", hang="    ")
    first = values[0] if values else None
    summary = f"{len(t.points):,} commits of {t.ref} in {t.store}"
    if first:
        summary += f" · first {u.ns(first)}, last {u.ns(values[-1])} ({_pct(values[-1] / first)})"
    if t.missing:
        summary += f" · missing in {u.plural(t.missing, 'commit')}"
    if t.also:
        summary += f" · also a {' and a '.join(t.also)} name (--kind {t.also[0]})"
    wrap(console, summary, width, indent="  ", hang="  ")
    spark_room = max(10, width - 10)
    wrap(console, "trend: " + sparkline(values[-spark_room:]), width, indent="  ")
    shown = t.points[-last:] if last else t.points
    if shown and first:
        # The level bar spans the whole series, so that noise shown alone never looks like a step.
        lo, hi = min(values), max(values)
        rows = [
            [
                p.commit[:12],
                str(p.runs),
                u.ns(p.total_ns),
                f"{u.ns(p.low_ns)}..{u.ns(p.high_ns)}",
                f"{p.calls:,}",
                u.ns(p.per_call_ns),
                _pct(v / first),
                _bar(v, lo, hi),
                "failed" if p.failed else "",
            ]
            for p, v in zip(shown, values[-len(shown) :], strict=True)
        ]
        console.print()
        what = ("Time per call" if t.key.startswith("calls:") else "Time per step") if by_step else "Total time"
        title = f"{what} per commit (geometric mean of its runs), last {len(shown):,}"
        steps = t.kind == "nvtx" or (t.kind == STEP and not t.key.startswith("calls:"))
        each = "per step" if steps else "per call"
        console.print(
            grid(
                title,
                ("commit", "runs", "total", "range", "calls", each, "vs first", "level", "gate"),
                rows,
                width,
                optional=(3, 8, 4, 5),
            )
        )
    return _lines(buf)


def _bar(v: float, lo: float, hi: float, cells: int = 10) -> str:
    n = 1 if hi <= lo else 1 + round((v - lo) / (hi - lo) * (cells - 1))
    return "█" * n


def _step_row(s: Step) -> list[str]:
    interval = "-" if s.ci_low is None or s.ci_high is None else f"{_pct(s.ci_low)}..{_pct(s.ci_high)}"
    return [
        s.label or s.key,
        s.kind,
        s.commit[:12],
        f"{u.ns(s.before_ns)} → {u.ns(s.after_ns)}",
        _pct(s.ratio),
        interval,
        u.pvalue(s.p_value),
    ]


def _step_notes(steps: Sequence[Step], drifts: Sequence[Drift]) -> list[str]:
    """What the rows can't say: a step undoes an earlier one; a sum's steps may be a drift's."""
    notes = [
        f"{s.label or s.key} ({s.kind}) at {s.commit[:12]}: back to the level before {s.returns_to[:12]}"
        for s in steps
        if s.returns_to
    ]
    # The drifting kernel is named as its drift's row names it.
    label = {d.key: d.label or d.key for d in drifts if d.kind == "kernel"}
    holding: dict[tuple[str, bool], dict[str, None]] = {}
    for s in steps:
        if s.drifting:
            drifting = label.get(s.drifting, s.drifting)
            holding.setdefault((drifting, s.kind == "nvtx"), {})[f"{s.label or s.key} ({s.kind})"] = None
    for (kernel, ranges), sums in holding.items():
        verb = "may hold (an NVTX range holds what ran inside it)" if ranges else "hold"
        notes.append(f"{', '.join(sums)} {verb} the drifting kernel {kernel}: their steps may be part of that drift")
    return notes


# How a structural change names its key's kind: "appeared at 1a2b3c4: copies DtoD".
_KIND_WORDS = {"copy": "copies", "nvtx": "NVTX range", "step": "step figure"}
STRUCTURES_SHOWN = 20  # structural changes listed in the text; the JSON has every one


def structure_phrase(x: Structural, sha: int = 12) -> str:
    """``appeared at 1a2b3c4d5e6f: copies DtoD``, ``gone at ...``, ``in 12 of 30 commits:``."""
    what = f"{_KIND_WORDS.get(x.kind, x.kind)} {x.label or x.key}"
    if x.commit is None:
        return f"comes and goes ({x.commits:,} commits with it): {what}"
    return f"{x.change} at {x.commit[:sha]}: {what}"


def _drift_row(d: Drift) -> list[str]:
    return [
        d.label or d.key,
        d.kind,
        f"{d.first_commit[:7]}..{d.last_commit[:7]}",
        _pct(d.per_commit, 3),
        f"{_pct(d.ci_low, 3)}..{_pct(d.ci_high, 3)}",
        _pct(d.overall),
        u.pvalue(d.p_value),
    ]


def render_changes(c: Changes, width: int) -> str:
    c = neutral.scrub(c, neutral.text)
    buf = io.StringIO()
    console = plain_console(buf, width)
    gpu, scope, mode = c.identity
    wrap(
        console,
        f"nsysdiff history changes: {c.ref} in {c.store} · {len(c.commits):,} commits, {c.runs:,} runs · "
        f"{u.plural(len(c.steps), 'step')}, {u.plural(len(c.drifts), 'drift')} in {u.plural(c.keys, 'key')}",
        width,
        hang="  ",
        bold=True,
    )
    wrap(
        console,
        f"runs like the newest: GPU {gpu}, {scope_words(scope)}, graph mode {mode}",
        width,
        indent="  ",
        hang="  ",
    )
    wrap(
        console,
        "Method: E-Divisive (Apache Otava) on each key's total time per commit (geometric mean of its runs), "
        f"windows of {c.window} commits, a step kept when Student's t between its segments gives "
        f"p < {c.max_pvalue:g}; on pure noise that flags {FALSE_ALARM:.3%} of keys per history "
        f"(95% upper bound {FALSE_ALARM_UPPER:.3%}). Size: after / before segment with a 95% Welch interval "
        "on the runs' logs. A key a straight line fits better than its steps (BIC) is a drift.",
        width,
        indent="  ",
        hang="  ",
    )
    if c.structural:
        wrap(
            console,
            f"{u.plural(c.structural, 'key')} not in every run (structural changes) were not scanned:",
            width,
            indent="  ",
            hang="  ",
        )
        for x in c.structures[:STRUCTURES_SHOWN]:
            wrap(console, structure_phrase(x), width, indent="    ", hang="      ")
        if len(c.structures) > STRUCTURES_SHOWN:
            more = len(c.structures) - STRUCTURES_SHOWN
            wrap(console, f"and {more:,} more (--format json lists every one)", width, indent="    ")
    if c.steps:
        console.print()
        ordered = sorted(c.steps, key=lambda s: (s.index, s.kind, s.key))
        console.print(
            grid(
                "Steps, oldest first (the commit is the first at the new level)",
                ("key", "kind", "commit", "level", "change", "95% interval", "p"),
                [_step_row(s) for s in ordered],
                width,
                # The kind stays: a kernel and its one-kernel family share a name and figures.
                optional=(3, 5),
            )
        )
        for note in _step_notes(ordered, c.drifts):
            wrap(console, note, width, indent="  ", hang="    ")
    if c.drifts:
        console.print()
        rows = [_drift_row(d) for d in c.drifts]
        console.print(
            grid(
                "Drifts (a slope, not a step)",
                ("key", "kind", "commits", "per commit", "95% interval", "overall", "p"),
                rows,
                width,
                optional=(2, 4),
            )
        )
    if not c.steps and not c.drifts:
        console.print()
        wrap(console, "No change point: every scanned key held its level.", width, indent="  ")
    return _lines(buf)


def changes_json(c: Changes) -> str:
    doc = {
        "format": "nsysdiff-history-changes",
        "version": 1,
        "store": c.store,
        "ref": c.ref,
        "identity": {"gpu": c.identity[0], "scope": c.identity[1], "graph_mode": c.identity[2]},
        "commits": list(c.commits),
        "runs": c.runs,
        "keys": c.keys,
        "structural": c.structural,
        "method": {
            "engine": "apache-otava e-divisive",
            "max_pvalue": c.max_pvalue,
            "window": c.window,
            "false_alarm_per_key": FALSE_ALARM,
            "false_alarm_upper": FALSE_ALARM_UPPER,
        },
        "steps": [_fields(s) for s in c.steps],
        "drifts": [_fields(d) for d in c.drifts],
        "structures": [_fields(x) for x in c.structures],
    }
    return neutral.json_document(json.dumps(finite(doc), indent=1)) + "\n"


def _fields(obj: Step | Drift | Structural) -> dict[str, object]:
    out: dict[str, object] = {}
    for name in obj.__slots__:
        v = getattr(obj, name)
        out[name] = None if isinstance(v, float) and not math.isfinite(v) else v
    return out
