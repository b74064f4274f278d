"""The package keeps its complexity cap as radon counts it (scripts/check_complexity.py)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _checker():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location("check_complexity", ROOT / "scripts" / "check_complexity.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules["check_complexity"] = module
    spec.loader.exec_module(module)
    return module


def test_the_package_keeps_its_cap() -> None:
    c = _checker()
    assert c.problems(c.scores(ROOT)) == []


def _score(tmp_path: Path, code: str) -> int:
    c = _checker()
    (tmp_path / "nsysdiff").mkdir()
    (tmp_path / "nsysdiff" / "m.py").write_text(code)
    ((score, _, _),) = c.scores(tmp_path)
    return int(score)


def test_boolean_operators_count(tmp_path: Path) -> None:
    """One condition of many clauses scores as the branches it stands for: each ``or`` one
    more (ruff's C90 scores it 1)."""
    clauses = " or ".join(f"x == {i}" for i in range(40))
    assert _score(tmp_path, f"def f(x):\n    return {clauses}\n") == 40


def test_a_named_exception_may_not_grow_and_goes_when_split() -> None:
    c = _checker()
    (module, name), ceiling = next(iter(c.OVER.items()))
    assert c.problems([(ceiling + 1, module, name)])[0].endswith(f"scores {ceiling + 1}, over {ceiling}: split it")
    assert any("gone" in p for p in c.problems([]))
    known = [(score, module, name) for (module, name), score in c.OVER.items()]
    assert c.problems([(c.CAP + 1, "nsysdiff/x.py", "g"), *known]) == [
        f"nsysdiff/x.py: g scores {c.CAP + 1}, over {c.CAP}: split it"
    ]
