"""The renderers: golden reports, every format, escaping against hostile names, publishing."""

from __future__ import annotations

import dataclasses
import json
import re
import xml.etree.ElementTree as ET
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from render.synthetic import FINDINGS, KERNELS, RULES, Spec

from nsysdiff.errors import ExitCode, NsysdiffError
from nsysdiff.render import Format, github, json_report, junit, markdown, phrases, render, text
from nsysdiff.rules.comparison import Comparison, Kind
from nsysdiff.rules.report import Finding, Level, Outcome, Report
from nsysdiff.safe import neutral

ROOT = Path(__file__).resolve().parents[2]
MakeReport = Callable[..., Report]

GOLDEN_NAMES = {
    Format.text: "diff.txt",
    Format.markdown: "diff.md",
    Format.json: "diff.json",
    Format.junit: "diff.xml",
    Format.github: "diff.github.txt",
    Format.csv: "diff.csv",
    Format.html: "diff.html",
}

HOSTILE = "evil%0A::error::pwned\n::warning title=x::injected\r,comma:colon 100%"


def hostile_specs(name: str = HOSTILE) -> tuple[Spec, ...]:
    """The cascade pair with the outlier kernel renamed to ``name``."""
    return tuple(
        (name, f"void {name}(int)", *rest) if short == "reshape_and_cache_flash_kernel" else (short, dem, *rest)
        for short, dem, *rest in KERNELS
    )  # type: ignore[misc]


def hostile_findings(name: str = HOSTILE) -> tuple[Finding, ...]:
    return tuple(
        dataclasses.replace(f, subject=name, evidence=f"{f.evidence} {name}") if f.rule_id == "outlier-kernels" else f
        for f in FINDINGS
    )


# --- golden files ------------------------------------------------------------------------


@pytest.mark.parametrize("fmt", list(Format), ids=lambda f: f.value)
def test_golden(report: Report, fmt: Format, golden: Callable[[str, str], None]) -> None:
    golden(GOLDEN_NAMES[fmt], render(report, fmt, width=120, details=True))


@pytest.mark.parametrize("width", [80, 200])
@pytest.mark.parametrize("details", [False, True], ids=["first-screen", "details"])
def test_golden_text_widths(report: Report, width: int, details: bool, golden: Callable[[str, str], None]) -> None:
    out = text.render(report, width=width, details=details)
    assert max(len(line) for line in out.splitlines()) <= width
    golden(f"diff.{'details' if details else 'screen'}.{width}.txt", out)


def test_golden_covers_every_format() -> None:
    assert set(GOLDEN_NAMES) == set(Format)


def test_rendering_is_deterministic(make_report: MakeReport) -> None:
    for fmt in Format:
        assert render(make_report(), fmt) == render(make_report(), fmt)


# --- every format, every outcome -----------------------------------------------------------


def _outcomes(make_report: MakeReport) -> dict[str, Report]:
    return {
        "fail": make_report(),
        "pass": make_report(findings=(), outcome=Outcome.PASS, exit_code=ExitCode.PASS),
        "strict": make_report(strict=True),
        "unjudged": make_report(findings=(), rules=(), outcome=Outcome.UNJUDGED, exit_code=ExitCode.PASS),
        "inconclusive": make_report(
            specs=tuple((*s[:5], None) for s in KERNELS),
            findings=(),
            rules=(),
            outcome=Outcome.INCONCLUSIVE,
            exit_code=ExitCode.INCONCLUSIVE,
            reasons=("candidate (bs16.sqlite) has no kernel data",),
            comparison=Comparison(Kind.CANT_COMPARE, "candidate (bs16.sqlite) has no kernel data"),
        ),
    }


@pytest.mark.parametrize("outcome", ["fail", "pass", "strict", "unjudged", "inconclusive"])
@pytest.mark.parametrize("fmt", list(Format), ids=lambda f: f.value)
def test_every_format_renders_every_outcome(make_report: MakeReport, fmt: Format, outcome: str) -> None:
    report = _outcomes(make_report)[outcome]
    out = render(report, fmt, width=100)
    assert isinstance(out, str) and out.endswith("\n") and out.strip()
    assert "NaN" not in out and "Infinity" not in out


