"""`nsysdiff rules list | explain | validate`."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from nsysdiff.cli import app, route
from nsysdiff.rules import KINDS, SECTIONS

runner = CliRunner()


def test_rules_is_a_command_not_a_trace() -> None:
    assert route(["rules", "list"]) == ["rules", "list"]
    assert route(["a.sqlite", "b.sqlite"]) == ["diff", "a.sqlite", "b.sqlite"]


def test_list_shows_every_pack_with_counts() -> None:
    r = runner.invoke(app, ["rules", "list"])
    assert r.exit_code == 0, r.output
    lines = r.stdout.splitlines()
    assert [line.split()[0] for line in lines] == ["batch-invariance", "default", "strict", "tpot"]
    assert lines[1].startswith("default             4 rules  Sensible budgets")
    assert "(extends default, batch-invariance)" in lines[2]


@pytest.mark.parametrize("name", [*KINDS, *SECTIONS])
def test_explain_every_kind(name: str) -> None:
    r = runner.invoke(app, ["rules", "explain", name])
    assert r.exit_code == 0, r.output
    assert r.stdout.splitlines()[0].split()[1] == f"{name}:"
    documented = KINDS[name].options if name in KINDS else SECTIONS[name].options
    for option in documented:
        assert f"\n  {option.name} (" in r.stdout


def test_explain_a_pack_rule() -> None:
    r = runner.invoke(app, ["rules", "explain", "dz-split-k"])
    assert r.exit_code == 0, r.output
    assert r.stdout.startswith(
        "rule dz-split-k: danger-zone, level warning (rules/batch-invariance.yaml:"
    )
    assert "in packs: batch-invariance, strict" in r.stdout
    assert "Split-K divides the reduction dimension" in r.stdout


def test_explain_unknown() -> None:
    r = runner.invoke(app, ["rules", "explain", "nope"])
    assert r.exit_code == 2
    assert r.stdout == ""
    assert r.stderr == (
        "nsysdiff: error: no rule 'nope' in the shipped packs (batch-invariance, default, strict, "
        "tpot) "
        "and no such kind (budget, danger-zone, invariance, outlier, structure, waivers)\n"
    )


def test_validate_ok(tmp_path: Path) -> None:
    path = tmp_path / "team.yaml"
    path.write_text(
        "version: 1\nextends: tpot\nwaivers:\n  - rule: sync-calls\n    subject: x\n    reason: r\n"
        "    expires: 2030-01-01\n",
        encoding="utf-8",
    )
    r = runner.invoke(app, ["rules", "validate", str(path)])
    assert r.exit_code == 0, r.output
    assert r.stdout == f"ok: {path} (9 rules, 1 waivers)\n"


def test_validate_error(tmp_path: Path) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text("version: 1\nrules:\n  - id: t\n    kind: nope\n", encoding="utf-8")
    r = runner.invoke(app, ["rules", "validate", str(path)])
    assert r.exit_code == 2
    assert r.stdout == ""
    assert r.stderr == (
        f"nsysdiff: error: {path}:4: rule 't': key 'kind': unknown kind 'nope' "
        "(kinds: budget, danger-zone, invariance, outlier, structure)\n"
    )


def test_validate_every_pack() -> None:
    r = runner.invoke(app, ["rules", "validate", "default", "tpot", "batch-invariance", "strict"])
    assert r.exit_code == 0, r.output
    assert r.stdout.startswith("ok: default, tpot, batch-invariance, strict (")
