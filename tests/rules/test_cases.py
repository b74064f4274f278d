"""Rule cases as YAML: fingerprint spec on both sides + rules snippet + expected findings.

Every file in ``cases/`` holds ``cases:``, a list of::

    name: what the case shows
    base: {kernels: [...], memcpy: [...], memset: {...}, sync: [...], nvtx: [...], scope: {...}}
    candidate: {...}            # same shape
    noise: [{...}, ...]         # optional: A/A runs (same shape), saved as the noise profile
    rules: [...]                # the `rules:` list of a rule file
    waivers: [...]              # optional, the `waivers:` list
    today: 2025-06-01           # optional, for waiver expiry
    expect:                     # every finding, in any order
      - {rule: ID, subject: S, level: error, waived: false, kind: budget, observed: "1.50x",
         inconclusive: false}
    remarks:                    # optional: a rule that judged nothing, or found its subject
      - {rule: ID, remark: within noise, reason_has: "..."}   # within its noise

Kernels: ``{name, calls, total, demangled, family, category, grid, block, median,
quantiles}``, times with
units (``median``: the median call, below the mean for a collective that waited).
Tails: ``tails: [{name, shape, calls, total, p50, beyond: [1.5x, 2x, 4x, 10x]}]``, the exact
tail counts of a kernel's launch shape (``shape`` defaults to grid 1, block 128).
"""

from __future__ import annotations

import dataclasses
from datetime import date
from pathlib import Path
from typing import Any

import fpspec
import pytest
import yaml

from nsysdiff.compare.diff import compare
from nsysdiff.fingerprint import noise, runset
from nsysdiff.fingerprint.model import DeviceStats, Fingerprint, KernelStats, RangeStats, Scope, TraceMeta
from nsysdiff.fingerprint.reduce import group_by
from nsysdiff.rules import evaluate, kinds, load_rules
from nsysdiff.rules.units import parse_time
from nsysdiff.trace.records import ApiStats, CopyStats, GpuInfo, ShapeTail

CASES = Path(__file__).parent / "cases"


def _ns(v: Any) -> int:
    return int(parse_time(v))


def _kernel(spec: dict[str, Any]) -> KernelStats:
    k = _uniform_kernel(spec)
    if "median" in spec:
        # Calls skewed to the right (a collective that waited): the median below the mean.
        k = dataclasses.replace(k, quantiles_ns=fpspec.skewed_quantiles(_ns(spec["median"]), k.total_ns / k.calls))
    if "quantiles" in spec:
        # The per-call sketch as given: a tail the uniform calls can't have.
        k = dataclasses.replace(k, quantiles_ns=tuple(float(_ns(q)) for q in spec["quantiles"]))
    return k


def _uniform_kernel(spec: dict[str, Any]) -> KernelStats:
    name = spec["name"]
    return fpspec.kernel(
        name,
        int(spec["calls"]),
        _ns(spec["total"]),
        demangled=spec.get("demangled"),
        family_key=spec.get("family"),
        category=spec.get("category"),
        grid=tuple(spec.get("grid", (1, 1, 1))),  # type: ignore[arg-type]
        block=tuple(spec.get("block", (128, 1, 1))),  # type: ignore[arg-type]
        spread=float(spec.get("spread", 0.2)),
    )


def fingerprint(spec: dict[str, Any]) -> Fingerprint:
    ks = tuple(_kernel(k) for k in spec.get("kernels", ()))
    total = sum(k.total_ns for k in ks)
    scope = spec.get("scope", {})
    memset = spec.get("memset")
    return Fingerprint(
        meta=TraceMeta(
            source="spec.sqlite",
            nsys_version="2024.6.2.25",
            schema_version="3.16.1",
            gpus=(GpuInfo(0, "NVIDIA H200", 132),),
            capture_start_ns=0,
            capture_end_ns=2 * total,
            has_kernels=bool(ks),
        ),
        kernels=ks,
        categories=group_by(ks, "category"),
        memcpy=tuple(
            CopyStats(m["kind"], int(m["ops"]), int(m["bytes"]), _ns(m["total"]))
            for m in sorted(spec.get("memcpy", ()), key=lambda m: m["kind"])
        ),
        memset=(CopyStats("memset", int(memset["ops"]), int(memset["bytes"]), _ns(memset["total"])),) if memset else (),
        sync=tuple(ApiStats(s["name"], int(s["calls"]), _ns(s["total"])) for s in spec.get("sync", ())),
        nvtx=tuple(
            RangeStats(r["name"], r.get("domain", ""), int(r["count"]), _ns(r["total"])) for r in spec.get("nvtx", ())
        ),
        devices=(DeviceStats(0, sum(k.calls for k in ks), total, total, 2 * total),) if ks else (),
        scope=Scope(per=scope.get("per"), steps=scope.get("steps")),
        steps=_steps(spec["steps"]) if "steps" in spec else None,
        tails=tuple(
            ShapeTail(
                t["name"],
                t.get("shape", "1,1,1,128,1,1"),
                int(t["calls"]),
                _ns(t["total"]),
                _ns(t["p50"]),
                tuple(int(c) for c in t["beyond"]),
            )
            for t in spec["tails"]
        )
        if "tails" in spec
        else None,
    )


