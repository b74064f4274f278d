"""Shipped packs: installed with the package, and quiet on a trace diffed against itself."""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from datetime import date
from pathlib import Path

import pytest

from nsysdiff import api
from nsysdiff.compare.diff import compare
from nsysdiff.rules import evaluate, load_rules
from nsysdiff.rules.config import pack_names
from nsysdiff.rules.report import Level

ROOT = Path(__file__).resolve().parents[2]
CASCADE = ROOT / "examples" / "cascade"
PACKS = ("default", "tpot", "batch-invariance", "strict")


def test_every_pack_file_is_a_pack() -> None:
    assert set(pack_names()) == set(PACKS) == {p.stem for p in (ROOT / "rules").glob("*.yaml")}


def test_packs_are_in_the_wheel(tmp_path: Path) -> None:
    """A plain (non-editable) install must find the packs by name."""
    # Built from a copy, so that setuptools' build/ directory never lands in the checkout.
    src = tmp_path / "src"
    skip = shutil.ignore_patterns("__pycache__", "*.egg-info")
    for tree in ("nsysdiff", "rules"):
        shutil.copytree(ROOT / tree, src / tree, ignore=skip)
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, src / name)
    proc = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", str(src), "-w", str(tmp_path), "--no-deps", "-q"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    if proc.returncode != 0:
        pytest.skip(f"pip wheel unavailable here: {proc.stderr.strip()[-300:]}")
    (wheel,) = tmp_path.glob("nsysdiff-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    for pack in PACKS:
        assert f"nsysdiff/packs/{pack}.yaml" in names
    assert "nsysdiff/packs/__init__.py" in names
    # every rule-engine module is installed too
    for module in (
        "__init__",
        "config",
        "engine",
        "kinds",
        "budget",
        "outlier",
        "danger_zone",
        "structure",
        "waivers",
    ):
        assert f"nsysdiff/rules/{module}.py" in names


def _self_diffs() -> list[object]:
    import fpspec  # tests/fpspec.py: a compact fingerprint builder

    fps = [
        pytest.param(
            fpspec.fingerprint(
                {
                    "flash_fwd_kernel": (100, 5_000_000),
                    "nvjet_tst_64x8_64x16_4x1_v_bz_TNN": (50, 9_000_000),
                    "splitKreduce_kernel": (50, 1_000_000),
                    "rms_norm_kernel": (100, 800_000),
                },
                memcpy={"HtoD": (10, 1_000_000, 200_000)},
                sync={"cudaStreamSynchronize": (10, 500_000)},
            ),
            id="spec",
        )
    ]
    for name in ("bs1", "bs16"):
        path = CASCADE / f"{name}.sqlite"
        if path.exists():
            fps.append(pytest.param(api.load(path), id=name))
    return fps


@pytest.mark.parametrize("pack", PACKS)
@pytest.mark.parametrize("fp", _self_diffs())
def test_self_diff_has_no_errors(pack: str, fp: object) -> None:
    from nsysdiff.fingerprint.model import Fingerprint

    assert isinstance(fp, Fingerprint)
    findings, results = evaluate(compare(fp, fp), load_rules([pack]), today=date(2025, 1, 1))
    assert [f for f in findings if f.level is Level.ERROR] == []
    assert len(results) == len(load_rules([pack]).rules)


@pytest.mark.skipif(not (CASCADE / "bs16.sqlite").exists(), reason="cascade example not generated")
def test_cascade_batch_invariance_names_the_culprits() -> None:
    b, c = api.load(CASCADE / "bs1.sqlite"), api.load(CASCADE / "bs16.sqlite")
    diff = compare(b, c)
    findings, results = evaluate(diff, load_rules(["batch-invariance"]), today=date(2025, 1, 1))
    report = api.judge(diff, findings, results)
    assert int(report.exit_code) == 1
    outliers = [f for f in findings if f.rule_id == "outlier"]
    assert [f.subject for f in outliers] == [r.name for r in diff.kernels if "reshape_and_cache" in r.name]
    assert "scaled 5.15x" in outliers[0].message
    # The variant swap is one cause; its danger-zone and kernel-set findings fold into it.
    swap = [f for f in findings if f.rule_id == "gemm-selection"]
    assert swap and swap[0].level is Level.ERROR and swap[0].subject.startswith("nvjet")
    assert not swap[0].statistical
    assert "also flagged by dz-cublas-gemm" in swap[0].evidence
