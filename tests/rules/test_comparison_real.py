"""What is being compared, on the real traces (skipped where they are absent): each pair
gets the kind a GPU engineer would give it, and the notebook's composition never passes
what the command fails."""

from __future__ import annotations

from pathlib import Path

import planted_steps
import pytest
from conftest import real_trace

from nsysdiff import api
from nsysdiff.errors import ExitCode
from nsysdiff.rules.comparison import Kind

KINDS = [
    ("h100/llm_bs1", "h100/llm_bs16", Kind.RESIZED),
    ("h100/example_bs1", "h100/example_bs16", Kind.RESIZED),
    ("h100/llm_bs1_compile", "h100/llm_bs16_compile", Kind.RESIZED),
    ("h100/llm_bs16", "h100/llm_bs16_r2", Kind.ONE_WORKLOAD),
    ("h100/llm_bs16", "h100/llm_bs16_compile", Kind.ONE_WORKLOAD),
    ("h100/llm_bs1", "h100/llm_bs1_compile", Kind.ONE_WORKLOAD),
    ("h100/graph_node", "h100/graph_mode", Kind.CANT_COMPARE),
    ("pipit_cloverleaf_a100", "pipit_saxpy_mpi_a100", Kind.DIFFERENT_PROGRAMS),
    ("pipit_saxpy_mpi_a100", "pipit_cloverleaf_a100", Kind.DIFFERENT_PROGRAMS),
    ("fuser_h200_report1", "fuser_h200_2025", Kind.DIFFERENT_PROGRAMS),
    ("nsysai_mfu_h100x2_before", "nsysai_perf_h100x2_sp2_fa3", Kind.DIFFERENT_PROGRAMS),
    ("nsysai_mfu_h100x2_before", "nsysai_mfu_h100x2_after", Kind.WINDOWS),
    ("fuser_h100_report1", "fuser_h200_report1", Kind.ONE_WORKLOAD),
]


@pytest.mark.parametrize(("base", "cand", "kind"), KINDS, ids=[f"{b}->{c}" for b, c, _ in KINDS])
def test_each_real_pair_is_the_kind_it_is(base: str, cand: str, kind: Kind) -> None:
    report = api.diff(real_trace(base), real_trace(cand))
    assert report.comparison.kind is kind, report.comparison
    if not kind.conclusive:
        assert report.exit_code is ExitCode.INCONCLUSIVE and not report.failed and not report.diff.outliers


def test_bs1_bs16_names_the_resized_workload_and_its_abnormal_scaler() -> None:
    report = api.diff(real_trace("h100/example_bs1"), real_trace("h100/example_bs16"))
    assert report.comparison.kind is Kind.RESIZED
    assert report.diff.outliers[0].name == "indexSelectSmallIndex"
    assert [f.subject for f in report.failed] == ["indexSelectSmallIndex"]
    assert report.exit_code is ExitCode.REGRESSION


PAIRS = [
    ("llm_bs1", "llm_bs16"),
    ("llm_bs16", "llm_bs16_r2"),
    ("llm_bs16_r2", "llm_bs16"),
    ("llm_bs16", "llm_bs16_compile"),
    ("llm_bs1", "llm_bs1_compile"),
    ("llm_bs1_compile", "llm_bs16_compile"),
    ("graph_node", "graph_mode"),
    ("example_bs1", "example_bs16"),
    ("llm_bs16", "llm_bs16_slownorm"),
]


@pytest.fixture(scope="module")
def h100(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    paths = {name: real_trace(f"h100/{name}") for a, b in PAIRS for name in (a, b) if name != "llm_bs16_slownorm"}
    paths["llm_bs16_slownorm"] = planted_steps.slow_norm(
        paths["llm_bs16"], tmp_path_factory.mktemp("plant") / "s.sqlite"
    )
    return paths


@pytest.mark.parametrize("rules", ["default", "tpot", "batch-invariance"])
def test_check_never_passes_what_diff_fails(h100: dict[str, Path], rules: str) -> None:
    loaded = {name: api.load(path) for name, path in h100.items()}
    for a, b in PAIRS:
        full = api.diff(h100[a], h100[b], rules)
        low = api.check(api.compare(loaded[a], loaded[b]), rules)
        agree = low.exit_code is full.exit_code or low.exit_code is ExitCode.INCONCLUSIVE
        assert agree, (a, b, rules, low.exit_code, full.exit_code, low.reasons)
