"""Can two fingerprints be compared, and what should a reader know when they are?

:func:`assess` returns *reasons* (the comparison would mislead: the verdict becomes
inconclusive, exit 3) and *notes* (harmless differences, reported). :func:`facts` gives
the side-by-side lines of the report's comparability section. Documented in
``docs/scopes.md``.
"""

from __future__ import annotations

from dataclasses import dataclass

from nsysdiff.compare import matching, notices
from nsysdiff.compare.diff import Diff, basis_of
from nsysdiff.compare.scale import MAX_SPREAD, MIN_COMMON
from nsysdiff.fingerprint.model import Fingerprint, Scope, TraceMeta
from nsysdiff.fingerprint.scope import describe
from nsysdiff.trace.records import GraphMode
from nsysdiff.units import ns as fmt_ns

# Below this Jaccard overlap of kernel names the two sides mostly ran different code.
LOW_OVERLAP = 0.5
LOW_OVERLAP_NOTE = "low kernel-set overlap"
# Below this coverage most GPU time lies outside the NVTX scope.
LOW_COVERAGE = 0.5
# Capture lengths further apart than this factor are worth a note.
CAPTURE_FACTOR = 2.0

NODE_FLAG = "nsys profile --cuda-graph-trace=node"


@dataclass(frozen=True, slots=True)
class Fact:
    """One line of the comparability section: a property and its value on each side."""

    label: str
    base: str
    candidate: str
    joint: bool = False  # one value for the pair (the kernel overlap), not one per side

    @property
    def same(self) -> bool:
        return self.base == self.candidate


def kernel_overlap(base: Fingerprint, cand: Fingerprint) -> float | None:
    """Jaccard overlap of the two sides' demangled kernel names (None without kernels)."""
    b = {k.demangled for k in base.kernels}
    c = {k.demangled for k in cand.kernels}
    return len(b & c) / len(b | c) if b and c else None


# Evidence that two sides ran different programs: few kernel names in common (Jaccard)...
FEW_SHARED = 0.25
# ... and, as the second piece of evidence, little of the kernel time in those kernels
# (the mean of the two sides' shares), unless the NVTX ranges mostly match (one program's
# markers around another build's kernels: eager against torch.compile).
LITTLE_TIME = 1 / 3
SAME_RANGES = 0.5


@dataclass(frozen=True, slots=True)
class Programs:
    """Whether the sides ran one program, from what they share: kernels, their time, and
    their NVTX ranges."""

    kernel_overlap: float  # Jaccard of the kernel names (one kernel under two demanglers is one)
    shared_kernels: int
    base_share: float  # of each side's kernel time, in the kernels both run
    candidate_share: float
    nvtx_overlap: float | None  # Jaccard of the NVTX range names; None when a side has none

    @property
    def different(self) -> bool:
        if not self.shared_kernels:
            return True
        few = self.kernel_overlap < FEW_SHARED and (self.base_share + self.candidate_share) / 2 < LITTLE_TIME
        return few and not (self.nvtx_overlap is not None and self.nvtx_overlap >= SAME_RANGES)

    def text(self) -> str:
        ranges = "" if self.nvtx_overlap is None else f"; {self.nvtx_overlap:.0%} of NVTX range names shared"
        if not self.shared_kernels:
            return f"no kernel runs on both sides{ranges}"
        return (
            f"{self.kernel_overlap:.0%} of kernel names shared ({self.shared_kernels:,}), holding "
            f"{self.base_share:.0%} → {self.candidate_share:.0%} of the kernel time{ranges}"
        )


def programs(base: Fingerprint, cand: Fingerprint) -> Programs | None:
    """What the sides share; None unless both have kernels."""
    cand = matching.align(base, cand)
    b = {k.demangled: k.total_ns for k in base.kernels}
    c = {k.demangled: k.total_ns for k in cand.kernels}
    if not b or not c:
        return None
    both = b.keys() & c.keys()

    def share(side: dict[str, int]) -> float:
        total = sum(side.values())
        return sum(side[k] for k in both) / total if total else 0.0

    rb, rc = {r.name for r in base.nvtx}, {r.name for r in cand.nvtx}
    return Programs(
        kernel_overlap=len(both) / len(b.keys() | c.keys()),
        shared_kernels=len(both),
        base_share=share(b),
        candidate_share=share(c),
        nvtx_overlap=len(rb & rc) / len(rb | rc) if rb and rc else None,
    )


def _gpus(fp: Fingerprint) -> str:
    if not fp.meta.gpus:
        return "unknown"
    names: dict[str, int] = {}
    for g in fp.meta.gpus:
        names[g.name] = names.get(g.name, 0) + 1
    return ", ".join(f"{n}x {name}" for name, n in sorted(names.items()))


