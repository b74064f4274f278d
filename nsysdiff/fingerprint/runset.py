"""Several runs of one side: checked comparable with each other, saved as one versioned
JSON file, and turned into per-run values per key for :mod:`nsysdiff.compare.runstats`.

A run set is a list of ordinary fingerprints. The JSON file wraps them as
``{"format": "nsysdiff-run-set", "version": 1, "runs": [FINGERPRINT, ...]}``, each run a
complete fingerprint document validated exactly like a single one, so a single-run
fingerprint stays valid input everywhere and a run set adds no new shape for a run.
"""

from __future__ import annotations

import dataclasses
import enum
import hashlib
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from fractions import Fraction

from nsysdiff.errors import FingerprintError, UsageError
from nsysdiff.fingerprint.model import Fingerprint, fingerprint_from_json, fingerprint_to_json
from nsysdiff.fingerprint.steps import StepPart
from nsysdiff.trace.records import HostFamily
from nsysdiff.trace.schema import check_stopped

RUN_SET_FORMAT = "nsysdiff-run-set"
RUN_SET_VERSION = 1


@dataclass(frozen=True, slots=True)
class RunSet:
    """The runs of one side, in the order given, with the file each came from."""

    runs: tuple[Fingerprint, ...]
    sources: tuple[str, ...]


class KeyKind(str, enum.Enum):
    """What a key names: each kind is compared across runs separately."""

    KERNEL = "kernel"
    FAMILY = "family"
    CATEGORY = "category"
    COPY = "copy"
    NVTX = "nvtx"
    # The steps (docs/steps.md): per run, the mean period and range duration, each part's
    # mean and each host family's calls and time, all per step.
    STEP = "step"


class Measure(str, enum.Enum):
    """Which per-run value of a key is compared."""

    TOTAL = "total_ns"
    CALLS = "calls"
    PER_CALL = "mean_ns"


def identity(fp: Fingerprint) -> tuple[tuple[str, str], ...]:
    """What must agree between runs of one side (scope, graph mode, GPU model), as
    (property, value) pairs."""
    return _identity(fp)


def stats(fp: Fingerprint, kind: KeyKind) -> Iterable[tuple[str, int, int]]:
    """(key, calls, total_ns) of each key of ``kind`` in ``fp``."""
    return _stats(fp, kind)


def _identity(fp: Fingerprint) -> tuple[tuple[str, str], ...]:
    """What must agree between runs of one side, as (property, value) pairs."""
    s = fp.scope
    scope = f"window={s.window} origin={s.window_origin} nvtx={s.nvtx} per={s.per} skip_first={s.skip_first}"
    gpus = ", ".join(sorted(g.name for g in fp.meta.gpus)) or "unknown"
    return (("scope", scope), ("graph mode", fp.meta.graph_mode.value), ("GPU model", gpus))


def check_comparable(runs: Sequence[Fingerprint], sources: Sequence[str]) -> None:
    """Raise naming the odd run out when the runs of one side differ in scope, graph
    mode or GPU model: their differences would pass for noise.

    The odd one is a run that disagrees with the most common value (ties go to the
    earlier run, so with two runs the second is named against the first).
    """
    for prop in range(3):
        values = [_identity(fp)[prop][1] for fp in runs]
        common = Counter(values).most_common(1)[0][0]
        for source, value in zip(sources, values, strict=True):
            if value != common:
                name = _identity(runs[0])[prop][0]
                ref = sources[values.index(common)]
                raise UsageError(
                    f"{source}: {name} {value!r} differs from the other runs of its side "
                    f"({ref}: {common!r}); runs of one side must be captured alike"
                )


def check_distinct(runs: Sequence[Fingerprint], sources: Sequence[str]) -> None:
    """Raise naming two runs that are one capture: identical fingerprints, whatever the
    file names. Two real runs never agree on every kernel's total to the nanosecond, and a
    capture counted twice fakes statistics: zero noise in a profile, a point interval
    marked "changed" in a diff."""
    seen: dict[str, str] = {}
    for fp, source in zip(runs, sources, strict=True):
        key = _capture(fp)
        if key in seen:
            raise UsageError(
                f"{source}: the same capture as {seen[key]} (identical fingerprints); each run of a "
                "side must be a capture of its own, or the statistics count one run twice"
            )
        seen[key] = source


