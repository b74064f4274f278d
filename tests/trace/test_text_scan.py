"""The chunked pass of trace/text_scan.py: every row once, in rowid order, never more
than ROWS rows a chunk, whatever gaps the rowids leave."""

from __future__ import annotations

import sqlite3

import pytest

from nsysdiff.trace import text_scan
from nsysdiff.trace.checks import BadRows


def _table(rowids: list[int]) -> sqlite3.Connection:
    con = sqlite3.connect(":memory:")
    con.execute("CREATE TABLE t (v INTEGER)")
    con.executemany("INSERT INTO t (rowid, v) VALUES (?, ?)", [(r, i) for i, r in enumerate(rowids)])
    return con


@pytest.mark.parametrize(
    "rowids",
    [
        list(range(1, 101)),
        [*range(1, 31), 10**12, 10**12 + 1, *range(2**62, 2**62 + 40), 2**63 - 1],
        [-(2**62), -5, 0, 7, *range(50, 90, 3)],
        [],
    ],
    ids=["dense", "gaps", "negative", "empty"],
)
@pytest.mark.parametrize("where", ["1", "v >= 0"])
def test_every_row_once_in_bounded_chunks(monkeypatch: pytest.MonkeyPatch, rowids: list[int], where: str) -> None:
    monkeypatch.setattr(text_scan, "ROWS", 8)
    con = _table(rowids)
    got = [(list(v), s) for (v,), s in text_scan.chunks(con, "t", where, ["v"], ["v < 0"])]
    assert all(len(v) <= 8 and s == [0] for v, s in got)
    assert [x for v, _ in got for x in v] == list(range(len(rowids)))


def test_a_null_is_a_bad_row() -> None:
    con = _table(list(range(1, 20)))
    con.execute("UPDATE t SET v = NULL WHERE rowid = 5")
    with pytest.raises(BadRows):
        list(text_scan.chunks(con, "t", "1", ["v"]))
