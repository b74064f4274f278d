"""Saved fingerprints are untrusted: every hand-made or hostile one exits 2 naming the JSON path."""

from __future__ import annotations

import dataclasses
import json
import typing
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from conftest import needs_traces, real_traces, run_cli

from nsysdiff import api
from nsysdiff.api import fingerprint_trace
from nsysdiff.errors import ExitCode, FingerprintError
from nsysdiff.fingerprint import model, steps
from nsysdiff.fingerprint.model import Fingerprint, fingerprint_from_json, fingerprint_to_json
from nsysdiff.fingerprint.validation import schema_path
from nsysdiff.synth.builder import Gpu, TraceBuilder
from nsysdiff.trace import inputs, records

Doc = dict[str, Any]


@pytest.fixture(scope="module")
def good(tmp_path_factory: pytest.TempPathFactory) -> str:
    b = TraceBuilder(gpus=(Gpu(0), Gpu(1)))
    for i in range(30):
        b.kernel("gemm", 10_000 * i, 2_000 + 10 * i, device=i % 2)
        b.kernel("relu", 10_000 * i + 5_000, 300)
    b.memcpy("HtoD", 400_000, 500, 4096)
    b.nvtx_range("step", 0, 300_000)
    return fingerprint_to_json(fingerprint_trace(b.write(tmp_path_factory.mktemp("fp") / "t.sqlite")))


def _fails(text: str, *parts: str) -> str:
    with pytest.raises(FingerprintError) as info:
        fingerprint_from_json(text, "x.json")
    message = str(info.value)
    assert "\n" not in message and message.startswith("x.json: ")
    for part in parts:
        assert part in message, message
    return message


def _edit(good: str, change: Callable[[Doc], None]) -> str:
    doc = json.loads(good)
    change(doc)
    return json.dumps(doc)


def _set(path: str, value: object) -> Callable[[Doc], None]:
    """Set ``doc[a][b]...`` for a path like ``kernels.0.calls``."""

    def change(doc: Doc) -> None:
        *parents, last = (int(p) if p.isdigit() else p for p in path.split("."))
        node: Any = doc
        for p in parents:
            node = node[p]
        node[last] = value

    return change


CASES: dict[str, tuple[Callable[[Doc], None], tuple[str, ...]]] = {
    "negative total_ns": (_set("kernels.0.total_ns", -19_000), ("$.kernels[0].total_ns", "minimum")),
    "negative calls": (_set("kernels.1.calls", -1), ("$.kernels[1].calls",)),
    "zero calls": (_set("kernels.0.calls", 0), ("$.kernels[0].calls",)),
    "string ns": (_set("devices.0.busy_ns", "12"), ("$.devices[0].busy_ns", "not of type")),
    "bool calls": (
        _set("sync", [{"name": "cudaDeviceSynchronize", "calls": True, "total_ns": 5}]),
        ("$.sync[0].calls",),
    ),
    "past int64": (_set("memcpy.0.bytes", 1 << 63), ("$.memcpy[0].bytes", "maximum")),
    "short quantiles": (_set("kernels.0.quantiles_ns", [1.0, 2.0]), ("$.kernels[0].quantiles_ns",)),
    "unknown graph mode": (_set("meta.graph_mode", "sometimes"), ("$.meta.graph_mode",)),
    "no devices": (_set("kernels.0.devices", []), ("$.kernels[0].devices",)),
    "duplicate kernel": (
        lambda d: d["kernels"].append(dict(d["kernels"][0])),
        ("$.kernels[2]: duplicate of $.kernels[0]",),
    ),
    "all calls zero": (
        lambda d: [k.update(calls=0) for k in d["kernels"]],
        (".calls: 0 is less than the minimum of 1",),
    ),
    "device calls don't add up": (_set("kernels.0.devices.0.calls", 1), ("$.kernels[0].devices", "calls")),
    "config calls don't add up": (_set("kernels.0.configs.0.calls", 10**6), ("$.kernels[0].configs", "calls")),
    "negative config calls": (_set("kernels.0.configs.0.calls", -1), ("$.kernels[0].configs[0].calls",)),
    "quantiles out of order": (
        lambda d: d["kernels"][0]["quantiles_ns"].reverse(),
        ("$.kernels[0].quantiles_ns", "increasing"),
    ),
    "capture ends first": (_set("meta.capture_start_ns", 10**15), ("$.meta.capture_end_ns",)),
    "duplicate device": (lambda d: d["devices"].append(dict(d["devices"][0])), ("$.devices[2]: duplicate",)),
    "busy past span": (_set("devices.0.busy_ns", 10**15), ("$.devices[0].busy_ns",)),
    "duplicate nvtx": (lambda d: d["nvtx"].append(dict(d["nvtx"][0])), ("$.nvtx[1]: duplicate",)),
    "bad phase body": (
        lambda d: d.update(phases=[{"name": "p", "ranges": 1, "fingerprint": {**d, "kernels": 3}}]),
        ("$.phases[0].fingerprint.kernels",),
    ),
}