@pytest.mark.parametrize(
    ("outcome", "start"),
    [
        (
            "fail",
            "FAIL (exit 1) · one workload · 2 failed rules · 2 errors, 1 warning, 1 info, 1 waived · kernel time",
        ),
        ("pass", "PASS (exit 0) · one workload · 0 failed rules · no findings · kernel time"),
        ("strict", "FAIL (exit 1) · one workload · 3 failed rules · 2 errors, 1 warning, 1 info, 1 waived"),
        ("unjudged", "NOT JUDGED (exit 0) · one workload · rules off (--no-rules) · kernel time"),
        (
            "inconclusive",
            "INCONCLUSIVE (exit 3) · can't compare: candidate (bs16.sqlite) has no kernel data",
        ),
    ],
)
def test_verdict_line(make_report: MakeReport, outcome: str, start: str) -> None:
    report = _outcomes(make_report)[outcome]
    line = phrases.verdict_line(report)
    assert line.startswith(start)
    shown = text.render(report, width=200)
    if report.reasons:
        # The text report lists each reason once, under a line that counts them.
        assert shown.startswith("nsysdiff: INCONCLUSIVE (exit 3) · can't compare (the reason below) · ")
        assert shown.count(report.reasons[0]) == 1
    else:
        assert shown.startswith("nsysdiff: " + start)
    first = markdown.render(report).splitlines()[0]
    assert first.startswith(f"**nsysdiff: {start.split(' (')[0]}** (exit {int(report.exit_code)}) · ")


# --- text ----------------------------------------------------------------------------------


def test_text_order_and_content(report: Report) -> None:
    out = text.render(report, width=120, details=True)
    order = [
        "nsysdiff: FAIL (exit 1)",
        "note: nsys versions differ",
        "kernel time  1.212 s → 1.381 s  1.14x",
        "scale        1.10x (typical family), half the weight between 1.10x and 1.12x",
        "over 7 families on both sides: all the kernel time",
        "change       +169.03 ms = count 0 · per-call +158.37 ms · new +64.60 ms · removed -53.94 ms",
        "device_kernel +87.74 ms (slower calls)",
        "replaces nvjet_tst_192x192_64x4_2x1_v_bz_coopB_TNN",
        "same launch count (3,931), different kernels: 2 base-only, 2 candidate-only",
        "Outliers (1)",
        "reshape_and_cache_flash_kernel  [attention]",
        "per call 5.14x mean / 5.14x p50 · calls 392 → 392",
        "count effect 0 / per-call effect +4.97 ms",
        "Findings (2 errors, 1 warning, 1 info, 1 waived)",
        "Categories",
        "Memory operations",
        "Variant drift: 1 family, 1 appeared (60.10 ms), 1 disappeared (51.94 ms)",
        "Top changes by absolute time (10 of 11 kernels)",
        "Devices (whole scope)",
        "Comparability",
        "Method:",
        "Not measured:",
    ]
    positions = [out.index(s) for s in order]
    assert positions == sorted(positions)
    assert "waived: bs16 is expected to be slower" in out
    assert "info, fact" in out


@pytest.mark.parametrize("width", [80, 100, 120, 160])
def test_text_fits_width(report: Report, width: int) -> None:
    out = text.render(report, width=width)
    assert max(len(line) for line in out.splitlines()) <= width


def test_text_treats_names_as_data(make_report: MakeReport) -> None:
    name = "[bold red]kern[/bold red] :smile: [link=http://x]y[/link]"
    out = text.render(make_report(specs=hostile_specs(name)), width=160)
    assert name in out


# --- markdown ------------------------------------------------------------------------------


def _unescaped_pipes(line: str) -> int:
    return len(re.findall(r"(?<!\\)\|", line))


def test_markdown_escapes_names(make_report: MakeReport) -> None:
    name = "evil|kernel<script>alert(1)</script>`rm -rf`*bold*[link](x)"
    findings = hostile_findings(name)
    out = markdown.render(make_report(specs=hostile_specs(name), findings=findings))
    assert "<script>" not in out and "</script>" not in out
    assert "evil|kernel" not in out and "`rm" not in out
    assert "evil&#124;kernel&lt;script&gt;" in out
    for line in out.splitlines():
        if line.startswith("| "):
            assert line.endswith(" |"), line
    # Every row of a table has as many cell separators as its header.
    tables: list[list[str]] = []
    for line in out.splitlines():
        if line.startswith("|"):
            if not tables or not tables[-1]:
                tables.append([])
            tables[-1].append(line)
        elif tables and tables[-1]:
            tables.append([])
    for rows in filter(None, tables):
        assert {_unescaped_pipes(r) for r in rows} == {_unescaped_pipes(rows[0])}, rows


