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
