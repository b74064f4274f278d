"""Workflow commands after any Unicode blank: GitHub's runner trims every Unicode
whitespace character (not only spaces and tabs) before it looks for ``::``, so a name that
puts U+3000 or U+00A0 before ``::`` at the start of a line, itself or after wrapping, is a
command unless it is neutralised. Every format, every blank."""

from __future__ import annotations

import unicodedata
import xml.etree.ElementTree as ET
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import run_cli
from render.test_render import hostile_findings, hostile_specs

from nsysdiff.render import Format, render
from nsysdiff.rules.report import Report
from nsysdiff.safe import neutral
from nsysdiff.synth.builder import TraceBuilder

MakeReport = Callable[..., Report]

# Every character Python calls whitespace or Unicode files as a space separator (Zs).
UNICODE_BLANKS = sorted({chr(c) for c in range(0x110000) if chr(c).isspace() or unicodedata.category(chr(c)) == "Zs"})
NOT_NEWLINE = [c for c in UNICODE_BLANKS if c not in "\n"]


def runner_commands(out: str) -> list[str]:
    """Lines the runner would parse as commands: split on newlines, every leading Unicode
    blank stripped (the oracle is independent of nsysdiff's own set)."""
    blanks = "".join(UNICODE_BLANKS) + "\u180e\u200b\ufeff"
    return [line for line in out.split("\n") if line.lstrip(blanks).startswith("::") or "##[" in line]


def test_the_blank_set_covers_unicode() -> None:
    for c in UNICODE_BLANKS:
        assert neutral.is_command(c + "::x"), f"U+{ord(c):04X}"
    assert neutral.is_command("x ##[error]")
    assert not neutral.is_command("x::y")


@pytest.mark.parametrize("blank", NOT_NEWLINE, ids=lambda c: f"U+{ord(c):04X}")
def test_lines_neutralises_a_command_after_any_blank(blank: str) -> None:
    doc = f"ok\n{blank}::add-mask::FAIL\n {blank} ::stop-commands::t\n"
    assert runner_commands(doc)  # the runner would obey this
    assert runner_commands(neutral.lines(doc)) == []
    assert runner_commands(neutral.xml_document(doc)) == []


def test_arabic_letter_mark_is_escaped() -> None:
    assert neutral.text("a\u061cb") == "a\\u061cb"


WRAPPING = "k" + " www \u3000::warning::FORGED" * 40
HOSTILE = [
    WRAPPING,
    "\u3000::warning::lead",
    "\u2003::add-mask::FAIL\n::x",
    "k\n\u3000::warning::X",
    "k\n\u00a0::add-mask::FAIL",
    "k \u2003::error::x",
]


@pytest.mark.parametrize("name", HOSTILE, ids=range(len(HOSTILE)))
@pytest.mark.parametrize("fmt", list(Format), ids=lambda f: f.value)
def test_no_format_prints_a_command_after_unicode_blanks(make_report: MakeReport, fmt: Format, name: str) -> None:
    report = make_report(specs=hostile_specs(name), findings=hostile_findings(name))
    for width in (40, 80, 120):
        out = render(report, fmt, width=width, details=True)
        found = runner_commands(out)
        if fmt is Format.github:
            own = [line for line in out.split("\n") if line.startswith(("::error ", "::warning ", "::notice "))]
            assert found == own
        else:
            assert found == [], found[:3]
        if fmt is Format.junit:
            ET.fromstring(out)


def test_text_report_of_a_wrapping_name_end_to_end(tmp_path: Path) -> None:
    runs = []
    for i in range(4):
        b = TraceBuilder()
        b.launch(WRAPPING, 0, 3_000, 2_000 + i)
        b.launch("gemm", 10_000, 13_000, 2_000)
        runs.append(str(b.write(tmp_path / f"t{i}.sqlite")))
    for args in (
        [runs[0], runs[1], "--details"],
        ["summary", runs[0]],
        ["--base", *runs[:2], "--candidate", *runs[2:], "--details"],
    ):
        r = run_cli(*args, env={"COLUMNS": "80"})
        assert r.exit_code in (0, 3), r.stderr
        assert runner_commands(r.stdout) == [] and runner_commands(r.stderr) == []
