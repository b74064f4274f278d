"""Hostile rule and phases files: one line, exit 2, quickly; never a traceback or a hang.

The files are under ``hostile/``; those too large or too many to commit are written here.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from conftest import run_cli

from nsysdiff.errors import RuleError, UsageError
from nsysdiff.fingerprint.scope import load_phases
from nsysdiff.rules import load_rules
from nsysdiff.safe import yamldoc

HOSTILE = Path(__file__).parent / "hostile"


def _error(spec: str | Path) -> str:
    with pytest.raises(RuleError) as e:
        load_rules([str(spec)])
    return str(e.value)


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("nul.yaml", "{file}:3: control character U+0000 at column 10 is not allowed in a YAML file"),
        ("bel.yaml", "{file}:2: control character U+0007 at column 19 is not allowed in a YAML file"),
        ("deep.yaml", "{file}:2: nested more than 32 levels deep"),
        ("laughs.yaml", "{file}: more than 100,000 values once aliases are expanded"),
        (
            "extends-absolute.yaml",
            "{file}:2: key 'extends': '/etc/shadow' is an absolute path: extends names a shipped "
            "pack or a file under the including file's directory",
        ),
        (
            "extends-parent.yaml",
            "{file}:2: key 'extends': '../escape.yaml' is outside the including file's directory: "
            "extends names a shipped pack or a file under the including file's directory",
        ),
        (
            "lookbehind.yaml",
            "{file}:5: rule 'look': key 'kernel': bad regex '(?<=gemm)_v2': invalid perl operator: "
            "(?<= (patterns are RE2: no lookaround, no backreferences)",
        ),
    ],
)
def test_hostile_rule_file(name: str, message: str) -> None:
    path = HOSTILE / name
    assert _error(path) == message.format(file=path)


@pytest.mark.parametrize("name", ["nul.yaml", "deep.yaml", "extends-absolute.yaml"])
def test_hostile_rule_file_through_the_cli(name: str) -> None:
    r = run_cli("rules", "validate", str(HOSTILE / name))
    assert r.exit_code == 2
    assert r.stdout == ""
    assert len(r.stderr.splitlines()) == 1
    assert r.stderr.startswith(f"nsysdiff: error: {HOSTILE / name}:")


def test_symlink_escape_is_refused(tmp_path: Path) -> None:
    outside = tmp_path / "outside.yaml"
    outside.write_text("version: 1\n", encoding="utf-8")
    team = tmp_path / "team"
    team.mkdir()
    (team / "link.yaml").symlink_to(outside)
    top = team / "top.yaml"
    top.write_text("version: 1\nextends: link.yaml\n", encoding="utf-8")
    assert _error(top) == (
        f"{top}:2: key 'extends': 'link.yaml' is outside the including file's directory: extends "
        "names a shipped pack or a file under the including file's directory"
    )


def test_foreign_file_content_is_never_echoed(tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("root: $6$hash-of-the-password\nadmin: hunter2\n", encoding="utf-8")
    message = _error(secret)
    assert message == f"{secret}:1: key 'version': missing required key (add 'version: 1')"
    binary = tmp_path / "secret.bin"
    binary.write_bytes(b"version: 1\n\xffhunter2\n")
    assert _error(binary) == f"{binary}:2: not UTF-8 text (byte 11)"


def test_long_extends_chain_is_refused(tmp_path: Path) -> None:
    for i in range(1_500):
        (tmp_path / f"r{i}.yaml").write_text(f"version: 1\nextends: r{i + 1}.yaml\n", encoding="utf-8")
    (tmp_path / "r1500.yaml").write_text("version: 1\n", encoding="utf-8")
    message = _error(tmp_path / "r0.yaml")
    assert message == f"{tmp_path / 'r15.yaml'}:2: key 'extends': more than 16 files extend each other"


def test_large_rule_file_is_refused_quickly(tmp_path: Path) -> None:
    big = tmp_path / "big.yaml"
    rule = "  - id: r{}\n    kind: budget\n    whole: trace\n    max_ratio: 1.1x\n"
    with big.open("w", encoding="utf-8") as fh:
        fh.write("version: 1\nrules:\n")
        i = 0
        while fh.tell() < 50_000_000:
            fh.write("".join(rule.format(i + j) for j in range(1_000)))
            i += 1_000
    start = time.perf_counter()
    assert _error(big) == f"{big}: larger than 1,000,000 bytes, the limit for a YAML file here"
    assert time.perf_counter() - start < 1.0


def test_too_many_rules(tmp_path: Path) -> None:
    path = tmp_path / "many.yaml"
    rule = "  - {{id: r{}, kind: budget, whole: trace, max_ratio: 1.1x}}\n"
    path.write_text("version: 1\nrules:\n" + "".join(rule.format(i) for i in range(1_001)), encoding="utf-8")
    assert _error(path) == f"{path}:3: key 'rules': more than 1,000 rules in one rule set"


def test_regex_matches_in_linear_time() -> None:
    (rule,) = load_rules([str(HOSTILE / "redos.yaml")]).rules
    pattern = rule.options.pattern
    start = time.perf_counter()
    assert not pattern.search("a" * 200_000 + "!")
    assert time.perf_counter() - start < 1.0


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("phases-bel.yaml", "{file}:2: control character U+0007 at column 13 is not allowed in a YAML file"),
        ("phases-deep.yaml", "{file}:1: nested more than 32 levels deep"),
    ],
)
def test_hostile_phases_file(name: str, message: str) -> None:
    path = HOSTILE / name
    with pytest.raises(UsageError) as e:
        load_phases(path)
    assert str(e.value) == message.format(file=path)


def test_phases_fifo_is_refused(tmp_path: Path) -> None:
    import os

    fifo = tmp_path / "phases.fifo"
    os.mkfifo(fifo)
    with pytest.raises(UsageError) as e:
        load_phases(fifo)
    assert str(e.value) == f"{fifo}: not a regular file"


def test_limits_are_the_documented_ones() -> None:
    docs = (Path(__file__).parents[2] / "docs" / "rules.md").read_text(encoding="utf-8")
    assert f"{yamldoc.MAX_BYTES:,} bytes" in docs
    assert f"{yamldoc.MAX_DEPTH} levels" in docs


def test_nvtx_and_phase_patterns_match_in_linear_time() -> None:
    from nsysdiff.fingerprint.scope import parse_pattern

    pattern = parse_pattern("(a+)+$@(b+)+$")
    start = time.perf_counter()
    assert not pattern.matches("a" * 200_000 + "!", "b" * 200_000 + "!")
    assert pattern.matches("aaa", "bb")
    assert time.perf_counter() - start < 1.0
