"""The package keeps its pipeline layout (docs/architecture.md, scripts/check_layout.py)."""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _checker():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location("check_layout", ROOT / "scripts" / "check_layout.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules["check_layout"] = module  # dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module


def test_the_package_keeps_its_layout() -> None:
    c = _checker()
    layout = c.check(ROOT / "nsysdiff")
    assert layout.cycles == []
    assert len(c.loose_modules(layout)) <= c.MAX_LOOSE
    assert max(layout.lines.values()) <= c.MAX_LINES
    assert layout.problems == []


def _package(tmp_path: Path, files: dict[str, str]) -> Path:
    root = tmp_path / "nsysdiff"
    for name, text in files.items():
        p = root / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    return root


def test_a_cycle_is_found_even_through_a_lazy_import(tmp_path: Path) -> None:
    root = _package(
        tmp_path,
        {
            "__init__.py": "",
            "compare/__init__.py": "",
            "compare/diff.py": "from nsysdiff.compare.rundiff import RunsDiff\n",
            "compare/rundiff.py": "def f():\n    from nsysdiff.compare import diff\n",
        },
    )
    layout = _checker().check(root)
    assert layout.cycles == [["nsysdiff.compare.diff", "nsysdiff.compare.rundiff"]]
    assert any("import cycle" in p for p in layout.problems)


@pytest.mark.parametrize(
    ("module", "text", "expected"),
    [
        ("fingerprint/model.py", "from nsysdiff.render import neutral\n", "only render/, cli/ and api/ may"),
        ("trace/reader.py", "from nsysdiff.fingerprint.model import GpuInfo\n", "fingerprint comes after trace"),
        ("compare/diff.py", "from nsysdiff.synth import builder\n", "synthetic traces are for tests"),
    ],
)
def test_an_import_against_the_flow_is_named(tmp_path: Path, module: str, text: str, expected: str) -> None:
    root = _package(
        tmp_path,
        {
            "__init__.py": "",
            "render/__init__.py": "",
            "render/neutral.py": "",
            "fingerprint/__init__.py": "",
            "fingerprint/model.py": "",
            "trace/__init__.py": "",
            "trace/reader.py": "",
            "compare/__init__.py": "",
            "compare/diff.py": "",
            "synth/__init__.py": "",
            "synth/builder.py": "",
        }
        | {module: text},
    )
    problems = _checker().check(root).problems
    assert len(problems) == 1 and expected in problems[0]


def test_loose_and_long_modules_are_counted(tmp_path: Path) -> None:
    files = {"__init__.py": ""} | {f"m{i}.py": "" for i in range(7)} | {"compare/__init__.py": "x = 1\n" * 801}
    layout = _checker().check(_package(tmp_path, files))
    assert any("7 modules loose" in p for p in layout.problems)
    assert any("nsysdiff.compare: 801 lines" in p for p in layout.problems)


def test_docs_name_every_package_and_every_package_exists() -> None:
    doc = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    packages = {p.parent.name for p in (ROOT / "nsysdiff").glob("*/__init__.py")}
    named = set(re.findall(r"^\*\*`(\w+)/`", doc, flags=re.M))
    assert named == packages