def _steps(spec: dict[str, Any]) -> Any:
    """``steps: {count, period, duration, parts: {part: time}, calls: {family: [calls, time]},
    bytes: {family: size}, slow_every, slow, sync: [{name, calls, total}]}``: see
    :func:`fpspec.steps`; ``sync``, the sync calls of the steps' periods by name."""
    made = fpspec.steps(
        int(spec.get("count", 8)),
        _ns(spec["period"]),
        _ns(spec.get("duration", spec["period"])),
        parts={k: _ns(v) for k, v in spec.get("parts", {}).items()},
        calls={k: (int(v[0]), _ns(v[1])) for k, v in spec.get("calls", {}).items()},
        nbytes={k: int(v) for k, v in spec.get("bytes", {}).items()},
        slow_every=int(spec.get("slow_every", 0)),
        slow_ns=_ns(spec.get("slow", 0)),
    )
    if "sync" not in spec:
        return made
    sync = tuple(ApiStats(a["name"], int(a["calls"]), _ns(a["total"])) for a in spec["sync"])
    return dataclasses.replace(made, sync=sync)


def _cases() -> list[Any]:
    out = []
    for path in sorted(CASES.glob("*.yaml")):
        doc = yaml.safe_load(path.read_text(encoding="utf-8"))
        for case in doc["cases"]:
            out.append(pytest.param(case, id=f"{path.stem}: {case['name']}"))
    return out


def _key(f: dict[str, Any]) -> tuple[str, str, str, bool]:
    return (f["rule"], f["subject"], f.get("level", "error"), bool(f.get("waived", False)))


@pytest.mark.parametrize("case", _cases())
def test_rule_case(case: dict[str, Any], tmp_path: Path) -> None:
    rule_file = tmp_path / "case.yaml"
    doc: dict[str, Any] = {"version": 1, "rules": case["rules"]}
    if "waivers" in case:
        doc["waivers"] = case["waivers"]
    if "noise" in case:
        # A/A runs of the base build, saved as a profile beside the rule file that names it.
        runs = [fingerprint(spec) for spec in case["noise"]]
        profile = noise.measure(runset.run_set(runs, [f"aa{i}.sqlite" for i in range(len(runs))]))
        (tmp_path / "noise.json").write_text(noise.profile_to_json(profile), encoding="utf-8")
        doc["noise_profile"] = "noise.json"
    rule_file.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
    ruleset = load_rules([str(rule_file)])
    diff = compare(fingerprint(case["base"]), fingerprint(case["candidate"]))
    today = case.get("today", date(2025, 6, 1))
    findings, results = evaluate(diff, ruleset, today=today)
    got = sorted((f.rule_id, f.subject, f.level.value, f.waived) for f in findings)
    want = sorted(_key(f) for f in case.get("expect", ()))
    assert got == want, "\n".join(f"{f.rule_id} {f.subject}: {f.observed} / {f.limit} / {f.evidence}" for f in findings)
    assert [r.rule_id for r in results] == [r.id for r in ruleset.rules]
    for exp in case.get("expect", ()):
        match = [f for f in findings if (f.rule_id, f.subject, f.level.value, f.waived) == _key(exp)]
        for field in ("kind", "observed", "limit", "waiver_reason", "inconclusive"):
            if field in exp:
                assert any(getattr(f, field) == exp[field] for f in match), (
                    field,
                    [getattr(f, field) for f in match],
                )
        if "statistical" in exp:
            assert all(f.statistical is exp["statistical"] for f in match)
        if "evidence_has" in exp:
            assert any(exp["evidence_has"] in f.evidence for f in match), [f.evidence for f in match]
        if "message_has" in exp:
            assert any(exp["message_has"] in f.message for f in match), [f.message for f in match]
    remarks = {r.rule_id: r for r in results}
    for want_remark in case.get("remarks", ()):
        r = remarks[want_remark["rule"]]
        assert r.remark == want_remark["remark"], (r.remark, r.remark_reason)
        assert want_remark.get("reason_has", "") in r.remark_reason, r.remark_reason


def test_every_kind_has_pass_and_fail_cases() -> None:
    seen: dict[str, set[bool]] = {}
    for param in _cases():
        case = param.values[0]
        for rule in case["rules"]:
            seen.setdefault(rule["kind"], set()).add(bool(case.get("expect")))
        if "noise" in case:
            seen.setdefault("noise_profile", set()).add(bool(case.get("expect")))
        if "waivers" in case:
            seen.setdefault("waivers", set()).add(any(e.get("waived") for e in case.get("expect", ())))
    for name in [*kinds.KINDS, *kinds.SECTIONS]:
        assert seen.get(name) == {True, False}, f"{name} needs a passing and a failing case"
