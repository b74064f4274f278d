"""Rule kind ``structure``: deterministic facts about the two traces, no statistics."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

from nsysdiff.compare.diff import Diff, Row, Variant
from nsysdiff.fingerprint.model import KernelStats
from nsysdiff.rules import options as opt
from nsysdiff.rules import units
from nsysdiff.rules.comparison import Measure
from nsysdiff.rules.model import Kind, Rule
from nsysdiff.rules.report import Finding
from nsysdiff.rules.units import fmt_count
from nsysdiff.safe.regex import Regex
from nsysdiff.trace.records import LaunchConfig

CHECKS = ("kernel-set", "launch-counts", "variant-drift", "launch-config", "memcpy-bytes")

OPTIONS = (
    opt.choices("check", CHECKS, "What must be identical", required=True),
    opt.kernel_filter("Only kernels whose short or demangled name matches (all checks but memcpy-bytes)."),
)


@dataclass(frozen=True, slots=True)
class StructureOptions:
    checks: tuple[str, ...]
    kernel: Regex | None


build = opt.taken(StructureOptions, checks="check")


def _keep(o: StructureOptions, name: str, key: str) -> bool:
    return o.kernel is None or bool(o.kernel.search(name) or o.kernel.search(key))


def _shape(c: LaunchConfig) -> str:
    g, b = c.grid, c.block
    return f"grid({g[0]},{g[1]},{g[2]}) block({b[0]},{b[1]},{b[2]})"


def _shapes(k: KernelStats) -> tuple[str, ...]:
    return tuple(sorted({_shape(c) for c in k.configs}))


def _list(items: tuple[str, ...], most: int = 3) -> str:
    shown = ", ".join(items[:most])
    return shown + (f" and {len(items) - most} more" if len(items) > most else "")


def _calls_word(n: float) -> str:
    return "call" if n == 1 else "calls"


def _variants(vs: tuple[Variant, ...]) -> str:
    return (
        ", ".join(f"{v.name} ({v.calls:g} {_calls_word(v.calls)}, {units.fmt_time(v.total_ns)})" for v in vs) or "none"
    )


@dataclass(frozen=True, slots=True)
class _Fact:
    """One difference a check found, before it is a finding of the rule."""

    subject: str
    observed: str
    limit: str
    evidence: str
    why: str
    values: tuple[float, float, str] | None = None  # (observed, limit, unit) where two numbers differ


def _rows(diff: Diff, o: StructureOptions) -> list[Row]:
    return [r for r in sorted(diff.kernels, key=lambda r: r.key) if _keep(o, r.name, r.key)]


def _kernel_set(diff: Diff, o: StructureOptions) -> Iterator[_Fact]:
    for r in _rows(diff, o):
        if r.base is None or r.candidate is None:
            side = r.candidate if r.base is None else r.base
            assert side is not None
            where = "candidate" if r.base is None else "base"
            yield _Fact(
                diff.kernel_label(r),
                f"only in {where}",
                "identical kernel set",
                f"{fmt_count(side.calls)} {_calls_word(side.calls)}, {units.fmt_time(side.total_ns)} in {where}",
                "the two traces do not run the same kernels",
            )


def _launch_counts(diff: Diff, o: StructureOptions) -> Iterator[_Fact]:
    per_step = f" per {diff.headline.per}" if diff.headline.per else ""
    for r in _rows(diff, o):
        if r.base is not None and r.candidate is not None and r.base.calls != r.candidate.calls:
            before, after = fmt_count(r.base.calls), fmt_count(r.candidate.calls)
            change = r.candidate.calls - r.base.calls
            yield _Fact(
                diff.kernel_label(r),
                f"{before} -> {after} calls",
                "identical launch counts",
                f"calls {before} -> {after} ({'+' if change > 0 else ''}{fmt_count(change)})" + per_step,
                "a kernel ran a different number of times",
                (r.candidate.calls, r.base.calls, "calls"),
            )


def _variant_drift(diff: Diff, o: StructureOptions) -> Iterator[_Fact]:
    for d in diff.variants:
        names = [v.name for v in (*d.appeared, *d.disappeared)] + [v.demangled for v in (*d.appeared, *d.disappeared)]
        if o.kernel is not None and not any(o.kernel.search(n) for n in names):
            continue
        yield _Fact(
            d.family,
            f"{len(d.appeared)} appeared, {len(d.disappeared)} disappeared",
            "same variants within the family",
            f"appeared: {_variants(d.appeared)}; disappeared: {_variants(d.disappeared)}; kept {len(d.kept)}",
            f"the {d.category} family {d.family} switched kernel variants (a different "
            "implementation, tile shape or reduction order)",
        )


def _launch_config(diff: Diff, o: StructureOptions) -> Iterator[_Fact]:
    cand = {k.demangled: k for k in diff.candidate.kernels}
    for k in sorted(diff.base.kernels, key=lambda k: k.demangled):
        other = cand.get(k.demangled)
        if other is None or not _keep(o, k.name, k.demangled) or not k.configs or not other.configs:
            continue
        b, c = _shapes(k), _shapes(other)
        if b != c:
            yield _Fact(
                diff.labels.get(k.demangled, k.demangled),
                _list(c),
                f"same launch configuration: {_list(b)}",
                f"base {_list(b)}; candidate {_list(c)}",
                "the same kernel launched with a different grid or block shape",
            )


def _memcpy_bytes(diff: Diff, o: StructureOptions) -> Iterator[_Fact]:
    for m in diff.memcpy:
        bb = m.base.bytes if m.base else None
        cb = m.candidate.bytes if m.candidate else None
        if bb != cb:
            yield _Fact(
                m.kind,
                units.fmt_size(cb) if cb is not None else "no copies",
                f"unchanged: {units.fmt_size(bb) if bb is not None else 'no copies'}",
                f"{m.kind} bytes {bb if bb is not None else '-'} -> "
                f"{cb if cb is not None else '-'}, "
                f"ops {m.base.ops if m.base else '-'} -> "
                f"{m.candidate.ops if m.candidate else '-'}",
                f"{m.kind} copies moved a different number of bytes",
                None if bb is None or cb is None else (cb, bb, "bytes"),
            )


# Each check, in the order its findings come.
_CHECKS: dict[str, Callable[[Diff, StructureOptions], Iterator[_Fact]]] = {
    "kernel-set": _kernel_set,
    "launch-counts": _launch_counts,
    "variant-drift": _variant_drift,
    "launch-config": _launch_config,
    "memcpy-bytes": _memcpy_bytes,
}


def check(diff: Diff, rule: Rule) -> Iterator[Finding]:
    o: StructureOptions = rule.options
    for name, facts in _CHECKS.items():
        if name not in o.checks:
            continue
        for fact in facts(diff, o):
            observed_value, limit_value, unit = fact.values if fact.values is not None else (None, None, "")
            yield rule.finding(
                fact.subject,
                fact.observed,
                fact.limit,
                fact.evidence,
                fact.why,
                statistical=False,
                observed_value=observed_value,
                limit_value=limit_value,
                unit=unit,
            )


KIND = Kind(
    name="structure",
    summary="Deterministic checks: same kernels, launch counts, variants, configs, copy bytes.",
    doc="""\
Facts, not statistics: each check compares exact values, so a finding cannot be noise
and is reported as such (statistical: false).

  kernel-set     every kernel runs on both sides (one finding per kernel on one side only)
  launch-counts  each kernel on both sides has the same number of calls
  variant-drift  no family swapped variants (a kernel of the family appeared or went)
  launch-config  each kernel on both sides used the same set of grid/block shapes
                 (skipped when a side recorded no launch configurations)
  memcpy-bytes   each memcpy kind moved the same number of bytes

`kernel:` restricts every kernel check to matching names.
""",
    options=OPTIONS,
    build=build,
    check=check,
    measure=lambda _: Measure.SELECTION,
    statistical=False,
)
