"""Scopes: the part of a trace a fingerprint covers (documented in ``docs/scopes.md``).

A scope is built from :class:`ScopeOptions` (``--window``, ``--window-origin``,
``--skip-first``, ``--nvtx``, ``--per``, ``--phases``) and applied while a trace is read:

* **Window**: GPU work whose start lies in ``[origin + START, origin + END)``; the origin is
  the first kernel's start (default) or the capture start.
* **NVTX attribution**: a CUDA runtime/driver call belongs to a range when the call lies
  inside it (``range.start <= call.start`` and ``call.end <= range.end``). Push/pop ranges
  are per thread, so the call must be on the thread that pushed the range; start/end
  ranges are process-wide (they may end on another thread), so the call must be in the
  process of the thread that started the range. The GPU work of a kept call (kernels,
  copies, memsets) is then found through its ``(process, correlationId)``.
* **Skip-first N**: per process, everything launched before the start of the (N+1)-th
  instance of the ``--per`` range (else of the ``--nvtx`` range) is warm-up and dropped.
* **Per**: the number of instances of the ``--per`` range inside the scope becomes the
  fingerprint's ``steps``, by which a diff divides every figure.

Attribution runs in SQLite with bounded memory (the reader's ``Attribution``): the ranges
of one thread (or process) carry, in start order, the running maximum of their ends, and a
call is inside one when the last range start at or before it reaches its end, so nesting
and overlap cost nothing extra: a sort of the M ranges and one index lookup per call.
Only the distinct range names reach Python.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from decimal import Decimal
from pathlib import Path
from typing import Any

import numpy as np

from nsysdiff import units
from nsysdiff.errors import UsageError
from nsysdiff.fingerprint import step_figures
from nsysdiff.fingerprint.model import Fingerprint, Phase, Scope
from nsysdiff.fingerprint.read import Part, read
from nsysdiff.fingerprint.reduce import assemble, fold_nvtx
from nsysdiff.fingerprint.steps import Steps
from nsysdiff.safe import yamldoc
from nsysdiff.safe.regex import RegexError
from nsysdiff.safe.regex import compile as compile_regex
from nsysdiff.trace.autosteps import FoundSteps, NoStepsError
from nsysdiff.trace.reader import TraceReader
from nsysdiff.trace.records import Attribution, Metadata, Selection, Window

WINDOW_ORIGINS = ("kernel", "capture")
# ``--per auto``: steps found without a marker (docs/steps.md), not an NVTX range.
AUTO = "auto"
_UNITS = {"ns": 1, "us": 1_000, "µs": 1_000, "ms": 1_000_000, "s": 1_000_000_000}
_BOUND = re.compile(r"^(?P<num>\d+(?:\.\d*)?|\.\d+)\s*(?P<unit>ns|us|µs|ms|s)?$")
_NO_END = np.iinfo(np.int64).max

# --- options ----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class TimeWindow:
    """A window relative to its origin: ``[start_ns, end_ns)``, ``end_ns`` None = open."""

    start_ns: int
    end_ns: int | None

    @property
    def text(self) -> str:
        return f"{format_ns(self.start_ns)}:{'' if self.end_ns is None else format_ns(self.end_ns)}"


def format_ns(ns: int) -> str:
    """The largest unit that states ``ns`` exactly: 2000000000 -> "2s", 1500000 -> "1500us"."""
    for unit in ("s", "ms", "us"):
        if ns and ns % _UNITS[unit] == 0:
            return f"{ns // _UNITS[unit]}{unit}"
    return f"{ns}ns" if ns else "0s"


def _bound(text: str, window: str) -> int | None:
    text = text.strip()
    if not text:
        return None
    m = _BOUND.match(text)
    if m is None or (m["unit"] is None and Decimal(m["num"]) != 0):
        raise UsageError(
            f"--window {window!r}: {text!r} is not a time; write a number with a unit "
            "(ns, us, ms, s), e.g. --window 2s:5s or --window 500ms:"
        )
    # Exact (a float turns 400 digits into infinity): a bound is a timestamp's offset,
    # which nsys writes as int64 nanoseconds.
    ns = round(Decimal(m["num"]) * _UNITS[m["unit"] or "ns"])
    if ns > _NO_END:
        raise UsageError(f"--window {window!r}: {text[:40]!r} is past int64 nanoseconds (292 years)")
    return ns


def parse_window(text: str) -> TimeWindow:
    """Parse ``START:END`` (either side may be empty); raises :class:`UsageError`."""
    if text.count(":") != 1:
        raise UsageError(f"--window {text!r}: expected START:END, e.g. 2s:5s, 500ms: or :3s")
    a, b = text.split(":")
    start, end = _bound(a, text), _bound(b, text)
    if start is None and end is None:
        raise UsageError(f"--window {text!r}: give a start, an end or both, e.g. 2s:5s")
    start = start or 0
    if end is not None and end <= start:
        raise UsageError(f"--window {text!r}: the end must be after the start")
    return TimeWindow(start, end)


@dataclass(frozen=True, slots=True)
class RangePattern:
    """``NAME[@DOMAIN]``: NAME and DOMAIN match a folded range name exactly or as a regex."""

    text: str
    name: str
    domain: str | None

    def matches(self, name: str, domain: str) -> bool:
        return _match(self.name, name) and (self.domain is None or _match(self.domain, domain))


def _match(pattern: str, value: str) -> bool:
    if pattern == value:
        return True
    try:
        # Linear time: a pattern from a rule or phases file must not hang on a long name.
        return compile_regex(pattern).fullmatch(value)
    except RegexError:
        return False


def parse_pattern(text: str, option: str = "--nvtx") -> RangePattern:
    name, at, domain = text.rpartition("@")
    if not at:
        name, domain = text, ""
    if not name.strip():
        raise UsageError(f"{option} {text!r}: expected an NVTX range name, NAME or NAME@DOMAIN")
    for part in (name, domain) if at else (name,):
        try:
            compile_regex(part)
        except RegexError as e:
            # Refused, as rule files refuse it: taken as a literal, a typo would match nothing.
            hint = "no lookaround, no backreferences; " if e.unsupported else ""
            raise UsageError(
                f"{option} {text!r}: bad regex {part!r}: {e} (patterns are RE2: {hint}escape a "
                "character such as ( or [ with a backslash to match it as it is)"
            ) from None
    return RangePattern(text, name, domain if at else None)


PhaseMap = tuple[tuple[str, tuple[str, ...]], ...]


@dataclass(frozen=True, slots=True)
class ScopeOptions:
    """What part of a trace to fingerprint; validated on construction (UsageError)."""

    window: str | None = None
    window_origin: str = "kernel"  # "kernel": first kernel start; "capture": capture start
    skip_first: int = 0  # applies to the --per range, else to the --nvtx range
    nvtx: str | None = None
    per: str | None = None
    phases: PhaseMap = ()  # (phase name, NVTX patterns), in file order
    # Without --per: step ranges a rule pack names (`steps: range:`), tried in order; the
    # first the trace has becomes its --per (find_steps).
    step_ranges: tuple[str, ...] = ()
    # With step_ranges: a trace that has none of them is read per steps found without a
    # marker when it has those, else whole (the pipeline's fallbacks, decided while the
    # trace is open, so that a serving trace without markers is read once, not twice).
    auto_fallback: bool = False

    def __post_init__(self) -> None:
        if self.window is not None:
            parse_window(self.window)
        if self.window_origin not in WINDOW_ORIGINS:
            raise UsageError(f"--window-origin {self.window_origin!r}: expected one of {', '.join(WINDOW_ORIGINS)}")
        if self.skip_first < 0:
            raise UsageError(f"--skip-first {self.skip_first}: must be 0 or more")
        if self.skip_first and self.per is None and self.nvtx is None:
            raise UsageError("--skip-first needs the range to count: give --per RANGE or --nvtx RANGE")
        if self.nvtx is not None:
            parse_pattern(self.nvtx)
        if self.per is not None and self.per != AUTO:
            parse_pattern(self.per, "--per")
        for name, patterns in self.phases:
            for p in patterns:
                parse_pattern(p, f"phase {name!r}:")
        for p in self.step_ranges:
            parse_pattern(p, "steps: range:")

    @property
    def active(self) -> bool:
        return bool(self.window or self.nvtx or self.per or self.skip_first or self.phases)

    @property
    def window_text(self) -> str | None:
        return None if self.window is None else parse_window(self.window).text

    def scope(self, steps: int | None = None, coverage: float | None = None) -> Scope:
        return Scope(
            window=self.window_text,
            nvtx=self.nvtx,
            per=self.per,
            steps=steps,
            coverage=coverage,
            window_origin=self.window_origin if self.window else None,
            skip_first=self.skip_first,
        )


def load_phases(path: str | Path) -> PhaseMap:
    """Read ``phases:`` (name -> pattern or list of patterns) from a YAML file."""
    p = Path(path)
    doc = yamldoc.load_plain(p, str(p), UsageError)
    if not isinstance(doc, dict) or "phases" not in doc:
        raise UsageError(f"{p}: expected a top-level `phases:` mapping (phase name -> NVTX patterns)")
    return parse_phases(doc["phases"], str(p))


def parse_phases(data: Any, source: str) -> PhaseMap:
    """Validate a ``phases:`` mapping; errors name the file and the phase."""
    if not isinstance(data, dict) or not data:
        raise UsageError(f"{source}: phases: expected a mapping of phase name -> NVTX patterns")
    out = []
    for name, value in data.items():
        if not isinstance(name, str) or not name.strip():
            raise UsageError(f"{source}: phases: phase names must be non-empty strings, got {name!r}")
        items = [value] if isinstance(value, str) else value
        if not isinstance(items, list) or not items or not all(isinstance(x, str) and x for x in items):
            raise UsageError(f"{source}: phases: {name}: expected an NVTX pattern or a list of patterns")
        for x in items:
            parse_pattern(x, f"{source}: phases: {name}:")
        out.append((name, tuple(items)))
    return tuple(out)


# --- attribution ------------------------------------------------------------------------


class _Scoper:
    """Applies one :class:`ScopeOptions` to one open trace.

    Python decides which range names each option matches (on the few distinct names);
    the reader does the rest in SQLite (:class:`~nsysdiff.trace.reader.Attribution`).
    """

    def __init__(self, r: TraceReader, options: ScopeOptions) -> None:
        self.r = r
        self.o = options
        self._meta: Metadata | None = None
        self.window = self._window()
        # Distinct (folded name, domain) -> code; SQL-folded names that fold to the same
        # name share a code.
        self.auto = options.per == AUTO
        self.keys = r.nvtx_keys() if (options.nvtx or (options.per and not self.auto) or options.phases) else ()
        self._unique: dict[tuple[str, str], int] = {}
        self._code = [self._unique.setdefault((fold_nvtx(k.sql_name), k.domain), len(self._unique)) for k in self.keys]
        self.nvtx = self._mask(options.nvtx, "--nvtx") if options.nvtx else None
        self.per = self._mask(options.per, "--per") if options.per and not self.auto else None
        if self.per is not None and options.per is not None:
            instances = sum(k.count for k, c in zip(self.keys, self._code, strict=True) if c in self.per)
            reason = implausible_steps(r, instances)
            if reason:
                raise UsageError(f"--per {options.per!r}: {reason}")
        self.phase_masks = tuple(self._phase_mask(name, patterns) for name, patterns in options.phases)
        used = set().union(*(m for m in (self.nvtx, self.per, *self.phase_masks) if m))
        if used:
            r.load_ranges([(k, c) for k, c in zip(self.keys, self._code, strict=True) if c in used])
        self.cut = self._skip()
        # The census covers the scope's window, also when the steps narrow the GPU work.
        self.census_window = self.window
        self.found = self._find() if self.auto else None

    def _find(self) -> FoundSteps:
        """The steps found without a marker; the kernels read are those inside them."""
        found = self.r.auto_steps(self.window)
        k = self.o.skip_first
        if k:
            if len(found) <= k:
                raise UsageError(
                    f"--skip-first {k}: {self.r.path.name} has {len(found)} steps found without a marker, "
                    "so nothing would be left"
                )
            found = replace(found, starts=found.starts[k:], ends=found.ends[k:])
        inner = Window(int(found.starts[0]), int(found.ends[-1]))
        if self.window is not None:
            inner = Window(max(inner.start_ns, self.window.start_ns), min(inner.end_ns, self.window.end_ns))
        self.window = inner
        return found

    @property
    def meta(self) -> Metadata:
        # Read after the first kernel read where it can be: a whole read learns the graph
        # mode that the metadata reports, which otherwise costs a scan of its own.
        if self._meta is None:
            self._meta = self.r.metadata()
        return self._meta

    # -- where the scope is -----------------------------------------------------------

    def _window(self) -> Window | None:
        if self.o.window is None:
            return None
        tw = parse_window(self.o.window)
        origin = None
        if self.o.window_origin == "kernel":
            origin = self.r.first_kernel_ns()
        if origin is None:
            origin = self.r.capture_origin(self.meta)
        if origin is None:
            origin = self.r.first_kernel_ns() or 0
        end = _NO_END if tw.end_ns is None else origin + tw.end_ns
        return Window(origin + tw.start_ns, end)

    def _empty_window(self) -> None:
        """A window that holds no kernel of a trace that has some is a bad scope (exit 2),
        not a trace without kernel data: name the window and where the kernels are."""
        span = self.r.kernel_span_ns()
        if span is None:
            return  # no kernel rows at all (NVTX-only or graph-mode): the diff says so
        if self.o.window is None:  # the window is only that of the steps found (--per auto)
            raise NoStepsError(
                f"{self.r.path}: --per auto: the trace's kernels take no GPU time (each ends where it starts), "
                "so its steps have nothing to measure"
            )
        assert self.window is not None
        origin = self.window.start_ns - parse_window(self.o.window).start_ns
        what = "the capture start" if self.o.window_origin == "capture" else "the first kernel"
        raise UsageError(
            f"--window {self.o.window}: no kernel of {self.r.path.name} starts in it; its kernels run "
            f"from {units.ns(span[0] - origin)} to {units.ns(span[1] - origin)} after {what}"
        )

    def _codes(self, pat: RangePattern) -> tuple[int, ...]:
        return tuple(i for i, (n, d) in enumerate(self._unique) if pat.matches(n, d))

    def _mask(self, text: str, option: str) -> tuple[int, ...]:
        mask = self._codes(parse_pattern(text, option))
        if not mask:
            present = sorted({n for n, _ in self._unique})
            shown = ", ".join(repr(n) for n in present[:8]) + (", ..." if len(present) > 8 else "")
            found = f"ranges present: {shown}" if present else "the trace has no NVTX ranges"
            raise UsageError(f"{option} {text!r}: no NVTX range in {self.r.path.name} matches ({found})")
        return mask

    def _phase_mask(self, name: str, patterns: Sequence[str]) -> tuple[int, ...]:
        codes: set[int] = set()
        for p in patterns:
            codes.update(self._codes(parse_pattern(p, f"phase {name!r}:")))
        return tuple(sorted(codes))

    def _skip(self) -> bool:
        if not self.o.skip_first or self.auto:
            return False
        mask = self.per if self.per is not None else self.nvtx
        assert mask is not None  # ScopeOptions guarantees --per or --nvtx
        if not self.r.make_cuts(mask, self.o.skip_first):
            label = self.o.per if self.o.per is not None else self.o.nvtx
            raise UsageError(
                f"--skip-first {self.o.skip_first}: {self.r.path.name} has no process with more "
                f"than {self.o.skip_first} instances of {label!r}, so nothing would be left"
            )
        return True

    def _att(self, within: Sequence[tuple[int, ...]]) -> Attribution:
        return Attribution(tuple(within), self.window, self.cut)

    # -- fingerprints -----------------------------------------------------------------

    def fingerprint(self) -> Fingerprint:
        # Per-step figures divide only what runs inside the steps: --per keeps the GPU
        # work launched inside its ranges, as --nvtx does.
        # The NVTX ranges listed are those of the --nvtx scope: a range that encloses the
        # steps (the whole decode loop) stays listed.
        ranges = [self.nvtx] if self.nvtx is not None else []
        within = [*ranges, self.per] if self.per is not None else ranges
        filtered = bool(within) or self.cut
        total = None
        if filtered or self.window is not None:
            # The denominator of coverage (and the empty-window check): the kernel time of
            # the window (the scope's, around steps found without a marker). An unfiltered
            # read has it from its own kernels (below).
            total = self.r.kernel_time_ns(Selection(window=self.census_window if self.auto else self.window))
            if self.window is not None and not total:
                self._empty_window()
        fp = self._build(within, ranges, "nsysdiff_scope", total, filtered=filtered, phase=False)
        if total is None:
            total = sum(k.total_ns for k in fp.kernels)
        phases = []
        for i, ((name, patterns), mask) in enumerate(zip(self.o.phases, self.phase_masks, strict=True)):
            instances = self.r.count_ranges(mask, self._att(ranges)) if mask else 0
            sub = self._build([*ranges, mask], [*ranges, mask], f"nsysdiff_phase{i}", total, filtered=True, phase=True)
            phases.append(Phase(name, instances, sub, patterns))
        return replace(fp, phases=tuple(phases), steps=self._steps())

    def _steps(self) -> Steps | None:
        if self.found is not None:
            f = self.found
            scanned = self.r.scan_steps(f.starts, f.ends, f.pid)
            return step_figures.build(AUTO, "", scanned, self.o.skip_first, found=f.said)
        if self.per is None or self.o.per is None:
            return None
        # The steps of the --nvtx scope (its window, warm-up cut and ranges).
        rows = self.r.steps(self.per, self._att([self.nvtx] if self.nvtx is not None else []))
        if rows is None:
            return None
        names = [k for i, k in enumerate(self._unique) if i in self.per]
        pattern = parse_pattern(self.o.per, "--per")
        name, domain = names[0] if len(names) == 1 else (pattern.name, pattern.domain or "")
        return step_figures.build(name, domain, rows, self.o.skip_first)

    def _build(
        self,
        within: list[tuple[int, ...]],
        ranges: list[tuple[int, ...]],
        table: str,
        total: int | None,
        *,
        filtered: bool,
        phase: bool,
    ) -> Fingerprint:
        r, o = self.r, self.o
        att = self._att(within)
        # The census counts every call of the window: a host call has no NVTX range to be
        # attributed through unless it launched something.
        part = Part(
            window=self.window,
            calls=att if filtered else None,
            ranges=self._att(ranges) if filtered else None,
            table=table,
            census=not phase,
            census_window=self.census_window,
        )
        tables = read(r, part, meta=lambda: self.meta)
        steps = None
        if self.per is not None:
            steps = r.count_ranges(self.per, att)
            if not steps and not phase:
                raise UsageError(
                    f"--per {o.per!r}: no instance of the range lies in the scope of "
                    f"{r.path.name} (check --window, --nvtx and --skip-first)"
                )
            steps = steps or None
        elif self.found is not None:
            steps = len(self.found)
        kernel_ns = int(tables.groups.total_ns.sum())
        coverage = kernel_ns / total if (filtered or self.auto) and total else None
        return assemble(r.path, tables, scope=o.scope(steps, coverage))


def find_steps(r: TraceReader, options: ScopeOptions, notify: Callable[[str], None]) -> ScopeOptions:
    """``options`` with the first of its step ranges that the trace has as ``--per``
    (docs/steps.md); unchanged when ``--per`` is given or the trace has none of them.
    A range whose instances can't be steps counts as absent, and ``notify`` hears why."""
    if options.per is not None or not options.step_ranges:
        return options
    keys = [(fold_nvtx(k.sql_name), k.domain, k.count) for k in r.nvtx_keys()]
    for text in options.step_ranges:
        pattern = parse_pattern(text, "steps: range:")
        instances = sum(c for n, d, c in keys if pattern.matches(n, d))
        if not instances:
            continue
        reason = implausible_steps(r, instances)
        if reason is None:
            return replace(options, per=text, step_ranges=())
        # The fallback, not a refusal: the user named no range, and the rest of the diff
        # stands without steps.
        notify(f"steps: range {text!r}: {reason}; read without steps")
    return replace(options, step_ranges=())