def test_markdown_shortens_long_names_with_the_full_name_as_title(report: Report) -> None:
    out = markdown.render(report)
    # Below the first line: that one (the Action's log line) shows the label alone.
    row = next(
        line for line in out.splitlines()[1:] if "reshape_and_cache_flash_kernel</code>" in line and "**5.14x**" in line
    )
    assert 'title="void vllm::reshape_and_cache_flash_kernel&lt;__nv_bfloat16' in row
    long_name = next(s for s in KERNELS if s[0] == "nvjet_tst_192x192_64x4_2x1_v_bz_coopB_TNN")[0]
    assert markdown.code(long_name, width=20) == f'<code title="{long_name}">nvjet_tst_19…opB_TNN</code>'


def test_markdown_layout(report: Report) -> None:
    out = markdown.render(report)
    lines = out.splitlines()
    assert lines[0].startswith("**nsysdiff: FAIL** (exit 1) · one workload · 2 failed rules · ")
    assert "top outlier <code" in lines[0] and "5.14x" in lines[0]
    order = [
        "### Failed rules (2)",
        "### Outliers (1)",
        "### Categories",
        "```mermaid",
        "<summary>Other findings",
        "<summary>Memory copies",
        "<summary>Variant drift",
        "<summary>Top changes",
        "<summary>NVTX ranges",
        "<summary>Synchronising API calls",
        "<summary>Devices",
    ]
    positions = [out.index(s) for s in order]
    assert positions == sorted(positions)
    assert out.count("<details>") == out.count("</details>") == 7
    assert "😀" not in out and not re.search(r"[\U0001F300-\U0001FAFF]", out)


def test_mermaid_labels_are_safe(make_report: MakeReport) -> None:
    specs = tuple((*s[:3], 'cat"]\n```\n<b>' if s[3] == "attention" else s[3], *s[4:]) for s in KERNELS)  # type: ignore[misc]
    out = markdown.render(make_report(specs=specs))
    chart = out.split("```mermaid\n", 1)[1].split("```", 1)[0]
    axis = next(line for line in chart.splitlines() if "x-axis" in line)
    labels = re.findall(r'"([^"]*)"', axis)
    assert len(labels) == axis.count(",") + 1
    # The newlines arrive as visible escapes (neutral.text); a label keeps only safe characters.
    assert "catx0ax0ab" in labels
    assert all(re.fullmatch(r"[0-9A-Za-z_.+/ …-]+", label) for label in labels)


def test_markdown_cell_escaping() -> None:
    assert markdown.cell("a|b") == "a&#124;b"
    assert markdown.cell("x<y>&z") == "x&lt;y&gt;&amp;z"
    assert markdown.cell("two\nlines\r") == "two lines"
    assert markdown.cell("snake_case_name") == "snake_case_name"
    assert markdown.cell("_lead *star* `tick`") == "&#95;lead &#42;star&#42; &#96;tick&#96;"
    assert markdown.cell("@octocat") == "&#64;octocat"


# --- json ----------------------------------------------------------------------------------

TOP_LEVEL = [
    "format",
    "version",
    "outcome",
    "exit_code",
    "comparison",
    "strict",
    "packs",
    "reasons",
    "notes",
    "comparability",
    "settings",
    "overall",
    "attribution",
    "outliers",
    "outlier_families",
    "kernels",
    "families",
    "categories",
    "memcpy",
    "memset",
    "sync",
    "api",
    "nvtx",
    "graphs",
    "variants",
    "phases",
    "findings",
    "rules",
    "base_meta",
    "candidate_meta",
    "scope",
]
KERNEL_KEYS = [
    "name",
    "demangled",
    "family",
    "category",
    "base",
    "candidate",
    "delta_ns",
    "ratio",
    "calls_ratio",
    "mean_ratio",
    "p50_ratio",
    "count_effect_ns",
    "per_call_effect_ns",
    "resized_effect_ns",
    "verdict",
    "outlier_score",
    "deviation",
    "is_outlier",
    "distribution",
]


