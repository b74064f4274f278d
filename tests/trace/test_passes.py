"""How often a read scans the big tables: each pass over NVTX_EVENTS or the kernel table
costs seconds on a real capture, so the reader must not repeat one it has made.

The statements are counted on the reader's own connection (``set_trace_callback``), on
builder traces; the numbers they give are checked against an unscoped read.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from nsysdiff.errors import TraceError
from nsysdiff.fingerprint import scope
from nsysdiff.fingerprint.model import Fingerprint
from nsysdiff.synth.builder import Generation, TraceBuilder
from nsysdiff.synth.writer import tamper
from nsysdiff.trace.reader import TraceReader, open_trace
from nsysdiff.trace.records import Selection, Window

NVTX_PASS = "INSERT INTO temp.nsysdiff_names"


def _trace(path: Path) -> Path:
    b = TraceBuilder(Generation.V2024)
    for step in range(6):
        t = step * 100_000
        b.nvtx_range("decode_step", t, t + 90_000)
        b.nvtx_range(f"aten::linear, seq = {step}, op_id = {2 * step}", t + 1_000, t + 40_000)
        b.nvtx_range(f"attention, op_id = {2 * step + 1}", t + 41_000, t + 80_000)
        b.launch("gemm", t + 2_000, t + 2_500, 10_000)
        b.launch("flash_fwd", t + 42_000, t + 42_500, 18_000)
    return b.write(path)


@contextmanager
def _traced(path: Path) -> Iterator[tuple[TraceReader, list[str]]]:
    with open_trace(path) as r:
        seen: list[str] = []
        r.con.set_trace_callback(seen.append)
        yield r, seen


def _fingerprint(path: Path, **options: object) -> tuple[Fingerprint, list[str]]:
    with _traced(path) as (r, seen):
        fp = scope.fingerprint(r, scope.options(**options))  # type: ignore[arg-type]
    return fp, seen


@pytest.mark.parametrize(
    ("options", "passes"),
    [
        ({"per": "decode_step"}, 1),
        # Each phase's summary holds the ranges inside the phase: a pass of its own.
        ({"phases": {"linear": "aten::linear", "attention": ["attention"]}}, 1 + 2),
    ],
    ids=["per", "phases"],
)
def test_one_nvtx_pass_when_no_range_scopes_the_summary(
    tmp_path: Path, options: dict[str, object], passes: int
) -> None:
    # Without --nvtx, the NVTX summary of a --per read, and the whole summary beside
    # --phases, keep every range: the census of range names already made it.
    path = _trace(tmp_path / "t.sqlite")
    fp, seen = _fingerprint(path, **options)
    assert sum(NVTX_PASS in q for q in seen) == passes
    assert {(x.name, x.count, x.total_ns) for x in fp.nvtx} == {
        ("decode_step", 6, 6 * 90_000),
        ("aten::linear", 6, 6 * 39_000),
        ("attention", 6, 6 * 39_000),
    }


def test_nvtx_scope_still_attributes_the_summary(tmp_path: Path) -> None:
    # With --nvtx the summary is of the ranges inside the scope: its own pass.
    path = _trace(tmp_path / "t.sqlite")
    fp, seen = _fingerprint(path, nvtx="aten::linear")
    assert sum(NVTX_PASS in q for q in seen) == 2
    assert {x.name for x in fp.nvtx} == {"aten::linear"}


@pytest.mark.parametrize("options", [{}, {"phases": {"linear": "aten::linear"}}], ids=["whole", "phases"])
def test_no_kernel_scan_of_its_own_for_the_graph_mode_or_the_total(tmp_path: Path, options: dict[str, object]) -> None:
    # The whole read learns whether kernels are graph nodes and their total time; a probe
    # or a sum of its own would scan every launch again.
    path = _trace(tmp_path / "t.sqlite")
    fp, seen = _fingerprint(path, **options)
    assert not [q for q in seen if "graphNodeId != 0 LIMIT 1" in q]
    assert not [q for q in seen if q.startswith('SELECT coalesce(sum("end" - start), 0)')]
    if options:
        (phase,) = fp.phases
        assert phase.fingerprint.scope.coverage == pytest.approx(6 * 10_000 / (6 * 10_000 + 6 * 18_000))


@pytest.mark.parametrize("nodes", [False, True], ids=["plain", "graph nodes"])
def test_a_filtered_read_learns_the_graph_mode_from_its_kernel_sum(tmp_path: Path, nodes: bool) -> None:
    # --nvtx reads no whole kernel table, but sums it for coverage: that scan answers
    # the graph-mode question too.
    b = TraceBuilder(Generation.V2024)
    b.nvtx_range("aten::linear", 0, 90_000)
    b.launch("gemm", 1_000, 1_500, 10_000, graph_node_id=7 if nodes else None)
    b.launch("gemm", 95_000, 95_500, 10_000)
    fp, seen = _fingerprint(b.write(tmp_path / "t.sqlite"), nvtx="aten::linear")
    assert not [q for q in seen if "graphNodeId != 0 LIMIT 1" in q]
    assert fp.meta.graph_mode.value == ("node" if nodes else "none")
    assert fp.scope.coverage == pytest.approx(0.5)


def test_default_domain_needs_no_domain_scan(tmp_path: Path) -> None:
    path = _trace(tmp_path / "t.sqlite")
    with _traced(path) as (r, seen):
        r.nvtx_summary()
    assert not [q for q in seen if "domainId" in q and "NVTX_EVENTS" in q and "eventType = " in q]


def test_default_domain_has_no_name(tmp_path: Path) -> None:
    # NVTX never creates domain 0; a crafted DomainCreate row for it names nothing.
    path = tamper(
        _trace(tmp_path / "t.sqlite"),
        "INSERT INTO NVTX_EVENTS (start, eventType, text, globalTid, domainId) VALUES (5, 75, 'fake', 0, 0)",
    )
    with open_trace(path) as r:
        assert {x.domain for x in r.nvtx_summary()} == {""}


def test_named_domains_are_read_once(tmp_path: Path) -> None:
    b = TraceBuilder(Generation.V2024)
    b.nvtx_range("decode_step", 0, 9_000, domain="vllm")
    b.nvtx_range("plain", 0, 9_000)
    path = b.write(tmp_path / "t.sqlite")
    with _traced(path) as (r, seen):
        assert {(x.name, x.domain) for x in r.nvtx_summary()} == {("decode_step", "vllm"), ("plain", "")}
        assert {(k.sql_name, k.domain) for k in r.nvtx_keys()} == {("decode_step", "vllm"), ("plain", "")}
    assert len([q for q in seen if "eventType = " in q and "domainId" in q]) == 1


CALL_CHECK = "FROM CUPTI_ACTIVITY_KIND_RUNTIME WHERE correlationId IS NOT NULL AND correlationId != 0"


@pytest.mark.parametrize("options", [{"nvtx": "aten::linear"}, {"per": "decode_step"}], ids=["nvtx", "per"])
def test_the_census_checks_the_launching_calls(tmp_path: Path, options: dict[str, object]) -> None:
    # A whole census reads every call; its pass checks the ids the attribution joins on,
    # so attributing the GPU work to ranges scans the runtime table no more for its check.
    path = _trace(tmp_path / "t.sqlite")
    fp, seen = _fingerprint(path, **options)
    assert not any(q.startswith("SELECT coalesce(sum(") and CALL_CHECK in q for q in seen)
    assert fp.api


def test_a_windowed_census_leaves_the_check_to_the_attribution(tmp_path: Path) -> None:
    # The census of a window reads only its calls: the attribution checks all of them.
    path = _trace(tmp_path / "t.sqlite")
    _, seen = _fingerprint(path, nvtx="aten::linear", window="0:1s")
    assert sum(q.startswith("SELECT coalesce(sum(") and CALL_CHECK in q for q in seen) == 1


def _copies_trace(path: Path) -> Path:
    b = TraceBuilder(Generation.V2024)
    for i in range(40):
        b.memcpy(("HtoD", "DtoH", "DtoD")[i % 3], 1_000 * i, 100 + i, 4_096 * (i + 1))
        b.memset(1_000 * i + 500, 50 + i, 256 * i)
    return b.write(path)


def test_the_whole_read_counts_copies_in_one_checked_pass(tmp_path: Path) -> None:
    # The chunked pass checks the rows without a typeof() per value and gives what the
    # GROUP BY of a scoped read gives.
    path = _copies_trace(tmp_path / "t.sqlite")
    with _traced(path) as (r, seen):
        whole = (r.memcpy(), r.memset())
        sel = Selection(Window(0, 10**9))
        window = (r.memcpy(sel), r.memset(sel))
    assert whole == window
    assert {c.kind: c.ops for c in whole[0]} == {"HtoD": 14, "DtoH": 13, "DtoD": 13}
    assert whole[1][0].ops == 40
    checked = [q for q in seen if "typeof(" in q and "FROM CUPTI_ACTIVITY_KIND_MEM" in q]
    assert len(checked) == 2  # the window's, one per table


@pytest.mark.parametrize(
    "change",
    [
        "UPDATE CUPTI_ACTIVITY_KIND_MEMCPY SET copyKind = 1.5 WHERE rowid = 3",
        "UPDATE CUPTI_ACTIVITY_KIND_MEMCPY SET bytes = CAST('4096' AS BLOB) WHERE rowid = 3",
        "UPDATE CUPTI_ACTIVITY_KIND_MEMSET SET start = start + 0.5 WHERE rowid = 3",
    ],
    ids=["REAL kind", "BLOB bytes", "REAL start"],
)
def test_a_copy_pass_that_meets_a_bad_row_leaves_it_to_the_checked_query(tmp_path: Path, change: str) -> None:
    path = tamper(_copies_trace(tmp_path / "t.sqlite"), change)
    with open_trace(path) as r, pytest.raises(TraceError, match="rowid 3"):
        if "MEMCPY" in change:
            r.memcpy()
        else:
            r.memset()