def implausible_steps(r: TraceReader, instances: int) -> str | None:
    """Why ``instances`` ranges of one name can't be the steps of a trace, or None.

    A step launches GPU work, so a trace holds at most one step per kernel launch (kernel
    rows plus whole-graph launches); up to :data:`STEPS_ALWAYS` steps pass whatever the
    launches, for traces cut to a few kernels. The rule bounds the cost of the step scan
    by the trace's own size: a million empty ranges added to a small trace would otherwise
    cost many times the trace's read (docs/steps.md, docs/security.md).
    """
    if instances <= STEPS_ALWAYS:
        return None
    launches = r.launch_count()
    if instances <= launches:
        return None
    return (
        f"{instances:,} instances in {r.path.name}, more than its {launches:,} kernel launches "
        f"(and over {STEPS_ALWAYS:,}); a step launches GPU work, so these ranges are not steps"
    )


STEPS_ALWAYS = 10_000
"""Step instances that pass whatever a trace's launches (:func:`implausible_steps`)."""


def same_steps(fps: Sequence[Fingerprint]) -> bool:
    """Whether every fingerprint was read per the same step range (or none was)."""
    return len({fp.scope.per for fp in fps}) <= 1


def fingerprint(r: TraceReader, options: ScopeOptions) -> Fingerprint:
    """The fingerprint of the part of an open trace that ``options`` selects."""
    return _Scoper(r, options).fingerprint()