def test_json_round_trips_with_documented_keys(report: Report) -> None:
    doc = json.loads(json_report.render(report))
    assert list(doc) == TOP_LEVEL
    assert doc["format"] == "nsysdiff-diff" and doc["version"] == 1
    assert doc["outcome"] == "fail" and doc["exit_code"] == 1
    overall = doc["overall"]
    assert overall["base_total_ns"] == 1_211_500_000 and overall["candidate_total_ns"] == 1_380_528_000
    assert overall["scale"] == pytest.approx(1.10)
    assert overall["same_count_different_kernels"] is True
    assert overall["scale_info"]["meaningful"] is True
    assert overall["scale_info"]["factor"] == overall["scale"]
    attr = doc["attribution"]
    assert attr["delta_ns"] == 1_380_528_000 - 1_211_500_000
    parts = attr["effects"]
    split = ("count_ns", "per_call_ns", "resized_ns", "new_ns", "removed_ns")
    assert sum(parts[k] for k in split) == attr["delta_ns"]
    assert sum(k["delta_ns"] for k in attr["kernels"]) == attr["delta_ns"]
    (swap,) = attr["replacements"]
    assert swap["why"] == "same family" and swap["delta_ns"] == swap["new_ns"] - swap["removed_ns"]
    by_name = {k["name"]: k for k in doc["kernels"]}
    reshape = by_name["reshape_and_cache_flash_kernel"]
    assert list(reshape) == KERNEL_KEYS
    assert list(reshape["base"]) == ["calls", "total_ns", "mean_ns", "p50_ns", "p90_ns", "share"]
    assert reshape["is_outlier"] is True and reshape["verdict"] == "outlier"
    assert reshape["base"]["calls"] == reshape["candidate"]["calls"] == 392
    assert reshape["ratio"] == pytest.approx(6.17 / 1.20)
    assert doc["outliers"] == [reshape["demangled"]]
    new = by_name["merge_attn_states_kernel"]
    assert new["base"] is None and new["ratio"] is None and new["verdict"] == "new"
    dtod = next(c for c in doc["memcpy"] if c["kind"] == "DtoD")
    assert dtod["base"] == {"ops": 29, "bytes": 81_000_000, "total_ns": 900_000}
    assert dtod["candidate"]["ops"] == 53
    (drift,) = doc["variants"]
    assert drift["appeared_count"] == drift["disappeared_count"] == 1
    assert drift["appeared_ns"] == 60_100_000 and drift["disappeared_ns"] == 51_940_000
    assert [f["rule_id"] for f in doc["findings"] if f["fails"]] == [
        "outlier-kernels",
        "attention-budget",
    ]
    assert list(doc["findings"][0]) == [
        "level",
        "rule_id",
        "kind",
        "subject",
        "observed",
        "limit",
        "observed_value",
        "limit_value",
        "unit",
        "evidence",
        "message",
        "waived",
        "waiver_reason",
        "statistical",
        "fails",
    ]
    assert {r["rule_id"]: r["failed"] for r in doc["rules"]}["sync-budget"] is False
    assert doc["nvtx"][0]["domain"] == "vllm"
    assert doc["base_meta"]["source"] == "bs1.sqlite" and doc["base_meta"]["capture_ns"] == 2_000_000_000
    assert set(doc["scope"]) == {"base", "candidate"}


def test_json_keys_are_documented(report: Report) -> None:
    docs = (ROOT / "docs" / "json.md").read_text(encoding="utf-8")
    doc = json.loads(json_report.render(report))

    def keys(obj: Any, out: set[str]) -> set[str]:
        if isinstance(obj, dict):
            for k, v in obj.items():
                out.add(k)
                keys(v, out)
        elif isinstance(obj, list):
            for v in obj:
                keys(v, out)
        return out

    missing = sorted(k for k in keys(doc, set()) if f"`{k}`" not in docs)
    assert not missing, f"keys not described in docs/json.md: {missing}"


def test_json_has_no_nan_or_infinity() -> None:
    data = {"a": float("nan"), "b": [float("inf"), 1.5, {"c": -float("inf")}], "d": 2}
    assert json_report.finite(data) == {"a": None, "b": [None, 1.5, {"c": None}], "d": 2}


# --- junit ---------------------------------------------------------------------------------