@pytest.mark.parametrize("case", CASES, ids=list(CASES))
def test_hostile_values(good: str, case: str) -> None:
    change, parts = CASES[case]
    _fails(_edit(good, change), *parts)


def test_duplicate_kernels_in_a_phase(good: str) -> None:
    def change(d: Doc) -> None:
        body = {k: v for k, v in d.items() if k not in ("format", "version")}
        body["kernels"] = [body["kernels"][0], body["kernels"][0]]
        d["phases"] = [{"name": "p", "ranges": 1, "fingerprint": body}]

    _fails(_edit(good, change), "$.phases[0].fingerprint.kernels[1]: duplicate")


def test_integer_of_5000_digits(good: str) -> None:
    doc = json.loads(good)
    doc["kernels"][0]["total_ns"] = "@@"
    _fails(json.dumps(doc).replace('"@@"', "9" * 5001), "$.kernels[0].total_ns", "5001 digits")


@pytest.mark.parametrize("constant", ["NaN", "Infinity", "-Infinity"])
def test_non_finite_numbers(good: str, constant: str) -> None:
    doc = json.loads(good)
    doc["kernels"][0]["quantiles_ns"][3] = "@@"
    _fails(json.dumps(doc).replace('"@@"', constant), "$.kernels[0].quantiles_ns[3]", constant)


def test_deep_nesting() -> None:
    _fails("[" * 100_000 + "]" * 100_000, "nested too deeply")


def test_deep_nesting_inside_a_fingerprint(good: str) -> None:
    text = good.replace('"scope": {', '"extra": ' + "[" * 100_000 + "]" * 100_000 + ', "scope": {', 1)
    _fails(text, "nested too deeply")


def test_unknown_keys_are_ignored(good: str) -> None:
    # Later format versions may add fields; version 1 readers skip them.
    fp = fingerprint_from_json(_edit(good, _set("meta.future_field", {"x": [1, 2]})), "x.json")
    assert fp == fingerprint_from_json(good, "x.json")


def test_cli_exit_2_one_line(tmp_path: Path, good: str) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text(_edit(good, _set("kernels.0.total_ns", -5)), encoding="utf-8")
    ok = tmp_path / "ok.json"
    ok.write_text(good, encoding="utf-8")
    result = run_cli("diff", str(ok), str(bad))
    assert result.exit_code == int(ExitCode.BAD_INPUT)
    assert result.stderr.count("\n") == 1
    assert "bad.json: malformed fingerprint at $.kernels[0].total_ns" in result.stderr


