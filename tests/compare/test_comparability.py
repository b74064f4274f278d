"""Comparability: reasons (inconclusive) and notes, and the report's comparability facts."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from conftest import run_cli

from nsysdiff import api
from nsysdiff.compare import comparability
from nsysdiff.fingerprint.model import Fingerprint, Scope
from nsysdiff.synth.builder import Generation, Gpu, TraceBuilder
from nsysdiff.trace.records import GpuInfo, GraphMode


def trace(
    path: Path,
    *,
    gpus: tuple[Gpu, ...] = (Gpu(),),
    generation: Generation = Generation.V2024,
    names: tuple[str, ...] = ("gemm_kernel", "softmax_kernel", "rms_norm_kernel"),
) -> Path:
    b = TraceBuilder(generation, gpus=gpus)
    for i, name in enumerate(names):
        b.launch(name, i * 100_000, i * 100_000 + 5_000, 50_000)
    return b.write(path)


def fp(path: Path) -> Fingerprint:
    return api.load(path)


def test_identical_sides_have_nothing_to_say(tmp_path: Path) -> None:
    a = fp(trace(tmp_path / "a.sqlite"))
    assert comparability.assess(a, a) == ((), ())
    labels = [f.label for f in comparability.facts(a, a)]
    assert labels == ["nsys", "schema", "GPUs", "capture", "scope", "CUDA graphs", "kernel overlap"]
    assert all(f.same for f in comparability.facts(a, a))


def test_gpu_model_note_or_reason(tmp_path: Path) -> None:
    a = fp(trace(tmp_path / "a.sqlite"))
    b = fp(trace(tmp_path / "b.sqlite", gpus=(Gpu(name="NVIDIA H100 80GB HBM3"),)))
    reasons, notes = comparability.assess(a, b)
    assert reasons == () and any("different GPU models" in n for n in notes)
    reasons, notes = comparability.assess(a, b, require_same_gpu=True)
    assert any("different GPU models" in r and "require the same GPU" in r for r in reasons)


def test_gpu_count_differs(tmp_path: Path) -> None:
    a = fp(trace(tmp_path / "a.sqlite"))
    b = fp(trace(tmp_path / "b.sqlite", gpus=(Gpu(id=0), Gpu(id=1))))
    assert any("different GPU counts" in n for n in comparability.assess(a, b)[1])
    reasons = comparability.assess(a, b, require_same_gpu=True)[0]
    assert any("different GPU counts" in r for r in reasons)


def test_versions_are_notes(tmp_path: Path) -> None:
    a = fp(trace(tmp_path / "a.sqlite", generation=Generation.V2024))
    b = fp(trace(tmp_path / "b.sqlite", generation=Generation.V2026))
    reasons, notes = comparability.assess(a, b)
    assert reasons == ()
    assert any("different nsys versions" in n for n in notes)
    c = replace(b, meta=replace(b.meta, schema_version="4.0.0"))
    assert any("schema generations" in n for n in comparability.assess(a, c)[1])


def test_low_overlap_and_missing_kernels(tmp_path: Path) -> None:
    a = fp(trace(tmp_path / "a.sqlite"))
    b = fp(trace(tmp_path / "b.sqlite", names=("gemm_kernel", "other_a", "other_b", "other_c")))
    assert comparability.kernel_overlap(a, b) == 1 / 6
    assert any("low kernel-set overlap" in n for n in comparability.assess(a, b)[1])
    empty = replace(a, kernels=(), meta=replace(a.meta, has_kernels=False))
    reasons, _ = comparability.assess(a, empty)
    assert reasons == ("candidate (a.sqlite) has no kernel data",)
    assert api.inconclusive_reasons(a, empty) == reasons


def test_graph_modes(tmp_path: Path) -> None:
    a = fp(trace(tmp_path / "a.sqlite"))
    meta = replace(a.meta, graph_mode=GraphMode.GRAPH, graph_launches=3, graph_total_ns=900)
    graph = replace(a, meta=meta)
    node = replace(a, meta=replace(a.meta, graph_mode=GraphMode.NODE))
    reasons = comparability.assess(node, graph)[0]
    assert len(reasons) == 1 and "modes differ" in reasons[0]
    assert "--cuda-graph-trace=node" in reasons[0]
    reasons = comparability.assess(graph, graph)[0]
    assert len(reasons) == 1 and "graph-mode capture" in reasons[0]
    assert "3 graph launches" in reasons[0]
    assert comparability.assess(node, node) == ((), ())
    reasons, notes = comparability.assess(a, node)
    assert reasons == () and any("only one side replays CUDA graphs" in n for n in notes)


def test_scope_mismatch_is_a_reason(tmp_path: Path) -> None:
    a = fp(trace(tmp_path / "a.sqlite"))
    scoped = replace(a, scope=Scope(nvtx="decode", per="decode_step", steps=4, coverage=0.2))
    reasons, _ = comparability.assess(a, scoped)
    assert any("different scopes" in r for r in reasons)
    reasons, notes = comparability.assess(scoped, scoped)
    assert reasons == () and any("covers 20.0%" in n for n in notes)
    no_steps = replace(scoped, scope=replace(scoped.scope, steps=None))
    assert any("only one side counted" in r for r in comparability.assess(scoped, no_steps)[0])
    facts = {f.label: f for f in comparability.facts(scoped, scoped)}
    assert facts["steps"].base == "4" and facts["coverage"].base == "20.0% of kernel time"


def test_unknown_gpu(tmp_path: Path) -> None:
    a = fp(trace(tmp_path / "a.sqlite"))
    none = replace(a, meta=replace(a.meta, gpus=()))
    assert any("GPU model unknown" in n for n in comparability.assess(a, none)[1])
    assert comparability.assess(none, none) == ((), ())
    assert comparability.assess(none, none, require_same_gpu=True)[0]
    two = replace(a, meta=replace(a.meta, gpus=(GpuInfo(0, "X"), GpuInfo(1, "X"))))
    assert [f.base for f in comparability.facts(two, two) if f.label == "GPUs"] == ["2x X"]


def test_cli_require_same_gpu(tmp_path: Path) -> None:
    a = trace(tmp_path / "a.sqlite")
    b = trace(tmp_path / "b.sqlite", gpus=(Gpu(name="NVIDIA H100 80GB HBM3"),))
    res = run_cli("diff", str(a), str(b), "--no-rules", "--details")
    assert res.exit_code == 0, res.stderr
    assert "note: different GPU models" in res.stdout
    assert "Comparability" in res.stdout
    res = run_cli("diff", str(a), str(b), "--no-rules", "--require-same-gpu")
    assert res.exit_code == 3, res.stderr
    assert "inconclusive: different GPU models" in res.stdout
    md = run_cli("diff", str(a), str(b), "--no-rules", "--format", "markdown")
    assert "GPUs: 1x NVIDIA H200 → 1x NVIDIA H100 80GB HBM3" in md.stdout
    js = run_cli("diff", str(a), str(b), "--no-rules", "--format", "json")
    assert '"label": "GPUs"' in js.stdout
