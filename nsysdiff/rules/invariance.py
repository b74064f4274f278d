"""Rule kind ``invariance``: why a request's numbers can change with the batch size.

A batch-invariance check diffs a trace at batch size 1 against one at batch size N. A
kernel-by-kernel listing of the differences restates one cause many times (one GEMM
variant swap is a new kernel, a removed kernel, a variant drift and a danger zone at
once), so this kind reports *causes*, one finding per kernel family, with the kernels
that show it as evidence:

* ``gemm-selection``: the GEMM library picked other kernels (variants only on one side,
  split-K appearing or vanishing, other tile shapes, or the same variants called in
  another mix);
* ``launch-config``: the same kernel was launched with another block shape or with a
  grid dimension that shrank (a different split of the reduction, e.g. split-KV 4 -> 1);
* ``attention-path``: attention kernels (cascade, LSE merges, split-KV combines) ran on
  one side only or a different number of times;
* ``reduction``: a reduction kernel (reduce, norm, softmax, atomics, split-K reduce) ran
  on one side only.

Every finding lists in ``covers`` the kernels and families it explains; :func:`fold`
folds the other rules' findings on them into it, so the report says each cause once.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, replace

from nsysdiff.compare.diff import Diff, Row
from nsysdiff.fingerprint.model import KernelStats
from nsysdiff.rules import options as opt
from nsysdiff.rules import units
from nsysdiff.rules.comparison import Measure
from nsysdiff.rules.model import Kind, Rule
from nsysdiff.rules.report import Finding, Level
from nsysdiff.safe.regex import Regex
from nsysdiff.trace.records import LaunchConfig

CAUSES = ("gemm-selection", "launch-config", "attention-path", "reduction")

OPTIONS = (
    opt.choices("cause", CAUSES, "Which causes the rule diagnoses", required=True),
    opt.kernel_filter("Only kernels whose short or demangled name matches."),
)

# Categories (nsysdiff.fingerprint.categories) each cause looks at. Element-wise kernels and copies
# compute every output element on its own, so their grid follows the tensor size
# without changing any summation order: they are left out of launch-config.
# GEMMs, and convolutions: cuDNN picks a convolution algorithm (implicit GEMM, Winograd, FFT
# tiles) by heuristics on the problem size exactly as cuBLAS picks a GEMM kernel.
_GEMM = re.compile(r"^(gemm|convolution$)")
_NO_REDUCTION = frozenset({"elementwise", "memory"})
_ATTENTION = frozenset({"attention"})
_REDUCING = frozenset({"reduction", "normalization", "sampling"})
# Kernels that reduce with atomics or a separate pass, whatever their category.
_REDUCE_NAME = re.compile(
    r"(?i)splitKreduce|reduc|atomic|scatter_?add|index_?add|segment_?reduce|"
    r"merge_attn_states|merge_?state|lse_?merge|merge_?lse|combine"
)
_ATTENTION_NAME = re.compile(r"(?i)cascade|merge_attn_states|merge_?state|split_?kv|combine")
_SPLIT_K = re.compile(r"(?i)split_?k(?!_?v)")
_TILE = re.compile(r"(?<![\dx])(\d+x\d+)(?![\dx])")

_WHY = {
    "gemm-selection": (
        "cuBLAS/cuBLASLt picks GEMM kernels (tile shape, split-K, stream-K) by heuristics on "
        "the problem size, so the batch size changes the kernel and with it the order in "
        "which each output element is accumulated (cuDNN picks convolution kernels the same way)"
    ),
    "launch-config": (
        "the same kernel split its work differently (another block shape, or fewer blocks "
        "along a dimension): a reduction split across blocks or threads sums in another order"
    ),
    "attention-path": (
        "the attention path depends on the batch (cascade attention, split-KV / flash-decoding "
        "combines, log-sum-exp merges), so the softmax is combined in another order"
    ),
    "reduction": (
        "a reduction kernel ran at one batch size only: the values it sums are reduced "
        "another way at the other batch size"
    ),
}
_LIMIT = {
    "gemm-selection": "same GEMM kernels at both batch sizes",
    "launch-config": "same block shape, no grid dimension shrinks",
    "attention-path": "same attention kernels and calls",
    "reduction": "same reduction kernels on both sides",
}


@dataclass(frozen=True, slots=True)
class InvarianceOptions:
    causes: tuple[str, ...]
    kernel: Regex | None


build = opt.taken(InvarianceOptions, causes="cause")


@dataclass(frozen=True, slots=True)
class _Cause:
    """One diagnosed cause before it becomes a finding."""

    cause: str
    family: str
    observed: str
    evidence: str
    covers: tuple[str, ...]


def _calls(row: Row, side: str) -> str:
    s = row.base if side == "base" else row.candidate
    return "-" if s is None else units.fmt_count(s.calls)


def _kernel(row: Row) -> str:
    s = row.base or row.candidate
    assert s is not None
    calls = "call" if s.calls == 1 else "calls"
    return f"{row.name} ({units.fmt_count(s.calls)} {calls}, {units.fmt_time(s.total_ns)})"


def _listed(items: Sequence[str], most: int = 3) -> str:
    shown = ", ".join(items[:most])
    return shown + (f" and {len(items) - most} more" if len(items) > most else "")


def _few(items: Sequence[str], most: int = 2) -> str:
    if not items:
        return "-"
    return ", ".join(items[:most]) + (f" (+{len(items) - most})" if len(items) > most else "")


def _time(r: Row) -> float:
    """The row's time on the side it has (the base when both)."""
    side = r.base or r.candidate
    return side.total_ns if side else 0.0


