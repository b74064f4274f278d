"""`nsysdiff rules list | explain | validate`."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import run_cli

from nsysdiff.cli import route
from nsysdiff.rules import KINDS, SECTIONS


def test_rules_is_a_command_not_a_trace() -> None:
    assert route(["rules", "list"]) == ["rules", "list"]
    assert route(["a.sqlite", "b.sqlite"]) == ["diff", "a.sqlite", "b.sqlite"]


def test_list_shows_every_pack_with_counts() -> None:
    r = run_cli("rules", "list")
    assert r.exit_code == 0, r.stderr
    # One entry a pack, its description wrapped under it (indented).
    lines = [line for line in r.stdout.splitlines() if not line.startswith(" ")]
    assert [line.split()[0] for line in lines] == ["batch-invariance", "default", "strict", "tpot"]
    assert lines[1].startswith("default             5 rules  Sensible budgets")
    assert "(extends default, batch-invariance)" in lines[2]


@pytest.mark.parametrize("name", [*KINDS, *SECTIONS])
def test_explain_every_kind(name: str) -> None:
    r = run_cli("rules", "explain", name)
    assert r.exit_code == 0, r.stderr
    assert r.stdout.splitlines()[0].split()[1] == f"{name}:"
    documented = KINDS[name].options if name in KINDS else SECTIONS[name].options
    for option in documented:
        assert f"\n  {option.name} (" in r.stdout


def test_explain_a_pack_rule() -> None:
    r = run_cli("rules", "explain", "dz-split-k")
    assert r.exit_code == 0, r.stderr
    assert r.stdout.startswith("rule dz-split-k: danger-zone, level warning (rules/batch-invariance.yaml:")
    assert "in packs: batch-invariance, strict" in r.stdout
    assert "Split-K divides the reduction dimension" in r.stdout


def test_explain_unknown() -> None:
    r = run_cli("rules", "explain", "nope")
    assert r.exit_code == 2
    assert r.stdout == ""
    assert r.stderr == (
        "nsysdiff: error: 'nope' is no pack, rule, kind or section (packs: batch-invariance, default, "
        "strict, tpot; kinds: budget, collective-wait, danger-zone, invariance, outlier, step, structure, "
        "noise_profile, waivers)\n"
    )


def test_explain_suggests_a_close_name() -> None:
    r = run_cli("rules", "explain", "tpt")
    assert (r.exit_code, r.stdout) == (2, "")
    assert r.stderr == (
        "nsysdiff: error: 'tpt' is no pack, rule, kind or section; did you mean 'tpot'? (packs: "
        "batch-invariance, default, strict, tpot; kinds: budget, collective-wait, danger-zone, invariance, outlier, "
        "step, structure, noise_profile, waivers)\n"
    )


def test_explain_a_pack() -> None:
    r = run_cli("rules", "explain", "tpot")
    assert r.exit_code == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0] == "pack tpot: 21 rules (rules/tpot.yaml)"
    assert lines[1] == ""
    assert "  decode-step-time             budget       warning" in lines


def test_validate_ok(tmp_path: Path) -> None:
    path = tmp_path / "team.yaml"
    path.write_text(
        "version: 1\nextends: tpot\nwaivers:\n  - rule: sync-calls\n    subject: x\n    reason: r\n"
        "    expires: 2030-01-01\n",
        encoding="utf-8",
    )
    r = run_cli("rules", "validate", str(path))
    assert r.exit_code == 0, r.stderr
    assert r.stdout == f"ok: {path} (21 rules, 1 waiver)\n"


def test_validate_error(tmp_path: Path) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text("version: 1\nrules:\n  - id: t\n    kind: nope\n", encoding="utf-8")
    r = run_cli("rules", "validate", str(path))
    assert r.exit_code == 2
    assert r.stdout == ""
    assert r.stderr == (
        f"nsysdiff: error: {path}:4: rule 't': key 'kind': unknown kind 'nope' "
        "(kinds: budget, collective-wait, danger-zone, invariance, outlier, step, structure)\n"
    )


def test_validate_every_pack() -> None:
    r = run_cli("rules", "validate", "default", "tpot", "batch-invariance", "strict")
    assert r.exit_code == 0, r.stderr
    assert r.stdout.startswith("ok: default, tpot, batch-invariance, strict (")


@pytest.mark.parametrize("argv", [["list"], ["explain", "tpot"], ["explain", "budget"], ["explain", "waivers"]])
def test_rules_documentation_fits_the_width(argv: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """Pack descriptions and option docs wrap to COLUMNS like every report (they ran to 450)."""

    monkeypatch.setenv("COLUMNS", "60")
    r = run_cli("rules", *argv)
    assert r.exit_code == 0, r.stderr
    assert max(len(line) for line in r.stdout.splitlines()) <= 60
