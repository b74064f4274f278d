"""One kernel under two demanglers: match the candidate's kernels to the base's names.

nsys versions demangle one kernel differently (``3u`` or ``(unsigned int)3``, ``true`` or
``(bool)1``, ``__half*`` or ``T3 *``), so a program captured by two of them would share no
kernel name and read as all new. Kernels whose names differ are matched, each pair only
when it is unique on both sides, by: the mangled name (both sides have one, nsys 2022.1 on),
then the name with its template arguments spelled one way
(:func:`nsysdiff.trace.names.spelling`), then that without the parameter list. A matched
candidate kernel takes the base's name, family and category, so every row keys it once.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable

from nsysdiff.fingerprint.model import Fingerprint, KernelStats
from nsysdiff.trace.names import spelling, without_parameters

_TIERS: tuple[Callable[[KernelStats], str | None], ...] = (
    lambda k: k.mangled,
    lambda k: spelling(k.demangled),
    lambda k: without_parameters(spelling(k.demangled)),
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
