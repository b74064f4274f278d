"""The command line end to end: the exit-code table, several outputs, GitHub mode."""

from __future__ import annotations

import json
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from conftest import ROOT, run_cli, run_process
from fpspec import saved_pair

from nsysdiff.synth.builder import Generation, TraceBuilder

BS1 = str(ROOT / "examples" / "cascade" / "bs1.sqlite")
BS16 = str(ROOT / "examples" / "cascade" / "bs16.sqlite")


def _nvtx_only(path: Path) -> str:
    b = TraceBuilder()
    b.nvtx_range("forward", 1_000, 2_000)
    return str(b.write(path))


def _warning_only_pair(tmp_path: Path) -> tuple[str, str]:
    """Normalization 1.4x slower but too small (0.02%) for the outlier rule: the default
    pack's per-category budget warns, nothing errs."""
    base = {f"triton_poi_fused_{i}": (100, 1_000_000_000) for i in range(10)} | {"rms_norm_kernel": (100, 2_000_000)}
    cand = {f"triton_poi_fused_{i}": (100, 1_000_000_000) for i in range(10)} | {"rms_norm_kernel": (100, 2_800_000)}
    return saved_pair(tmp_path, base, cand)


def test_exit_code_table(tmp_path: Path) -> None:
    assert run_cli(BS1, BS1)[0] == 0  # a trace against itself passes the default pack
    assert run_cli(BS1, BS16, "--rules", "batch-invariance")[0] == 1
    assert run_cli(BS1, BS16, "--no-rules")[0] == 0
    bad = tmp_path / "bad.yaml"
    bad.write_text("version: 2\n")
    code, out, err = run_cli(BS1, BS16, "--rules", str(bad))
    assert code == 2 and out == "" and err.count("\n") == 1 and "bad.yaml" in err
    code, out, _ = run_cli(BS1, _nvtx_only(tmp_path / "nvtx.sqlite"))
    assert code == 3 and "no kernel data" in out
    assert run_cli(BS1, str(tmp_path / "missing.sqlite"))[0] == 2


def test_strict_fails_on_warnings(tmp_path: Path) -> None:
    base, cand = _warning_only_pair(tmp_path)
    code, out, _ = run_cli(base, cand, "--rules", "default", "--format", "json")
    doc = json.loads(out)
    assert code == 0 and doc["outcome"] == "pass"
    assert {f["level"] for f in doc["findings"]} == {"warning"}
    assert run_cli(base, cand, "--rules", "default", "--strict")[0] == 1


def test_several_outputs_in_one_run(tmp_path: Path) -> None:
    md, js, xml, txt = (tmp_path / f"report.{s}" for s in ("md", "json", "xml", "txt"))
    code, _, _ = run_cli(
        BS1, BS16, "--rules", "batch-invariance", "-o", str(md), "-o", str(js), "-o", str(xml), "-o", str(txt)
    )
    assert code == 1
    assert md.read_text().startswith("**nsysdiff: FAIL** (exit 1)")
    assert json.loads(js.read_text())["exit_code"] == 1
    suite = ET.parse(xml).getroot()
    assert int(suite.get("failures") or suite[0].get("failures") or 0) > 0
    assert txt.read_text().startswith("nsysdiff: FAIL (exit 1)")
    code, _, err = run_cli(BS1, BS16, "-o", str(tmp_path / "report.pdf"))
    assert code == 2 and "report.pdf" in err


def test_github_mode_end_to_end(tmp_path: Path) -> None:
    summary, output = tmp_path / "summary.md", tmp_path / "output.txt"
    env = {"GITHUB_ACTIONS": "true", "GITHUB_STEP_SUMMARY": str(summary), "GITHUB_OUTPUT": str(output)}
    r = run_cli(BS1, BS16, "--rules", "batch-invariance", env=env)
    assert r.exit_code == 1
    lines = r.stdout.splitlines()
    # In the batch-invariance pack an outlier is a hint (a warning), the GEMM swap a cause.
    warnings = [line for line in lines if line.startswith("::warning ")]
    assert any("reshape_and_cache_flash_kernel" in line and "outlier" in line for line in warnings)
    assert any("gemm-selection" in line for line in lines if line.startswith("::error "))
    assert summary.read_text().startswith("**nsysdiff: FAIL** (exit 1)")
    assert "verdict=fail" in output.read_text().splitlines()
    assert "exit-code=1" in output.read_text().splitlines()


@pytest.mark.parametrize("flag", ["--version", "--help"])
def test_installed_console_script(flag: str) -> None:
    exe = Path(sys.executable).parent / "nsysdiff"
    if not exe.exists():
        pytest.skip("the nsysdiff console script is not installed beside this Python")
    code, out, _ = run_process(flag, command=[str(exe)])
    assert code == 0 and "nsysdiff" in out


def _mangled_pair(tmp_path: Path) -> tuple[str, str]:
    """A 2024 export (mangled names) and a 2021 one (none) of the same kernels."""
    paths = []
    for generation, slow in ((Generation.V2024, 10), (Generation.V2021, 30)):
        b = TraceBuilder(generation)
        for i in range(4):
            b.kernel("gemm", i * 100, slow)
            b.kernel("fwd", i * 100 + 50, 10, demangled="void ns::fwd<1>(float *)", mangled="_ZN2ns3fwdILi1EEEvPf")
        paths.append(str(b.write(tmp_path / f"{generation.value}.sqlite")))
    return paths[0], paths[1]


def test_names_mangled_in_summary_and_diff(tmp_path: Path) -> None:
    new, old = _mangled_pair(tmp_path)
    code, out, err = run_cli("summary", new, "--names", "mangled", "--width", "100")
    assert (code, err) == (0, "")
    assert "_Z4gemmv" in out and "_ZN2ns3fwdILi1EEEvPf" in out
    kernels = json.loads(run_cli("summary", new, "--format", "json")[1])["kernels"]
    assert {k["demangled"]: k["mangled"] for k in kernels} == {
        "gemm": "_Z4gemmv",
        "void ns::fwd<1>(float *)": "_ZN2ns3fwdILi1EEEvPf",
    }
    code, out, err = run_cli("summary", old, "--names", "mangled", "--width", "100")
    assert code == 0
    assert err == (
        "nsysdiff: note: --names mangled: 2 of 2 kernels in 2021.2.sqlite have no mangled name "
        "(nsys exports them from 2022.1 on); they show their demangled names\n"
    )
    assert "void ns::fwd<1>(float *)" in out
    for fmt, underscore in (("text", "_"), ("markdown", "&#95;")):
        code, out, err = run_cli(new, old, "--names", "mangled", "--no-rules", "--details", "--format", fmt)
        assert err.count("\n") == 1 and "2 of 2 kernels in 2021.2.sqlite" in err
        assert f"{underscore}Z4gemmv" in out and f"{underscore}ZN2ns3fwdILi1EEEvPf" in out
    out = run_cli(new, old, "--names", "mangled", "--no-rules", "--format", "csv")[1]
    assert "\n_Z4gemmv," in out
    # The default names say nothing about mangled ones.
    assert run_cli(new, old, "--no-rules")[2] == ""
