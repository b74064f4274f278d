"""On every real trace, nsysdiff's numbers equal what NVIDIA's `nsys stats` printed."""

from __future__ import annotations

import csv
import re
from collections import defaultdict
from pathlib import Path

import pytest
from conftest import real_trace, real_traces, traces_dir

from nsysdiff.api import fingerprint_trace
from nsysdiff.trace import api_scan, text_scan
from nsysdiff.trace.reader import open_trace

TRACES = real_traces()
IDS = [p.stem for p in TRACES]


def _csv(path: Path) -> list[dict[str, str]]:
    if not path.exists() or path.stat().st_size == 0:
        return []
    with path.open(newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


@pytest.mark.skipif(not TRACES, reason="real traces not found")
@pytest.mark.parametrize("trace", TRACES, ids=IDS)
def test_kernels_equal_nsys_stats(trace: Path) -> None:
    # gpukernsum groups by (name, grid, block): sum its rows per name first.
    want: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for row in _csv(traces_dir() / "nsys-stats" / f"{trace.stem}_gpukernsum.csv"):
        want[row["Name"]][0] += int(row["Instances"])
        want[row["Name"]][1] += int(row["Total Time (ns)"])
    fp = fingerprint_trace(trace)
    got = {k.demangled: [k.calls, k.total_ns] for k in fp.kernels}
    assert got == dict(want)


_MEM_OP = re.compile(r"\[CUDA (memcpy (?P<kind>.+)|memset)\]")


@pytest.mark.skipif(not TRACES, reason="real traces not found")
@pytest.mark.parametrize("trace", TRACES, ids=IDS)
def test_memory_equals_nsys_stats(trace: Path) -> None:
    want = {}
    for row in _csv(traces_dir() / "nsys-stats" / f"{trace.stem}_gpumemtimesum.csv"):
        m = _MEM_OP.fullmatch(row["Operation"])
        assert m, row["Operation"]
        want[m["kind"] or "memset"] = (int(row["Count"]), int(row["Total Time (ns)"]))
    fp = fingerprint_trace(trace)
    got = {c.kind: (c.ops, c.total_ns) for c in (*fp.memcpy, *fp.memset)}
    assert got == want


CENSUS_TRACES = [*TRACES, *(sorted((traces_dir() / "h100").glob("*.sqlite")) if TRACES else [])]


def _nsys_name(name: str) -> str:
    # nsys stats prints a name without its last six characters when they are `_vNNNN`
    # (`cudaLaunchKernel_v7000`); a longer suffix (`_v11060`) stays.
    return name[:-6] if name[-6:-4] == "_v" else name


@pytest.mark.skipif(not TRACES, reason="real traces not found")
@pytest.mark.parametrize("trace", CENSUS_TRACES, ids=[f"{p.parent.name}/{p.stem}" for p in CENSUS_TRACES])
def test_host_api_census_equals_cuda_api_sum(trace: Path) -> None:
    rows = _csv(trace.parent / "nsys-stats" / f"{trace.stem}_cudaapisum.csv")
    want = sorted(
        (r["Name"], int(r["Num Calls"]), int(r["Total Time (ns)"]), float(r["Med (ns)"]), int(r["Min (ns)"]),
         int(r["Max (ns)"]))
        for r in rows
    )  # fmt: skip
    fp = fingerprint_trace(trace)
    assert fp.api is not None
    got = sorted((_nsys_name(a.name), a.calls, a.total_ns, a.median_ns, a.min_ns, a.max_ns) for a in fp.api)
    assert got == want
    # The CSV rounds the mean to 0.1 ns.
    means = {(_nsys_name(a.name), a.calls, a.total_ns): a.mean_ns for a in fp.api}
    for r in rows:
        key = (r["Name"], int(r["Num Calls"]), int(r["Total Time (ns)"]))
        assert abs(means[key] - float(r["Avg (ns)"])) <= 0.05 + 1e-9


def test_the_census_is_the_same_when_its_histogram_spills(monkeypatch: pytest.MonkeyPatch) -> None:
    # A histogram past its limit moves into SQLite, a few calls per chunk: the same figures.
    with open_trace(real_trace("h100/llm_bs1")) as r:
        whole = r.api_census()
        assert sum(a.calls for a in whole) > 1000
        monkeypatch.setattr(text_scan, "ROWS", 97)
        monkeypatch.setattr(api_scan, "_HIST_LIMIT", 50)
        assert r.api_census() == whole


def test_two_name_ids_with_one_text_are_listed_apart_as_nsys_stats_lists_them(tmp_path: Path) -> None:
    # pipit_saxpy_mpi_a100 calls cudaFree by two ids (cudaFree, cudaFree_v3020), which nsys
    # stats prints with one name, each id a row of its own: give the second id the first
    # one's very text, and the census still lists the two rows that the CSV lists.
    import shutil
    import sqlite3

    src = real_trace("pipit_saxpy_mpi_a100")
    trace = tmp_path / "t.sqlite"
    shutil.copyfile(src, trace)
    trace.chmod(0o644)
    con = sqlite3.connect(trace)
    con.execute(
        "UPDATE StringIds SET value = substr(value, 1, length(value) - 6) "
        "WHERE value GLOB 'cuda*_v[0-9][0-9][0-9][0-9]'"
    )
    con.commit()
    con.close()
    rows = _csv(src.parent / "nsys-stats" / f"{src.stem}_cudaapisum.csv")
    want = sorted((r["Name"], int(r["Num Calls"]), int(r["Total Time (ns)"]), float(r["Med (ns)"])) for r in rows)
    fp = fingerprint_trace(trace)
    assert fp.api is not None
    got = sorted((re.sub(r" \(name id \d+\)$", "", a.name), a.calls, a.total_ns, a.median_ns) for a in fp.api)
    assert got == want
    assert len({a.name for a in fp.api}) == len(fp.api)


def test_two_name_ids_with_one_text_keep_their_own_medians_and_sync_counts_both(tmp_path: Path) -> None:
    import sqlite3

    from nsysdiff.synth.builder import TraceBuilder

    b = TraceBuilder()
    for i in range(3):
        b.runtime("cuProfilerStart", 1_000 + 10_000 * i, 200)
        b.runtime("cuProfilerStart_alias", 500_000 + 10_000 * i, 1_335)
        b.runtime("cudaDeviceSynchronize", 900_000 + 10_000 * i, 100)
        b.runtime("cudaDeviceSynchronize_alias", 950_000 + 10_000 * i, 300)
    trace = b.write(tmp_path / "t.sqlite")
    con = sqlite3.connect(trace)
    con.execute("UPDATE StringIds SET value = replace(value, '_alias', '')")
    con.commit()
    con.close()
    fp = fingerprint_trace(trace)
    assert fp.api is not None
    got = sorted((re.sub(r" \(name id \d+\)$", "", a.name), a.calls, a.median_ns) for a in fp.api)
    assert got == [
        ("cuProfilerStart", 3, 200.0),
        ("cuProfilerStart", 3, 1335.0),
        ("cudaDeviceSynchronize", 3, 100.0),
        ("cudaDeviceSynchronize", 3, 300.0),
    ]
    # The synchronising calls are counted by their text: both ids, one call name.
    assert [(c.name, c.calls, c.total_ns) for c in fp.sync] == [("cudaDeviceSynchronize", 6, 1_200)]
