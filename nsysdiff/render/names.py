"""Kernel names as a report shows them (``--names``): the short labels of
:mod:`nsysdiff.compare.labels` (the diff's own, so a report and a rule's subject agree),
the demangled signatures, or the mangled names.

``--names mangled`` shows the mangled name nsys stored (from 2022.1 on), the one to search
for in a binary or a profiler that does not demangle. An export from an older nsys, or a
fingerprint saved before the mangled name was kept, has none: its kernels keep their
demangled names, and :func:`unmangled` counts them for a note.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping

from nsysdiff.compare.diff import Row
from nsysdiff.compare.labels import arity, short_labels
from nsysdiff.fingerprint.model import Fingerprint
from nsysdiff.trace.launches import LAUNCH_SUFFIX

__all__ = ["Names", "arity", "labels", "labels_of", "mangled_of", "unmangled"]


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
    if names is Names.mangled:
        # Distinct kernels have distinct mangled names, and a shape is kept as the key has it.
        shapes = {key: m.group(0) for key, _ in pairs if (m := LAUNCH_SUFFIX.search(key))}
        known = mangled or {}
        return {key: known[key] + shapes.get(key, "") if key in known else key for key, _ in pairs}
    return short_labels(pairs)