def check_apart(base: RunSet, candidate: RunSet) -> None:
    """Raise naming a candidate run that is also a run of the base (identical
    fingerprints), where a side has several runs: the base's interval would then hold the
    candidate itself. One run against itself is a self-diff, a sanity check, and passes."""
    if len(base.runs) < 2 and len(candidate.runs) < 2:
        return
    based = {_capture(fp): source for fp, source in zip(base.runs, base.sources, strict=True)}
    for fp, source in zip(candidate.runs, candidate.sources, strict=True):
        twin = based.get(_capture(fp))
        if twin is not None:
            raise UsageError(
                f"{source}: the same capture as the base run {twin} (identical fingerprints); a candidate "
                "run must be a capture of its own, or the comparison counts one run on both sides"
            )


def _capture(fp: Fingerprint) -> str:
    """What tells captures apart: the fingerprint, whatever file it came from."""
    anonymous = dataclasses.replace(fp, meta=dataclasses.replace(fp.meta, source=""))
    return hashlib.sha256(fingerprint_to_json(anonymous).encode("utf-8", "surrogatepass")).hexdigest()


def exact_counts(fp: Fingerprint) -> dict[str, Fraction]:
    """What a repeat of one build reproduces exactly: calls per kernel, copies and bytes
    per kind, memsets, synchronising calls, each per step when the run was read per step
    (two captures of one loop may hold another number of steps)."""
    steps = fp.scope.steps or 1
    counts = {f"calls of {k.name}": k.calls for k in fp.kernels}
    counts |= {f"{c.kind} copies": c.ops for c in fp.memcpy} | {f"{c.kind} bytes": c.bytes for c in fp.memcpy}
    counts |= {"memsets": sum(c.ops for c in fp.memset)} | {f"{s.name} calls": s.calls for s in fp.sync}
    return {key: Fraction(n, steps) for key, n in counts.items() if n}


def check_repeats(runs: Sequence[Fingerprint], sources: Sequence[str]) -> None:
    """Raise naming the first run whose exact counts differ from the first run's: such
    runs are not repeats of one build (batch 1 beside batch 16, one run with an extra
    ``.item()``), and a median across them would vote a fact away."""
    first = exact_counts(runs[0])
    for fp, source in zip(runs[1:], sources[1:], strict=True):
        counts = exact_counts(fp)
        for key in sorted(first.keys() | counts.keys()):
            a, b = first.get(key, Fraction(0)), counts.get(key, Fraction(0))
            if a != b:
                unit = " per step" if fp.scope.steps else ""
                raise UsageError(
                    f"{source}: not a repeat of {sources[0]}: {key}{unit} {_count(b)} against {_count(a)}; "
                    "the runs of one side must be one build, whose exact counts agree (give --mixed-runs "
                    "to compare their median runs anyway)"
                )


def _count(value: Fraction) -> str:
    return f"{int(value):,}" if value.denominator == 1 else f"{float(value):,.2f}"


def run_set(runs: Sequence[Fingerprint], sources: Sequence[str]) -> RunSet:
    """A checked run set (at least one run, all comparable)."""
    if not runs:
        raise UsageError("a side needs at least one run")
    check_comparable(runs, sources)
    return RunSet(tuple(runs), tuple(sources))


def run_set_to_json(rs: RunSet) -> str:
    """The run set as one JSON document: each run exactly as ``nsysdiff fingerprint`` writes it."""
    runs = ",\n".join(fingerprint_to_json(fp).rstrip("\n") for fp in rs.runs)
    return f'{{"format": "{RUN_SET_FORMAT}", "version": {RUN_SET_VERSION}, "runs": [\n{runs}\n]}}\n'


def is_run_set(doc: object) -> bool:
    return isinstance(doc, dict) and doc.get("format") == RUN_SET_FORMAT


def run_set_from_json(text: str, source: str) -> RunSet:
    """A run set from its JSON document, each run validated as a fingerprint of its own
    (errors name the run: ``FILE runs[2]: ...``)."""
    from nsysdiff.fingerprint import validation

    doc = validation.parse(text, source)
    if not is_run_set(doc):
        raise FingerprintError(f'{source}: not an nsysdiff run set (no "format": "{RUN_SET_FORMAT}")')
    if doc.get("version") != RUN_SET_VERSION:
        raise FingerprintError(
            f"{source}: run-set format version {doc.get('version')!r} is not supported "
            f"(this nsysdiff reads version {RUN_SET_VERSION})"
        )
    runs = doc.get("runs")
    if not isinstance(runs, list) or not runs:
        raise FingerprintError(f"{source}: runs: expected a non-empty list of fingerprints")
    # The envelope (schemas/run-set.schema.json), before any run is read as a fingerprint.
    validation.check_schema(doc, source, schema="run-set", what="run set")
    sources = [f"{source} runs[{i}]" for i in range(len(runs))]
    # Each run goes through the whole single-fingerprint path: one validator, one truth.
    fps = []
    for run, where in zip(runs, sources, strict=True):
        check_stopped(where)  # thousands of runs: a Ctrl-C must not wait for all of them
        fps.append(fingerprint_from_json(validation.redump(run), where))
    try:
        return run_set(fps, sources)
    except UsageError as e:
        raise FingerprintError(str(e)) from None


