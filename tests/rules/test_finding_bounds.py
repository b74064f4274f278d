"""A rule with ``each: true`` over many kernels lists at most MAX_FINDINGS_PER_RULE of its
findings and one line counting the rest; its result still counts them all, and the verdict
is unchanged. Rendering stays linear in the findings (measured in benchmarks, not here:
the renderers compute their sets of failing findings once)."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import run_cli

from nsysdiff.rules.engine import MAX_FINDINGS_PER_RULE
from nsysdiff.synth.builder import TraceBuilder

KERNELS = 300


def _trace(path: Path, duration: int) -> Path:
    b = TraceBuilder()
    for i in range(KERNELS):
        b.launch(f"kernel_{i:03d}", 10_000 * i, 10_000 * i + 1_000, duration + i)
    return b.write(path)


def test_findings_per_rule_are_bounded(tmp_path: Path) -> None:
    base, cand = _trace(tmp_path / "a.sqlite", 1_000), _trace(tmp_path / "b.sqlite", 3_000)
    rules = tmp_path / "r.yaml"
    rules.write_text(
        "version: 1\nrules:\n  - id: each\n    kind: budget\n    kernel: .\n    each: true\n"
        "    metric: total_time\n    max_ratio: 1.1x\n",
        encoding="utf-8",
    )
    r = run_cli("diff", str(base), str(cand), "--rules", str(rules), "--format", "json")
    assert r.exit_code == 1, r.stderr
    doc = json.loads(r.stdout)
    mine = [f for f in doc["findings"] if f["rule_id"] == "each"]
    assert len(mine) == MAX_FINDINGS_PER_RULE + 1
    assert sum(f["fails"] for f in mine) == MAX_FINDINGS_PER_RULE
    assert mine[-1]["subject"] == f"{KERNELS - MAX_FINDINGS_PER_RULE} more findings" and not mine[-1]["fails"]
    listed = {f["subject"] for f in mine[:-1]}
    gone = next(f"kernel_{i:03d}" for i in range(KERNELS) if f"kernel_{i:03d}" not in listed)
    github = run_cli("diff", str(base), str(cand), "--rules", str(rules), "--format", "github")
    assert github.exit_code == 1
    assert len(github.stdout.splitlines()) == MAX_FINDINGS_PER_RULE + 2  # the note and the verdict
    assert f"each: {gone}" not in github.stdout


def test_a_waiver_still_sees_a_finding_beyond_the_bound(tmp_path: Path) -> None:
    base, cand = _trace(tmp_path / "a.sqlite", 1_000), _trace(tmp_path / "b.sqlite", 3_000)
    rule = (
        "version: 1\nrules:\n  - id: each\n    kind: budget\n    kernel: .\n    each: true\n"
        "    metric: total_time\n    max_ratio: 1.1x\n"
    )
    rules = tmp_path / "r.yaml"
    rules.write_text(rule, encoding="utf-8")
    args = ["diff", str(base), str(cand), "--rules", str(rules), "--format", "json"]
    listed = {f["subject"] for f in json.loads(run_cli(*args).stdout)["findings"]}
    gone = next(f"kernel_{i:03d}" for i in range(KERNELS) if f"kernel_{i:03d}" not in listed)
    rules.write_text(
        rule + f"waivers:\n  - rule: each\n    subject: {gone}\n    reason: known\n    expires: 2999-01-01\n",
        encoding="utf-8",
    )
    r = run_cli(*args)
    assert r.exit_code == 1 and "matches no finding" not in r.stderr
    waived = [f for f in json.loads(r.stdout)["findings"] if f["subject"] == gone]
    assert len(waived) == 1 and waived[0]["waived"]