def _suite(out: str) -> ET.Element:
    assert out.startswith('<?xml version="1.0" encoding="UTF-8"?>\n')
    root = ET.fromstring(out.split("\n", 1)[1])
    assert root.tag == "testsuites"
    suite = root.find("testsuite")
    assert suite is not None and suite.get("name") == "nsysdiff"
    for key in ("tests", "failures", "errors", "skipped"):
        assert root.get(key) == suite.get(key)
    return suite


def _counts(suite: ET.Element) -> dict[str, int]:
    return {k: int(suite.get(k, "-1")) for k in ("tests", "failures", "errors", "skipped")}


def test_junit_cases_and_counts(report: Report) -> None:
    suite = _suite(junit.render(report))
    cases = {c.get("name"): c for c in suite.findall("testcase")}
    # A rule with findings is the cases of its findings: each failure is one red test.
    quiet = [r for r in RULES if not any(f.rule_id == r.rule_id for f in FINDINGS)]
    assert len(cases) == len(quiet) + len(FINDINGS)
    assert _counts(suite) == {"tests": len(cases), "failures": 2, "errors": 0, "skipped": 1}
    failed = {n for n, c in cases.items() if c.find("failure") is not None}
    assert failed == {"outlier-kernels[reshape_and_cache_flash_kernel]", "attention-budget[attention]"}
    assert len(report.failed) == 2
    fail = cases["outlier-kernels[reshape_and_cache_flash_kernel]"].find("failure")
    assert fail is not None and fail.get("type") == "error"
    assert "5.14x" in (fail.get("message") or "") and "per-call effect +4.97 ms" in (fail.text or "")
    assert "outlier-kernels" not in cases
    assert cases["outlier-kernels[reshape_and_cache_flash_kernel]"].get("classname") == "nsysdiff.outlier"
    assert cases["total-budget[kernel time]"].find("skipped") is not None
    assert cases["variant-drift[nvjet_tst_*_bz_*]"].find("system-out") is not None
    assert cases["d2d-copies[DtoD]"].find("failure") is None
    assert cases["sync-budget"].find("failure") is None


def test_junit_strict_fails_warnings(make_report: MakeReport) -> None:
    suite = _suite(junit.render(make_report(strict=True)))
    assert _counts(suite)["failures"] == len(make_report(strict=True).failed) == 3
    case = next(c for c in suite.findall("testcase") if c.get("name") == "d2d-copies[DtoD]")
    fail = case.find("failure")
    assert fail is not None and fail.get("type") == "warning"


def test_junit_inconclusive_and_unjudged(make_report: MakeReport) -> None:
    reports = _outcomes(make_report)
    suite = _suite(junit.render(reports["inconclusive"]))
    assert _counts(suite) == {"tests": 1, "failures": 0, "errors": 1, "skipped": 0}
    case = suite.find("testcase")
    assert case is not None and case.get("name") == "comparability"
    error = case.find("error")
    assert error is not None and "no kernel data" in (error.get("message") or "")
    suite = _suite(junit.render(reports["unjudged"]))
    assert _counts(suite) == {"tests": 1, "failures": 0, "errors": 0, "skipped": 1}


def test_junit_survives_control_characters(make_report: MakeReport) -> None:
    name = 'bad\x00\x1b[31mname\x07 & <tag> "quoted"'
    out = junit.render(make_report(specs=hostile_specs(name), findings=hostile_findings(name)))
    suite = _suite(out)
    names = [c.get("name") or "" for c in suite.findall("testcase")]
    assert any("&lt;" not in n and "<tag>" in n for n in names)


# --- github --------------------------------------------------------------------------------

COMMAND = re.compile(r"^::(error|warning|notice)(?: title=([^:,\r\n]*))?::([^\r\n]*)$")


def _unescape(text: str) -> str:
    return text.replace("%0D", "\r").replace("%0A", "\n").replace("%3A", ":").replace("%2C", ",").replace("%25", "%")


def test_escaping_matches_the_toolkit() -> None:
    assert github.escape_data("100% \r\n done: a,b") == "100%25 %0D%0A done: a,b"
    assert github.escape_property("100% \r\n done: a,b") == "100%25 %0D%0A done%3A a%2Cb"
    assert github.escape_data("%0A") == "%250A"
    assert github.command("error", "m", title="t:1") == "::error title=t%3A1::m"
    assert github.command("notice", "only") == "::notice::only"


