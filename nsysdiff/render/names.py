"""Kernel names a reader can tell apart.

nsys keys kernels by their demangled name, but the short name is what fits a table:
``elementwise_kernel`` stands for dozens of template instances, and a fused kernel can
keep its short name while its signature changes. Where short names collide, each label
gets the fewest words of its demangled name that tell it from the others (the functor of
an ``elementwise_kernel``, the tensor types of an nvFuser kernel), or an index when no
word does.

``--names mangled`` shows the mangled name nsys stored (from 2022.1 on), the one to search
for in a binary or a profiler that does not demangle. An export from an older nsys, or a
fingerprint saved before the mangled name was kept, has none: its kernels keep their
demangled names, and :func:`unmangled` counts them for a note.
"""

from __future__ import annotations

import enum
import re
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping

from nsysdiff import units as u
from nsysdiff.compare.diff import Row
from nsysdiff.fingerprint.model import Fingerprint
from nsysdiff.trace.launches import LAUNCH_SUFFIX

HINT_WIDTH = 48  # characters of the distinguishing part shown beside a short name

# The words of a demangled name: a hint is made of whole identifiers and numbers.
_TOKEN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*|[0-9]+")


class Names(str, enum.Enum):
    """How kernels are named in a report (``--names``)."""

    short = "short"  # the short name, plus a distinguishing hint where short names collide
    demangled = "demangled"  # the full demangled signature, the key nsys groups by
    mangled = "mangled"  # the mangled name, where the export has one (else the demangled)


def mangled_of(*fps: Fingerprint) -> dict[str, str]:
    """Each kernel key of ``fps`` that has a mangled name, mapped to it."""
    return {k.demangled: k.mangled for fp in fps for k in fp.kernels if k.mangled is not None}


def unmangled(*fps: Fingerprint) -> tuple[str, ...]:
    """Per input of ``fps`` with kernels that have no mangled name, which and how many
    ("3 of 12 kernels in a.sqlite")."""
    out = []
    for fp in fps:
        missing = sum(1 for k in fp.kernels if k.mangled is None)
        if missing:
            out.append(f"{missing:,} of {len(fp.kernels):,} kernels in {fp.meta.source}")
    return tuple(out)


def _tokens(demangled: str) -> list[str]:
    """Identifiers and numbers, in order, each once."""
    return list(dict.fromkeys(_TOKEN.findall(demangled)))


def _hint(key: str, others: list[set[str]], df: Counter[str]) -> str:
    """The fewest tokens of ``key`` that some other key lacks, until every other key
    lacks one of them (greedy cover), shown in the order they occur in ``key``.

    ``df`` counts the keys of the group that hold each token (``key`` included)."""
    tokens = _tokens(key)
    position = {t: i for i, t in enumerate(tokens)}
    # First pick: the others lacking a token are the group less its holders, so the df
    # alone decides, without a pass over every other key (groups run to hundreds): the
    # rarest word, on a tie the later one (a template's innermost argument says more than
    # its namespace).
    # Words before numbers (a functor's name reads better than a lambda's instance
    # number), as long as the word tells the key from at least one other.
    n = len(others) + 1
    best = min(tokens, key=lambda t: (df[t] >= n, t.isdigit(), df[t], -position[t]), default=None)
    if best is None or df[best] >= n:
        return ""  # every other key holds every word: only order or repetition differs
    chosen = {best}
    left = [o for o in others if best in o]
    while left:
        nxt = max(
            tokens,
            key=lambda t: (
                any(t not in o for o in left),
                not t.isdigit(),
                sum(1 for o in left if t not in o),
                -df[t],
                position[t],
            ),
        )
        if all(nxt in o for o in left):
            return ""
        chosen.add(nxt)
        left = [o for o in left if nxt in o]
    return " ".join(t for t in tokens if t in chosen)


def arity(key: str, name: str) -> int | None:
    """The number of parameters in the signature ``key`` of kernel ``name``."""
    at = key.find(name + "(")
    if at < 0:
        return None
    depth, args, empty = 0, 1, True
    for ch in key[at + len(name) :]:
        if ch in "(<[":
            depth += 1
        elif ch in ")>]":
            depth -= 1
            if depth == 0:
                return 0 if empty else args
        elif ch == "," and depth == 1:
            args += 1
        elif depth >= 1 and not ch.isspace():
            empty = False
    return None


def labels(rows: Iterable[Row], names: Names = Names.short, mangled: Mapping[str, str] | None = None) -> dict[str, str]:
    """A label per row key: unique among ``rows`` whenever the keys differ."""
    return labels_of(((r.key, r.name) for r in rows), names, mangled)


def labels_of(
    pairs: Iterable[tuple[str, str]], names: Names = Names.short, mangled: Mapping[str, str] | None = None
) -> dict[str, str]:
    """A label per key of ``(key, short name)`` pairs (a key is a demangled name).

    ``mangled`` (key -> mangled name, :func:`mangled_of`) serves ``Names.mangled``; a key
    without one is labelled by itself."""
    pairs = list(pairs)
    if names is Names.demangled:
        return {key: key for key, _ in pairs}
    # Grouped by name and launch (--by name+launch), a key ends with its shape: labels are
    # made for the names, and every label shows its shape.
    shapes = {key: m.group(0) for key, _ in pairs if (m := LAUNCH_SUFFIX.search(key))}
    if names is Names.mangled:
        # Distinct kernels have distinct mangled names, and a shape is kept as the key has it.
        known = mangled or {}
        return {key: known[key] + shapes.get(key, "") if key in known else key for key, _ in pairs}
    if shapes:
        plain = labels_of({(key.removesuffix(shapes.get(key, "")), name) for key, name in pairs}, names)
        return {key: plain[key.removesuffix(shapes.get(key, ""))] + shapes.get(key, "") for key, _ in pairs}
    groups: dict[str, set[str]] = defaultdict(set)
    for key, name in pairs:
        groups[name].add(key)
    out: dict[str, str] = {}
    for name, group in groups.items():
        keys = sorted(group)
        if len(keys) == 1:
            out[keys[0]] = name
            continue
        token_sets = [set(_tokens(k)) for k in keys]
        df = Counter(t for ts in token_sets for t in ts)
        arities = [arity(k, name) for k in keys]
        seen: set[str] = set()
        for i, key in enumerate(keys, 1):
            others = token_sets[: i - 1] + token_sets[i:]
            hint = u.shorten(_hint(key, others, df), HINT_WIDTH)
            n = arities[i - 1]
            if not hint and n is not None and arities.count(n) == 1:
                # Same words, another signature: nvFuser keeps a kernel's name when a
                # fusion gains an argument.
                hint = f"{n} args"
            # A hint that is empty, or cut to something another key shares, falls back to
            # an index: the label stays unique and the legend (the demangled name) is one
            # --names demangled away.
            if not hint or hint in seen:
                hint = f"#{i}"
            seen.add(hint)
            out[key] = f"{name} ⟨{hint}⟩"
    return out