def _capture(fp: Fingerprint) -> str:
    return fmt_ns(fp.meta.capture_ns) if fp.meta.capture_ns is not None else "unknown"


def graph_peers(base: Fingerprint, cand: Fingerprint) -> tuple[int, int] | None:
    """The graph-level GPU time of both sides when one replays graphs whole and the other
    traces their nodes: the one figure the two modes share (graph replays against the node
    kernels and copies). None otherwise."""
    b, c = base.meta, cand.meta
    if {b.graph_mode, c.graph_mode} != {GraphMode.GRAPH, GraphMode.NODE}:
        return None
    if not (b.graph_total_ns and c.graph_total_ns):
        return None
    return b.graph_total_ns, c.graph_total_ns


def _graph_time(m: TraceMeta) -> str:
    what = "graph replays" if m.graph_mode is GraphMode.GRAPH else "node kernels and copies"
    return f"{fmt_ns(m.graph_total_ns)} of {what}"


def _graph(fp: Fingerprint) -> str:
    m = fp.meta
    if m.graph_mode in (GraphMode.GRAPH, GraphMode.MIXED) or (m.graph_mode is GraphMode.NODE and m.graph_launches):
        launches = f"{m.graph_launches} graph launches"
        return f"{m.graph_mode.value} ({launches}, {fmt_ns(m.graph_total_ns)})"
    return str(m.graph_mode.value)


def _scope_key(s: Scope) -> tuple[object, ...]:
    return (s.window, s.window_origin, s.nvtx, s.per, s.skip_first)


def facts(base: Fingerprint, cand: Fingerprint) -> tuple[Fact, ...]:
    """The comparability section: versions, GPUs, capture, scope, steps, coverage, graphs."""
    b, c = base.meta, cand.meta
    out = [
        Fact("nsys", b.nsys_version or "unknown", c.nsys_version or "unknown"),
        Fact("schema", b.schema_version or "unknown", c.schema_version or "unknown"),
        Fact("GPUs", _gpus(base), _gpus(cand)),
        Fact("capture", _capture(base), _capture(cand)),
        Fact("scope", describe(base.scope), describe(cand.scope)),
    ]
    if base.scope.steps or cand.scope.steps:
        out.append(Fact("steps", str(base.scope.steps or "-"), str(cand.scope.steps or "-")))
    if base.scope.coverage is not None or cand.scope.coverage is not None:
        out.append(
            Fact(
                "coverage",
                _pct(base.scope.coverage) + " of kernel time",
                _pct(cand.scope.coverage) + " of kernel time",
            )
        )
    out.append(Fact("CUDA graphs", _graph(base), _graph(cand)))
    overlap = kernel_overlap(base, matching.align(base, cand))
    if overlap is not None:
        shared = len({k.demangled for k in base.kernels} & {k.demangled for k in matching.align(base, cand).kernels})
        text = f"{overlap:.0%} ({shared} shared)"
        out.append(Fact("kernel overlap", text, text, joint=True))
    return tuple(out)


def _pct(v: float | None) -> str:
    return "-" if v is None else f"{100 * v:.1f}%"


def _major(version: str | None) -> str | None:
    return version.split(".")[0] if version else None


def _graph_reason(base: Fingerprint, cand: Fingerprint) -> str | None:
    bm, cm = base.meta.graph_mode, cand.meta.graph_mode
    whole = (GraphMode.GRAPH, GraphMode.MIXED)
    if bm not in whole and cm not in whole:
        return None
    sides = [
        f"{side} {_graph(fp)}" for side, fp in (("base", base), ("candidate", cand)) if fp.meta.graph_mode in whole
    ]
    fix = f"capture both sides with `{NODE_FLAG}` so graph kernels are traced one by one"
    if {bm, cm} & {GraphMode.NODE}:
        return (
            f"CUDA graph trace modes differ (base {bm.value}, candidate {cm.value}): in graph "
            "mode a graph replay is one GRAPH_TRACE row and its kernels have no rows of their "
            "own, in node mode they are ordinary kernels, so the kernel figures of the two "
            f"sides don't describe the same work; {fix}"
        )
    return (
        "graph-mode capture (" + "; ".join(sides) + "): kernels replayed inside CUDA graphs "
        "have no per-kernel rows, so a kernel-level comparison can't see them (graph-level "
        f"totals are reported above); {fix}"
    )


