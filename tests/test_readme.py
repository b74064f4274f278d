"""The README's two set-up commands stay true: CI runs the second verbatim."""

from __future__ import annotations

import re
import shlex

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
