"""Collectives judged on their transfer part: waiting for other ranks is no regression."""

from __future__ import annotations

import dataclasses
import json
from datetime import date

from conftest import real_trace
from fpspec import fingerprint, kernel, skewed_quantiles

from nsysdiff import api
from nsysdiff.compare.diff import compare
from nsysdiff.fingerprint.model import KernelStats
from nsysdiff.render import json_report
from nsysdiff.rules import evaluate, load_rules
from nsysdiff.rules.report import Level, Outcome

MS = 1_000_000
REST = [kernel(f"op{i}_kernel", 100, (10 + i) * MS) for i in range(12)]


def _collective(total_ns: int, median_ns: float, calls: int = 60) -> KernelStats:
    k = kernel("ncclDevKernel_SendRecv", calls, total_ns)
    return dataclasses.replace(k, quantiles_ns=skewed_quantiles(median_ns, total_ns / calls))


def test_a_collective_that_grew_by_waiting_is_no_outlier() -> None:
    # Transfer 10.8 ms -> 11.4 ms (1.06x), waiting 13.2 ms -> 28.6 ms: 1.67x in total.
    base = fingerprint([*REST, _collective(24 * MS, 180_000)])
    d = compare(base, fingerprint([*REST, _collective(40 * MS, 190_000)]))
    row = next(r for r in d.kernels if r.name == "ncclDevKernel_SendRecv")
    assert row.ratio is not None and round(row.ratio, 2) == 1.67
    assert row.base is not None and row.candidate is not None
    assert (row.base.transfer_ns, row.candidate.transfer_ns) == (10_800_000, 11_400_000)
    assert row.deviation is not None and round(row.deviation, 3) == round(11.4 / 10.8, 3)
    assert not row.is_outlier
    cat = next(r for r in d.categories if r.key == "nccl")
    assert cat.base is not None and cat.base.transfer_ns == 10_800_000 and not cat.is_outlier


def test_a_collective_whose_transfers_got_slower_is_an_outlier() -> None:
    base = fingerprint([*REST, _collective(24 * MS, 180_000)])
    d = compare(base, fingerprint([*REST, _collective(40 * MS, 400_000)]))
    assert [r.name for r in d.outliers] == ["ncclDevKernel_SendRecv"]


def test_nccl_waiting_on_a_faster_job_passes_the_default_pack_with_a_warning() -> None:
    # The 2-GPU job got faster (0.91x); SendRecv grew 1.33x, but its median call 1.14x:
    # rank 0's NCCL time went 17.17 -> 9.99 ms and rank 1's 8.23 -> 23.75 ms.
    b = api.load(real_trace("nsysai_mfu_h100x2_before"))
    c = api.load(real_trace("nsysai_mfu_h100x2_after"))
    diff = compare(b, c)
    findings, results = evaluate(diff, load_rules(["default"]), today=date(2026, 1, 1))
    report = api.judge(diff, findings, results)
    assert report.outcome is Outcome.PASS
    assert not [f for f in findings if f.rule_id == "outlier"]
    (wait,) = [f for f in findings if f.rule_id == "collective-wait"]
    assert wait.level is Level.WARNING and wait.subject == "ncclDevKernel_SendRecv"
    assert wait.observed == "waiting +7.52 ms of +8.34 ms (90.14%)"
    assert "transfer (calls x median call) 11.10 ms -> 11.92 ms (1.07x)" in wait.evidence
    assert "collective time per rank #0 17.17 ms, #1 8.23 ms -> #0 9.99 ms, #1 23.75 ms" in wait.evidence


def test_the_json_report_carries_the_transfer_part_of_collectives_only() -> None:
    base = fingerprint([*REST, _collective(24 * MS, 180_000)])
    d = compare(base, fingerprint([*REST, _collective(40 * MS, 190_000)]))
    doc = json.loads(json_report.render(api.judge(d, [], [])))
    rows = {k["name"]: k for k in doc["kernels"]}
    assert rows["ncclDevKernel_SendRecv"]["base"]["transfer_ns"] == 10_800_000
    assert rows["ncclDevKernel_SendRecv"]["candidate"]["waiting_ns"] == 28_600_000
    assert "transfer_ns" not in rows["op0_kernel"]["base"]
