"""Golden reports of multi-rank jobs built with the TraceBuilder (tests/jobs.py): four ranks,
rank 2 slow, so NCCL looks expensive on the other three. Rerun with ``--update-golden`` and
read the diff of the golden files when a change is intended."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import run_cli
from jobs import COMPUTE_NS, one_file, per_file

Golden = Callable[[str, str], None]


@pytest.fixture(autouse=True)
def _in_tmp_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Golden output names the traces: run where their paths are short and stable.
    monkeypatch.chdir(tmp_path)


@pytest.fixture
def ranks4(tmp_path: Path) -> Path:
    one_file(tmp_path / "job.sqlite", ranks=4, slow=2)
    return tmp_path


@pytest.mark.parametrize("width", [80, 120])
def test_summary_of_a_four_gpu_trace(ranks4: Path, golden: Golden, width: int) -> None:
    code, text, err = run_cli("summary", "job.sqlite", "--width", str(width), "--top", "3")
    assert code == 0, err
    golden(f"ranks/summary.{width}.txt", text)
    assert all(len(line) <= width for line in text.splitlines())


def test_summary_of_a_four_gpu_trace_markdown_and_json(ranks4: Path, golden: Golden) -> None:
    code, md, err = run_cli("summary", "job.sqlite", "--format", "markdown", "--top", "3")
    assert code == 0, err
    golden("ranks/summary.md", md)
    code, out, err = run_cli("summary", "job.sqlite", "--format", "json")
    assert code == 0, err
    doc = json.loads(out)
    golden("ranks/summary.ranks.json", json.dumps(doc["ranks"], indent=1) + "\n")


@pytest.mark.parametrize("fmt", ["text", "markdown", "json"])
def test_job_of_four_traces(tmp_path: Path, golden: Golden, fmt: str) -> None:
    per_file(tmp_path, ranks=4, slow=2)
    traces = [f"rank{r}.sqlite" for r in range(4)]
    code, out, err = run_cli("summary", *traces, "--format", fmt, "--width", "80")
    assert code == 0, err
    golden(f"ranks/job.{ {'text': 'txt', 'markdown': 'md', 'json': 'json'}[fmt] }", out)


def test_diff_of_two_jobs(tmp_path: Path, golden: Golden) -> None:
    one_file(tmp_path / "base.sqlite", ranks=4, slow=2)
    one_file(tmp_path / "cand.sqlite", ranks=4, slow=2, slow_ns=COMPUTE_NS)  # the slow rank fixed
    code, text, err = run_cli("diff", "base.sqlite", "cand.sqlite", "--no-rules", "--details", "--width", "80")
    assert code == 0, err
    golden("ranks/diff.details.80.txt", text[text.index("\nRanks (") + 1 : text.index("\nComparability")])
    code, md, err = run_cli("diff", "base.sqlite", "cand.sqlite", "--no-rules", "--format", "markdown")
    assert code == 0, err
    golden("ranks/diff.md", md[md.index("<details>\n<summary>Ranks") : md.index("<sub>Outlier")])
    code, first, err = run_cli("diff", "base.sqlite", "cand.sqlite", "--no-rules", "--width", "80")
    assert code == 0, err
    assert "4 ranks" in first.splitlines()[-2] + first.splitlines()[-1]


@pytest.mark.parametrize("width", [40, 50, 60, 70, 100])
def test_rank_sections_fit_any_width_and_never_cut_a_number(ranks4: Path, width: int) -> None:
    one_file(ranks4 / "cand.sqlite", ranks=4, slow=1)
    for argv in (["summary", "job.sqlite"], ["diff", "job.sqlite", "cand.sqlite", "--no-rules", "--details"]):
        code, text, err = run_cli(*argv, "--width", str(width))
        assert code == 0, err
        section = text[text.index("\nRanks (") :]
        assert all(len(line) <= width for line in section.splitlines())
        assert "…" not in section
