"""On every real trace, nsysdiff's numbers equal what NVIDIA's `nsys stats` printed."""

from __future__ import annotations

import csv
import re
from collections import defaultdict
from pathlib import Path

import pytest
from conftest import real_traces, traces_dir

from nsysdiff.api import fingerprint_trace

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