_Stat = tuple[str, int, int]  # key, calls, total_ns


def _step_stats(fp: Fingerprint) -> Iterable[_Stat]:
    """Keys of the steps: ``period``, ``duration``, ``part:NAME`` and ``calls:FAMILY``; each
    with the steps as its calls (families: their calls) so that values come out per step."""
    s = fp.steps
    if s is None or not s.steps:
        return ()
    n = len(s.steps)
    out: list[_Stat] = [
        ("period", n, sum(x.period_ns for x in s.steps)),
        ("duration", n, sum(x.duration_ns for x in s.steps)),
    ]
    for part in StepPart:
        total = sum(x.parts.of(part) for x in s.steps)
        if total > 0:  # a part that never happens has no log to compare
            out.append((f"part:{part.value}", n, total))
    for fam in HostFamily:
        calls = [x.calls_of(fam) for x in s.steps]
        if sum(c.calls for c in calls):
            out.append((f"calls:{fam.value}", sum(c.calls for c in calls), sum(c.total_ns for c in calls)))
    return out


def _stats(fp: Fingerprint, kind: KeyKind) -> Iterable[_Stat]:
    if kind is KeyKind.STEP:
        return _step_stats(fp)
    if kind is KeyKind.KERNEL:
        return ((k.demangled, k.calls, k.total_ns) for k in fp.kernels)
    if kind is KeyKind.CATEGORY:
        return ((g.name, g.calls, g.total_ns) for g in fp.categories)
    if kind is KeyKind.COPY:
        return ((c.kind, c.ops, c.total_ns) for c in (*fp.memcpy, *fp.memset))
    if kind is KeyKind.NVTX:
        return ((f"{r.domain}:{r.name}" if r.domain else r.name, r.count, r.total_ns) for r in fp.nvtx)
    families: dict[str, list[int]] = {}
    for k in fp.kernels:
        acc = families.setdefault(k.family, [0, 0])
        acc[0] += k.calls
        acc[1] += k.total_ns
    return ((name, c, t) for name, (c, t) in families.items())


_MEASURES: dict[Measure, Callable[[int, int], float]] = {
    Measure.TOTAL: lambda calls, total: float(total),
    Measure.CALLS: lambda calls, total: float(calls),
    Measure.PER_CALL: lambda calls, total: total / calls,
}


@dataclass(frozen=True, slots=True)
class RunValues:
    """One value per run per key of one kind, for the keys every run has; the keys that
    only some runs have are listed apart (a structural change, not noise)."""

    values: dict[str, tuple[float, ...]]
    partial: tuple[str, ...]


def per_run_values(rs: RunSet, kind: KeyKind, measure: Measure, *, per_step: bool = False) -> RunValues:
    """Each key's value in every run, in run order. Keys with a zero total or no calls
    in some run count as partial: their log is undefined and the key did not run.

    ``per_step``: totals and calls divided by each run's step count (``--per``), so that
    runs with different numbers of steps compare per step, as their diff does.
    """
    value = _MEASURES[measure]
    per_run = [{key: (calls, total) for key, calls, total in _stats(fp, kind)} for fp in rs.runs]
    divide = [(fp.scope.steps or 1) if per_step and measure is not Measure.PER_CALL else 1 for fp in rs.runs]
    if kind is KeyKind.STEP:
        # Step keys are always per step: totals and calls over the run's own steps. A part's
        # "calls" are its steps, so its total measure and its per-call mean are both the
        # mean per step; a family's calls are its calls per step, exact.
        divide = [
            len(fp.steps.steps) if fp.steps and fp.steps.steps and measure is not Measure.PER_CALL else 1
            for fp in rs.runs
        ]
    every = set.union(*(set(r) for r in per_run))
    values: dict[str, tuple[float, ...]] = {}
    partial: list[str] = []
    for key in sorted(every):
        seen = [r.get(key, (0, 0)) for r in per_run]
        if any(calls <= 0 or total <= 0 for calls, total in seen):
            partial.append(key)
        else:
            values[key] = tuple(value(calls, total) / n for (calls, total), n in zip(seen, divide, strict=True))
    return RunValues(values, tuple(partial))