@pytest.mark.parametrize(
    "name",
    [
        HOSTILE,
        "evil%0A::error::pwned",
        "line\nbreak",
        "carriage\rreturn",
        "a:b,c",
        "%%%",
        "::notice::x\n",
    ],
)
def test_hostile_names_cannot_inject_commands(make_report: MakeReport, name: str) -> None:
    report = make_report(specs=hostile_specs(name), findings=hostile_findings(name))
    out = github.render(report)
    lines = out.splitlines()
    assert "\r" not in out
    assert len(lines) == len(report.active) + 1
    parsed = [COMMAND.match(line) for line in lines]
    assert all(parsed), lines
    kinds = [m.group(1) for m in parsed if m]
    assert kinds == ["error", "error", "warning", "notice", "notice"]
    outlier = next(m for m in parsed if m and m.group(2) and m.group(2).startswith("outlier-kernels"))
    # The name stays inside its command, on one line, control characters made visible.
    assert _unescape(outlier.group(2)) == f"outlier-kernels: {neutral.text(name)}"
    assert neutral.text(name) in _unescape(outlier.group(3))
    verdict = phrases.verdict_line(neutral.scrub(report, neutral.text))
    assert _unescape(parsed[-1].group(3) if parsed[-1] else "") == verdict


def test_github_annotations(report: Report, make_report: MakeReport) -> None:
    lines = github.render(report).splitlines()
    assert lines[0].startswith("::error title=outlier-kernels%3A reshape_and_cache_flash_kernel::5.14x")
    assert "[fact]" in lines[3] and lines[3].startswith("::notice title=variant-drift")
    assert lines[-1].startswith("::notice title=nsysdiff::FAIL (exit 1)")
    assert not any("total-budget" in line for line in lines)  # waived: no annotation
    strict = github.render(make_report(strict=True)).splitlines()
    assert strict[2].startswith("::error title=d2d-copies")
    inconclusive = github.render(_outcomes(make_report)["inconclusive"]).splitlines()
    assert inconclusive[0] == "::warning title=nsysdiff%3A inconclusive::candidate (bs16.sqlite) has no kernel data"


def test_publish_appends_summary_and_outputs(report: Report, tmp_path: Path) -> None:
    summary = tmp_path / "summary.md"
    outputs = tmp_path / "output.txt"
    summary.write_text("# earlier step\n", encoding="utf-8")
    outputs.write_text("other=1\n", encoding="utf-8")
    env = {"GITHUB_STEP_SUMMARY": str(summary), "GITHUB_OUTPUT": str(outputs)}
    github.publish(report, env)
    body = summary.read_text(encoding="utf-8")
    assert body.startswith("# earlier step\n**nsysdiff: FAIL** (exit 1)")
    assert body.endswith(markdown.render(report) + "\n")
    assert outputs.read_text(encoding="utf-8") == "other=1\nverdict=fail\nexit-code=1\n"
    github.publish(report, env)
    assert outputs.read_text(encoding="utf-8").count("verdict=fail") == 2


@pytest.mark.parametrize(
    ("outcome", "verdict", "code"),
    [("pass", "pass", 0), ("unjudged", "unjudged", 0), ("inconclusive", "inconclusive", 3)],
)
def test_publish_outputs_per_outcome(
    make_report: MakeReport, tmp_path: Path, outcome: str, verdict: str, code: int
) -> None:
    outputs = tmp_path / "output.txt"
    github.publish(_outcomes(make_report)[outcome], {"GITHUB_OUTPUT": str(outputs)})
    assert outputs.read_text(encoding="utf-8") == f"verdict={verdict}\nexit-code={code}\n"


def test_publish_without_environment_writes_nothing(report: Report, tmp_path: Path) -> None:
    github.publish(report, {"GITHUB_STEP_SUMMARY": "", "GITHUB_ACTIONS": "true"})
    assert list(tmp_path.iterdir()) == []


def test_publish_reports_unwritable_files(report: Report, tmp_path: Path) -> None:
    with pytest.raises(NsysdiffError, match="can't append the job summary"):
        github.publish(report, {"GITHUB_STEP_SUMMARY": str(tmp_path / "missing" / "summary.md")})


def test_levels_map_to_commands() -> None:
    assert {lvl: github._COMMAND[lvl] for lvl in Level} == {
        Level.ERROR: "error",
        Level.WARNING: "warning",
        Level.INFO: "notice",
    }


