"""Every command output the docs show is what the tool prints today.

A doc opts a block in by its info string: a fenced block that opens with
```` ```console nsysdiff ```` holds one command line (``$ nsysdiff ...``, run from the
repository root, 80 columns, stdout then stderr) and what it prints, exactly. An optional
``exit=N`` after it (```` ```console nsysdiff exit=2 ````) checks the exit code as well.
Any Markdown file of the repository can hold such blocks; ``pytest --update-golden
tests/test_docs.py`` rewrites the outputs in place. Waiver dates in the docs stay at
least a year ahead, so that a copied example still waives.
"""

from __future__ import annotations

import datetime
import re
import shlex
from dataclasses import dataclass
from pathlib import Path

import pytest
from conftest import ROOT, run_cli

BLOCK = re.compile(r"^```console nsysdiff(?P<opts>[^\n]*)\n(?P<body>.*?)^```$", re.M | re.S)
EXPIRES = re.compile(r"expires: (\d{4}-\d{2}-\d{2})")


def documents() -> list[Path]:
    skip = {".git", ".tools", ".venv", "node_modules"}
    return sorted(
        p for p in ROOT.rglob("*.md") if not skip.intersection(p.relative_to(ROOT).parts) and "egg-info" not in str(p)
    )


@dataclass(frozen=True)
class Example:
    doc: Path
    start: int  # offset of the block's body in the doc
    end: int
    command: str
    output: str
    exit_code: int | None

    @property
    def id(self) -> str:
        line = self.doc.read_text(encoding="utf-8")[: self.start].count("\n") + 1
        return f"{self.doc.relative_to(ROOT)}:{line}"


def examples() -> list[Example]:
    found = []
    for doc in documents():
        text = doc.read_text(encoding="utf-8")
        for m in BLOCK.finditer(text):
            body = m["body"]
            first, _, output = body.partition("\n")
            assert first.startswith("$ nsysdiff"), f"{doc}: a console nsysdiff block opens with '$ nsysdiff ...'"
            code = re.search(r"\bexit=(\d+)", m["opts"])
            found.append(
                Example(doc, m.start("body"), m.end("body"), first[2:], output, int(code[1]) if code else None)
            )
    return found


# What a terminal outside CI gets: the docs show the report as a reader sees it there.
PLAIN = {"COLUMNS": None, "CI": None, "GITHUB_ACTIONS": None}


@pytest.fixture(autouse=True)
def _at_the_root(monkeypatch: pytest.MonkeyPatch) -> None:
    # The documented command lines name files relative to the repository root.
    monkeypatch.chdir(ROOT)


def run_documented(command: str) -> tuple[int, str]:
    """A documented command line's exit code, and its stdout then stderr."""
    words = shlex.split(command)
    assert words[0] == "nsysdiff"
    code, out, err = run_cli(*words[1:], env=PLAIN)
    return code, out + err


EXAMPLES = examples()


def test_the_docs_hold_examples() -> None:
    docs = {e.doc.relative_to(ROOT).as_posix() for e in EXAMPLES}
    assert {"docs/rules.md", "docs/scopes.md", "docs/noise.md", "docs/json.md"} <= docs


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda e: e.id)
def test_documented_output(example: Example, update_golden: bool) -> None:
    code, out = run_documented(example.command)
    if example.exit_code is not None:
        assert code == example.exit_code, out
    if update_golden and out != example.output:
        text = example.doc.read_text(encoding="utf-8")
        current = f"$ {example.command}\n{example.output}"
        assert text[example.start : example.end] == current
        example.doc.write_text(
            text[: example.start] + f"$ {example.command}\n{out}" + text[example.end :], encoding="utf-8"
        )
        return
    assert out == example.output, f"{example.id}: `{example.command}` prints:\n{out}"


def test_a_block_is_found_and_compared(tmp_path: Path) -> None:
    """The parser sees the command, the output and the exit code, and nothing else."""
    text = "x\n```console nsysdiff exit=2\n$ nsysdiff --bogus\nline\n```\n```console\n$ nsysdiff a\n```\n"
    (m,) = BLOCK.finditer(text)
    assert m["body"] == "$ nsysdiff --bogus\nline\n" and "exit=2" in m["opts"]
    code, out = run_documented("nsysdiff --bogus")
    assert code == 2 and out.startswith("nsysdiff: error: No such option: --bogus")


def test_documented_waivers_do_not_expire_soon() -> None:
    soon = datetime.date.today() + datetime.timedelta(days=365)
    for doc in documents():
        for day in EXPIRES.findall(doc.read_text(encoding="utf-8")):
            assert datetime.date.fromisoformat(day) >= soon, f"{doc.relative_to(ROOT)}: expires: {day}"


def test_json_md_lists_every_document() -> None:
    from nsysdiff.fingerprint import model, noise, runset
    from nsysdiff.render import json_report, ranks, summary

    text = (ROOT / "docs" / "json.md").read_text(encoding="utf-8")
    formats = [
        json_report.FORMAT,
        summary.SUMMARY_FORMAT,
        ranks.JOB_FORMAT,
        model.FORMAT,
        runset.RUN_SET_FORMAT,
        noise.PROFILE_FORMAT,
    ]
    assert all(f"| `{f}` |" in text for f in formats)
    assert f"writes {['no', 'one', 'two', 'three', 'four', 'five', 'six'][len(formats)]} kinds of JSON document" in text
