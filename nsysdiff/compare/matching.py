"""One kernel under two demanglers: match the candidate's kernels to the base's names.

nsys versions demangle one kernel differently (``3u`` or ``(unsigned int)3``, ``true`` or
``(bool)1``, ``__half*`` or ``T3 *``, ``{lambda(unsigned long)#1}`` or ``[lambda(unsigned
long) (instance 1)]``), so a program captured by two of them would share no kernel name and
read as all new. Kernels whose names differ are matched, each pair only when it is unique
on both sides, by: the mangled name (both sides have one, nsys 2022.1 on), then the name
with its template arguments spelled one way (:func:`nsysdiff.trace.names.spelling`), then
the whole name spelled one way (:func:`canonical`: lambdas, ``const`` placement and
template placeholders too), then that without the parameter list. A matched candidate
kernel takes the base's name, family and category, so every row keys it once.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Iterable
from typing import TypeAlias

from nsysdiff.fingerprint.model import Fingerprint, KernelStats
from nsysdiff.trace.names import spelling, without_parameters

# --- one spelling of a whole demangled name ---------------------------------------------
#
# nsys 2021.2 demangles as GCC's libiberty does, 2021.3 on as NVIDIA's cu++filt (EDG) does.
# Both read one mangled name, so the two spellings differ only in how they print it:
#
#   GCC                                  EDG
#   {lambda(unsigned long)#1}            [lambda(unsigned long) (instance 1)]
#   4ul, true                            (unsigned long)4, (bool)1     (names.spelling)
#   float const*, __half const&          const float *, const T1 &
#   __half* (the argument itself)        T1 * (the function template's first argument)
#   (anonymous namespace)                <unnamed>
#   operator()                           operator ()
#
# EDG's ``Tn`` in a parameter list names the n-th template argument of the function the
# list belongs to (``f<__half, 3u>(T1 *)`` takes ``__half*``), so it is replaced by that
# argument. The name is parsed once into nested bracket groups (linear in its length);
# a name whose brackets don't nest (``operator<``), that nests deeper than _MAX_DEPTH or
# whose placeholders would grow it past _MAX_GROWTH keeps the simpler spelling.

_INSTANCE = re.compile(r"\) \(instance (\d+)\)\]")
_AROUND = re.compile(r"\s*([*&<>()\[\]{}])\s*")
_COMMA = re.compile(r"\s*,\s*")
_PLACEHOLDER = re.compile(r"\bT(\d+)\b")
_BRACKET = re.compile(r"[<>()\[\]{},]")
_OPEN = {"<": ">", "(": ")", "[": "]", "{": "}"}
_CLOSE = {v: k for k, v in _OPEN.items()}
_MAX_DEPTH = 64  # real names nest a few dozen deep
_MAX_GROWTH = 4  # placeholders replaced may make a name this many times longer


class _Unparsed(Exception):
    """A name the canonical spelling leaves to the simpler one."""


@dataclasses.dataclass(slots=True)
class _Group:
    """One bracket pair and what it holds, split at its own commas."""

    open: str
    items: list[list[_Node]]


_Node: TypeAlias = str | _Group


def _parse(text: str) -> list[_Node]:
    root = _Group("", [[]])
    stack = [root]
    last = 0
    for m in _BRACKET.finditer(text):
        c, item = m.group(), stack[-1].items[-1]
        if m.start() > last:
            item.append(text[last : m.start()])
        last = m.end()
        if c in _OPEN:
            if len(stack) > _MAX_DEPTH:
                raise _Unparsed
            g = _Group(c, [[]])
            item.append(g)
            stack.append(g)
        elif c == ",":
            if len(stack) == 1:
                raise _Unparsed
            stack[-1].items.append([])
        elif len(stack) == 1 or stack[-1].open != _CLOSE[c]:
            raise _Unparsed
        else:
            stack.pop()
    if len(stack) != 1:
        raise _Unparsed
    if last < len(text):
        root.items[-1].append(text[last:])
    return root.items[0]


def _text(nodes: list[_Node]) -> str:
    out: list[str] = []
    for n in nodes:
        if isinstance(n, str):
            out.append(n)
        else:
            out.append(n.open + ", ".join(_text(i) for i in n.items) + _OPEN[n.open])
    return "".join(out)


def _stripped(item: list[_Node]) -> list[_Node]:
    """``item`` without the spaces at its ends (a comma's)."""
    if item and isinstance(item[0], str):
        item = [item[0].lstrip(), *item[1:]]
    if item and isinstance(item[-1], str):
        item = [*item[:-1], item[-1].rstrip()]
    return [n for n in item if n != ""]


def _east_const(item: list[_Node]) -> list[_Node]:
    """``const float*`` -> ``float const*``: GCC writes a qualifier after its type."""
    item = _stripped(item)
    if not item or not isinstance(item[0], str) or not item[0].startswith("const "):
        return item
    item = [item[0][len("const ") :], *item[1:]]
    for i, n in enumerate(item):
        if isinstance(n, str) and (j := min((k for k in (n.find("*"), n.find("&")) if k >= 0), default=-1)) >= 0:
            return [*item[:i], f"{n[:j]} const{n[j:]}", *item[i + 1 :]]
    return [*item, " const"]


def _substitute(nodes: list[_Node], args: list[str], budget: list[int]) -> list[_Node]:
    """``nodes`` with each placeholder ``Tn`` replaced by ``args[n - 1]``."""

    def one(m: re.Match[str]) -> str:
        n = int(m.group(1))
        if not 1 <= n <= len(args):
            return m.group()
        budget[0] -= len(args[n - 1])
        if budget[0] < 0:
            raise _Unparsed
        return args[n - 1]

    out: list[_Node] = []
    for n in nodes:
        if isinstance(n, str):
            out.append(_PLACEHOLDER.sub(one, n))
        else:
            out.append(_Group(n.open, [_substitute(i, args, budget) for i in n.items]))
    return out


def _canon(nodes: list[_Node], budget: list[int]) -> list[_Node]:
    out: list[_Node] = []
    for n in nodes:
        if isinstance(n, _Group):
            n = _Group(n.open, [_east_const(_canon(i, budget)) for i in n.items])
            prev = out[-1] if out else None
            if n.open == "(" and isinstance(prev, _Group) and prev.open == "<":
                # A function template's parameters: its placeholders are its arguments.
                args = [_text(i) for i in prev.items]
                n = _Group("(", [_substitute(i, args, budget) for i in n.items])
        out.append(n)
    return out


def canonical(demangled: str) -> str:
    """``demangled`` spelled one way whatever the demangler (GCC's or EDG's, above)."""
    s = spelling(demangled).replace("[lambda(", "{lambda(")
    s = _INSTANCE.sub(r")#\1}", s).replace("<unnamed>", "(anonymous namespace)")
    s = _COMMA.sub(", ", _AROUND.sub(r"\1", s.replace("operator ()", "operator()")))
    try:
        budget = [_MAX_GROWTH * len(s)]
        s = _text(_canon(_parse(s), budget))
    except _Unparsed:
        return s
    return _AROUND.sub(r"\1", s)


# --- matching ----------------------------------------------------------------------------

_TIERS: tuple[Callable[[KernelStats], str | None], ...] = (
    lambda k: k.mangled,
    lambda k: spelling(k.demangled),
    lambda k: canonical(k.demangled),
    lambda k: without_parameters(canonical(k.demangled)),
)


def _unique(kernels: Iterable[KernelStats], key: Callable[[KernelStats], str | None]) -> dict[str, KernelStats]:
    seen: dict[str, KernelStats] = {}
    twice: set[str] = set()
    for k in kernels:
        v = key(k)
        if v is None:
            continue
        if v in seen:
            twice.add(v)
        seen[v] = k
    return {v: k for v, k in seen.items() if v not in twice}


def matches(base: Fingerprint, cand: Fingerprint) -> dict[str, KernelStats]:
    """Candidate name -> the base kernel it is, for candidate kernels whose name the base
    lacks; empty when every name is shared or nothing matches."""
    b_names = {k.demangled for k in base.kernels}
    c_names = {k.demangled for k in cand.kernels}
    b_left = [k for k in base.kernels if k.demangled not in c_names]
    c_left = [k for k in cand.kernels if k.demangled not in b_names]
    out: dict[str, KernelStats] = {}
    for key in _TIERS:
        if not b_left or not c_left:
            break
        b_by, c_by = _unique(b_left, key), _unique(c_left, key)
        found = {c_by[v].demangled: b_by[v] for v in b_by.keys() & c_by.keys()}
        out.update(found)
        taken = {b.demangled for b in found.values()}
        b_left = [k for k in b_left if k.demangled not in taken]
        c_left = [k for k in c_left if k.demangled not in found]
    return out


def align(base: Fingerprint, cand: Fingerprint) -> Fingerprint:
    """``cand`` with its kernels named as the base names them, where they match."""
    found = matches(base, cand)
    if not found:
        return cand
    kernels = tuple(
        dataclasses.replace(k, demangled=b.demangled, name=b.name, family=b.family, category=b.category)
        if (b := found.get(k.demangled)) is not None
        else k
        for k in cand.kernels
    )
    return dataclasses.replace(cand, kernels=kernels)