def _tiles(rows: Iterable[Row]) -> list[str]:
    """The first shape token of each name (the tile of a GEMM), most time first, unique."""
    out: list[str] = []
    for r in sorted(rows, key=lambda r: -_time(r)):
        m = _TILE.search(r.name)
        if m and m.group(1) not in out:
            out.append(m.group(1))
    return out


def _covers(rows: Iterable[Row], *extra: str) -> tuple[str, ...]:
    keys: set[str] = set(extra)
    for r in rows:
        keys.update(k for k in (r.key, r.name, r.family) if k)
    return tuple(sorted(keys))


def _only(rows: Sequence[Row]) -> tuple[list[Row], list[Row]]:
    """(base-only, candidate-only) rows, most time first."""
    gone = [r for r in rows if r.candidate is None]
    new = [r for r in rows if r.base is None]
    return sorted(gone, key=lambda r: -_time(r)), sorted(new, key=lambda r: -_time(r))


def _mix_changed(rows: Sequence[Row]) -> list[Row]:
    """Kept variants whose calls changed. Without variants on one side only, that counts
    only when the variants' calls scaled unlike each other (the same kernels chosen for
    other shapes), not when all scaled alike (more steps)."""
    kept = [(r, r.base, r.candidate) for r in rows if r.base is not None and r.candidate is not None]
    changed = [r for r, b, c in kept if b.calls != c.calls]
    alike = len({c.calls / b.calls for _, b, c in kept if b.calls}) <= 1
    return [] if changed and len(kept) == len(rows) and alike else changed


def _gemm(family: str, rows: Sequence[Row], diff: Diff) -> _Cause | None:
    gone, new = _only(rows)
    moved = _mix_changed(rows)
    if not gone and not new and not moved:
        return None
    parts: list[str] = []
    if gone or new:
        parts.append(f"{len(gone)} variant{'s' if len(gone) != 1 else ''} -> {len(new)}")
    bt, ct = _tiles(gone), _tiles(new)
    if bt or ct:
        parts[-1] += f": tile {_few(bt)} -> {_few(ct)}"
    split_b = any(_SPLIT_K.search(r.name) for r in gone)
    split_c = any(_SPLIT_K.search(r.name) for r in new)
    if split_b and split_c:
        parts.append("split-K variant swapped")
    elif split_b:
        parts.append("split-K vanishes")
    elif split_c:
        parts.append("split-K appears")
    if not parts:
        parts.append(f"same variants, other call mix ({len(moved)} changed)")
    evidence: list[str] = []
    if gone:
        evidence.append("base only: " + _listed([_kernel(r) for r in gone]))
    if new:
        evidence.append("candidate only: " + _listed([_kernel(r) for r in new]))
    if moved:
        evidence.append(
            "calls moved: " + _listed([f"{r.name} {_calls(r, 'base')} -> {_calls(r, 'candidate')}" for r in moved])
        )
    extra: list[str] = []
    if split_b or split_c:
        # The split-K partial sums are added by a reduce kernel: part of the same cause.
        reducers = [r for r in diff.kernels if "splitkreduce" in r.name.lower()]
        extra = list(_covers(reducers))
        evidence += [
            f"its reduce kernel {r.name}: calls {_calls(r, 'base')} -> {_calls(r, 'candidate')}" for r in reducers[:1]
        ]
    return _Cause("gemm-selection", family, "; ".join(parts), "; ".join(evidence), _covers(rows, *extra))


def _shape(d: tuple[int, int, int]) -> str:
    return "x".join(str(v) for v in d)


