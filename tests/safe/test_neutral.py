"""Hostile strings from traces and rule files, written to every destination.

Kernel, NVTX, GPU and file names that carry rich markup, newlines followed by workflow
commands, the runner's legacy ``##[`` commands, terminal escape sequences (ESC, BEL,
OSC-8 links, C1 CSI) or NUL: no format may print them as markup, as a line GitHub's
runner would parse as a command, or as a control character; and a Markdown report stays
within GitHub's step-summary limit whatever the length of a name.
"""

from __future__ import annotations

import csv
import io
import json
import re
import xml.etree.ElementTree as ET
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import run_cli, traces_dir
from render.test_render import hostile_findings, hostile_specs

from nsysdiff.render import Format, github, markdown, render
from nsysdiff.rules.report import Report
from nsysdiff.safe import neutral
from nsysdiff.synth.builder import Gpu, TraceBuilder

MakeReport = Callable[..., Report]

HOSTILE_NAMES = [
    "kern\n::error file=x,line=1::injected",
    "kern\r\n  ::warning::injected",
    "kern ##[error]legacy",
    "##[stop-commands]token",
    "kern\x1b[31mred\x1b[0m\x07bell\x00nul",
    "\x1b]8;;http://evil.example\x1b\\click\x1b]8;;\x1b\\",
    "kern\x9b31mC1 CSI\x85NEL\u2028LS\u202eRLO",
    "{ForeignNode[/ConstantOfShape_3_.../ScatterND_23]}",
    "[bold]not bold[/bold] [/x] [link=http://x]y[/link]",
]

_CONTROL = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def command_lines(out: str) -> list[str]:
    """Lines GitHub's runner would parse as a workflow command."""
    return [line for line in out.splitlines() if line.lstrip().startswith("::") or "##[" in line]


def assert_inert(out: str, *, commands: int = 0) -> None:
    assert not _CONTROL.search(out), repr(_CONTROL.search(out))
    found = command_lines(out)
    assert len(found) == commands, found


# --- the functions ------------------------------------------------------------------------


def test_text_escapes_controls_and_legacy_commands() -> None:
    assert neutral.text("a\nb\x1b[0m\x07") == "a\\x0ab\\x1b[0m\\x07"
    assert neutral.text("x ##[error]y") == "x #\\x23[error]y"
    assert neutral.text("c\x9b\u2028\u202e") == "c\\x9b\\u2028\\u202e"
    plain = "void at::native::kernel<float>(int)"
    assert neutral.text(plain) is plain


def test_text_cuts_long_strings_and_says_so() -> None:
    out = neutral.text("a" * 100 + "b" * 10_000 + "c" * 100, limit=200)
    assert len(out) < 240
    assert out.startswith("a" * 100) and out.endswith("c" * 53)
    assert "characters cut]" in out


def test_rich_text_is_never_markup() -> None:
    from rich.console import Console

    console = Console(width=200, color_system=None)
    with console.capture() as cap:
        console.print(neutral.rich_text("{ForeignNode[/ConstantOfShape_3_/ScatterND_23]} [bold]x[/bold]"))
    assert cap.get() == "{ForeignNode[/ConstantOfShape_3_/ScatterND_23]} [bold]x[/bold]\n"


def test_lines_guards_a_whole_document() -> None:
    doc = "ok\n  ::error::x\n::notice::y\nz ##[group]\n\x1b[1m\n"
    assert neutral.lines(doc) == "ok\n  \\x3a:error::x\n\\x3a:notice::y\nz #\\x23[group]\n\\x1b[1m\n"


def test_json_document_is_lossless() -> None:
    data = {"name": "a\x7f\x9b\u2028 ##[error] \x1b"}
    out = neutral.json_document(json.dumps(data, ensure_ascii=False))
    assert json.loads(out) == data
    assert_inert(out)


def test_scrub_reaches_every_string(make_report: MakeReport) -> None:
    report = make_report(specs=hostile_specs("a\nb"), findings=hostile_findings("a\nb"))
    clean = neutral.scrub(report, neutral.text)
    assert [f.subject for f in clean.findings if f.rule_id == "outlier-kernels"] == ["a\\x0ab"]
    assert "a\\x0ab" in [r.name for r in clean.diff.kernels]
    assert not any("\n" in r.name for r in clean.diff.kernels)
    assert clean.outcome is report.outcome
    assert neutral.scrub(clean, neutral.text) == clean


def test_cap_markdown_closes_blocks_and_says_what_was_cut() -> None:
    doc = "# t\n\n<details>\n<summary>s</summary>\n\n```mermaid\n" + "x\n" * 100_000 + "```\n</details>\n"
    out = neutral.cap_markdown(doc, limit=10_000)
    assert len(out.encode()) <= 10_000
    assert out.count("```") % 2 == 0
    assert out.count("<details>") == out.count("</details>")
    assert "Report cut at" in out and "left out" in out


def _strings(data: object) -> set[str]:
    if isinstance(data, str):
        return {data}
    if isinstance(data, dict):
        return set().union(*(_strings(v) for v in data.values()), set())
    if isinstance(data, list):
        return set().union(*(_strings(v) for v in data), set())
    return set()


# --- every format ------------------------------------------------------------------------


