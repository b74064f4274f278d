"""Tail changes: slow calls that multiplied while the median held (nsysdiff.compare.tails),
counted exactly per launch shape (nsysdiff.trace.tail_scan)."""

from __future__ import annotations

import dataclasses
import shutil
import sqlite3
from pathlib import Path

import numpy as np
import planted_steps as ps
import pytest
from conftest import real_trace, run_cli
from fpspec import fingerprint, kernel

from nsysdiff import api
from nsysdiff.compare import tails
from nsysdiff.fingerprint.model import Fingerprint
from nsysdiff.fingerprint.scope import ScopeOptions
from nsysdiff.synth.builder import TraceBuilder
from nsysdiff.trace import tail_scan
from nsysdiff.trace.reader import open_trace
from nsysdiff.trace.records import TAIL_MULTIPLES, ShapeTail

MS = 1_000_000
SHAPE = "1,1,1,128,1,1"


def with_tail(src: Path, dst: Path, every: int = 50, factor: int = 10) -> tuple[str, list[int]]:
    """A copy of ``src`` whose most frequent elementwise kernel takes ``factor`` times
    longer in one call of ``every``; returns that kernel's name and the rowids slowed."""
    shutil.copy(src, dst)
    dst.chmod(0o644)
    con = sqlite3.connect(dst)
    name_id, name = con.execute(
        "SELECT k.demangledName, s.value FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN StringIds s "
        "ON s.id = k.demangledName WHERE s.value LIKE '%elementwise%' GROUP BY k.demangledName "
        "ORDER BY count(*) DESC, k.demangledName LIMIT 1"
    ).fetchone()
    rows = con.execute(
        "SELECT rowid FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE demangledName = ? ORDER BY start", (name_id,)
    ).fetchall()
    slowed = [rowid for i, (rowid,) in enumerate(rows) if i % every == every - 1]
    for rowid in slowed:
        con.execute(
            f'UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET "end" = start + {factor} * ("end" - start) WHERE rowid = ?',
            (rowid,),
        )
    con.commit()
    con.close()
    return str(name), slowed


def _shape_calls(path: Path, name: str, shape: str) -> tuple[list[int], list[int]]:
    """Rowids and durations of ``name``'s launches of ``shape``, fastest first, by plain SQL."""
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    rows = con.execute(
        'SELECT k.rowid, k."end" - k.start FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN StringIds s '
        "ON s.id = k.demangledName WHERE s.value = ? AND "
        "k.gridX || ',' || k.gridY || ',' || k.gridZ || ',' || k.blockX || ',' || k.blockY || ',' || k.blockZ = ? "
        "ORDER BY 2",
        (name, shape),
    ).fetchall()
    con.close()
    return [r for r, _ in rows], [d for _, d in rows]


