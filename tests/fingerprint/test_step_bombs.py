"""Step ranges that can't be steps (docs/steps.md, "Which ranges are steps"): more instances
than the trace has kernel launches, above a floor. ``--per`` refuses them (exit 2); a rule
pack's step range treats them as absent, so the diff reads the trace whole, at the cost of
a read without steps however many ranges were added."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import pytest
from conftest import real_trace, run_cli
from stepspec import add_empty_steps, two_steps

from nsysdiff.fingerprint import scope
from nsysdiff.trace.reader import TraceReader


def _bomb(tmp_path: Path, n: int) -> tuple[Path, Path]:
    good = two_steps(tmp_path / "good.sqlite")
    bomb = tmp_path / "bomb.sqlite"
    shutil.copyfile(good, bomb)
    return good, add_empty_steps(bomb, n)


def _tpot(good: Path, bomb: Path, tmp_path: Path) -> tuple[int, str, dict[str, object]]:
    out = tmp_path / "d.json"
    code, _, err = run_cli("diff", good, bomb, "--rules", "tpot", "--format", "json", "-o", out)
    return code, err, json.loads(out.read_text())


@pytest.mark.parametrize("command", ["summary", "fingerprint"])
def test_per_refuses_more_steps_than_launches(tmp_path: Path, command: str) -> None:
    _, bomb = _bomb(tmp_path, scope.STEPS_ALWAYS + 1)
    args = ["-o", tmp_path / "fp.json"] if command == "fingerprint" else []
    code, out, err = run_cli(command, bomb, "--per", "decode_step", *args)
    assert code == 2, out + err
    assert err.count("\n") == 1 and "--per 'decode_step': 10,003 instances in bomb.sqlite" in err
    assert "more than its 7 kernel launches" in err and "not steps" in err
    assert not (tmp_path / "fp.json").exists()


def test_the_floor_and_the_launches_bound_the_rule(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Refused only above both: the floor (here lowered to 4) and the launches (7)."""
    monkeypatch.setattr(scope, "STEPS_ALWAYS", 4)
    _, seven = _bomb(tmp_path, 5)  # the two real steps and five empty ones: 7, not above 7
    assert run_cli("summary", seven, "--per", "decode_step").exit_code == 0
    add_empty_steps(seven, 1)
    assert run_cli("summary", seven, "--per", "decode_step").exit_code == 2
    monkeypatch.setattr(scope, "STEPS_ALWAYS", 8)
    assert run_cli("summary", seven, "--per", "decode_step").exit_code == 0


def test_a_pack_reads_such_a_trace_without_steps(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    good, bomb = _bomb(tmp_path, scope.STEPS_ALWAYS + 1)
    swept: list[str] = []
    steps = TraceReader.steps

    def spy(self: TraceReader, *args: object) -> object:
        swept.append(self.path.name)
        return steps(self, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(TraceReader, "steps", spy)
    code, err, report = _tpot(good, bomb, tmp_path)
    assert "bomb.sqlite" not in swept  # the scan never ran over the empty ranges
    assert "steps: range 'decode_step': 10,003 instances in bomb.sqlite" in err and "read without steps" in err
    # As for a candidate without the range: both sides read whole, the same verdict.
    plain = tmp_path / "plain.sqlite"
    shutil.copyfile(good, plain)
    con = sqlite3.connect(plain)
    con.execute("UPDATE NVTX_EVENTS SET text = 'other' WHERE text = 'decode_step'")
    con.commit()
    con.close()
    code_plain, _, report_plain = _tpot(good, plain, tmp_path)
    assert code == code_plain == report["exit_code"]
    assert report["outcome"] == report_plain["outcome"]
    assert "steps" not in report or not report["steps"]


def test_a_million_empty_steps_in_a_real_trace(tmp_path: Path) -> None:
    """llm_bs1 with 1,000,000 zero-length decode_step ranges took 10 s of CPU (7x the read
    without rules) and 700 MB under --rules tpot: the range is refused as steps, and the
    cost is measured in benchmarks/ (a unit test times nothing)."""
    orig = real_trace("h100/llm_bs1")
    bomb = tmp_path / "bomb.sqlite"
    shutil.copyfile(orig, bomb)
    add_empty_steps(bomb, 1_000_000)
    code, _, err = run_cli("summary", bomb, "--per", "decode_step")
    assert code == 2 and "1,000,032 instances" in err and "22,936 kernel launches" in err
    assert run_cli("diff", orig, bomb, "--no-rules", "--format", "json", "-o", tmp_path / "n.json").exit_code == 0
    code, err, _ = _tpot(orig, bomb, tmp_path)
    assert code == 0 and "read without steps" in err
