"""The fingerprint: one trace reduced to plain, typed, frozen data.

A fingerprint is the artifact CI keeps instead of a multi-gigabyte trace. It round-trips
through JSON (``to_json`` / ``from_json``) with a format version, and a diff of two
fingerprints is identical to a diff of the traces they came from.
"""

from __future__ import annotations

import dataclasses
import enum
import types
import typing
from dataclasses import dataclass, field
from typing import Any, TypeVar, Union

from nsysdiff.errors import FingerprintError
from nsysdiff.fingerprint.steps import COUNTED_BEFORE_MEMSETS, Step, Steps, StepSeries

# The records the reader hands on as they are, kept in the trace stage that makes them;
# imported here because the fields below name them (from_data resolves the hints here).
from nsysdiff.trace.records import (
    QUANTILE_GRID,
    ApiStats,
    CopyStats,
    GpuInfo,
    GraphMode,
    GraphStats,
    HostApiStats,
    LaunchConfig,
    RankStats,
    idle_pct,
)

FORMAT = "nsysdiff-fingerprint"
FORMAT_VERSION = 2
# Version 1 is version 2 without ``steps``: it still reads, with steps absent. ``api`` (the
# host API census) is optional in version 2: a file saved before it reads with it absent,
# and a reader that predates it loses nothing it knew.
READABLE_VERSIONS = (1, 2)
# A kernel's launch configurations carry their local memory and their launches in version 2
# as optional fields (LaunchConfig: None when unknown): a file saved before they were kept
# reads with them unknown, never as none, and a 2.x reader that predates them ignores them,
# so baselines stay readable both ways and the format's version (the release's major) holds.


@dataclass(frozen=True, slots=True)
class TraceMeta:
    source: str
    nsys_version: str | None
    schema_version: str | None
    gpus: tuple[GpuInfo, ...]
    capture_start_ns: int | None
    capture_end_ns: int | None
    has_kernels: bool
    graph_mode: GraphMode = GraphMode.NONE
    graph_launches: int = 0
    graph_total_ns: int = 0

    @property
    def capture_ns(self) -> int | None:
        if self.capture_start_ns is None or self.capture_end_ns is None:
            return None
        return self.capture_end_ns - self.capture_start_ns


@dataclass(frozen=True, slots=True)
class DeviceShare:
    device: int
    calls: int
    total_ns: int


@dataclass(frozen=True, slots=True)
class KernelStats:
    """All launches of one kernel, keyed by its demangled name (as ``nsys stats`` does)."""

    name: str
    demangled: str
    family: str
    category: str
    calls: int
    total_ns: int
    quantiles_ns: tuple[float, ...]  # on QUANTILE_GRID, linear interpolation
    devices: tuple[DeviceShare, ...]
    configs: tuple[LaunchConfig, ...]
    # The mangled name (nsys 2022.1 on); None where the export has none, and in
    # fingerprints saved before it was kept.
    mangled: str | None = None

    @property
    def mean_ns(self) -> float:
        return self.total_ns / self.calls if self.calls else 0.0

    @property
    def min_ns(self) -> float:
        return self.quantiles_ns[0]

    @property
    def max_ns(self) -> float:
        return self.quantiles_ns[-1]

    def quantile(self, pct: float) -> float:
        return self.quantiles_ns[QUANTILE_GRID.index(pct)]

    @property
    def p50_ns(self) -> float:
        return self.quantile(50.0)

    @property
    def p90_ns(self) -> float:
        return self.quantile(90.0)

    @property
    def p99_ns(self) -> float:
        return self.quantile(99.0)


@dataclass(frozen=True, slots=True)
class GroupStats:
    """A sum over kernels: a category or a family."""

    name: str
    calls: int
    total_ns: int
    kernels: int


@dataclass(frozen=True, slots=True)
class RangeStats:
    """NVTX ranges with one (folded) name in one domain."""

    name: str
    domain: str
    count: int
    total_ns: int


@dataclass(frozen=True, slots=True)
class DeviceStats:
    device: int
    kernels: int
    kernel_ns: int
    busy_ns: int  # union of kernel intervals
    span_ns: int  # first kernel start to last kernel end on this device

    @property
    def idle_pct(self) -> float:
        return idle_pct(self.busy_ns, self.span_ns)


@dataclass(frozen=True, slots=True)
class Scope:
    """What part of the trace a fingerprint covers (whole capture, a window, NVTX ranges)."""

    window: str | None = None
    nvtx: str | None = None
    per: str | None = None
    steps: int | None = None
    coverage: float | None = None  # attributed GPU time / all GPU time, when filtered
    window_origin: str | None = None  # "kernel" (first kernel start) or "capture"
    skip_first: int = 0  # instances of the --per (else --nvtx) range dropped as warm-up


