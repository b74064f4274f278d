"""The chunked kernel pass gives what the launches say: per-(name, device) totals, numpy's
own percentiles per name, and the busy union per device, however the chunks fall, when the
histogram spills to SQLite, and when a device's launches are out of start order."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import numpy as np
import pytest

from nsysdiff.errors import TraceError
from nsysdiff.synth.builder import Gpu, TraceBuilder
from nsysdiff.synth.writer import tamper
from nsysdiff.trace import kernel_scan, text_scan
from nsysdiff.trace.reader import open_trace
from nsysdiff.trace.records import QUANTILE_GRID

KERNEL = "CUPTI_ACTIVITY_KIND_KERNEL"
NAMES = ("gemm", "softmax", "allreduce")


def _trace(path: Path, *, shuffled: bool = False) -> Path:
    """Three kernels on two GPUs, overlapping launches (two streams), durations drawn
    from few values so that the histogram holds repeats."""
    rng = np.random.default_rng(7)
    b = TraceBuilder(gpus=(Gpu(0), Gpu(1)))
    rows = []
    for i in range(600):
        start = 1_000 * i + int(rng.integers(0, 900))
        rows.append((NAMES[i % 3], start, int(rng.integers(1, 40)) * 50, i % 2, 7 + i % 5 // 4))
    if shuffled:  # rowid order no longer start order on a device
        rows[10], rows[300] = rows[300], rows[10]
    for name, start, dur, dev, stream in rows:
        b.kernel(name, start, dur, device=dev, stream=stream)
    return b.write(path)


def _raw(path: Path) -> list[tuple[str, int, int, int]]:
    con = sqlite3.connect(path)
    try:
        return con.execute(
            f'SELECT s.value, k.deviceId, k.start, k."end" FROM {KERNEL} k JOIN StringIds s ON s.id = k.demangledName'
        ).fetchall()
    finally:
        con.close()


def _union(intervals: list[tuple[int, int]]) -> int:
    busy, reach = 0, None
    for start, end in sorted(intervals):
        if reach is None or start >= reach:
            busy += end - start
            reach = end
        elif end > reach:
            busy += end - reach
            reach = end
    return busy


def _check(path: Path) -> None:
    raw = _raw(path)
    with open_trace(path) as r:
        groups = r.kernels()
    for i, name in enumerate(groups.demangled):
        dev = int(groups.device[i])
        durs = [e - s for n, d, s, e in raw if n == name and d == dev]
        assert int(groups.calls[i]) == len(durs)
        assert int(groups.total_ns[i]) == sum(durs)
        every = np.array([e - s for n, _, s, e in raw if n == name], dtype=np.float64)
        assert groups.quantiles[i].tolist() == np.percentile(every, QUANTILE_GRID).tolist()
    assert sorted(set(groups.demangled)) == sorted(NAMES)
    for d in groups.devices:
        mine = [(s, e) for _, dev, s, e in raw if dev == d.device]
        assert (d.kernels, d.kernel_ns) == (len(mine), sum(e - s for s, e in mine))
        assert d.busy_ns == _union(mine)
        assert (d.first_ns, d.last_ns) == (min(s for s, _ in mine), max(e for _, e in mine))


@pytest.mark.parametrize("rows", [7, 1 << 18])
@pytest.mark.parametrize("hist_limit", [5, 1 << 20])
def test_matches_the_launches(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, rows: int, hist_limit: int) -> None:
    monkeypatch.setattr(text_scan, "ROWS", rows)
    monkeypatch.setattr(kernel_scan, "_HIST_LIMIT", hist_limit)
    _check(_trace(tmp_path / "t.sqlite"))


def test_out_of_start_order_falls_back_to_the_window_query(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = _trace(tmp_path / "t.sqlite", shuffled=True)
    con = sqlite3.connect(path)
    starts = [s for (s,) in con.execute(f"SELECT start FROM {KERNEL} WHERE deviceId = 0 ORDER BY rowid")]
    con.close()
    assert starts != sorted(starts)
    monkeypatch.setattr(text_scan, "ROWS", 50)
    _check(path)


def test_a_null_device_is_diagnosed(tmp_path: Path) -> None:
    path = tamper(_trace(tmp_path / "t.sqlite"), f"UPDATE {KERNEL} SET deviceId = NULL WHERE rowid = 5")
    with open_trace(path) as r, pytest.raises(TraceError, match=r"1 row.*rowid 5"):
        r.kernels()


def test_a_real_short_name_is_diagnosed(tmp_path: Path) -> None:
    path = tamper(_trace(tmp_path / "t.sqlite"), f"UPDATE {KERNEL} SET shortName = shortName + 0.5 WHERE rowid = 9")
    with open_trace(path) as r, pytest.raises(TraceError, match=r"1 row.*rowid 9"):
        r.kernels()


def test_a_kernel_table_without_rowids_is_read(tmp_path: Path) -> None:
    path = _trace(tmp_path / "t.sqlite")
    with open_trace(path) as r:
        want = r.kernels()
    con = sqlite3.connect(path)
    cols = [row[1] for row in con.execute(f"PRAGMA table_info({KERNEL})")]
    names = ", ".join(f'"{c}"' for c in cols)
    con.executescript(
        f"ALTER TABLE {KERNEL} RENAME TO old; "
        f"CREATE TABLE {KERNEL} ({names}, PRIMARY KEY (correlationId)) WITHOUT ROWID; "
        f"INSERT INTO {KERNEL} SELECT {names} FROM old; DROP TABLE old;"
    )
    con.close()
    with open_trace(path) as r:
        got = r.kernels()
    assert got.demangled == want.demangled
    assert got.calls.tolist() == want.calls.tolist()
    assert got.quantiles.tolist() == want.quantiles.tolist()
    assert got.devices == want.devices
