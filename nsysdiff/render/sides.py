"""Two sides' records paired by key, for the sections that show base → candidate."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import TypeVar

R = TypeVar("R")


def paired(
    base: Iterable[R], candidate: Iterable[R], key: Callable[[R], int]
) -> Iterator[tuple[int, R | None, R | None]]:
    """Every key of either side, in order, with each side's record of it (None where that
    side has none): a device or rank only one side ran on still gets its row."""
    b = {key(r): r for r in base}
    c = {key(r): r for r in candidate}
    for k in sorted(b.keys() | c.keys()):
        yield k, b.get(k), c.get(k)
