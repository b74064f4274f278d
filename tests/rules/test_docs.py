"""docs/rules.md stays accurate: every kind and option documented, every example loads."""

from __future__ import annotations

import re
from datetime import date, timedelta
from pathlib import Path

import pytest

from nsysdiff.rules import KINDS, SECTIONS, load_rules
from nsysdiff.rules.config import TOP_KEYS, pack_names

DOC = Path(__file__).resolve().parents[2] / "docs" / "rules.md"
TEXT = DOC.read_text(encoding="utf-8")


def test_every_kind_and_option_is_documented() -> None:
    for name, kind in [*KINDS.items(), *SECTIONS.items()]:
        assert f"`{name}`" in TEXT, name
        for option in kind.options:
            assert f"`{option.name}`" in TEXT, (name, option.name)
    for key in TOP_KEYS:
        assert f"{key}:" in TEXT, key
    for pack in pack_names():
        assert f"**`{pack}`**" in TEXT, pack


def test_every_shipped_rule_is_named_in_the_docs() -> None:
    for pack in pack_names():
        for rule in load_rules([pack]).rules:
            assert f"`{rule.id}`" in TEXT, (pack, rule.id)


EXAMPLES = [b for b in re.findall(r"```yaml\n(.*?)```", TEXT, re.S) if "version: 1" in b]


@pytest.mark.parametrize("block", EXAMPLES, ids=[f"example{i}" for i in range(len(EXAMPLES))])
def test_yaml_examples_load(block: str, tmp_path: Path) -> None:
    (tmp_path / "team").mkdir()  # the format example extends ./team/base.yaml
    (tmp_path / "team" / "base.yaml").write_text("version: 1\n", encoding="utf-8")
    path = tmp_path / "example.yaml"
    path.write_text(block, encoding="utf-8")
    assert load_rules([str(path)]).rules


def test_worked_example_is_the_file_it_runs() -> None:
    """The worked example's YAML is examples/ci/nsys-rules.yaml (tests/test_docs.py runs
    the commands on it), and its waiver is in force: a copied example still waives."""
    block = next(b for b in EXAMPLES if "examples/ci/nsys-rules.yaml" in b)
    path = DOC.parents[1] / "examples" / "ci" / "nsys-rules.yaml"
    shipped = path.read_text(encoding="utf-8")
    assert block.split("\n", 1)[1] == shipped.split("\n", 1)[1]
    rs = load_rules([str(path)])
    # The tpot pack's rules and the two the example adds, with its one waiver.
    assert (len(rs.rules), len(rs.waivers)) == (len(load_rules(["tpot"]).rules) + 2, 1)
    assert all(w.expires >= date.today() + timedelta(days=365) for w in rs.waivers)
