"""The HTML report's steps (the time per token) on a real H100 decode pair: the mean
period split into its parts base beside candidate, and every step's period in order."""

from __future__ import annotations

import dataclasses
import re
from datetime import date

import fpspec
from conftest import real_trace
from render.htmlcheck import svg_texts, svgs

from nsysdiff import api, units
from nsysdiff.compare.diff import compare
from nsysdiff.fingerprint.scope import ScopeOptions
from nsysdiff.render import Format, render
from nsysdiff.rules import evaluate, load_rules
from nsysdiff.rules.report import Report


def test_steps_are_drawn_base_beside_candidate() -> None:
    opts = ScopeOptions(per="decode_step")
    b = api.load(real_trace("h100/llm_bs1"), opts)
    c = api.load(real_trace("h100/llm_bs16"), opts)
    d = compare(b, c)
    findings, results = evaluate(d, load_rules(["tpot"]), today=date(2026, 1, 1))
    out = render(api.judge(d, findings, results, packs=("tpot",)), Format.html)
    assert d.steps is not None and b.steps is not None and c.steps is not None
    assert '<figure id="chart-steps"' in out and '<figure id="chart-series"' in out
    words = [" ".join(svg_texts(s)) for s in svgs(out)]
    parts = next(w for w in words if "mean time per step of decode_step" in w)
    # The bars end at each side's mean period, as the text report gives it.
    assert units.ns(d.steps.base.period.mean) in parts and units.ns(d.steps.candidate.period.mean) in parts
    assert "compute" in parts and "launch-bound" in parts and "other host time" in parts
    series = next(w for w in words if "step of decode_step" in w and "period (ms)" in w)
    assert f"base ({len(b.steps.steps)} steps)" in series and f"candidate ({len(c.steps.steps)} steps)" in series
    # One line per side, one point per step.
    svg = next(s for s in svgs(out) if "period (ms)" in " ".join(svg_texts(s)))
    assert svg.count("<use ") >= len(b.steps.steps) + len(c.steps.steps)
    assert "<h2>Steps of decode_step: 32 → 32</h2>" in out


def test_no_steps_no_step_charts() -> None:
    b, c = api.load(real_trace("h100/llm_bs1")), api.load(real_trace("h100/llm_bs16"))
    out = render(api.judge(compare(b, c), (), ()), Format.html)
    assert 'id="chart-steps"' not in out and 'id="chart-series"' not in out and "Steps of" not in out


HOSTILE = "evil%0A::error::pwned\n::warning title=x::\x1b[31mred\r<script>alert(1)</script>"


def _report(name: str = "decode_step") -> Report:
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
    return api.judge(compare(base, cand), [], [], judged=True, packs=(), notes=())


def test_steps_come_first_without_real_traces() -> None:
    out = render(_report(), Format.html)
    assert out.index("<h2>Steps of decode_step: 8 → 8</h2>") < out.index('<figure id="chart-steps"')
    assert "time per step 9.97 ms → 18.73 ms (1.88x): +8.75 ms between steps, kernels unchanged" in out
    words = " ".join(svg_texts(next(s for s in svgs(out) if "mean time per step" in " ".join(svg_texts(s)))))
    assert "9.97 ms" in words and "18.73 ms" in words and "between steps" in words
    assert "+1 sync call per step" in out


def test_a_hostile_step_name_stays_inert() -> None:
    out = render(_report(HOSTILE), Format.html)
    assert "\x1b" not in out and "\r" not in out and "<script>alert" not in out
    assert out.count("<script") == 1
    assert not [line for line in out.splitlines() if re.sub(r"\s", "", line).startswith("::")]
