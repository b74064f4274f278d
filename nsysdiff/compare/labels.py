"""Kernel labels a reader can tell apart, one per kernel for every output.

nsys keys kernels by their demangled name, but the short name is what fits a table and a
rule subject: ``elementwise_kernel`` stands for dozens of template instances, and a fused
kernel can keep its short name while its signature changes. Where short names collide,
each label gets the fewest words of its demangled name that tell it from the others (the
functor of an ``elementwise_kernel``, the tensor types of an nvFuser kernel); when the
other signatures hold every word of it, the template arguments that differ
(``OpaqueType<4>``); an index only when nothing does. The diff labels its kernels here
(:attr:`nsysdiff.compare.diff.Diff.labels`), so a report, a rule's subject, a GitHub
annotation and a JUnit test case name a kernel alike.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Iterable

from nsysdiff import units as u
from nsysdiff.fingerprint.families import strip_templates
from nsysdiff.trace.launches import LAUNCH_SUFFIX

HINT_WIDTH = 48  # characters of the distinguishing part shown beside a short name

# The words of a demangled name: a hint is made of whole identifiers and numbers.
_TOKEN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*|[0-9]+")


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


_NAMESPACE = re.compile(r"(?:[A-Za-z_][A-Za-z0-9_]*|<unnamed>)::")
_CAST = re.compile(r"\((?:unsigned |signed )?(?:int|long|short|char|long long|bool)\)")


def template_arguments(key: str, name: str) -> list[str] | None:
    """The top-level template arguments of kernel ``name`` in the signature ``key``, each
    without namespaces and integer casts (``at::native::OpaqueType<(unsigned int)4>`` is
    ``OpaqueType<4>``); None without a template."""
    at = key.find(name + "<")
    if at < 0:
        return None
    depth = 0
    args: list[str] = []
    current: list[str] = []
    for ch in key[at + len(name) :]:
        if ch in "<([":
            depth += 1
            if depth == 1:
                continue
        elif ch in ">)]":
            depth -= 1
            if depth == 0:
                args.append("".join(current))
                break
        elif ch == "," and depth == 1:
            args.append("".join(current))
            current = []
            continue
        current.append(ch)
    else:
        return None
    return [" ".join(_CAST.sub("", _NAMESPACE.sub("", a)).split()) for a in args]


def _argument_hint(key: str, others: list[str], name: str) -> str:
    """The fewest template arguments of ``key`` that tell it from every other key, words
    before numbers (a functor says more than a vector width), in their order."""
    mine = template_arguments(key, name)
    if not mine:
        return ""
    theirs = [template_arguments(o, name) or [] for o in others]
    chosen: set[int] = set()
    left = list(theirs)
    while left:
        tells = [sum(1 for t in left if i >= len(t) or t[i] != a) for i, a in enumerate(mine)]
        best = max(range(len(mine)), key=lambda i: (tells[i] > 0, not mine[i].isdigit(), tells[i], -i))
        if not tells[best]:
            return ""
        chosen.add(best)
        left = [t for t in left if best < len(t) and t[best] == mine[best]]
    return ", ".join(a for i, a in enumerate(mine) if i in chosen)


def short_name(demangled: str) -> str:
    """The short name nsys gives the kernel of a demangled signature: its function name
    without return type, namespaces, template arguments or parameters
    (``void at::native::elementwise_kernel<128, 4, ...>(int, ...)`` is ``elementwise_kernel``).

    For where only the signature was kept (a history store's keys): labels made from it
    are the diff's labels."""
    return strip_templates(demangled).rsplit("::", 1)[-1] or demangled


def short_labels(pairs: Iterable[tuple[str, str]]) -> dict[str, str]:
    """A label per key of ``(key, short name)`` pairs (a key is a demangled name): the
    short name, told apart from its namesakes; unique whenever the keys differ."""
    pairs = list(pairs)
    # Grouped by name and launch (--by name+launch), a key ends with its shape: labels are
    # made for the names, and every label shows its shape.
    shapes = {key: m.group(0) for key, _ in pairs if (m := LAUNCH_SUFFIX.search(key))}
    if shapes:
        plain = short_labels({(key.removesuffix(shapes.get(key, "")), name) for key, name in pairs})
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
            if not hint or hint in seen or hint.replace(" ", "").isdigit():
                # Every word of it is in another signature, in another place
                # (`CUDAFunctorOnSelf_add<long>` against `..._add<float>, (unsigned long)2`),
                # or only bare numbers tell it: the template arguments that differ say more.
                hint = u.shorten(_argument_hint(key, [k for k in keys if k != key], name), HINT_WIDTH) or hint
            # A hint that is still empty, or cut to something another key shares, falls
            # back to an index: the label stays unique and the legend (the demangled name)
            # is one --names demangled away.
            if not hint or hint in seen:
                hint = f"#{i}"
            seen.add(hint)
            out[key] = f"{name} ⟨{hint}⟩"
    return out
