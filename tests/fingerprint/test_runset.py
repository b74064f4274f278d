"""Run sets: the runs of one side checked alike, saved as one file, and per-run values."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import fpspec
import pytest
from conftest import run_cli

from nsysdiff import api
from nsysdiff.compare import runstats
from nsysdiff.errors import FingerprintError, UsageError
from nsysdiff.fingerprint import runset
from nsysdiff.fingerprint.model import Fingerprint, Scope, fingerprint_to_json
from nsysdiff.fingerprint.runset import KeyKind, Measure
from nsysdiff.synth.builder import Gpu, TraceBuilder
from nsysdiff.trace.records import GraphMode


def _runs(totals: list[int], **meta: object) -> list[Fingerprint]:
    """Runs of one build: a GEMM whose total varies per run, a steady copy and an NVTX range."""
    return [
        fpspec.fingerprint(
            {"ampere_sgemm_128x64_nn": (10, t), "vectorized_elementwise_kernel": (20, 4000)},
            memcpy={"HtoD": (2, 1 << 20, 900)},
            nvtx={"step": (5, 2 * t)},
            source=f"run{i}.sqlite",
            **meta,
        )
        for i, t in enumerate(totals)
    ]


def _sources(n: int) -> list[str]:
    return [f"run{i}.sqlite" for i in range(n)]


def test_comparable_runs_make_a_run_set() -> None:
    runs = _runs([1000, 1010, 990])
    rs = runset.run_set(runs, _sources(3))
    assert rs.runs == tuple(runs)
    assert rs.sources == ("run0.sqlite", "run1.sqlite", "run2.sqlite")


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"gpu": "NVIDIA A100"}, "GPU model 'NVIDIA A100' differs from the other runs"),
        ({"scope": Scope(window=(0, 5))}, "scope 'window=(0, 5)"),
        ({"graph_mode": GraphMode.GRAPH}, "graph mode 'graph' differs"),
    ],
)
def test_the_odd_run_out_is_named(change: dict[str, object], message: str) -> None:
    runs = _runs([1000, 1010, 990])
    odd = runs[1]
    if "gpu" in change:
        odd = _runs([1010], gpu=change["gpu"])[0]
    elif "scope" in change:
        odd = dataclasses.replace(odd, scope=change["scope"])
    else:
        odd = dataclasses.replace(odd, meta=dataclasses.replace(odd.meta, graph_mode=change["graph_mode"]))
    runs[1] = odd
    with pytest.raises(UsageError, match=r"^run1\.sqlite: ") as e:
        runset.run_set(runs, _sources(3))
    assert message in str(e.value)
    assert "(run0.sqlite: " in str(e.value)


def test_with_two_runs_the_second_is_named_against_the_first() -> None:
    runs = [_runs([1000])[0], _runs([1000], gpu="NVIDIA A100")[0]]
    with pytest.raises(UsageError, match=r"^run1\.sqlite: GPU model 'NVIDIA A100'"):
        runset.run_set(runs, _sources(2))


def test_no_runs_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match="at least one run"):
        runset.run_set([], [])


def test_a_run_set_round_trips_through_json() -> None:
    rs = runset.run_set(_runs([1000, 1010, 990]), _sources(3))
    text = runset.run_set_to_json(rs)
    doc = json.loads(text)
    assert (doc["format"], doc["version"], len(doc["runs"])) == ("nsysdiff-run-set", 1, 3)
    # Each run is exactly the single-run fingerprint document.
    assert doc["runs"][2] == json.loads(fingerprint_to_json(rs.runs[2]))
    back = runset.run_set_from_json(text, "base.json")
    assert back.runs == rs.runs
    assert back.sources == ("base.json runs[0]", "base.json runs[1]", "base.json runs[2]")


def test_a_bad_run_inside_a_run_set_is_named_by_index() -> None:
    doc = json.loads(runset.run_set_to_json(runset.run_set(_runs([1000, 1010]), _sources(2))))
    doc["runs"][1]["kernels"][0]["calls"] = -1
    with pytest.raises(FingerprintError, match=r"^base.json runs\[1\]: malformed fingerprint at \$.kernels\[0\]"):
        runset.run_set_from_json(json.dumps(doc), "base.json")


def test_runs_of_a_saved_run_set_must_be_alike() -> None:
    runs = [_runs([1000])[0], _runs([1000], gpu="NVIDIA A100")[0]]
    doc = {"format": "nsysdiff-run-set", "version": 1, "runs": [json.loads(fingerprint_to_json(fp)) for fp in runs]}
    with pytest.raises(FingerprintError, match=r"^base.json runs\[1\]: GPU model"):
        runset.run_set_from_json(json.dumps(doc), "base.json")


@pytest.mark.parametrize(
    ("doc", "message"),
    [
        ({"format": "nsysdiff-fingerprint", "version": 1}, "not an nsysdiff run set"),
        ({"format": "nsysdiff-run-set", "version": 2, "runs": []}, "run-set format version 2 is not supported"),
        ({"format": "nsysdiff-run-set", "version": 1, "runs": []}, "non-empty list"),
        ({"format": "nsysdiff-run-set", "version": 1, "runs": {}}, "non-empty list"),
    ],
)
def test_a_malformed_run_set_is_one_line(doc: dict[str, object], message: str) -> None:
    with pytest.raises(FingerprintError, match=f"^base.json: .*{message}"):
        runset.run_set_from_json(json.dumps(doc), "base.json")


def test_per_run_values_per_kind_and_measure() -> None:
    rs = runset.run_set(_runs([1000, 1010, 990]), _sources(3))
    gemm = "ampere_sgemm_128x64_nn"
    assert runset.per_run_values(rs, KeyKind.KERNEL, Measure.TOTAL).values[gemm] == (1000.0, 1010.0, 990.0)
    assert runset.per_run_values(rs, KeyKind.KERNEL, Measure.CALLS).values[gemm] == (10.0, 10.0, 10.0)
    assert runset.per_run_values(rs, KeyKind.KERNEL, Measure.PER_CALL).values[gemm] == (100.0, 101.0, 99.0)
    families = runset.per_run_values(rs, KeyKind.FAMILY, Measure.TOTAL).values
    assert sum(v[0] for v in families.values()) == 5000.0
    categories = runset.per_run_values(rs, KeyKind.CATEGORY, Measure.TOTAL).values
    assert sum(v[1] for v in categories.values()) == 5010.0
    assert runset.per_run_values(rs, KeyKind.COPY, Measure.TOTAL).values == {"HtoD": (900.0, 900.0, 900.0)}
    assert runset.per_run_values(rs, KeyKind.NVTX, Measure.TOTAL).values == {"step": (2000.0, 2020.0, 1980.0)}


def test_a_key_missing_from_some_runs_is_partial_not_noise() -> None:
    runs = _runs([1000, 1010])
    extra = fpspec.fingerprint({"ampere_sgemm_128x64_nn": (10, 1000), "late_kernel": (1, 50)}, source="run0.sqlite")
    rs = runset.run_set([extra, dataclasses.replace(runs[1], memcpy=(), nvtx=())], _sources(2))
    got = runset.per_run_values(rs, KeyKind.KERNEL, Measure.TOTAL)
    assert got.partial == ("late_kernel", "vectorized_elementwise_kernel")
    assert list(got.values) == ["ampere_sgemm_128x64_nn"]


def test_run_sets_feed_the_run_statistics() -> None:
    base = runset.run_set(_runs([1000, 1008, 995, 1003, 998]), _sources(5))
    cand = runset.run_set(_runs([1052, 1047, 1060, 1049, 1055]), _sources(5))
    result = runstats.compare_runs(
        runset.per_run_values(base, KeyKind.KERNEL, Measure.PER_CALL).values,
        runset.per_run_values(cand, KeyKind.KERNEL, Measure.PER_CALL).values,
    )
    verdicts = {k.key: k.verdict for k in result.keys}
    assert verdicts == {
        "ampere_sgemm_128x64_nn": runstats.RunVerdict.CHANGED,
        # The same 4000 ns in every run: a point interval at 1, inside the band.
        "vectorized_elementwise_kernel": runstats.RunVerdict.NO_CHANGE,
    }


def _trace(path: Path, gemm_ns: int, gpu: str = "NVIDIA H200") -> str:
    b = TraceBuilder(gpus=(Gpu(name=gpu),))
    for i in range(4):
        b.kernel("ampere_sgemm_128x64_nn", 10_000 * i, gemm_ns)
    return str(b.write(path))


def test_fingerprint_run_set_writes_every_run_and_reads_back(tmp_path: Path) -> None:
    traces = [_trace(tmp_path / f"run{i}.sqlite", ns) for i, ns in enumerate([1000, 1010, 990])]
    out = tmp_path / "baseline.json"
    code, _, err = run_cli("fingerprint", "--run-set", *traces, "-o", str(out))
    assert (code, err) == (0, "")
    saved = runset.run_set_from_json(out.read_text(), str(out))
    assert [fp.kernel_ns for fp in saved.runs] == [4000, 4040, 3960]
    # A saved run set and a single fingerprint mix as inputs of one side.
    single = tmp_path / "one.json"
    more = [_trace(tmp_path / f"run{i}.sqlite", ns) for i, ns in ((3, 1020), (4, 980))]
    assert run_cli("fingerprint", more[0], "-o", str(single))[0] == 0
    both = api.load_runs([out, single, more[1]])
    assert len(both.runs) == 5
    assert both.sources[0] == f"{out} runs[0]" and both.sources[3:] == (str(single), more[1])
    # A run given twice (its trace and its own fingerprint) is refused: it would count twice.
    with pytest.raises(UsageError, match="the same capture as"):
        api.load_runs([out, traces[0]])


def test_fingerprint_run_set_names_the_odd_run_out(tmp_path: Path) -> None:
    traces = [_trace(tmp_path / "a.sqlite", 1000), _trace(tmp_path / "b.sqlite", 1000, gpu="NVIDIA A100-SXM4-80GB")]
    traces.append(_trace(tmp_path / "c.sqlite", 1005))  # a repeat, not a copy of a
    code, out, err = run_cli("fingerprint", "--run-set", *traces, "-o", str(tmp_path / "x.json"))
    assert (code, out) == (2, "")
    assert err.count("\n") == 1 and "b.sqlite: GPU model 'NVIDIA A100-SXM4-80GB' differs" in err
    assert not (tmp_path / "x.json").exists()


def test_fingerprint_of_several_traces_needs_run_set(tmp_path: Path) -> None:
    traces = [_trace(tmp_path / f"run{i}.sqlite", 1000) for i in range(2)]
    code, out, err = run_cli("fingerprint", *traces)
    assert (code, out) == (2, "")
    assert "2 traces given" in err and "--run-set" in err


def test_three_runs_against_three_with_intervals() -> None:
    base = runset.run_set(_runs([1000, 1010, 990]), _sources(3))
    slower = [
        fpspec.fingerprint(
            {"ampere_sgemm_128x64_nn": (10, t), "vectorized_elementwise_kernel": (20, 4000), "new_kernel": (1, 70)},
            source=f"c{i}.sqlite",
        )
        for i, t in enumerate([1060, 1065, 1055])
    ]
    cand = runset.run_set(slower, _sources(3))
    result, partial = api.compare_run_sets(base, cand)
    assert partial == ("new_kernel",)
    gemm, elementwise = result.keys
    assert gemm.verdict is runstats.RunVerdict.CHANGED
    assert runstats.format_ratio(gemm) == "1.06x [1.04, 1.08]"
    assert elementwise.verdict is runstats.RunVerdict.NO_CHANGE
    assert runstats.format_ratio(elementwise) == "1.00x [1.00, 1.00]"
    assert "runs: 3 base, 3 candidate" in result.method
    one = runstats.compare_runs({"k": [1.0]}, {"k": [1.5]})
    assert runstats.format_ratio(one.keys[0]) == "1.50x"


@pytest.mark.parametrize(
    ("runs", "message"),
    [
        ([1], r"malformed run set at \$\.runs\[0\]: 1 is not of type 'object'"),
        ([{"format": "nsysdiff-noise-profile", "version": 1}], r"malformed run set at \$\.runs\[0\]\.format: "),
        ([{"format": "nsysdiff-fingerprint"}], r"malformed run set at \$\.runs\[0\]: 'version' is a required property"),
    ],
)
def test_the_run_set_envelope_is_checked_by_its_schema(runs: list[object], message: str) -> None:
    doc = {"format": "nsysdiff-run-set", "version": 1, "runs": runs}
    with pytest.raises(FingerprintError, match=f"^base.json: {message}"):
        runset.run_set_from_json(json.dumps(doc), "base.json")


def test_the_run_set_schema_is_packaged_and_valid() -> None:
    from importlib import resources

    from jsonschema import Draft202012Validator

    schema = json.loads(resources.files("nsysdiff").joinpath("schemas/run-set.schema.json").read_text())
    Draft202012Validator.check_schema(schema)
    rs = runset.run_set(_runs([1000, 1010]), _sources(2))
    assert list(Draft202012Validator(schema).iter_errors(json.loads(runset.run_set_to_json(rs)))) == []


def test_one_capture_is_never_several_runs(tmp_path: Path) -> None:
    """The same file, a byte-identical copy or the capture's own fingerprint, given as
    another run of a side, would fake zero noise or point intervals: refused in one line."""
    a = _trace(tmp_path / "a.sqlite", 1000)
    b = _trace(tmp_path / "b.sqlite", 1010)
    copy = tmp_path / "copy.sqlite"
    copy.write_bytes(Path(a).read_bytes())
    saved = tmp_path / "a.json"
    assert run_cli("fingerprint", a, "-o", str(saved))[0] == 0
    cases = ((a, "the same file as"), (str(copy), "byte-identical copy"), (str(saved), "the same capture as"))
    for again, why in cases:
        for argv in (["noise", a, again, b], ["diff", "--base", a, again, "--candidate", b]):
            code, out, err = run_cli(*argv)
            assert (code, out) == (2, ""), (argv, err)
            assert why in err and err.count("\n") == 1, err


def test_one_file_given_many_times_is_refused_before_any_run_is_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from nsysdiff.api import reading

    a = _trace(tmp_path / "a.sqlite", 1000)
    b = _trace(tmp_path / "b.sqlite", 1010)
    read: list[object] = []
    real_load = reading.load
    monkeypatch.setattr(reading, "load", lambda *args, **kw: read.append(args) or real_load(*args, **kw))
    for argv in (["noise", *[a] * 2000], ["diff", "--base", b, *[a] * 2000, "--candidate", b, "--no-rules"]):
        read.clear()
        code, out, err = run_cli(*argv)
        assert (code, out) == (2, ""), (argv[:3], err)
        assert "the same file as" in err and err.count("\n") == 1, err
        assert [args for args in read if Path(str(args[0])) == a] == []  # type: ignore[index]


# --- repeats of one build ------------------------------------------------------------------


def test_runs_whose_exact_counts_differ_are_not_repeats() -> None:
    from conftest import real_trace

    from nsysdiff import api
    from nsysdiff.errors import UsageError
    from nsysdiff.fingerprint import runset

    bs16, r2, bs1 = (api.load(real_trace(f"h100/{n}")) for n in ("llm_bs16", "llm_bs16_r2", "llm_bs1"))
    runset.check_repeats([bs16, r2], ["bs16", "r2"])  # a real repeat: every count agrees
    with pytest.raises(UsageError, match=r"^bs1: not a repeat of bs16: calls of .* against .*--mixed-runs"):
        runset.check_repeats([bs16, bs1], ["bs16", "bs1"])


def test_a_planted_item_in_one_candidate_run_is_not_voted_away() -> None:
    from pathlib import Path

    from conftest import run_cli

    ci = Path(__file__).resolve().parents[2] / "examples" / "ci"
    argv = ["--base", ci / "main.json", ci / "main_r2.json", "--candidate", ci / "pr_item.json", ci / "pr.json"]
    code, out, err = run_cli(*argv, "--rules", "tpot")
    assert (code, out) == (2, "")
    assert "pr.json: not a repeat of" in err and "--mixed-runs" in err
    code, _, _ = run_cli(*argv, "--rules", "tpot", "--mixed-runs")
    assert code != 2


def test_a_candidate_that_is_also_a_base_run_is_refused(tmp_path: Path) -> None:
    """As one file twice on one side is: the base's interval would hold the candidate."""
    from fpspec import fingerprint, saved_pair

    from nsysdiff import api

    a, b = saved_pair(tmp_path, {"gemm": (10, 1_000_000)}, {"gemm": (10, 1_010_000)})
    c = tmp_path / "candidate.json"  # a copy of the base's second run (saved_pair's c.json)
    c.write_text(Path(b).read_text())
    with pytest.raises(UsageError, match=r"candidate.json: the same capture as the base run .*c.json"):
        api.diff([a, b], [c], None)
    with pytest.raises(UsageError, match="the same capture as the base run"):
        runset.check_apart(
            runset.RunSet((fingerprint({"k": (1, 5)}), fingerprint({"k": (1, 6)})), ("x", "y")),
            runset.RunSet((fingerprint({"k": (1, 6)}),), ("z",)),
        )
    # One run against itself is a self-diff: a sanity check, never refused.
    runset.check_apart(
        runset.RunSet((fingerprint({"k": (1, 6)}),), ("y",)), runset.RunSet((fingerprint({"k": (1, 6)}),), ("z",))
    )
    assert api.diff(a, a, None).exit_code == 0