def test_a_planted_tail_is_found_with_its_exact_count(tmp_path: Path) -> None:
    base = real_trace("h100/llm_bs16")
    name, slowed = with_tail(base, tmp_path / "tail.sqlite")
    found = tails.changes(api.load(base), api.load(tmp_path / "tail.sqlite"))
    assert found and {t.key for t in found} == {name}
    for t in found:
        rowids, durations = _shape_calls(tmp_path / "tail.sqlite", name, t.shape)
        median = durations[(len(durations) + 1) // 2 - 1]
        # Every call slowed in this shape, and nothing else, lies beyond the multiple.
        planted = len(set(rowids) & set(slowed))
        assert t.base_beyond == 0 and t.beyond == planted == sum(2 * d > 2 * t.multiple * median for d in durations)
        assert t.calls == len(durations) and t.candidate_p50_ns == median == t.base_p50_ns
        assert t.p_value < 1e-4 and t.extra_ns > 0.1 * MS
    top = found[0]
    assert (top.shape, top.beyond, top.calls) == ("64,1,1,128,1,1", 47, 2080)


def test_the_tail_is_on_the_first_screen_and_a_warning_of_every_pack_that_has_the_rule(tmp_path: Path) -> None:
    base = real_trace("h100/llm_bs16")
    with_tail(base, tmp_path / "tail.sqlite")
    r = run_cli(str(base), str(tmp_path / "tail.sqlite"), "--width", "200")
    lines = r.stdout.splitlines()
    first = r.stdout.split("\n\n")[0].split("\n  note:")[0].replace("\n  ", " ")
    assert r.exit_code == 0  # a warning: a pack sets it to error to fail on it
    assert "1 warning" in first and "tail change elementwise_kernel +1.1" in first, r.stdout
    assert "(47 of 2,080 calls over 4x the median, median held)" in first, r.stdout
    assert any(
        line.startswith("tail ") and "[grid 64,1,1, block 128,1,1]: 47 of 2,080 calls over 4x the median" in line
        for line in lines
    ), r.stdout
    # The first screen is the diff's, whatever the pack: tpot says it too.
    r = run_cli(str(base), str(tmp_path / "tail.sqlite"), "--rules", "tpot")
    assert "tail change" in r.stdout


def test_h100_repeats_have_no_tail_change() -> None:
    a, b = api.load(real_trace("h100/llm_bs16")), api.load(real_trace("h100/llm_bs16_r2"))
    assert tails.changes(a, b) == () and tails.changes(b, a) == ()


def test_another_batch_size_and_a_new_caller_are_no_tail(tmp_path: Path) -> None:
    bs16 = real_trace("h100/llm_bs16")
    # The prefill's calls at 16x the batch run with another grid: another population.
    assert tails.changes(api.load(real_trace("h100/llm_bs1")), api.load(bs16)) == ()
    # The slower norm's new elementwise kernels launch with another grid than the kernel's
    # decode calls: new calls, not a tail of the old ones.
    assert tails.changes(api.load(bs16), api.load(ps.slow_norm(bs16, tmp_path / "norm.sqlite"))) == ()


def test_a_shrinking_tail_is_no_tail_change(tmp_path: Path) -> None:
    base = real_trace("h100/llm_bs16")
    with_tail(base, tmp_path / "tail.sqlite")
    assert tails.changes(api.load(tmp_path / "tail.sqlite"), api.load(base)) == ()


def _built(path: Path, durations: np.ndarray, *, extra: tuple[tuple[int, int, int], ...] = ()) -> Path:
    """A trace of one kernel launched with ``durations`` (grid 1), and ``extra`` launches
    (grid x, calls, duration) of it with other grids; a second kernel beside it."""
    b = TraceBuilder()
    starts = 1_000_000 + np.arange(len(durations)) * 100_000
    b.kernels("elementwise_kernel", starts, durations)
    at = int(starts[-1]) + 1_000_000
    for grid, calls, ns in extra:
        b.kernels("elementwise_kernel", at + np.arange(calls) * 100_000, np.full(calls, ns), grid=(grid, 1, 1))
        at += calls * 100_000
    b.kernels("gemm_kernel", at + np.arange(300) * 100_000, np.full(300, 20_000))
    return b.write(path)


def _steady(n: int = 1000) -> np.ndarray:
    rng = np.random.default_rng(7)
    return rng.integers(2_000, 2_400, n).astype(np.int64)


def test_the_scan_counts_each_shape_exactly(tmp_path: Path) -> None:
    d = _steady()
    d[::50] *= 10  # 20 calls 10x slower
    with open_trace(_built(tmp_path / "t.sqlite", d, extra=((8, 250, 5_000),))) as r:
        found = {t.shape: t for t in r.kernel_tails() if t.name == "elementwise_kernel"}
    ordered = np.sort(d)
    median = int(ordered[(len(d) + 1) // 2 - 1])
    assert found[SHAPE] == ShapeTail(
        "elementwise_kernel",
        SHAPE,
        1000,
        int(d.sum()),
        median,
        tuple(int(np.sum(2 * d > round(2 * m) * median)) for m in TAIL_MULTIPLES),
    )
    assert found[SHAPE].beyond[-1] <= 20 <= found[SHAPE].beyond[1]
    assert found["8,1,1,128,1,1"] == ShapeTail("elementwise_kernel", "8,1,1,128,1,1", 250, 250 * 5_000, 5_000, (0,) * 4)


def test_a_built_tail_is_found_and_a_warm_up_call_or_another_grid_is_not(tmp_path: Path) -> None:
    base = api.load(_built(tmp_path / "base.sqlite", _steady()))
    tailed = _steady()
    tailed[::50] *= 10
    found = tails.changes(base, api.load(_built(tmp_path / "tail.sqlite", tailed)))
    assert [(t.name, t.shape, t.beyond, t.base_beyond) for t in found] == [("elementwise_kernel", SHAPE, 20, 0)]
    # One warm-up call 100x slower: a new maximum and +0.2 ms, no tail.
    warm = _steady()
    warm[0] *= 100
    assert tails.changes(base, api.load(_built(tmp_path / "warm.sqlite", warm))) == ()
    # 40 slow calls with another grid: a new population, not a tail of the grid-1 calls.
    other = _built(tmp_path / "other.sqlite", _steady(), extra=((8, 40, 22_000),))
    assert tails.changes(base, api.load(other)) == ()


def _shapes(calls: int, p50: int, total: int, beyond: tuple[int, ...], name: str = "elementwise_kernel") -> Fingerprint:
    fp = fingerprint([kernel(name, calls, total), kernel("gemm_kernel", 1000, 20 * MS)])
    return dataclasses.replace(fp, tails=(ShapeTail(name, SHAPE, calls, total, p50, beyond),))


def test_a_median_that_moved_is_a_per_call_change_not_a_tail() -> None:
    base = _shapes(3200, 2_500, 8 * MS, (0, 0, 0, 0))
    assert tails.changes(base, _shapes(3200, 2_500, 12 * MS, (160, 160, 160, 0)))
    assert tails.changes(base, _shapes(3200, 3_750, 14 * MS, (160, 160, 160, 0))) == ()


def test_a_fingerprint_saved_before_the_counts_has_no_tail() -> None:
    base = _shapes(3200, 2_500, 8 * MS, (0, 0, 0, 0))
    cand = _shapes(3200, 2_500, 12 * MS, (160, 160, 160, 0))
    assert tails.changes(dataclasses.replace(base, tails=None), cand) == ()
    assert tails.changes(base, dataclasses.replace(cand, tails=None)) == ()


def _phased(path: Path, prefill_ns: int) -> Path:
    """A prefill range of 250 calls of a kernel, then a decode range of 1000 calls of it at
    one grid, launched from inside the ranges."""
    b = TraceBuilder()
    pre = 1_000_000 + np.arange(250) * 100_000
    b.kernels("elementwise_kernel", pre, np.full(250, prefill_ns), api="cudaLaunchKernel_v7000")
    b.nvtx_range("prefill", int(pre[0]) - 10_000, int(pre[-1]) + 50_000)
    dec = int(pre[-1]) + 1_000_000 + np.arange(1000) * 100_000
    b.kernels("elementwise_kernel", dec, _steady(), api="cudaLaunchKernel_v7000")
    b.nvtx_range("decode", int(dec[0]) - 10_000, int(dec[-1]) + 50_000)
    return b.write(path)


def test_a_prefill_at_another_batch_with_one_grid_is_no_tail_by_phase(tmp_path: Path) -> None:
    base, cand = _phased(tmp_path / "b.sqlite", 2_200), _phased(tmp_path / "c.sqlite", 22_000)
    # Read whole, the prefill's 250 longer calls share the decode calls' grid: a tail.
    assert [t.beyond for t in tails.changes(api.load(base), api.load(cand))] == [250]
    # Read by phase, each phase is its own population: the prefill's median moved (a
    # per-call change of another batch), the decode steps held.
    opts = ScopeOptions(phases=(("prefill", ("prefill",)), ("decode", ("decode",))))
    b, c = api.load(base, opts), api.load(cand, opts)
    assert b.phases[0].fingerprint.tails is not None and tails.changes(b, c) == ()
    # A tail inside one phase is found there, and says which.
    slowed = _phased(tmp_path / "t.sqlite", 2_200)
    con = sqlite3.connect(slowed)
    con.execute(
        'UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET "end" = start + 10 * ("end" - start) '
        "WHERE rowid IN (SELECT rowid FROM CUPTI_ACTIVITY_KIND_KERNEL ORDER BY start LIMIT -1 OFFSET 250) "
        "AND rowid % 50 = 0"
    )
    con.commit()
    con.close()
    found = tails.changes(b, api.load(slowed, opts))
    assert [(t.phase, t.beyond) for t in found] == [("decode", 20)] and found[0].where.endswith("in phase decode")


def test_durations_that_hardly_repeat_are_counted_alike_in_sqlite(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = real_trace("h100/llm_bs16")
    d = _steady()
    d[::50] *= 10
    built = _built(tmp_path / "t.sqlite", d, extra=((8, 250, 5_000),))
    want = {}
    for path in (real, built):
        with open_trace(path) as r:
            want[path] = r.kernel_tails()
    # A histogram limit of 2 rows: every chunk folds to more than half of it.
    monkeypatch.setattr(tail_scan, "HIST_LIMIT", 2)
    for path in (real, built):
        with open_trace(path) as r:
            assert r.kernel_tails() == want[path] and want[path]
