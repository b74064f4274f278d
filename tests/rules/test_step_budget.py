"""Rule kind ``step`` across several runs per side, and its option checks."""

from __future__ import annotations

import dataclasses
from datetime import date
from pathlib import Path

import fpspec
import pytest
import stepspec

from nsysdiff import api
from nsysdiff.compare.rundiff import compare_sides
from nsysdiff.errors import RuleError
from nsysdiff.fingerprint import runset
from nsysdiff.fingerprint.model import Fingerprint
from nsysdiff.fingerprint.scope import ScopeOptions
from nsysdiff.fingerprint.steps import COUNTED_BEFORE_MEMSETS
from nsysdiff.rules import evaluate, load_rules
from nsysdiff.rules.report import Finding, RuleResult
from nsysdiff.trace.records import HostFamily

RULE = "version: 1\nrules:\n  - {id: step-time, kind: step, metric: period, max_ratio: 1.05x, noise: 1.6x}\n"


def _run(period_ns: int) -> Fingerprint:
    fp = fpspec.fingerprint({"gemm_a": (10, 1_000_000)})
    return dataclasses.replace(fp, steps=fpspec.steps(8, period_ns, period_ns - 100_000))


def _evaluate(
    base: list[int], cand: list[int], tmp_path: Path, rule: str = RULE
) -> tuple[list[Finding], list[RuleResult]]:
    b = runset.run_set([_run(p) for p in base], [f"b{i}" for i in range(len(base))])
    c = runset.run_set([_run(p) for p in cand], [f"c{i}" for i in range(len(cand))])
    path = tmp_path / "r.yaml"
    path.write_text(rule, encoding="utf-8")
    findings, results = evaluate(compare_sides(b, c), load_rules([str(path)]), today=date(2026, 1, 1))
    return list(findings), list(results)


def _judge(base: list[int], cand: list[int], tmp_path: Path) -> list[Finding]:
    return _evaluate(base, cand, tmp_path)[0]


def test_runs_whose_interval_clears_the_limit_fail(tmp_path: Path) -> None:
    # +30%: within the assumed noise of one run, but three runs a side pin it down.
    found = _judge([10_000_000, 10_200_000, 9_900_000], [13_000_000, 13_100_000, 12_900_000], tmp_path)
    assert [(f.rule_id, f.inconclusive) for f in found] == [("step-time", False)]
    assert "over runs 1.30x [" in found[0].evidence


def test_runs_whose_interval_reaches_under_the_limit_are_within_noise(tmp_path: Path) -> None:
    # Wall time within the noise of the runs is no detectable change: not a finding, not
    # an inconclusive exit, but the rule says so.
    found, results = _evaluate([10_000_000, 13_000_000, 8_000_000], [11_500_000, 9_000_000, 14_000_000], tmp_path)
    assert found == []
    assert [(r.rule_id, r.remark) for r in results] == [("step-time", "within noise")]


def test_a_value_over_its_limit_on_both_sides_is_said_so_within_the_noise(tmp_path: Path) -> None:
    # The base is already over the value limit: the candidate's move within one run's noise
    # is no finding, and the remark says the limit was breached on both sides, not met.
    rule = "version: 1\nrules:\n  - {id: step-time, kind: step, metric: period, max_value: 5ms, noise: 1.6x}\n"
    found, results = _evaluate([10_000_000], [10_500_000], tmp_path, rule)
    assert found == []
    [r] = results
    assert r.remark == "within noise"
    assert "period mean 9.99 ms -> 10.49 ms, over max_value 5.00 ms on both sides: one run per side" in r.remark_reason


def test_runs_within_the_limit_pass(tmp_path: Path) -> None:
    assert _judge([10_000_000, 10_100_000], [10_050_000, 10_150_000], tmp_path) == []


@pytest.mark.parametrize(
    ("rule", "words"),
    [
        ("{id: x, kind: step, metric: calls, max_increase: 0}", "needs a host family"),
        ("{id: x, kind: step, metric: period, family: sync, max_ratio: 1.1x}", "a family goes with"),
        ("{id: x, kind: step, metric: calls, family: bogus, max_increase: 0}", "bogus"),
        ("{id: x, kind: step, metric: between, stat: p99, max_increase: 1ms}", "a statistic across steps"),
        ("{id: x, kind: step, metric: period}", "needs a limit"),
        ("{id: x, kind: step, metric: calls, family: sync, max_increase: 1ms}", "max_increase"),
    ],
)
def test_bad_step_rules_are_one_line_errors(rule: str, words: str, tmp_path: Path) -> None:
    path = tmp_path / "r.yaml"
    path.write_text(f"version: 1\nrules:\n  - {rule}\n", encoding="utf-8")
    with pytest.raises(RuleError) as e:
        load_rules([str(path)])
    assert words in str(e.value) and "\n" not in str(e.value)
    assert str(path) in str(e.value)


def test_memsets_are_not_judged_against_a_fingerprint_that_did_not_count_them(tmp_path: Path) -> None:
    # A base saved before memset calls were counted: the candidate's memset per step is
    # no "+1 per step" (the base's are unknown), and the rule says why it judged nothing.
    one = api.load(stepspec.zeroed(tmp_path / "a.sqlite", 1), ScopeOptions(per="decode_step"))
    assert one.steps is not None
    old = dataclasses.replace(one, steps=dataclasses.replace(one.steps, counted=COUNTED_BEFORE_MEMSETS))
    new = api.load(stepspec.zeroed(tmp_path / "b.sqlite", 2), ScopeOptions(per="decode_step"))
    rule = "version: 1\nrules:\n  - {id: step-memsets, kind: step, metric: calls, family: memset, max_increase: 0.5}\n"
    path = tmp_path / "r.yaml"
    path.write_text(rule, encoding="utf-8")
    d = compare_sides(runset.run_set([old], ["old"]), runset.run_set([new], ["new"]))
    assert d.steps is not None and d.steps.family(HostFamily.MEMSET) is None
    findings, results = evaluate(d, load_rules([str(path)]), today=date(2026, 1, 1))
    assert list(findings) == []
    [r] = results
    assert r.remark == "not judged"
    assert r.remark_reason == "the base fingerprint was saved before memset calls were counted per step"
    # Both counted: the new memset per step fails.
    d = compare_sides(runset.run_set([one], ["one"]), runset.run_set([new], ["new"]))
    findings, _ = evaluate(d, load_rules([str(path)]), today=date(2026, 1, 1))
    assert [f.rule_id for f in findings] == ["step-memsets"]
    assert "+1 memset call per step" in findings[0].message, findings[0].message