@pytest.mark.parametrize("name", HOSTILE_NAMES)
@pytest.mark.parametrize("fmt", list(Format), ids=lambda f: f.value)
def test_no_format_passes_on_commands_or_controls(make_report: MakeReport, fmt: Format, name: str) -> None:
    report = make_report(specs=hostile_specs(name), findings=hostile_findings(name))
    out = render(report, fmt, width=120)
    if fmt is Format.github:
        # Its own commands, one per line, and nothing else.
        assert_inert(out, commands=len(out.splitlines()))
        assert all(line.startswith("::") and "##[" not in line for line in out.splitlines())
    else:
        assert_inert(out)
    if fmt is Format.json:
        assert name in _strings(json.loads(out))  # lossless
    if fmt is Format.junit:
        ET.fromstring(out)


@pytest.mark.parametrize("name", HOSTILE_NAMES[:4])
def test_text_keeps_a_name_on_its_line(make_report: MakeReport, name: str) -> None:
    out = render(make_report(specs=hostile_specs(name), findings=hostile_findings(name)), Format.text)
    assert not any(line.lstrip().startswith(("::", "injected")) for line in out.splitlines())
    assert neutral.text(name) in out


def test_markdown_stays_within_the_step_summary_limit(make_report: MakeReport) -> None:
    name = "k" * 10_000_000
    report = make_report(specs=hostile_specs(name), findings=hostile_findings(name))
    out = markdown.render(report)
    assert len(out.encode()) <= neutral.MARKDOWN_LIMIT
    assert "characters cut]" in out
    assert out.startswith("**nsysdiff: FAIL**")


def test_published_summary_is_capped(make_report: MakeReport, tmp_path: Path) -> None:
    name = "k" * 3_000_000
    report = make_report(specs=hostile_specs(name), findings=hostile_findings(name))
    summary = tmp_path / "summary.md"
    github.publish(report, {"GITHUB_STEP_SUMMARY": str(summary)})
    assert summary.stat().st_size <= 1024 * 1024


# --- summary and the CLI, end to end -------------------------------------------------------


def _hostile_trace(path: Path) -> Path:
    b = TraceBuilder(gpus=(Gpu(name="NVIDIA [bold]H200[/bold]\x1b[2J"),))
    for i, name in enumerate(HOSTILE_NAMES):
        b.launch(name, 10_000 * i, 10_000 * i + 3_000, 2_000)
        b.nvtx_range(name, 10_000 * i, 10_000 * i + 9_000)
    return b.write(path)


# Wide enough that no name is broken across lines: what is checked is each name whole.
WIDE = {"COLUMNS": "200"}


@pytest.fixture(scope="module")
def hostile_trace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _hostile_trace(tmp_path_factory.mktemp("hostile") / "hostile.sqlite")


def test_summary_prints_names_as_text(hostile_trace: Path) -> None:
    r = run_cli("summary", str(hostile_trace), "--top", "50", env=WIDE)
    assert r.exit_code == 0, r.stderr
    assert "Traceback" not in r.stderr
    assert "{ForeignNode[/ConstantOfShape_3_.../ScatterND_23]}" in r.stdout
    assert "[bold]not bold[/bold]" in r.stdout
    assert "NVIDIA [bold]H200[/bold]\\x1b[2J" in r.stdout
    assert_inert(r.stdout)


@pytest.mark.parametrize("fmt", ["text", "markdown", "json", "junit", "github"])
def test_diff_in_github_actions_injects_nothing(hostile_trace: Path, tmp_path: Path, fmt: str) -> None:
    summary = tmp_path / "summary.md"
    r = run_cli(
        hostile_trace,
        hostile_trace,
        "--format",
        fmt,
        env={**WIDE, "GITHUB_ACTIONS": "true", "GITHUB_STEP_SUMMARY": str(summary)},
    )
    assert r.exit_code == 0, r.stderr
    own = [line for line in r.stdout.splitlines() if re.match(r"^::(error|warning|notice)[ :]", line)]
    assert_inert(r.stdout, commands=len(own))
    assert_inert(summary.read_text())


def test_nvtx_only_real_trace_summary() -> None:
    trace = traces_dir() / "ecf_nvtxonly_poolformer.sqlite"
    if not trace.exists():
        pytest.skip("real traces not found")
    r = run_cli("summary", str(trace), "--top", "2000", env=WIDE)
    assert r.exit_code == 0, r.stderr
    assert "ForeignNode[/ConstantOfShape_3_" in r.stdout


def test_new_sections_and_formats_inject_nothing(hostile_trace: Path, tmp_path: Path) -> None:
    """NVTX ranges (--details and the NVTX-only first screen), CSV files and the
    summary as Markdown carry hostile names inertly."""
    details = run_cli(str(hostile_trace), str(hostile_trace), "--no-rules", "--details", env=WIDE)
    assert details.exit_code == 0, details.stderr
    assert "NVTX ranges by absolute time" in details.stdout
    assert_inert(details.stdout)
    out = tmp_path / "csv"
    out.mkdir()
    csv_run = run_cli(str(hostile_trace), str(hostile_trace), "--no-rules", "--format", "csv", "-o", str(out), env=WIDE)
    assert csv_run.exit_code == 0, csv_run.stderr
    for doc in [csv_run.stdout, *(p.read_text() for p in out.iterdir())]:
        assert_inert(doc)
        cells = [c for row in csv.reader(io.StringIO(doc)) for c in row]
        assert not any(c.startswith(("=", "+", "@")) for c in cells)
    md = run_cli("summary", str(hostile_trace), "--format", "markdown", "--top", "50", env=WIDE)
    assert md.exit_code == 0, md.stderr
    assert_inert(md.stdout)
    assert "[bold]" not in md.stdout  # brackets are entities in Markdown