def _config_change(b: KernelStats, c: KernelStats) -> str | None:
    """How the launch shapes changed when they changed the work split, else None."""
    if not b.configs or not c.configs:
        return None
    bb = sorted({x.block for x in b.configs})
    cb = sorted({x.block for x in c.configs})
    if bb != cb:
        return f"block {'/'.join(_shape(x) for x in bb)} -> {'/'.join(_shape(x) for x in cb)}"
    shrunk = []
    for dim, axis in enumerate("xyz"):
        lo_b, lo_c = min(x.grid[dim] for x in b.configs), min(x.grid[dim] for x in c.configs)
        hi_b, hi_c = max(x.grid[dim] for x in b.configs), max(x.grid[dim] for x in c.configs)
        if lo_c < lo_b or hi_c < hi_b:
            shrunk.append(f"grid {axis} {_span(lo_b, hi_b)} -> {_span(lo_c, hi_c)}")
    return ", ".join(shrunk) or None


def _span(lo: int, hi: int) -> str:
    return str(lo) if lo == hi else f"{lo}..{hi}"


def _grids(configs: Sequence[LaunchConfig]) -> str:
    shapes = sorted({f"grid({_shape(x.grid)}) block({_shape(x.block)})" for x in configs})
    return _listed(shapes, 2)


def _launch(family: str, rows: Sequence[Row], diff: Diff) -> _Cause | None:
    bk = {k.demangled: k for k in diff.base.kernels}
    ck = {k.demangled: k for k in diff.candidate.kernels}
    changed: list[tuple[Row, str]] = []
    for r in rows:
        b, c = bk.get(r.key), ck.get(r.key)
        if b is None or c is None or r.category in _NO_REDUCTION:
            continue
        how = _config_change(b, c)
        if how:
            changed.append((r, how))
    if not changed:
        return None
    first = changed[0][0]
    evidence = [f"{r.name}: {_grids(bk[r.key].configs)} -> {_grids(ck[r.key].configs)}" for r, _ in changed[:2]]
    if len(changed) > 2:
        evidence.append(f"and {len(changed) - 2} more kernels of the family")
    return _Cause(
        "launch-config",
        family,
        changed[0][1] + (f" ({len(changed)} kernels)" if len(changed) > 1 else ""),
        "; ".join(evidence),
        _covers([r for r, _ in changed], first.family or family),
    )


def _attention(family: str, rows: Sequence[Row], diff: Diff) -> _Cause | None:
    rows = [r for r in rows if r.category in _ATTENTION or _ATTENTION_NAME.search(r.key)]
    gone, new = _only(rows)
    counted = [r for r in rows if r.base is not None and r.candidate is not None and r.base.calls != r.candidate.calls]
    if not gone and not new and not counted:
        return None
    parts = []
    if new:
        parts.append(f"{len(new)} kernel{'s' if len(new) != 1 else ''} only in candidate")
    if gone:
        parts.append(f"{len(gone)} only in base")
    if counted:
        parts.append(f"{len(counted)} called a different number of times")
    evidence = [f"{r.name} calls {_calls(r, 'base')} -> {_calls(r, 'candidate')}" for r in (*new, *gone, *counted)]
    return _Cause("attention-path", family, ", ".join(parts), _listed(evidence), _covers(rows))


def _reduction(family: str, rows: Sequence[Row], diff: Diff) -> _Cause | None:
    rows = [
        r
        for r in rows
        if not (r.category and (_GEMM.match(r.category) or r.category in _ATTENTION))
        and ((r.category in _REDUCING) or _REDUCE_NAME.search(r.key))
    ]
    gone, new = _only(rows)
    if not gone and not new:
        return None
    where = "base" if gone and not new else "candidate" if new and not gone else "one side each"
    evidence = [f"{_kernel(r)} only in {'base' if r.candidate is None else 'candidate'}" for r in (*gone, *new)]
    return _Cause(
        "reduction",
        family,
        f"runs only in {where}" if where != "one side each" else "different reduction kernels",
        _listed(evidence),
        _covers([*gone, *new]),
    )


_DIAGNOSE = {
    "gemm-selection": _gemm,
    "launch-config": _launch,
    "attention-path": _attention,
    "reduction": _reduction,
}