def check_saved(fp: Fingerprint, options: ScopeOptions, source: str) -> None:
    """A saved fingerprint is already scoped: options must restate its scope or be absent."""
    if not options.active:
        return
    s = fp.scope
    want = options.scope()
    have = (s.window, s.window_origin, s.nvtx, s.per, s.skip_first)
    asked = (want.window, want.window_origin, want.nvtx, want.per, want.skip_first)
    phases_ok = not options.phases or tuple((p.name, p.patterns) for p in fp.phases) == options.phases
    if have == asked and phases_ok:
        return
    raise UsageError(
        f"{source}: a saved fingerprint can't be re-scoped; it was made with {describe(s)} "
        f"and the options ask for {describe(want)}"
        + ("" if phases_ok else f" with phases {', '.join(n for n, _ in options.phases)}")
        + ". Fingerprint the trace again with these options, or drop them for this input"
    )


def describe(s: Scope) -> str:
    """One phrase naming a scope, for messages and reports."""
    parts = []
    if s.window:
        origin = "capture start" if s.window_origin == "capture" else "first kernel"
        parts.append(f"--window {s.window} (from the {origin})")
    if s.nvtx:
        parts.append(f"--nvtx {s.nvtx}")
    if s.per:
        parts.append(f"--per {s.per}")
    if s.skip_first:
        parts.append(f"--skip-first {s.skip_first}")
    return " ".join(parts) if parts else "the whole capture"


def options(
    *,
    window: str | None = None,
    window_origin: str = "kernel",
    skip_first: int = 0,
    nvtx: str | None = None,
    per: str | None = None,
    phases_file: str | Path | None = None,
    phases: Any = None,
    phases_source: str = "rules",
    step_ranges: Sequence[str] = (),
) -> ScopeOptions:
    """:class:`ScopeOptions` from command-line values; ``phases_file`` wins over ``phases``
    (a ``phases:`` mapping found elsewhere, e.g. in the rule files)."""
    phase_map: PhaseMap = ()
    if phases_file is not None:
        phase_map = load_phases(phases_file)
    elif phases:
        phase_map = parse_phases(dict(phases), phases_source)
    return ScopeOptions(window, window_origin, skip_first, nvtx, per, phase_map, tuple(step_ranges))
