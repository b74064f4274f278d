"""The README stays true: its two set-up commands (CI runs the second verbatim), and what it
says about the tool (example figures, option limits, fingerprint sizes, what CI runs)."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

from conftest import ROOT

README = (ROOT / "README.md").read_text(encoding="utf-8")
BLOCKS = re.findall(r"```bash\n(.*?)\n```", README, re.S)


def test_readme_opens_with_two_setup_commands() -> None:
    head = README[: README.index("##")]
    assert len(re.findall(r"```bash\n", head)) == 2
    assert len(BLOCKS[0].splitlines()) == 1 and len(BLOCKS[1].splitlines()) == 1


def test_ci_runs_the_test_command_verbatim() -> None:
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    assert BLOCKS[1] in ci


def test_main_command_names_files_that_exist() -> None:
    words = shlex.split(BLOCKS[0])
    paths = [w for w in words if w.endswith(".sqlite")]
    assert paths and all((ROOT / p).is_file() for p in paths)


# --- what the README says about the tool, checked against the tool --------------------


def _report(path: str) -> dict[str, object]:
    import json

    return dict(json.loads((ROOT / path).read_text(encoding="utf-8")))


def test_the_cascade_example_is_described_as_the_report_says() -> None:
    doc = _report("examples/cascade/report.json")
    overall = doc["overall"]
    assert isinstance(overall, dict)
    assert f"{overall['ratio']:.2f}x" == "1.10x" and f"{overall['scale']:.2f}x" == "0.95x"
    ratios = {c["name"]: c["ratio"] for c in doc["categories"]}  # type: ignore[attr-defined]
    assert (f"{ratios['elementwise']:.2f}x", f"{ratios['gemm.nvjet']:.2f}x") == ("0.90x", "1.35x")
    assert "written by nsysdiff's trace builder" in " ".join(README.split())
    assert "kernel time grew 1.10x from batch size 1 to 16 and the typical kernel family 0.95x" in " ".join(
        README.split()
    )
    assert "(elementwise 0.90x, the persistent GEMMs 1.35x)" in README


def test_option_limits_are_the_tool_s() -> None:
    from nsysdiff.render.layout import MIN_WIDTH

    text = " ".join(README.split())
    assert f"`--width` at least {MIN_WIDTH}" in text
    assert "`summary --top` at least 1" in text


def test_saved_fingerprint_sizes_are_as_said(tmp_path: Path) -> None:
    from nsysdiff import api
    from nsysdiff.fingerprint.model import fingerprint_to_json

    assert "47-58 KB for the H100 captures below" in " ".join(README.split())
    for side in ("bs1", "bs16"):
        size = len(fingerprint_to_json(api.load(ROOT / "examples" / "h100" / f"{side}.sqlite")).encode())
        assert 47_000 <= size <= 58_999, (side, size)


def test_what_ci_runs_is_as_said() -> None:
    import yaml

    ci = yaml.safe_load((ROOT / ".github" / "workflows" / "ci.yml").read_text(encoding="utf-8"))
    assert ci["jobs"]["test"]["strategy"]["matrix"]["python-version"] == ["3.10", "3.11", "3.12", "3.13"]
    lint = " ".join(str(s.get("run", "")) for s in ci["jobs"]["lint"]["steps"])
    assert all(tool in lint for tool in ("ruff check", "mypy", "install-actionlint"))
    text = " ".join(README.split())
    assert "`.github/workflows/ci.yml` runs the same suite on Python 3.10 to 3.13, plus ruff, mypy" in text