def test_json_findings_carry_numbers_beside_the_text(tmp_path: Path) -> None:
    """A budget finding gives observed, limit and unit as numbers; durations in whole ns."""
    from datetime import date

    from render.synthetic import pair

    from nsysdiff import rules as rule_engine
    from nsysdiff.api import judge
    from nsysdiff.compare.diff import Settings, compare

    rules_file = tmp_path / "rules.yaml"
    rules_file.write_text(
        "version: 1\nrules:\n"
        "  - {id: attention-time, kind: budget, category: attention, metric: total_time, max_increase: 1ms}\n"
        "  - {id: attention-ratio, kind: budget, category: attention, metric: total_time, max_ratio: 1.1x}\n"
    )
    ruleset = rule_engine.load_rules([str(rules_file)])
    d = compare(*pair(), Settings())
    findings, results = rule_engine.evaluate(d, ruleset, today=date(2026, 1, 1))
    doc = json.loads(json_report.render(judge(d, findings, results)))
    by_rule = {f["rule_id"]: f for f in doc["findings"]}
    time, ratio = by_rule["attention-time"], by_rule["attention-ratio"]
    assert (time["observed_value"], time["limit_value"], time["unit"]) == (13_970_000, 1_000_000, "ns")
    assert time["observed"] == "+13.97 ms"
    assert ratio["unit"] == "ratio" and ratio["limit_value"] == 1.1
    assert ratio["observed_value"] == pytest.approx(60.17 / 46.20, abs=1e-3)


def test_json_findings_of_every_numeric_kind_carry_numbers(tmp_path: Path) -> None:
    """Outlier, danger-zone and structure findings give their numbers too, not only budgets."""
    from datetime import date

    from render.synthetic import pair

    from nsysdiff import rules as rule_engine
    from nsysdiff.api import judge
    from nsysdiff.compare.diff import Settings, compare

    rules_file = tmp_path / "rules.yaml"
    rules_file.write_text(
        "version: 1\nrules:\n"
        "  - {id: out, kind: outlier}\n"
        "  - {id: dz, kind: danger-zone, patterns: [reshape_and_cache], condition: [time-changes], why: w}\n"
        "  - {id: st, kind: structure, check: [memcpy-bytes]}\n"
    )
    ruleset = rule_engine.load_rules([str(rules_file)])
    d = compare(*pair(), Settings())
    findings, results = rule_engine.evaluate(d, ruleset, today=date(2026, 1, 1))
    doc = json.loads(json_report.render(judge(d, findings, results)))
    by = {(f["rule_id"], f["subject"]): f for f in doc["findings"]}
    out = by["out", "reshape_and_cache_flash_kernel"]
    assert out["unit"] == "ratio" and out["limit_value"] == 1.25
    assert out["observed_value"] == pytest.approx(4.674, abs=1e-3)  # "4.67x of scale"
    dz = by["dz", "reshape_and_cache_flash_kernel"]
    assert dz["unit"] == "ratio" and dz["limit_value"] == 1.1  # "time within 10.00%"
    assert dz["observed_value"] == pytest.approx(6.17 / 1.20, abs=1e-2)
    htod = by["st", "HtoD"]
    assert (htod["observed_value"], htod["limit_value"], htod["unit"]) == (54_100_000, 52_000_000, "bytes")


def test_a_kernel_replaced_by_one_of_the_same_short_name_is_told_apart() -> None:
    """nvFuser's fused kernels share one short name: the headline labels both sides."""
    from nsysdiff.compare.attribution import Contributor
    from nsysdiff.render.names import labels_of

    new = "nvfuser_none_f0_c0_r0_g0(Tensor<float, 2, 2>, Tensor<float, 2, 2>, Tensor<float, 2, 2>)"
    old = "nvfuser_none_f0_c0_r0_g0(Tensor<float, 2, 2>, Tensor<float, 2, 2>)"
    short = "nvfuser_none_f0_c0_r0_g0"
    c = Contributor("replacement", short, new, -860.0, short, 136_000.0, old)
    named = labels_of([(new, short), (old, short)])
    text = phrases.contributor_text(c, str, named)
    assert text == f"new {named[new]} +135.14 us replaces {named[old]} -136.00 us"
    assert named[new] != named[old] and named[new].startswith(short)
