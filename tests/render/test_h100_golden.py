"""Golden reports of the project's own H100 captures, in every report format that a
reviewer reads (text, Markdown, JSON). Skipped when the traces are absent."""

from __future__ import annotations

from collections.abc import Callable
from datetime import date

import pytest
from conftest import traces_dir

from nsysdiff import api
from nsysdiff.compare import comparability
from nsysdiff.compare.diff import compare
from nsysdiff.fingerprint.scope import ScopeOptions
from nsysdiff.render import Format, render
from nsysdiff.rules import evaluate, load_rules
from nsysdiff.rules.report import Report

H100 = traces_dir() / "h100"
CASES = [
    ("llm_bs1", "llm_bs16", "default"),
    ("llm_bs1", "llm_bs16", "batch-invariance"),
    ("llm_bs1", "llm_bs1_compile", "default"),
    ("example_bs1", "example_bs16", "batch-invariance"),
    ("graph_mode", "graph_mode", "default"),
    # Per decode step: the Steps section, and time per step on the first screen.
    ("llm_bs1", "llm_bs1_compile", "tpot"),
    ("llm_bs16", "llm_bs16_r2", "tpot"),
]
PER = {"tpot": ScopeOptions(per="decode_step")}
FORMATS = {Format.text: "txt", Format.markdown: "md", Format.json: "json", Format.csv: "csv"}


def _report(base: str, cand: str, pack: str) -> Report:
    opts = PER.get(pack)
    b, c = api.load(H100 / f"{base}.sqlite", opts), api.load(H100 / f"{cand}.sqlite", opts)
    reasons, notes = comparability.assess(b, c)
    d = compare(b, c)
    findings, results = evaluate(d, load_rules([pack]), today=date(2026, 1, 1))
    return api.judge(d, findings, results, reasons=reasons, notes=notes, packs=(pack,))


@pytest.mark.parametrize(("base", "cand", "pack"), CASES, ids=["-".join(c) for c in CASES])
def test_h100_reports_match_golden(base: str, cand: str, pack: str, golden: Callable[[str, str], None]) -> None:
    if not (H100 / f"{base}.sqlite").exists() or not (H100 / f"{cand}.sqlite").exists():
        pytest.skip("h100 traces not found")
    report = _report(base, cand, pack)
    for fmt, ext in FORMATS.items():
        golden(f"h100/{base}-{cand}-{pack}.{ext}", render(report, fmt, width=120, details=True))


@pytest.mark.parametrize(("base", "cand", "pack"), [c for c in CASES if c[2] in PER], ids=lambda c: str(c))
def test_h100_steps_csv_matches_golden(base: str, cand: str, pack: str, golden: Callable[[str, str], None]) -> None:
    """``-o DIR`` writes the Steps table as steps.csv beside the kernel table."""
    from nsysdiff.render import csv_report

    if not (H100 / f"{base}.sqlite").exists() or not (H100 / f"{cand}.sqlite").exists():
        pytest.skip("h100 traces not found")
    tables = csv_report.tables(_report(base, cand, pack))
    header, rows = tables["steps"]
    text = ",".join(header) + "\n" + "".join(",".join("" if c is None else str(c) for c in r) + "\n" for r in rows)
    golden(f"h100/{base}-{cand}-{pack}.steps.csv", text)