def diagnose(diff: Diff, causes: Sequence[str], kernel: Regex | None = None) -> list[_Cause]:
    """Every cause found, one per (cause, family), families in name order."""
    families: dict[str, list[Row]] = {}
    for r in diff.kernels:
        if kernel is None or kernel.search(r.name) or kernel.search(r.key):
            families.setdefault(r.family or r.name, []).append(r)
    found: list[_Cause] = []
    for cause in causes:
        for fam in sorted(families):
            rows = families[fam]
            if cause == "gemm-selection" and not any(r.category and _GEMM.match(r.category) for r in rows):
                continue
            got = _DIAGNOSE[cause](fam, rows, diff)
            if got is not None:
                found.append(got)
    return found


def check(diff: Diff, rule: Rule) -> Iterator[Finding]:
    o: InvarianceOptions = rule.options
    for c in diagnose(diff, o.causes, o.kernel):
        yield rule.finding(
            c.family, c.observed, _LIMIT[c.cause], c.evidence, _WHY[c.cause], statistical=False, covers=c.covers
        )


_ORDER = {Level.ERROR: 0, Level.WARNING: 1, Level.INFO: 2}


def fold(diff: Diff, findings: Sequence[Finding]) -> list[Finding]:
    """Fold findings that restate a diagnosed cause into it, as evidence.

    A finding restates a cause when its subject is a kernel or family the cause covers
    (or a kernel of such a family). Danger-zone findings left on one kernel by several
    rules merge into the first. Waived findings are neither folded nor folded into. The
    cause keeps the more severe level of what it absorbed.
    """
    family_of: dict[str, str] = {}
    for r in diff.kernels:
        if r.family:
            family_of[r.key] = r.family
            family_of.setdefault(r.name, r.family)
    causes = [i for i, f in enumerate(findings) if f.covers and not f.waived]
    absorbed: dict[int, list[Finding]] = {i: [] for i in causes}
    out: list[Finding | None] = list(findings)
    for j, f in enumerate(findings):
        if f.waived or f.covers:
            continue
        for i in causes:
            cover = findings[i].covers
            if f.subject in cover or family_of.get(f.subject) in cover:
                absorbed[i].append(f)
                out[j] = None
                break
    # Several danger-zone rules on one kernel: one finding naming every rule.
    first_dz: dict[str, int] = {}
    for j, left in enumerate(out):
        if left is None or left.waived or left.kind != "danger-zone":
            continue
        if left.subject in first_dz:
            k = first_dz[left.subject]
            kept = out[k]
            assert kept is not None
            note = f"{kept.evidence}; also {left.rule_id} ({left.observed})"
            out[k] = replace(kept, evidence=note)
            out[j] = None
        else:
            first_dz[left.subject] = j
    for i, taken in absorbed.items():
        if not taken:
            continue
        cause = findings[i]
        per_rule: dict[str, int] = {}
        for f in taken:
            per_rule[f.rule_id] = per_rule.get(f.rule_id, 0) + 1
        level = min((cause.level, *(f.level for f in taken)), key=lambda lv: _ORDER[lv])
        also = ", ".join(f"{rid} x{n}" if n > 1 else rid for rid, n in per_rule.items())
        out[i] = replace(cause, level=level, evidence=f"{cause.evidence}; also flagged by {also}")
    return [f for f in out if f is not None]


KIND = Kind(
    name="invariance",
    summary="Batch-invariance causes, one finding per kernel family, other rules' restatements folded in.",
    doc="""\
Diagnoses why a request's results can differ between two batch sizes, one finding per
cause and kernel family, with the kernels that show it as evidence:

  gemm-selection  a GEMM family (category gemm.*) has variants on one side only (other
                  tile shapes, split-K appearing or vanishing) or the same variants in
                  another call mix; a split-K swap covers the split-K reduce kernel
  launch-config   a kernel on both sides changed its block shape, or a grid dimension
                  shrank (fewer blocks share the work: another reduction split, e.g.
                  split-KV 4 -> 1); element-wise and copy kernels are left out (their
                  grid follows the tensor size), and grids that only grow are not
                  reported (more independent tiles for the larger batch)
  attention-path  attention kernels (or cascade / LSE-merge / split-KV combine kernels)
                  run on one side only or a different number of times
  reduction       a reduction kernel (category reduction, normalization or sampling, or
                  a reduce / atomics / scatter-add name) runs on one side only

Every finding is a fact (statistical: false). Findings of other rules whose subject is a
kernel or family a cause covers are folded into the cause as evidence ("also flagged
by ..."), and danger-zone findings of several rules on one kernel merge into one, so
the report names each cause once. Two traces with the same kernels, calls and launch
configurations give no finding, whatever their times.
""",
    options=OPTIONS,
    build=build,
    check=check,
    measure=lambda _: Measure.SELECTION,
    statistical=False,
)
