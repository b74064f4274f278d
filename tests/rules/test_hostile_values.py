"""Rule and phases files whose values crashed the loader or were accepted with a meaning no
limit can have: dates that are not dates, numbers too large for a float or for int(),
names the file system refuses, symlink loops, NaN and negative limits. Each is one line,
exit 2, naming the file and the line."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from conftest import run_cli

from nsysdiff.errors import RuleError, UsageError
from nsysdiff.fingerprint.scope import load_phases, options
from nsysdiff.rules import load_rules

BUDGET = """version: 1
rules:
  - id: b
    kind: budget
    {selector}
    metric: {metric}
    {key}: {value}
"""


def _write(tmp_path: Path, text: str, name: str = "r.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def _refused(path: Path) -> str:
    with pytest.raises(RuleError) as e:
        load_rules([str(path)])
    message = str(e.value)
    assert "\n" not in message and str(path) in message
    return message


@pytest.mark.parametrize(
    "text",
    [
        "version: 2026-02-30\n",
        "version: 1\ndescription: 2026-13-01\n",
        "version: 1\n2026-01-01: x\n",
        "version: 1\nextends: [2026-01-01]\n",
        "version: 1\nrules:\n  - id: 2026-02-30\n    kind: budget\n    whole: true\n    max_ratio: 1.1x\n",
        "version: 1\ndescription: 2026-01-01 25:61:61\n",
        "version: 1\ndescription: !!timestamp 2026-01-01\n",
        "version: " + "9" * 5000 + "\n",
    ],
    ids=["version", "description", "key", "extends", "id", "datetime", "tag", "version-5000-digits"],
)
def test_dates_and_huge_numbers_load_or_fail_in_one_line(tmp_path: Path, text: str) -> None:
    path = _write(tmp_path, text)
    try:
        load_rules([str(path)])  # a date-shaped description is a string, and fine
    except RuleError as e:
        assert "\n" not in str(e) and str(path) in str(e)
    r = run_cli("rules", "validate", str(path))
    assert r.exit_code in (0, 2) and "Traceback" not in r.stderr


def test_a_date_shaped_description_is_a_string(tmp_path: Path) -> None:
    ok = _write(tmp_path, "version: 1\ndescription: 2026-01-01\nrules: []\n")
    assert load_rules([str(ok)]).sources == (str(ok),)


@pytest.mark.parametrize(
    ("key", "metric", "value"),
    [
        ("max_ratio", "total_time", "1" + "0" * 400),
        ("max_noise_widths", "total_time", "1" + "0" * 400),
        ("max_increase", "calls", "1" + "0" * 400),
        ("max_value", "bytes", "1" + "0" * 400),
        ("max_noise_widths", "total_time", ".nan"),
        ("max_increase", "calls", ".nan"),
        ("max_value", "calls", ".nan"),
        ("max_value", "calls", "-1"),
        ("max_increase", "bytes", "-1"),
        ("max_ratio", "total_time", ".inf"),
        ("max_value", "bytes", ".inf"),
        ("max_ratio", "total_time", "1e400"),
    ],
)
def test_every_limit_is_a_finite_number_in_its_domain(tmp_path: Path, key: str, metric: str, value: str) -> None:
    selector = "memcpy: HtoD" if metric == "bytes" else "whole: trace"
    path = _write(tmp_path, BUDGET.format(selector=selector, metric=metric, key=key, value=value))
    message = _refused(path)
    assert ":7:" in message or ":7" in message, message
    r = run_cli("rules", "validate", str(path))
    assert r.exit_code == 2 and "Traceback" not in r.stderr


def test_a_name_too_long_for_the_file_system(tmp_path: Path) -> None:
    for key in ("extends", "noise_profile"):
        path = _write(tmp_path, f"version: 1\n{key}: {'a' * 300}.yaml\n")
        assert "unusable path" in _refused(path)
    with pytest.raises(RuleError, match="unusable path"):
        load_rules(["b" * 300 + ".yaml"])


def test_a_symlink_loop_in_the_tree(tmp_path: Path) -> None:
    os.symlink("loop1", tmp_path / "loop2")
    os.symlink("loop2", tmp_path / "loop1")
    for key in ("extends", "noise_profile"):
        path = _write(tmp_path, f"version: 1\n{key}: loop1\n")
        message = _refused(path)
        assert "loop" in message


@pytest.mark.parametrize(
    "text",
    [
        "phases:\n  2026-02-30: decode\n",
        "phases:\n  decode: 2026-02-30\n",
        "phases:\n  d: " + "9" * 5000 + "\n",
        "phases:\n  d: [2026-01-01 25:61:61]\n",
    ],
    ids=["date-key", "date-value", "huge-int", "datetime"],
)
def test_hostile_phases_values(tmp_path: Path, text: str) -> None:
    path = _write(tmp_path, text, "phases.yaml")
    try:
        load_phases(path)
    except UsageError as e:
        assert str(path) in str(e) and "\n" not in str(e)


def test_a_date_named_phase_is_a_string(tmp_path: Path) -> None:
    path = _write(tmp_path, "phases:\n  2026-02-30: decode\n", "phases.yaml")
    assert load_phases(path) == (("2026-02-30", ("decode",)),)


@pytest.mark.parametrize("pattern", ["decode[", "(?<=x)y", "a@b("])
def test_a_bad_nvtx_regex_is_refused(pattern: str) -> None:
    with pytest.raises(UsageError, match="bad regex"):
        options(nvtx=pattern)


def test_a_bad_phase_regex_is_refused(tmp_path: Path) -> None:
    path = _write(tmp_path, "phases:\n  decode: 'step[0-9'\n", "phases.yaml")
    with pytest.raises(UsageError, match="bad regex"):
        load_phases(path)
