"""What a builder has recorded: events per table, in call order, and interned strings."""

from __future__ import annotations

import itertools
import operator
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

from nsysdiff.synth.schema import FIELDS


def intern(strings: dict[str, int], text: str) -> int:
    """The StringIds id of `text` in `strings`, adding it on first use (ids count from 0)."""
    found = strings.get(text)
    if found is None:
        found = strings[text] = len(strings)
    return found


@dataclass(slots=True)
class Batch:
    """Rows from one bulk call, kept columnar until write time (1M rows stay cheap)."""

    n: int
    columns: dict[str, list[int] | object]  # a list per varying field, else a scalar


_Chunk = list[tuple[object, ...]] | Batch


class Table:
    """Events for one table, in call order."""

    __slots__ = ("chunks", "fields", "name", "rows")

    def __init__(self, name: str) -> None:
        self.name = name
        self.fields = FIELDS[name]
        self.chunks: list[_Chunk] = []
        self.rows = 0

    def add(self, record: tuple[object, ...]) -> None:
        last = self.chunks[-1] if self.chunks else None
        if isinstance(last, list):
            last.append(record)
        else:
            self.chunks.append([record])
        self.rows += 1

    def add_batch(self, batch: Batch) -> None:
        if batch.n:
            self.chunks.append(batch)
            self.rows += batch.n

    def records(self, wanted: Sequence[str]) -> Iterator[tuple[object, ...]]:
        """Yield rows holding the `wanted` fields, in that order."""
        index = [self.fields.index(name) for name in wanted]
        identity = index == list(range(len(self.fields)))
        pick = operator.itemgetter(*index) if len(index) > 1 else None
        for chunk in self.chunks:
            if isinstance(chunk, Batch):
                iterables: list[Iterable[object]] = []
                for name in wanted:
                    value = chunk.columns[name]
                    iterables.append(value if isinstance(value, list) else itertools.repeat(value, chunk.n))
                yield from zip(*iterables, strict=True)
            elif identity:
                yield from chunk
            elif pick is not None:
                for record in chunk:
                    yield pick(record)
            else:
                for record in chunk:
                    yield (record[index[0]],)