def test_oversized_file_is_refused_before_reading(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(inputs, "FINGERPRINT_MAX_BYTES", 1000)
    path = tmp_path / "big.json"
    path.write_text(" " * 1001, encoding="utf-8")
    with pytest.raises(FingerprintError, match="larger than a fingerprint can be"):
        api.load(path)


# --- the schema itself ------------------------------------------------------------------------


def _schema() -> Doc:
    return typing.cast(Doc, json.loads(Path(schema_path()).read_text(encoding="utf-8")))


SCHEMA_DEFS: dict[str, type] = {
    "body": Fingerprint,
    "meta": model.TraceMeta,
    "gpu": records.GpuInfo,
    "config": records.LaunchConfig,
    "device_share": model.DeviceShare,
    "kernel": model.KernelStats,
    "group": model.GroupStats,
    "copy": records.CopyStats,
    "api": records.ApiStats,
    "range": model.RangeStats,
    "device": model.DeviceStats,
    "scope": model.Scope,
    "phase": model.Phase,
    "steps": steps.Steps,
    "step": steps.Step,
    "step_parts": steps.StepParts,
    "host_calls": steps.HostCalls,
    "call_times": records.CallTimes,
}


@pytest.mark.parametrize("name", SCHEMA_DEFS)
def test_schema_matches_the_model(name: str) -> None:
    """Every field of the data model is in the schema, required exactly when it has no default."""
    cls = SCHEMA_DEFS[name]
    fields = dataclasses.fields(cls)  # type: ignore[arg-type]
    definition = _schema()["$defs"][name]
    assert set(definition["properties"]) == {f.name for f in fields}
    required = {f.name for f in fields if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING}
    assert set(definition["required"]) == required


@pytest.mark.parametrize("name", ["host_calls", "call_times"])
def test_schema_names_every_host_family(name: str) -> None:
    """The schema lists the host families of the model, in their order."""
    assert _schema()["$defs"][name]["properties"]["family"]["enum"] == [f.value for f in records.HostFamily]


def test_schema_is_documented() -> None:
    doc = (Path(__file__).resolve().parents[2] / "docs" / "json.md").read_text(encoding="utf-8")
    assert "schemas/fingerprint.schema.json" in doc
    for rule in ("unique", "add up", "NaN", "4300"):
        assert rule in doc


@needs_traces
@pytest.mark.parametrize("trace", real_traces(), ids=lambda p: p.name)
def test_real_fingerprints_validate(trace: Path) -> None:
    fp = fingerprint_trace(trace)
    assert fingerprint_from_json(fingerprint_to_json(fp), trace.name) == fp


# --- steps (format version 2) --------------------------------------------------------------------


def _two_steps() -> steps.Steps:
    """Two steps by hand: 10 us and 12 us periods, each part accounted for."""
    launch = records.HostFamily.LAUNCH
    d2h = records.HostFamily.COPY_D2H
    first = steps.Step(
        0,
        8_000,
        10_000,
        steps.StepParts(3_000, 0, 500, 1_500, 2_000, 1_000, 2_000),
        (steps.HostCalls(launch, 3, 1_800), steps.HostCalls(d2h, 1, 2_100, 4)),
        3_000,
    )
    last = steps.Step(
        10_000,
        12_000,
        12_000,
        steps.StepParts(4_000, 0, 0, 2_000, 0, 6_000, 0),
        (steps.HostCalls(launch, 2, 1_200),),
        4_000,
    )
    times = (
        records.CallTimes(launch, 5, 3_000, 0, 600, 700, 700, 700),
        records.CallTimes(d2h, 1, 2_100, 4, 2_100, 2_100, 2_100, 2_100),
    )
    return steps.Steps("decode_step", "", (first, last), times)


@pytest.fixture(scope="module")
def with_steps(good: str) -> str:
    fp = dataclasses.replace(fingerprint_from_json(good, "x.json"), steps=_two_steps())
    return fingerprint_to_json(fp)


def test_steps_round_trip(with_steps: str) -> None:
    doc = json.loads(with_steps)
    assert doc["version"] == 2
    assert fingerprint_from_json(with_steps, "x.json").steps == _two_steps()


def test_version_1_reads_without_steps(good: str) -> None:
    doc = json.loads(good)
    doc["version"] = 1
    del doc["steps"]
    fp = fingerprint_from_json(json.dumps(doc), "old.json")
    assert fp.steps is None and fp == fingerprint_from_json(good, "x.json")
    doc["steps"] = json.loads(fingerprint_to_json(dataclasses.replace(fp, steps=_two_steps())))["steps"]
    _fails(json.dumps(doc), "$.steps: version 1 has no steps")


STEP_CASES: dict[str, tuple[Callable[[Doc], None], tuple[str, ...]]] = {
    "parts short": (_set("steps.steps.0.parts.host_ns", 999), ("$.steps.steps[0].parts: don't add up",)),
    "negative part": (_set("steps.steps.0.parts.host_ns", -1), ("$.steps.steps[0].parts.host_ns", "minimum")),
    "period off the next start": (
        _set("steps.steps.1.start_ns", 10_001),
        ("$.steps.steps[0].period_ns: not the time to the next step's start",),
    ),
    "first step late": (_set("steps.steps.0.start_ns", 5), ("$.steps.steps[0].start_ns",)),
    "last period": (_set("steps.steps.1.period_ns", 13_000), ("$.steps.steps[1].",)),
    "between": (
        lambda d: d["steps"]["steps"][0]["parts"].update(between_ns=1_000, host_ns=2_000),
        ("$.steps.steps[0].parts.between_ns",),
    ),
    "no steps": (_set("steps.steps", []), ("$.steps.steps",)),
    "unknown family": (_set("steps.steps.0.calls.0.family", "python"), ("$.steps.steps[0].calls[0].family",)),
    "duplicate family": (
        lambda d: d["steps"]["steps"][0]["calls"].append(dict(d["steps"]["steps"][0]["calls"][0])),
        ("$.steps.steps[0].calls[2]: duplicate",),
    ),
    "bytes on launches": (_set("steps.steps.0.calls.0.bytes", 8), ("$.steps.steps[0].calls[0].bytes",)),
    "call times don't add up": (_set("steps.call_times.0.calls", 6), ("$.steps.call_times[0]: calls",)),
    "tail out of order": (_set("steps.call_times.0.p50_ns", 800), ("$.steps.call_times[0]: p50",)),
    "family without times": (
        lambda d: d["steps"]["call_times"].pop(),
        ("$.steps.call_times: no row for copy_d2h",),
    ),
}


@pytest.mark.parametrize("case", STEP_CASES, ids=list(STEP_CASES))
def test_hostile_steps(with_steps: str, case: str) -> None:
    change, parts = STEP_CASES[case]
    _fails(_edit(with_steps, change), *parts)


@pytest.mark.parametrize("constant", ["NaN", "Infinity", "-Infinity"])
def test_non_finite_numbers_under_unknown_keys(good: str, constant: str, tmp_path: Path) -> None:
    """No key is exempt: the schema lets unknown keys through, the parser doesn't."""
    text = good.replace('"scope": {', f'"extra": {{"deep": [1, {constant}]}}, "scope": {{', 1)
    _fails(text, "$.extra.deep[1]", constant)
    saved = tmp_path / "fp.json"
    saved.write_text(text)
    with pytest.raises(FingerprintError, match=r"\$\.extra\.deep\[1\]"):
        api.load(saved)
