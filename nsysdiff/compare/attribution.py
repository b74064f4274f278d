"""Where the kernel-time change went: an exact decomposition of the total delta.

Every kernel's change is split into parts that add up to it: a **count effect**
(calls changed, at the base time per call), a **per-call effect** (each call got slower
or faster), **new** (time of a kernel only in the candidate) and **removed** (minus the
time of a kernel only in the base). A kernel whose calls changed by an order of magnitude
one way while its time per call changed by one the other way did the same work in calls
of another size (one call against 10,000 chunks): its count and per-call effects would be
two opposed figures far larger than the change, so its whole change is one **resized**
part instead. The parts of all kernels add up to the total delta;
families, categories and phases are sums of their kernels' parts. A kernel that
disappeared is paired with one that appeared when they plausibly do the same work (a
**replacement**). Documented in ``docs/diff.md``; the JSON report carries every figure.

Whole-scope figures are integer nanoseconds and so are the parts (the count effect is
rounded to the nanosecond and the per-call effect is the rest), so sums are exact.
Per-step figures are fractions of a nanosecond; the same construction keeps each
kernel's parts summing to its delta.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

# A removed and a new kernel of one top-level category with call counts within this
# factor (within FAMILY_CALLS when they are variants of one family) are taken for the
# same work done by another kernel.
SIMILAR_CALLS = 2.0
FAMILY_CALLS = 4.0
TOP = 3  # contributors named in the headline
# Calls up (down) by at least this factor while the time per call went down (up) by as
# much: the work was cut into (merged from) calls of another size.
RESIZE = 10.0


@dataclass(frozen=True, slots=True)
class Effects:
    """The parts of one time change; ``total_ns`` is their sum."""

    count_ns: float = 0
    per_call_ns: float = 0
    new_ns: float = 0
    removed_ns: float = 0  # zero or negative
    resized_ns: float = 0  # the change of kernels that ran in calls of another size

    @property
    def total_ns(self) -> float:
        return self.count_ns + self.per_call_ns + self.new_ns + self.removed_ns + self.resized_ns

    def __add__(self, other: Effects) -> Effects:
        return Effects(
            self.count_ns + other.count_ns,
            self.per_call_ns + other.per_call_ns,
            self.new_ns + other.new_ns,
            self.removed_ns + other.removed_ns,
            self.resized_ns + other.resized_ns,
        )


@dataclass(frozen=True, slots=True)
class Change:
    """One kernel on both sides, as the attribution needs it (``calls`` 0: absent)."""

    key: str
    name: str
    family: str
    category: str
    base_calls: float
    base_ns: float
    candidate_calls: float
    candidate_ns: float
    waiting_ns: float = 0.0  # a collective's change of waiting for other ranks (compare.collective)

    @property
    def resized(self) -> bool:
        """Calls and time per call changed by ``RESIZE`` or more in opposite directions."""
        if not (self.base_calls and self.candidate_calls and self.base_ns and self.candidate_ns):
            return False
        calls = self.candidate_calls / self.base_calls
        mean = (self.candidate_ns / self.candidate_calls) / (self.base_ns / self.base_calls)
        return (calls >= RESIZE and mean <= 1 / RESIZE) or (calls <= 1 / RESIZE and mean >= RESIZE)

    @property
    def effects(self) -> Effects:
        if not self.base_calls:
            return Effects(new_ns=self.candidate_ns)
        if not self.candidate_calls:
            return Effects(removed_ns=-self.base_ns)
        delta = self.candidate_ns - self.base_ns
        if self.resized:
            return Effects(resized_ns=delta)
        count = (self.candidate_calls - self.base_calls) * self.base_ns / self.base_calls
        if isinstance(delta, int):
            count = round(count)  # integer parts, so that they sum exactly
        return Effects(count_ns=count, per_call_ns=delta - count)


@dataclass(frozen=True, slots=True)
class Part:
    """A kernel, family, category or phase and its share of the change."""

    key: str
    effects: Effects


@dataclass(frozen=True, slots=True)
class Replacement:
    """A kernel that appeared, taken to do the work of one that disappeared."""

    new: str  # keys (demangled names)
    new_name: str
    new_ns: float
    removed: str
    removed_name: str
    removed_ns: float  # the base time that went away (positive)
    why: str  # "same family" or "same category, similar call counts"

    @property
    def delta_ns(self) -> float:
        return self.new_ns - self.removed_ns


@dataclass(frozen=True, slots=True)
class Contributor:
    """One line of the headline: a replacement, a new or removed kernel, or a change."""

    kind: str  # replacement, new, removed, per-call, count, resized
    name: str  # the kernel (the new one, for a replacement)
    key: str
    delta_ns: float
    replaces: str | None = None  # the removed kernel's short name, for a replacement
    replaces_ns: float | None = None  # its base time
    replaces_key: str | None = None  # its key (demangled name), to label it unambiguously
    calls: tuple[float, float] | None = None  # base and candidate calls, for a resized kernel
    waiting_ns: float = 0.0  # of a collective's change, the waiting for other ranks


@dataclass(frozen=True, slots=True)
class Attribution:
    delta_ns: float
    effects: Effects  # the sum over every kernel: effects.total_ns == delta_ns
    kernels: tuple[Part, ...]  # largest absolute change first
    families: tuple[Part, ...]
    categories: tuple[Part, ...]
    phases: tuple[Part, ...]  # each phase's own total (phases can overlap: no sum)
    replacements: tuple[Replacement, ...]
    top: tuple[Contributor, ...]


EMPTY = Attribution(0, Effects(), (), (), (), (), (), ())


def _roll(changes: Iterable[Change], key: str) -> tuple[Part, ...]:
    acc: dict[str, Effects] = {}
    for c in changes:
        k = getattr(c, key)
        acc[k] = acc.get(k, Effects()) + c.effects
    return _ordered(Part(k, e) for k, e in acc.items())


def _ordered(parts: Iterable[Part]) -> tuple[Part, ...]:
    return tuple(sorted(parts, key=lambda p: (-abs(p.effects.total_ns), p.key)))


def _top_category(c: Change) -> str:
    return c.category.split(".")[0]


def pair(changes: Sequence[Change], phases_of: Mapping[str, frozenset[str]] | None = None) -> tuple[Replacement, ...]:
    """Match disappearances with appearances, best matches first, one to one.

    A pair needs the same top-level category (``gemm.nvjet`` and ``gemm.cublas`` are
    both ``gemm``) and, where phases are known, the same phases; then the same family or
    call counts within ``SIMILAR_CALLS`` (``FAMILY_CALLS`` in one family).
    """
    phases_of = phases_of or {}
    gone = [c for c in changes if c.base_calls and not c.candidate_calls]
    fresh = [c for c in changes if c.candidate_calls and not c.base_calls]
    options = []
    for r in gone:
        for n in fresh:
            if _top_category(r) != _top_category(n):
                continue
            if phases_of.get(r.key, frozenset()) != phases_of.get(n.key, frozenset()):
                continue
            calls = abs(math.log(n.candidate_calls / r.base_calls))
            same_family = r.family == n.family
            if calls > math.log(FAMILY_CALLS if same_family else SIMILAR_CALLS):
                continue
            options.append((not same_family, calls, -(r.base_ns + n.candidate_ns), r.key, n.key, r, n))
    options.sort(key=lambda o: o[:5])
    used: set[str] = set()
    out = []
    for _, _, _, rk, nk, r, n in options:
        if rk in used or nk in used:
            continue
        used |= {rk, nk}
        why = "same family" if r.family == n.family else "same category, similar call counts"
        out.append(Replacement(n.key, n.name, n.candidate_ns, r.key, r.name, r.base_ns, why))
    return tuple(sorted(out, key=lambda p: (-abs(p.delta_ns), p.new)))


def _contributors(changes: Sequence[Change], replacements: Sequence[Replacement]) -> tuple[Contributor, ...]:
    paired = {p.new for p in replacements} | {p.removed for p in replacements}
    items = [
        Contributor("replacement", p.new_name, p.new, p.delta_ns, p.removed_name, p.removed_ns, p.removed)
        for p in replacements
    ]
    for c in changes:
        if c.key in paired:
            continue
        e = c.effects
        if e.new_ns:
            items.append(Contributor("new", c.name, c.key, e.new_ns))
        elif e.removed_ns:
            items.append(Contributor("removed", c.name, c.key, e.removed_ns))
        elif e.resized_ns:
            items.append(Contributor("resized", c.name, c.key, e.resized_ns, calls=(c.base_calls, c.candidate_calls)))
        elif e.total_ns:
            kind = "per-call" if abs(e.per_call_ns) >= abs(e.count_ns) else "count"
            items.append(Contributor(kind, c.name, c.key, e.total_ns, waiting_ns=c.waiting_ns))
    items.sort(key=lambda i: (-abs(i.delta_ns), i.key))
    return tuple(items[:TOP])


def attribute(
    changes: Sequence[Change],
    phases: Sequence[tuple[str, Effects]] = (),
    phases_of: Mapping[str, frozenset[str]] | None = None,
) -> Attribution:
    """The decomposition of the change over ``changes`` (every kernel on either side)."""
    total = Effects()
    for c in changes:
        total = total + c.effects
    replacements = pair(changes, phases_of)
    return Attribution(
        delta_ns=sum(c.candidate_ns - c.base_ns for c in changes),
        effects=total,
        kernels=_ordered(Part(c.key, c.effects) for c in changes),
        families=_roll(changes, "family"),
        categories=_roll(changes, "category"),
        phases=tuple(Part(name, e) for name, e in phases),
        replacements=replacements,
        top=_contributors(changes, replacements),
    )
