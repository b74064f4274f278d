"""Tail changes: slow calls that multiplied while the median held (nsysdiff.compare.tails)."""

from __future__ import annotations

import dataclasses
import shutil
import sqlite3
from pathlib import Path

from conftest import real_trace, run_cli
from fpspec import fingerprint, kernel

from nsysdiff import api
from nsysdiff.compare import tails
from nsysdiff.fingerprint.model import KernelStats
from nsysdiff.trace.records import QUANTILE_GRID

MS = 1_000_000


def with_tail(src: Path, dst: Path, every: int = 50, factor: int = 10) -> str:
    """A copy of ``src`` whose most frequent elementwise kernel takes ``factor`` times
    longer in one call of ``every``; returns that kernel's name."""
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
    for i, (rowid,) in enumerate(rows):
        if i % every == every - 1:
            con.execute(
                f'UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET "end" = start + {factor} * ("end" - start) WHERE rowid = ?',
                (rowid,),
            )
    con.commit()
    con.close()
    return str(name)


def tailed(k: KernelStats, share: float, factor: float) -> KernelStats:
    """``k`` with its slowest ``share`` of calls ``factor`` times longer (the sketch and total)."""
    q = list(k.quantiles_ns)
    n_slow = round(k.calls * share)
    for i, p in enumerate(QUANTILE_GRID):
        if p >= 100 * (1 - share):
            q[i] *= factor
    extra = n_slow * (factor - 1) * k.quantiles_ns[-1]
    return dataclasses.replace(k, quantiles_ns=tuple(q), total_ns=int(k.total_ns + extra))


REST = {f"gemm_{i}_kernel": (1000, 20 * MS) for i in range(4)}


def test_a_two_percent_tail_of_10x_calls_is_found_in_a_copy_of_a_real_trace(tmp_path: Path) -> None:
    base = real_trace("h100/llm_bs16")
    name = with_tail(base, tmp_path / "tail.sqlite")
    found = tails.changes(api.load(base), api.load(tmp_path / "tail.sqlite"))
    assert [t.key for t in found] == [name]
    t = found[0]
    assert t.beyond > 1.5 * t.expected and t.p_value < 1e-6
    assert 1.5 * MS < t.extra_ns < 2.5 * MS
    assert t.candidate_max_ns > 5 * t.base_max_ns
    assert abs(t.candidate_p50_ns / t.base_p50_ns - 1) < 0.01


def test_the_tail_is_on_the_first_screen_and_a_warning_of_every_pack_that_has_the_rule(tmp_path: Path) -> None:
    base = real_trace("h100/llm_bs16")
    with_tail(base, tmp_path / "tail.sqlite")
    r = run_cli(str(base), str(tmp_path / "tail.sqlite"), "--width", "200")
    lines = r.stdout.splitlines()
    assert r.exit_code == 0  # a warning: a pack sets it to error to fail on it
    assert "1 warning" in lines[0] and "tail change elementwise_kernel +1.9" in lines[0]
    assert any(line.startswith("tail ") and "calls beyond the base's p9" in line for line in lines)
    # The first screen is the diff's, whatever the pack: tpot says it too.
    r = run_cli(str(base), str(tmp_path / "tail.sqlite"), "--rules", "tpot")
    assert "tail change" in r.stdout


def test_h100_repeats_have_no_tail_change() -> None:
    a, b = api.load(real_trace("h100/llm_bs16")), api.load(real_trace("h100/llm_bs16_r2"))
    assert tails.changes(a, b) == () and tails.changes(b, a) == ()


def test_a_shrinking_tail_is_no_tail_change(tmp_path: Path) -> None:
    base = real_trace("h100/llm_bs16")
    with_tail(base, tmp_path / "tail.sqlite")
    assert tails.changes(api.load(tmp_path / "tail.sqlite"), api.load(base)) == ()


def test_a_built_tail_is_found_and_one_slow_call_is_not() -> None:
    k = kernel("vectorized_elementwise_kernel", 3200, 8 * MS)
    base = fingerprint([k, *(kernel(n, c, t) for n, (c, t) in REST.items())])
    cand = fingerprint([tailed(k, 0.05, 10.0), *(kernel(n, c, t) for n, (c, t) in REST.items())])
    assert [t.name for t in tails.changes(base, cand)] == ["vectorized_elementwise_kernel"]
    # One call 100x slower: a new maximum and +0.25 ms, no tail.
    q = (*k.quantiles_ns[:-1], k.quantiles_ns[-1] * 100)
    one = dataclasses.replace(k, quantiles_ns=q, total_ns=k.total_ns + int(99 * k.quantiles_ns[-1]))
    cand = fingerprint([one, *(kernel(n, c, t) for n, (c, t) in REST.items())])
    assert tails.changes(base, cand) == ()


def test_a_median_that_moved_is_a_per_call_change_not_a_tail() -> None:
    k = kernel("vectorized_elementwise_kernel", 3200, 8 * MS)
    slower = dataclasses.replace(
        tailed(k, 0.05, 10.0), quantiles_ns=tuple(1.5 * q for q in tailed(k, 0.05, 10.0).quantiles_ns)
    )
    assert tails.changes(fingerprint([k]), fingerprint([slower])) == ()


def test_beyond_reads_the_sketch_linearly() -> None:
    q = tuple(float(p) for p in QUANTILE_GRID)  # value == percentile
    assert abs(tails.beyond(q, 95.0) - 0.05) < 1e-12
    assert abs(tails.beyond(q, 97.0) - 0.03) < 1e-12
    assert tails.beyond(q, 100.0) == 0.0 and tails.beyond(q, -1.0) == 1.0