def assess(
    base: Fingerprint, cand: Fingerprint, *, require_same_gpu: bool = False
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(reasons, notes): reasons make the verdict inconclusive, notes are reported."""
    cand = matching.align(base, cand)  # one kernel under two demanglers is one kernel
    reasons: list[str] = []
    notes: list[str] = []
    _data(base, cand, reasons, notes)
    if _scope_key(base.scope) != _scope_key(cand.scope):
        reasons.append(
            f"the sides cover different scopes (base: {describe(base.scope)}; candidate: "
            f"{describe(cand.scope)}); give both the same --window/--nvtx/--per/--skip-first"
        )
    elif base.scope.per and bool(base.scope.steps) != bool(cand.scope.steps):
        reasons.append(f"only one side counted {base.scope.per} steps: per-step figures can't be compared")
    gpu = _gpu_difference(base, cand, require_same_gpu)
    if gpu is not None:
        (reasons if require_same_gpu else notes).append(gpu)
    notes += _capture_notes(base, cand)
    return tuple(reasons), tuple(notes)


def _data(base: Fingerprint, cand: Fingerprint, reasons: list[str], notes: list[str]) -> None:
    """What the sides' data is compared by (kernels, NVTX ranges, graphs), and whether
    either side lacks it."""
    basis = basis_of(base, cand)
    if basis == "nvtx":
        notes.append(
            "neither side has kernel data: NVTX ranges are compared instead (count, total, "
            "mean per range); ranges nest, so their times overlap"
        )
    elif basis == "graphs":
        notes.append(
            "graph-mode captures on both sides: whole-graph launches are compared per graph "
            "id (launches, total, mean); the kernels inside the graphs are not visible "
            f"(capture with `{NODE_FLAG}` to see them)"
        )
    graph = None if basis == "graphs" else _graph_reason(base, cand)
    if graph and basis == "nvtx" and base.meta.graph_mode is cand.meta.graph_mode is GraphMode.GRAPH:
        # Both sides replay graphs the same way and neither has a kernel row (a scope inside
        # NVTX ranges or steps): their ranges and steps describe the same work, so this is
        # what the comparison can't see, not a reason it is invalid.
        notes.append(
            "graph-mode captures on both sides: compared by their NVTX ranges and steps; the "
            f"kernels inside the graphs are not visible (capture with `{NODE_FLAG}` to see them)"
        )
        graph = None
    if basis not in ("nvtx", "graphs"):
        for side, fp in (("base", base), ("candidate", cand)):
            # A graph-mode side has its work in graph launches, not no data: the graph
            # reason below says what differs and how to capture it.
            if (not fp.meta.has_kernels or not fp.kernels) and not (graph and fp.meta.graph_launches):
                reasons.append(f"{side} ({fp.meta.source}) has no kernel data")
    if graph:
        reasons.append(graph)
    elif base.meta.graph_mode is not cand.meta.graph_mode:
        notes.append(
            f"only one side replays CUDA graphs (base {base.meta.graph_mode.value}, "
            f"candidate {cand.meta.graph_mode.value})"
        )


def _gpu_difference(base: Fingerprint, cand: Fingerprint, require_same_gpu: bool) -> str | None:
    """How the sides' GPUs differ, if they do (a reason when the rules require the same GPU)."""
    bg, cg = _gpus(base), _gpus(cand)
    b_models = {g.name for g in base.meta.gpus}
    c_models = {g.name for g in cand.meta.gpus}
    required = "; the rules require the same GPU" if require_same_gpu else ""
    if b_models and c_models and b_models != c_models:
        return f"different GPU models (base {bg}, candidate {cg})" + required
    if b_models and c_models and len(base.meta.gpus) != len(cand.meta.gpus):
        return f"different GPU counts (base {bg}, candidate {cg})"
    if not (b_models and c_models) and (b_models or c_models or require_same_gpu):
        return f"GPU model unknown on one side (base {bg}, candidate {cg})" + required
    return None


def _capture_notes(base: Fingerprint, cand: Fingerprint) -> list[str]:
    """Harmless differences of the captures: tool versions, lengths, kernel sets, coverage."""
    notes: list[str] = []
    bv, cv = base.meta.nsys_version, cand.meta.nsys_version
    if bv and cv and bv != cv:
        notes.append(f"different nsys versions (base {bv}, candidate {cv})")
    bs, cs = base.meta.schema_version, cand.meta.schema_version
    if _major(bs) and _major(cs) and _major(bs) != _major(cs):
        notes.append(f"different export schema generations (base {bs}, candidate {cs})")

    b_cap, c_cap = base.meta.capture_ns, cand.meta.capture_ns
    if b_cap and c_cap and max(b_cap, c_cap) > CAPTURE_FACTOR * min(b_cap, c_cap):
        notes.append(f"capture lengths differ: base {fmt_ns(b_cap)}, candidate {fmt_ns(c_cap)}")

    overlap = kernel_overlap(base, cand)
    if overlap is not None and overlap < LOW_OVERLAP:
        notes.append(
            f"{LOW_OVERLAP_NOTE}: {overlap:.0%} of kernel names are shared (Jaccard); "
            "the sides mostly ran different kernels"
        )
    for side, fp in (("base", base), ("candidate", cand)):
        cov = fp.scope.coverage
        if cov is not None and cov < LOW_COVERAGE:
            notes.append(f"{side} scope covers {_pct(cov)} of its kernel time ({describe(fp.scope)})")
    return notes


_KEYS = {"kernels": "kernel families", "nvtx": "NVTX ranges"}


def scale_reason(d: Diff) -> str | None:
    """Why the diff has no meaningful overall scale, when it has none (docs/diff.md)."""
    info, basis = d.headline.scale_info, d.headline.basis
    if info.meaningful:
        return None
    if basis == "kernels" and not (d.base.kernels and d.candidate.kernels):
        return None  # kernel-less sides have their own reason
    if info.covered:
        return (
            f"no meaningful overall scale: the {_KEYS.get(basis, 'graphs')} changed too unevenly "
            f"(half the weight between {info.low:.2f}x and {info.high:.2f}x, a spread over "
            f"{MAX_SPREAD:g}x), so their median {info.factor:.2f}x is no reference to judge the rest against"
        )
    what = {"kernels": "kernel time is in kernel families", "nvtx": "NVTX range time is in ranges"}
    return (
        f"no meaningful overall scale: only {_pct(info.base_share)} of base and "
        f"{_pct(info.candidate_share)} of candidate {what.get(basis, 'graph time is in graphs')} "
        f"that run on both sides (at least {MIN_COMMON:.0%} of each is needed); the traces "
        "mostly ran different code, so nothing can be judged against the rest"
    )


def _pair(b: str, c: str) -> str:
    return f"{b} (both)" if b == c else f"{b} → {c}"


def scope_lines(d: Diff) -> tuple[tuple[str, str], ...]:
    """(label, text) headline lines: the scope and its coverage when the sides are scoped,
    the graph-level totals when either side has any.

    The scope (window, NVTX, skip-first) and coverage are also lines of :func:`fact_lines`;
    steps and the per-step GPU time (the GPU-side TPOT) come from
    :class:`~nsysdiff.compare.diff.Headline` (``per``, ``*_steps``, ``*_per_step_ns``).
    """
    b, c = d.base, d.candidate
    out = []
    if _scope_key(b.scope) != _scope_key(Scope()) or _scope_key(c.scope) != _scope_key(Scope()):
        # A scoped diff says on its first screen what it kept and how much of the kernel
        # time that is: a 20% coverage reads very differently from 99%.
        out += [
            (f.label, f.base if f.joint else _pair(f.base, f.candidate))
            for f in facts(b, c)
            if f.label in ("scope", "coverage")
        ]
    if graph_peers(b, c) is not None:
        out.append(
            (
                "CUDA graphs",
                f"{b.meta.graph_launches} launches ({_graph_time(b.meta)}) → "
                f"{c.meta.graph_launches} ({_graph_time(c.meta)})",
            )
        )
    elif b.meta.graph_launches or c.meta.graph_launches:
        out.append(
            (
                "CUDA graphs",
                f"{b.meta.graph_launches} launches ({fmt_ns(b.meta.graph_total_ns)}) → "
                f"{c.meta.graph_launches} ({fmt_ns(c.meta.graph_total_ns)})",
            )
        )
    return tuple(out)


def fact_lines(d: Diff) -> tuple[tuple[str, str], ...]:
    """(label, text) lines of the comparability section; for equal fixed windows the
    capture line quotes the windows compared, the captures they were cut from after."""
    w = notices.window(d)

    def text(f: Fact) -> str:
        if w is not None and f.label == "capture":
            spans = f"{fmt_ns(w.base_span_ns)} → {fmt_ns(w.candidate_span_ns)}"
            return f"window {spans} (of captures {_pair(f.base, f.candidate)})"
        return f.base if f.joint else _pair(f.base, f.candidate)

    return tuple((f.label, text(f)) for f in facts(d.base, d.candidate))


def compared_lines(d: Diff) -> tuple[tuple[str, str], ...]:
    """The headline's scope lines and the comparability facts as one list, each label
    once, for a report that shows them together (HTML, Markdown): the scope and coverage
    first, as the headline puts them; the CUDA graphs by their fact, which holds the
    headline's launch totals and adds the trace modes."""
    listed = fact_lines(d)
    first = [(k, v) for k, v in scope_lines(d) if k in ("scope", "coverage")]
    said = {k for k, _ in first}
    return (*first, *((k, v) for k, v in listed if k not in said))
