"""The Steps section of a diff: in every format, and inert whatever the step range is named."""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path

import fpspec
import pytest
import stepspec
from conftest import run_cli

from nsysdiff import api
from nsysdiff.compare.diff import compare
from nsysdiff.render import Format, csv_report, render

HOSTILE = "evil%0A::error::pwned\n::warning title=x::\x1b[31mred\r"


def _report(name: str = "decode_step") -> object:
    fp = fpspec.fingerprint({"gemm_a": (10, 1_000_000)})
    base = dataclasses.replace(
        fp,
        steps=dataclasses.replace(
            fpspec.steps(8, 10_000_000, 9_800_000, parts={"compute": 1_000_000}, calls={"sync": (1, 10_000)}), name=name
        ),
    )
    cand = dataclasses.replace(
        fp,
        steps=dataclasses.replace(
            fpspec.steps(8, 20_000_000, 9_800_000, parts={"compute": 1_000_000}, calls={"sync": (2, 10_000)}), name=name
        ),
    )
    return api.judge(compare(base, cand), [], [], judged=False, packs=(), notes=())


def test_every_format_shows_the_steps_first() -> None:
    report = _report()
    text = render(report, Format.text, width=100)  # type: ignore[arg-type]
    head = text.splitlines()[:10]  # the loop's bound comes between the time and the calls
    assert any(
        "time per step 9.97 ms → 18.73 ms (1.88x): +8.75 ms between steps, kernels unchanged" in x for x in head
    ), head
    assert any("+1 sync call per step" in x for x in head), head
    md = render(report, Format.markdown)  # type: ignore[arg-type]
    assert "**Steps** time per step 9.97 ms → 18.73 ms (1.88x)" in md and "<summary>Steps of decode_step" in md
    data = json.loads(render(report, Format.json))  # type: ignore[arg-type]
    steps = data["steps"]
    assert steps["first_lines"][1].startswith("loop: base host-bound")
    assert steps["first_lines"][2] == "+1 sync call per step"
    assert sum(p["delta_ns"] for p in steps["parts"]) == pytest.approx(steps["delta_ns"])
    assert "steps" in csv_report.tables(report)  # type: ignore[arg-type]


@pytest.mark.parametrize("fmt", [Format.text, Format.markdown, Format.github, Format.json, Format.junit])
def test_a_hostile_step_name_stays_inert(fmt: Format) -> None:
    out = render(_report(HOSTILE), fmt, width=100, details=True)  # type: ignore[arg-type]
    assert "\x1b" not in out and "\r" not in out
    for line in out.splitlines():
        # As a GitHub runner reads a line: after stripping all Unicode whitespace.
        stripped = re.sub(r"\s", "", line)
        assert not stripped.startswith("::") or line.startswith("::notice title=nsysdiff::"), line


def test_csv_steps_cells_are_numbers_or_fixed_words() -> None:
    header, rows = csv_report.tables(_report(HOSTILE))["steps"]  # type: ignore[arg-type]
    assert header[0] == "Section"
    assert all(isinstance(c, (int, float)) or c is None for r in rows for c in r[2:])


def _uneven_report() -> object:
    """Base: one sync call in every one of 8 steps. Candidate: a second one in one step."""
    fp = fpspec.fingerprint({"gemm_a": (10, 1_000_000)})
    even = fpspec.steps(8, 10_000_000, 9_800_000, parts={"compute": 1_000_000}, calls={"sync": (1, 10_000)})
    steps = list(even.steps)
    first = steps[0]
    steps[0] = dataclasses.replace(first, calls=tuple(dataclasses.replace(c, calls=2) for c in first.calls))
    uneven = dataclasses.replace(even, steps=tuple(steps))
    return api.judge(
        compare(dataclasses.replace(fp, steps=even), dataclasses.replace(fp, steps=uneven)),
        [],
        [],
        judged=False,
        packs=(),
        notes=(),
    )


def test_calls_that_do_not_divide_over_the_steps_are_said_as_exact_counts() -> None:
    """9 sync calls in 8 steps is not '1.12 sync calls per step': an exact count is said
    as the count it is, over the steps, on the first screen and in the table."""
    report = _uneven_report()
    text = render(report, Format.text, width=100, details=True)  # type: ignore[arg-type]
    assert "+1 sync call in 8 steps" in text
    assert "1.12" not in text and "0.12" not in text
    row = next(line for line in text.splitlines() if line.startswith("sync calls"))
    assert "1 → 9/8" in row and "+1/8" in row
    # A pull-request comment's table says decimals: a fraction there reads as a typo.
    md = render(report, Format.markdown, details=True)  # type: ignore[arg-type]
    md_row = next(line for line in md.splitlines() if line.startswith("| sync calls |"))
    assert "| 1 → 1.12 | +0.12 |" in md_row and "/8" not in md_row, md_row


def test_the_host_api_table_of_a_per_step_diff_says_it_counts_the_whole_scope(tmp_path: Path) -> None:
    # The census counts every call of the window, the warm-up's too: beside per-step tables
    # its whole counts must not read as per step.
    a, _ = stepspec.eager(tmp_path / "a.sqlite", 4)
    b, _ = stepspec.eager(tmp_path / "b.sqlite", 4)
    per = {f: run_cli(a, b, "--per", "decode_step", "--details", "--format", f)[1] for f in ("text", "markdown")}
    assert "Host API calls of the whole capture by absolute time" in per["text"], per["text"]
    assert "<summary>Host API calls of the whole capture (" in per["markdown"], per["markdown"]
    whole = run_cli(a, b, "--details")[1]
    assert "Host API calls by absolute time" in whole, whole
    # --nvtx narrows the kernels to the ranges, never the census: the title says so.
    nvtx = run_cli(a, b, "--nvtx", "decode_step", "--details")[1]
    assert "Host API calls of the whole capture by absolute time" in nvtx, nvtx
    windowed = run_cli(a, b, "--per", "decode_step", "--window", "0s:100s", "--details")[1]
    assert "Host API calls of the whole window by absolute time" in windowed, windowed


def test_a_family_whose_calls_slowed_is_named_once_as_calls() -> None:
    # "sync calls 10.00 us → 30.00 us each", never "sync call calls".
    from nsysdiff.render.steps import call_time_phrase

    fp = fpspec.fingerprint({"gemm_a": (10, 1_000_000)})

    def side(sync_ns: int, alloc_ns: int) -> object:
        calls = {"sync": (1, sync_ns), "alloc": (2, alloc_ns), "launch": (3, 5_000)}
        return dataclasses.replace(fp, steps=fpspec.steps(8, 10_000_000, 9_800_000, calls=calls))

    d = compare(side(10_000, 4_000), side(30_000, 12_000))  # type: ignore[arg-type]
    assert d.steps is not None
    assert call_time_phrase(d.steps) == (
        "sync calls 10.00 us → 30.00 us each (3.00x), alloc/free calls 4.00 us → 12.00 us each (3.00x)"
    )