@dataclass(frozen=True, slots=True)
class Fingerprint:
    meta: TraceMeta
    kernels: tuple[KernelStats, ...]
    categories: tuple[GroupStats, ...]
    memcpy: tuple[CopyStats, ...]
    memset: tuple[CopyStats, ...]
    sync: tuple[ApiStats, ...]
    nvtx: tuple[RangeStats, ...]
    devices: tuple[DeviceStats, ...]
    scope: Scope = field(default_factory=Scope)
    phases: tuple[Phase, ...] = ()
    graphs: tuple[GraphStats, ...] = ()  # per graph id, graph-mode captures only
    # Per rank, when the trace holds several (process, device) pairs; () otherwise and in
    # fingerprints saved before ranks were kept.
    ranks: tuple[RankStats, ...] = ()
    # The steps (docs/steps.md), when made with a step range; None otherwise and in
    # version-1 fingerprints.
    steps: Steps | None = None
    # The host API census (every runtime call name, as nsys stats' cuda_api_sum); None in
    # fingerprints saved before it was kept and in a phase's fingerprint, () in a trace
    # without a runtime table.
    api: tuple[HostApiStats, ...] | None = None

    @property
    def kernel_calls(self) -> int:
        return sum(k.calls for k in self.kernels)

    @property
    def kernel_ns(self) -> int:
        return sum(k.total_ns for k in self.kernels)

    @property
    def busy_ns(self) -> int:
        return sum(d.busy_ns for d in self.devices)


@dataclass(frozen=True, slots=True)
class Phase:
    """The GPU work attributed to one named phase (NVTX ranges mapped by a phases map)."""

    name: str
    ranges: int  # instances of the phase's ranges
    fingerprint: Fingerprint
    patterns: tuple[str, ...] = ()  # the NVTX patterns that define the phase


# --- JSON round trip -------------------------------------------------------------------

T = TypeVar("T")


def to_data(obj: Any, *, lazy: bool = False) -> Any:
    """Plain JSON-able data: dataclasses become dicts, tuples lists, enums their values.

    ``lazy``: the steps become a list made one step at a time as it is written, for
    :func:`nsysdiff.safe.neutral.json_stream` only (a long capture has 100,000s of steps).
    """
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {f.name: to_data(getattr(obj, f.name), lazy=lazy) for f in dataclasses.fields(obj)}
    if isinstance(obj, enum.Enum):
        return obj.value
    if isinstance(obj, StepSeries) and lazy:
        from nsysdiff.safe.neutral import LazyRows

        return LazyRows(obj, to_data)
    if isinstance(obj, (tuple, list, StepSeries)):
        return [to_data(x, lazy=lazy) for x in obj]
    if isinstance(obj, dict):
        return {k: to_data(v, lazy=lazy) for k, v in obj.items()}
    return obj


def from_data(cls: type[T], data: Any, where: str = "$") -> T:
    """Rebuild ``cls`` from :func:`to_data` output, checking shapes as it goes."""
    return typing.cast(T, _build(cls, data, where))


def _build(tp: Any, data: Any, where: str) -> Any:
    if tp is StepSeries:
        return StepSeries(_build(tuple[Step, ...], data, where))
    origin = typing.get_origin(tp)
    if origin in (Union, types.UnionType):
        args = typing.get_args(tp)
        if data is None and type(None) in args:
            return None
        real = [a for a in args if a is not type(None)]
        return _build(real[0], data, where)
    if origin is tuple:
        return _build_tuple(typing.get_args(tp), data, where)
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        return _build_record(tp, data, where)
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        try:
            return tp(data)
        except ValueError:
            raise FingerprintError(f"{where}: unknown value {data!r}") from None
    return _build_scalar(tp, data, where)


def _build_tuple(args: tuple[Any, ...], data: Any, where: str) -> tuple[Any, ...]:
    if not isinstance(data, list):
        raise FingerprintError(f"{where}: expected a list")
    if len(args) == 2 and args[1] is Ellipsis:
        return tuple(_build(args[0], x, f"{where}[{i}]") for i, x in enumerate(data))
    if len(args) != len(data):
        raise FingerprintError(f"{where}: expected {len(args)} items")
    return tuple(_build(a, x, f"{where}[{i}]") for i, (a, x) in enumerate(zip(args, data, strict=True)))


def _build_record(tp: type, data: Any, where: str) -> Any:
    if not isinstance(data, dict):
        raise FingerprintError(f"{where}: expected an object")
    hints = typing.get_type_hints(tp)
    kwargs = {}
    for f in dataclasses.fields(tp):
        if f.name in data:
            kwargs[f.name] = _build(hints[f.name], data[f.name], f"{where}.{f.name}")
        elif f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
            raise FingerprintError(f"{where}: missing field {f.name!r}")
    return tp(**kwargs)


