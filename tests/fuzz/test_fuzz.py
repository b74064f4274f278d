"""The fuzzer's fixed-seed subset: hostile and broken inputs keep nsysdiff's contract.

``benchmarks/fuzz.py`` mutates TraceBuilder traces (bytes, pages, truncation, values
written through SQL, hostile names, saved fingerprints, run sets and noise profiles) and
runs ``summary`` and ``diff`` (one or several runs per side) in every format on each;
mutated rule files and phases maps, ``-o`` onto inputs and ``--keep-export`` beside them,
and names with every Unicode blank before ``::``.
Here a few hundred cases of one seed, builder traces only, so the subset is the same
with or without ../shared; the full run (5,000+ cases, real traces too) is
``python benchmarks/fuzz.py`` (see benchmarks/README.md). ``benchmarks/fuzz_shapes.py``
adds the step finder's shapes, FIFO and link outputs, stopped reads and long texts in
integer columns, and every case is held to a memory bound.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]
CASES = 200


def _fuzz() -> ModuleType:
    spec = importlib.util.spec_from_file_location("nsysdiff_fuzz", ROOT / "benchmarks" / "fuzz.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module


@pytest.mark.skipif(not hasattr(os, "fork"), reason="the fuzzer forks a child per case")
def test_fixed_seed_subset(tmp_path: Path) -> None:
    fuzz = _fuzz()
    argv = sys.argv[:]
    try:
        outcomes = fuzz.run(seed=1, cases=CASES, timeout=30.0, jobs=2, work=tmp_path, real=False)
    finally:
        sys.argv = argv
    tally = fuzz.tally(outcomes)
    failures = [
        f"case {o.case.number} ({o.case.seed}: {o.case.mutation}; nsysdiff {' '.join(o.case.argv)}): "
        + "; ".join(o.problems)
        for o in outcomes
        if o.problems
    ]
    assert tally["cases"] == CASES
    assert failures == []
    # The subset reaches every verdict a broken input can get, not only exit 2.
    codes = {o.code for o in outcomes}
    assert {0, 2, 3} <= codes
    commands = {"summary", "diff", "fingerprint", "noise", "rules", "history", "comment", "action diff step"}
    assert {o.case.argv[0] for o in outcomes} == commands
    # Every kind of saved input is mutated, and diffs take several runs per side too.
    mutations = {o.case.mutation.split(" ")[0] for o in outcomes}
    assert {"fingerprint", "run", "noise", "rules:", "phases:", "-o", "--keep-export"} <= mutations
    # And the surfaces beyond traces: stores, the comment client, step bombs, the Action.
    assert {"history", "comment:", "steps:", "action:"} <= mutations
    # And the newest: the step finder's shapes, stopped reads, long texts in integer
    # columns, FIFO and link outputs; every case within the memory bound.
    assert {"auto:", "stopped:", "long"} <= mutations
    assert any(o.case.mutation.startswith(("-o fifo", "-o symlink to a fifo")) for o in outcomes)
    assert tally["over the memory bound"] == 0 and all(0 < o.peak_kib <= fuzz.MEMORY_LIMIT_KIB for o in outcomes)
    # Names carry every Unicode blank before "::", and injected lines are counted after them.
    assert all(f"\n{b}::error::" in "".join(fuzz.HOSTILE) for b in fuzz.BLANKS if b != "\n")
    assert any("--base" in o.case.argv for o in outcomes)
    assert any("--noise-profile" in o.case.argv for o in outcomes)
