"""Diffs without kernel data: NVTX ranges when neither side has kernels, graph launches
between two graph-mode captures; graph against node capture stays inconclusive."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from conftest import real_trace, run_cli, traces_dir
from fpspec import fingerprint

from nsysdiff.api import load
from nsysdiff.compare.diff import compare
from nsysdiff.fingerprint.model import fingerprint_to_json
from nsysdiff.trace.records import GraphMode, GraphStats

MS = 1_000_000
T = traces_dir()
RANGES = {f"stage{i}": (100, (10 + i) * MS) for i in range(8)}
# The whole text report (--details), 120 columns wide, whatever the terminal.
WHOLE = ("--details", "--width", "120")


def test_nvtx_only_sides_compare_their_ranges() -> None:
    cand = {k: (c, round(t * 1.2)) for k, (c, t) in RANGES.items()} | {"stage3": (100, 39 * MS)}
    d = compare(fingerprint({}, nvtx=RANGES), fingerprint({}, nvtx=cand))
    assert d.headline.basis == "nvtx"
    assert d.headline.scale == pytest.approx(1.2)
    assert [r.key for r in d.outliers] == ["stage3"]
    a = compare(fingerprint({}, nvtx=RANGES), fingerprint({}, nvtx=RANGES))
    assert a.outliers == () and a.headline.scale == 1.0


def test_nvtx_only_cli_verdicts(tmp_path: Path) -> None:
    b, c, same = tmp_path / "b.json", tmp_path / "c.json", tmp_path / "same.json"
    cand = {k: (c_, round(t * 1.2)) for k, (c_, t) in RANGES.items()} | {"stage3": (100, 39 * MS)}
    b.write_text(fingerprint_to_json(fingerprint({}, nvtx=RANGES)))
    same.write_text(fingerprint_to_json(fingerprint({}, nvtx=RANGES)))
    c.write_text(fingerprint_to_json(fingerprint({}, nvtx=cand)))
    code, out, _ = run_cli(str(b), str(same), *WHOLE)
    assert code == 0 and "compared     NVTX ranges (no kernel data on either side)" in out
    code, out, _ = run_cli(str(b), str(c), *WHOLE)
    assert code == 1 and "outlier · stage3" in out and "NVTX ranges by absolute change" in out
    # Rules can select ranges.
    rules = tmp_path / "r.yaml"
    rules.write_text("version: 1\nrules:\n  - id: s0\n    kind: budget\n    nvtx: '^stage0$'\n    max_ratio: 1.1x\n")
    code, out, _ = run_cli(str(b), str(c), "--rules", str(rules), *WHOLE)
    assert code == 1 and "s0 · nvtx:^stage0$" in out


def test_real_nvtx_only_pair_is_judged() -> None:
    b, c = real_trace("ecf_nvtxonly_baseline"), real_trace("ecf_nvtxonly_poolformer")
    code, out, _ = run_cli(str(b), str(c), *WHOLE)
    assert code in (0, 1) and "NVTX ranges by absolute change" in out
    assert "find_centers" in out
    assert run_cli(str(b), str(b), *WHOLE)[0] == 0


def test_graph_mode_against_itself_passes_and_says_what_it_cannot_see() -> None:
    g = real_trace("h100/graph_mode")
    code, out, _ = run_cli(str(g), str(g), *WHOLE)
    assert code == 0
    assert "kernels inside the graphs are not visible" in out
    assert "graph 1       200 → 200" in out


def test_graph_mode_regression_fails_the_total_budget(tmp_path: Path) -> None:
    fp = load(real_trace("h100/graph_mode"))
    assert fp.meta.graph_mode is GraphMode.GRAPH and fp.graphs == (GraphStats(1, 200, 19_369_531),)
    slow = dataclasses.replace(fp, graphs=(GraphStats(1, 200, round(19_369_531 * 1.5)),))
    b, c = tmp_path / "b.json", tmp_path / "c.json"
    b.write_text(fingerprint_to_json(fp))
    c.write_text(fingerprint_to_json(slow))
    code, out, _ = run_cli(str(b), str(c), *WHOLE)
    assert code == 1 and "total-time · whole trace" in out


def test_graph_against_node_capture_stays_inconclusive() -> None:
    code, out, _ = run_cli(str(real_trace("h100/graph_mode")), str(real_trace("h100/graph_node")), *WHOLE)
    assert code == 3 and "CUDA graph trace modes differ" in out