def _build_scalar(tp: Any, data: Any, where: str) -> Any:
    if tp is float:
        if isinstance(data, bool) or not isinstance(data, (int, float)):
            raise FingerprintError(f"{where}: expected a number")
        return float(data)
    if tp in (int, str, bool):
        if not isinstance(data, tp) or (tp is int and isinstance(data, bool)):
            raise FingerprintError(f"{where}: expected {tp.__name__}")
        return data
    raise TypeError(f"unsupported type {tp!r} at {where}")


def fingerprint_to_json(fp: Fingerprint) -> str:
    from nsysdiff.safe import neutral  # the same inert JSON as every report (lossless)

    doc = {"format": FORMAT, "version": FORMAT_VERSION, **to_data(fp, lazy=True)}
    return neutral.json_stream(doc) + "\n"


# nsysdiff's other JSON documents, named when one is given where a trace belongs.
_OTHER_DOCUMENTS = {
    "nsysdiff-noise-profile": "a noise profile (nsysdiff noise): give it with --noise-profile FILE",
    "nsysdiff-diff": "a diff report (nsysdiff -o report.json): give the traces or fingerprints it compared",
    "nsysdiff-summary": "a summary (nsysdiff summary --format json): give the trace it summarises",
    "nsysdiff-run-set": "a run set of several runs (nsysdiff fingerprint --run-set): give one run's trace or "
    "fingerprint here, or the run set to nsysdiff diff as a side (--base FILE or --candidate FILE)",
}


def fingerprint_from_json(text: str, source: str) -> Fingerprint:
    from nsysdiff.fingerprint import validation  # jsonschema loads only when a fingerprint is read

    doc = validation.parse(text, source)
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        other = _OTHER_DOCUMENTS.get(str(doc.get("format"))) if isinstance(doc, dict) else None
        hint = f"; it is {other}" if other else ""
        raise FingerprintError(f'{source}: not an nsysdiff fingerprint (no "format": "{FORMAT}"){hint}')
    version = doc.get("version")
    if isinstance(version, bool) or version not in READABLE_VERSIONS:
        raise FingerprintError(
            f"{source}: fingerprint format version {version!r} is not supported "
            f"(this nsysdiff reads versions {', '.join(map(str, READABLE_VERSIONS))}); "
            "re-create it with `nsysdiff fingerprint`"
        )
    if version == 1 and doc.get("steps") is not None:
        raise FingerprintError(f"{source}: malformed fingerprint at $.steps: version 1 has no steps")
    validation.check_schema(doc, source)
    validation.check_semantics(doc, source)
    body = _counted_before_memsets({k: v for k, v in doc.items() if k not in ("format", "version")})
    try:
        return current_taxonomy(from_data(Fingerprint, body))
    except FingerprintError as e:
        raise FingerprintError(f"{source}: malformed fingerprint at {e}") from None


def _counted_before_memsets(body: dict[str, Any]) -> dict[str, Any]:
    """``body`` with the families its steps counted stated: steps saved without ``counted``
    were saved before memset calls were counted, so their memsets are unknown, not none.
    The phases' fingerprints likewise."""
    steps = body.get("steps")
    if isinstance(steps, dict) and "counted" not in steps:
        body = {**body, "steps": {**steps, "counted": [f.value for f in COUNTED_BEFORE_MEMSETS]}}
    phases = body.get("phases")
    if isinstance(phases, list):
        body = {
            **body,
            "phases": [
                {**p, "fingerprint": _counted_before_memsets(p["fingerprint"])}
                if isinstance(p, dict) and isinstance(p.get("fingerprint"), dict)
                else p
                for p in phases
            ],
        }
    return body


def current_taxonomy(fp: Fingerprint) -> Fingerprint:
    """``fp`` with its kernels placed by this version's taxonomy: a category is derived from
    the names, and a baseline saved by an earlier version must meet its candidate under the
    same categories (a convolution once saved as element-wise is a convolution now)."""
    from nsysdiff.fingerprint.categories import categorize

    kernels = tuple(dataclasses.replace(k, category=categorize(k.name, k.demangled)) for k in fp.kernels)
    if all(k.category == old.category for k, old in zip(kernels, fp.kernels, strict=True)) and not fp.phases:
        return fp
    acc: dict[str, list[int]] = {}
    for k in kernels:
        a = acc.setdefault(k.category, [0, 0, 0])
        a[0], a[1], a[2] = a[0] + k.calls, a[1] + k.total_ns, a[2] + 1
    groups = sorted((GroupStats(n, c, t, m) for n, (c, t, m) in acc.items()), key=lambda g: (-g.total_ns, g.name))
    phases = tuple(dataclasses.replace(p, fingerprint=current_taxonomy(p.fingerprint)) for p in fp.phases)
    return dataclasses.replace(fp, kernels=kernels, categories=tuple(groups), phases=phases)
