"""The Steps section of ``nsysdiff summary --per RANGE``: golden text and JSON on a trace
built by hand and on an H100 capture."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import traces_dir
from stepspec import two_steps

from nsysdiff import api
from nsysdiff.fingerprint.scope import ScopeOptions
from nsysdiff.render import summary

H100 = traces_dir() / "h100"


def test_built_steps_summary(tmp_path: Path, golden: Callable[[str, str], None]) -> None:
    fp = api.load(two_steps(tmp_path / "steps.sqlite"), ScopeOptions(per="decode_step"))
    text = summary.render_plain(fp, 100)
    golden("steps/built.txt", text)
    golden("steps/built.md", summary.render_markdown(fp))
    doc = json.loads(summary.render_json(fp))
    golden("steps/built.json", json.dumps(doc["steps"], indent=1) + "\n")
    assert doc["steps"]["parts_mean_ns"] == {
        "compute": 47_500,
        "communication": 10_000,
        "copies": 5_000,
        "launch_bound": 15_500,
        "sync": 2_500,
        "host": 9_500,
        "between": 10_000,
    }
    assert "period p99/p50 1.20x: no systematic tail" in text


def test_h100_steps_summary(golden: Callable[[str, str], None]) -> None:
    path = H100 / "llm_bs1.sqlite"
    if not path.exists():
        pytest.skip("h100 traces not found")
    fp = api.load(path, ScopeOptions(per="decode_step"))
    golden("steps/llm_bs1.txt", summary.render_plain(fp, 120, top=5))
    doc = json.loads(summary.render_json(fp))
    golden("steps/llm_bs1.json", json.dumps(doc["steps"], indent=1) + "\n")
    assert round(doc["steps"]["duration"]["p50_ns"], -4) == 27_880_000
    assert doc["steps"]["duration"]["max_ns"] == 33_783_781


def test_the_docs_example_is_the_golden_census() -> None:
    """docs/steps.md shows the census of llm_bs1; every line of its example is the golden's."""
    doc = (Path(__file__).resolve().parents[2] / "docs" / "steps.md").read_text(encoding="utf-8")
    example = doc.split("`nsysdiff summary T --per decode_step` (text;", 1)[1].split("```\n", 2)[1]
    golden = (Path(__file__).parent / "golden" / "steps" / "llm_bs1.txt").read_text(encoding="utf-8")
    assert example.strip() and example in golden
