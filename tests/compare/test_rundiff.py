"""Several runs per side in ``nsysdiff diff``: the command line, the median runs, the
statistics per key, the scale and the outliers with intervals."""

from __future__ import annotations

import dataclasses
import json
from datetime import date
from pathlib import Path

import fpspec
import numpy as np
import pytest
import runs
from conftest import run_cli

from nsysdiff import cli
from nsysdiff.compare import rundiff
from nsysdiff.compare.diff import compare
from nsysdiff.compare.runstats import RunVerdict
from nsysdiff.fingerprint import runset
from nsysdiff.fingerprint.model import Fingerprint, fingerprint_to_json

GEMM = "ampere_bf16_s16816gemm_bf16_128x128_ldg8_f2f_tn"


@pytest.fixture(scope="module")
def traces(tmp_path_factory: pytest.TempPathFactory) -> tuple[list[Path], list[Path]]:
    return runs.write_runs(tmp_path_factory.mktemp("runs"))


def _json(*argv: str | Path) -> dict:  # type: ignore[type-arg]
    code, out, err = run_cli(*argv, "--format", "json", "--no-rules")
    assert (code, err) == (0, "")
    doc: dict = json.loads(out)  # type: ignore[type-arg]
    return doc


# --- the command line --------------------------------------------------------------------


def test_base_and_candidate_take_every_path_up_to_the_next_option() -> None:
    argv = ["--base", "a", "b", "c", "--candidate", "x", "y", "--width", "80", "--details"]
    assert cli.route(argv) == [
        "diff",
        "--base",
        "a",
        "--base",
        "b",
        "--base",
        "c",
        "--candidate",
        "x",
        "--candidate",
        "y",
        "--width",
        "80",
        "--details",
    ]
    assert cli.route(["diff", "B", "--candidate", "x", "y"]) == ["diff", "B", "--candidate", "x", "--candidate", "y"]
    # After --, every word is a path as given; --base=PATH names one run.
    assert cli.route(["--base=a", "--candidate", "x", "--", "-odd"]) == [
        "diff",
        "--base=a",
        "--candidate",
        "x",
        "--",
        "-odd",
    ]


def test_three_runs_against_three_from_globs(traces: tuple[list[Path], list[Path]]) -> None:
    base, cand = traces
    doc = _json("--base", *base, "--candidate", *cand)
    r = doc["runs"]
    assert (r["base_runs"], r["candidate_runs"], r["intervals"]) == (3, 3, True)
    assert r["base_sources"] == [str(p) for p in base]
    keys = {(k["kind"], k["key"]): k for k in r["keys"]}
    gemm = keys[("kernel", GEMM)]["mean"]
    assert gemm["verdict"] == "changed"
    assert gemm["ci_low"] < 1.06 < gemm["ci_high"] and 1.03 < gemm["ratio"] < 1.09
    assert len(gemm["base_values"]) == 3 and len(gemm["candidate_values"]) == 3
    # The calls never change: identical in every run, a point interval at 1.
    calls = keys[("kernel", GEMM)]["calls"]
    assert (calls["ratio"], calls["ci_low"], calls["verdict"]) == (1.0, 1.0, "no significant change")
    assert {"kind": "kernel", "key": "fused_rope_kernel"} in r["partial"]
    # The figures are the median runs': the headline's totals are two of the runs'.
    totals = r["kernel_time"]
    assert doc["overall"]["base_total_ns"] in totals["base_values"]
    assert doc["overall"]["candidate_total_ns"] in totals["candidate_values"]
    assert totals["ci_low"] < totals["ratio"] < totals["ci_high"]


def test_positionals_and_run_options_mix(traces: tuple[list[Path], list[Path]]) -> None:
    base, cand = traces
    doc = _json("diff", base[0], "--candidate", *cand)
    assert (doc["runs"]["base_runs"], doc["runs"]["candidate_runs"], doc["runs"]["intervals"]) == (1, 3, False)
    gemm = next(k for k in doc["runs"]["keys"] if k["key"] == GEMM)
    assert gemm["mean"]["verdict"] == "no interval (one run)" and gemm["mean"]["ci_low"] is None


def test_a_saved_run_set_is_a_side(
    traces: tuple[list[Path], list[Path]],
    tmp_path: Path,
) -> None:
    base, cand = traces
    saved = tmp_path / "baseline.json"
    assert run_cli("fingerprint", "--run-set", *base, "-o", saved)[0] == 0
    from_traces = _json("--base", *base, "--candidate", *cand)["runs"]
    from_saved = _json(saved, "--candidate", *cand)["runs"]
    assert from_saved["keys"] == from_traces["keys"] and from_saved["scale"] == from_traces["scale"]
    assert from_saved["base_sources"] == [f"{saved} runs[{i}]" for i in range(3)]


def test_one_run_per_side_is_todays_diff(traces: tuple[list[Path], list[Path]]) -> None:
    base, cand = traces
    positional = run_cli(base[0], cand[0], "--format", "json")
    options = run_cli("--base", base[0], "--candidate", cand[0], "--format", "json")
    assert positional == options
    assert "runs" not in json.loads(positional[1])


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["diff", "a"], "missing CANDIDATE: the usage is 'nsysdiff diff [OPTIONS] BASE CANDIDATE'"),
        (["--base", "a", "b"], "missing CANDIDATE or --candidate RUN...: the usage is"),
        (["diff", "a", "b", "--candidate", "c"], "b: one path too many; give BASE CANDIDATE, or --base RUN..."),
    ],
)
def test_sides_badly_given_are_one_usage_line(argv: list[str], message: str) -> None:
    code, out, err = run_cli(*argv)
    assert (code, out) == (2, "")
    assert err.startswith(f"nsysdiff: error: {message}") and err.count("\n") == 1


def test_the_odd_run_out_of_a_side_exits_2(
    traces: tuple[list[Path], list[Path]],
    tmp_path: Path,
) -> None:
    base, cand = traces
    other = runs.write_run(tmp_path / "a100.sqlite", True, 7, gpu="NVIDIA A100-SXM4-80GB")
    code, out, err = run_cli("--base", *base, "--candidate", cand[0], other, cand[2])
    assert (code, out) == (2, "")
    assert err == (
        f"nsysdiff: error: {other}: GPU model 'NVIDIA A100-SXM4-80GB' differs from the other runs of its side "
        f"({cand[0]}: 'NVIDIA H100 80GB HBM3'); runs of one side must be captured alike\n"
    )


# --- the statistics ----------------------------------------------------------------------


def _set(fps: list[Fingerprint]) -> runset.RunSet:
    return runset.run_set(fps, [f"run{i}.json" for i in range(len(fps))])


def _fp(gemm_ns: int, gather_ns: int, i: int) -> Fingerprint:
    """A GEMM, an elementwise kernel, a softmax and a small gather."""
    return fpspec.fingerprint(
        {
            "ampere_sgemm_128x64_nn": (10, gemm_ns),
            "vectorized_elementwise_kernel": (20, 4000 + i),
            "softmax_warp_forward": (10, 3000 - i),
            "indexSelectSmallIndex": (4, gather_ns),
        },
        source=f"run{i}.json",
    )


def test_the_median_run_is_shown() -> None:
    rs = _set([_fp(1000, 100, 0), _fp(1030, 100, 1), _fp(990, 100, 2), _fp(1010, 100, 3)])
    # Kernel times 8100, 8130, 8090, 8110: the lower middle of four is the 8100 of run 0.
    assert rundiff.median_run(rs) == 0
    assert rundiff.median_run(_set([_fp(1000, 100, 0), _fp(1030, 100, 1), _fp(990, 100, 2)])) == 0
    assert rundiff.median_run(_set([_fp(1000, 100, 0)])) == 0


def test_one_run_per_side_compares_as_before() -> None:
    b, c = _fp(1000, 100, 0), _fp(1060, 300, 1)
    assert rundiff.compare_sides(_set([b]), _set([c])) == compare(b, c)


def test_the_attribution_is_the_median_runs_and_exact() -> None:
    base = _set([_fp(1000, 100, 0), _fp(1010, 101, 1), _fp(995, 99, 2)])
    cand = _set([_fp(1060, 300, 0), _fp(1066, 303, 1), _fp(1052, 297, 2)])
    d = rundiff.compare_sides(base, cand)
    shown = compare(base.runs[0], cand.runs[0])
    assert d.attribution == shown.attribution
    assert d.attribution.effects.total_ns == d.attribution.delta_ns == cand.runs[0].kernel_ns - base.runs[0].kernel_ns


def test_an_outlier_whose_interval_clears_the_thresholds_stays() -> None:
    base = _set([_fp(1000, 100, 0), _fp(1010, 101, 1), _fp(995, 99, 2)])
    cand = _set([_fp(1000, 300, 0), _fp(1008, 306, 1), _fp(996, 297, 2)])
    d = rundiff.compare_sides(base, cand)
    assert [r.key for r in d.outliers] == ["indexSelectSmallIndex"]
    assert d.runs is not None and d.runs.scale is not None
    dev = d.runs.deviations[0]
    assert dev.cleared and dev.spread.low is not None and dev.spread.low > 2.5
    assert d.outliers[0].deviation_ci == (dev.spread.low, dev.spread.high)


def test_an_outlier_of_the_median_runs_alone_is_not_flagged() -> None:
    # The gather is 3x slower in the median candidate run only: the runs disagree, and
    # the interval of its deviation reaches below the thresholds.
    base = _set([_fp(1000, 100, 0), _fp(1010, 101, 1), _fp(995, 99, 2)])
    cand = _set([_fp(1000, 300, 0), _fp(1008, 100, 1), _fp(996, 180, 2)])
    single = compare(base.runs[rundiff.median_run(base)], cand.runs[rundiff.median_run(cand)])
    assert [r.key for r in single.outliers] == ["indexSelectSmallIndex"]
    d = rundiff.compare_sides(base, cand)
    assert d.outliers == ()
    row = next(r for r in d.kernels if r.key == "indexSelectSmallIndex")
    assert row.verdict.value == "regressed" and row.deviation_ci is not None and row.deviation_ci[0] < 1.25
    assert d.runs is not None and [x.cleared for x in d.runs.deviations] == [False, False, False]


def test_the_outlier_rule_honours_the_interval(tmp_path: Path) -> None:
    from nsysdiff import rules

    pack = tmp_path / "outliers.yaml"
    pack.write_text("version: 1\nrules:\n  - id: outlier\n    kind: outlier\n    level: error\n")

    base = _set([_fp(1000, 100, 0), _fp(1010, 101, 1), _fp(995, 99, 2)])
    noisy = _set([_fp(1000, 300, 0), _fp(1008, 100, 1), _fp(996, 180, 2)])
    steady = _set([_fp(1000, 300, 0), _fp(1008, 306, 1), _fp(996, 297, 2)])
    ruleset = rules.load_rules([str(pack)])
    subjects = []
    for cand in (noisy, steady):
        findings, _ = rules.evaluate(rundiff.compare_sides(base, cand), ruleset, today=date(2026, 1, 1))
        subjects.append([f.subject for f in findings if f.kind == "outlier"])
        evidence = [f.evidence for f in findings if f.kind == "outlier"]
    assert subjects[0] == [] and subjects[1] != []
    # The finding gives the interval it was judged on.
    assert all("; across runs 2." in e and "x of scale" in e for e in evidence) and evidence


def test_one_correction_over_every_key_and_measure() -> None:
    base = _set([_fp(1000, 100, 0), _fp(1010, 101, 1), _fp(995, 99, 2)])
    cand = _set([_fp(1060, 100, 0), _fp(1066, 101, 1), _fp(1052, 99, 2)])
    d = rundiff.compare_sides(base, cand)
    assert d.runs is not None
    # 4 kernels, 4 families, categories and no copies or ranges: each on three measures.
    cats = len({k.category for k in base.runs[0].kernels})
    assert d.runs.tested == 3 * (4 + 4 + cats)
    gemm = next(k for k in d.runs.keys if k.key == "ampere_sgemm_128x64_nn" and k.kind.value == "kernel")
    assert gemm.per_call.verdict is RunVerdict.CHANGED and gemm.calls.verdict is RunVerdict.NO_CHANGE
    assert f"Benjamini-Hochberg over {d.runs.tested} keys at alpha 0.05, runs: 3 base, 3 candidate" in d.runs.method


def test_per_step_runs_compare_per_step() -> None:
    def stepped(total: int, steps: int, i: int) -> Fingerprint:
        fp = fpspec.fingerprint({"ampere_sgemm_128x64_nn": (10 * steps, total * steps)}, source=f"r{i}.json")
        return dataclasses.replace(fp, scope=dataclasses.replace(fp.scope, per="step", steps=steps))

    base = _set([stepped(1000, 8, 0), stepped(1004, 9, 1), stepped(998, 10, 2)])
    cand = _set([stepped(1000, 12, 0), stepped(1002, 8, 1), stepped(999, 9, 2)])
    d = rundiff.compare_sides(base, cand)
    assert d.runs is not None
    total = next(k for k in d.runs.keys if k.kind.value == "kernel").total
    # Different step counts per run: per step, nothing changed.
    assert total.verdict is RunVerdict.NO_CHANGE and total.base_values == (1000.0, 1004.0, 998.0)


def test_a_missing_run_is_one_line_naming_it(
    traces: tuple[list[Path], list[Path]],
    tmp_path: Path,
) -> None:
    base, cand = traces
    missing = tmp_path / "gone.sqlite"
    code, out, err = run_cli("--base", base[0], missing, "--candidate", *cand)
    assert (code, out) == (2, "")
    assert err.count("\n") == 1 and err.startswith(f"nsysdiff: error: {missing}: ")


def test_one_run_against_three_says_no_interval_exists(traces: tuple[list[Path], list[Path]]) -> None:
    base, cand = traces
    code, out, err = run_cli(base[0], "--candidate", *cand, "--width", "200", "--details")
    # The gather's 8 calls, each 3x slower, are evidence under the 1 ms floor: it fails.
    assert (code, err) == (1, "")
    assert "over runs    no interval: a side has one run (an interval needs two runs on each side)" in out
    assert "1 vs 3 runs" in out.splitlines()[0]
    assert "with one run on a side no interval exists" in out
    # Without intervals the median runs' outliers stand, as with one run per side.
    assert "Outliers (1)" in out


def test_runs_without_kernel_rows_compare_their_nvtx_ranges() -> None:
    def ranges(step_ns: int, i: int) -> Fingerprint:
        return fpspec.fingerprint(
            {},
            nvtx={"forward": (10, step_ns), "backward": (10, 2 * step_ns + i), "load": (10, 900 + i)},
            source=f"r{i}.json",
        )

    base = _set([ranges(1000, 0), ranges(1004, 1), ranges(998, 2)])
    cand = _set([ranges(1000, 0), ranges(1003, 1), ranges(999, 2)])
    d = rundiff.compare_sides(base, cand)
    assert d.headline.basis == "nvtx" and d.runs is not None and d.runs.scale is not None
    assert d.runs.scale.low is not None and d.runs.scale.low < 1.0 < (d.runs.scale.high or 0)
    assert {k.kind for k in d.runs.keys} == {runset.KeyKind.NVTX}


def test_a_real_capture_given_as_several_identical_runs(tmp_path: Path) -> None:
    """One capture given as several runs would fake point intervals marked "changed": the
    same file twice, a byte-identical copy and its own saved fingerprint are each refused."""
    from conftest import real_trace

    bs1, bs16 = real_trace("h100/llm_bs1"), real_trace("h100/llm_bs16")
    copy = tmp_path / "copy.sqlite"
    copy.write_bytes(Path(bs1).read_bytes())
    saved = tmp_path / "bs1.json"
    assert run_cli("fingerprint", bs1, "-o", saved)[0] == 0
    for again, why in ((bs1, "the same file as"), (copy, "byte-identical copy"), (saved, "the same capture as")):
        code, out, err = run_cli("--base", bs1, again, "--candidate", bs16, "--format", "json")
        assert (code, out) == (2, "") and why in err and len(err.splitlines()) == 1, err


# --- calibration of the outlier gate across runs ---------------------------------------


def _jittered(rng: np.random.Generator, gather: float, noise: float, i: int) -> Fingerprint:
    """A run: four kernels under a shared clock factor (0.5%) and their own 0.5% jitter,
    and a small gather ``gather`` times its base time with ``noise`` run to run."""
    clock = np.exp(rng.normal(0.0, 0.005))

    def ns(base: float, sd: float = 0.005) -> int:
        return int(np.rint(base * clock * np.exp(rng.normal(0.0, sd))))

    return fpspec.fingerprint(
        {
            "ampere_sgemm_128x64_nn": (10, ns(100_000)),
            "vectorized_elementwise_kernel": (20, ns(40_000)),
            "softmax_warp_forward": (10, ns(30_000)),
            "layer_norm_kernel": (10, ns(20_000)),
            "indexSelectSmallIndex": (4, ns(2_000 * gather, noise)),
        },
        source=f"r{i}.json",
    )


def flagged_rates(true: float, noise: float, runs: int = 3, sims: int = 200, seed: int = 1) -> tuple[float, float]:
    """How often the gather is an outlier: in the median runs' diff alone, and across runs."""
    rng = np.random.default_rng(seed)
    point = gated = 0
    for _ in range(sims):
        base = _set([_jittered(rng, 1.0, noise, i) for i in range(runs)])
        cand = _set([_jittered(rng, true, noise, i) for i in range(runs)])
        shown = compare(base.runs[rundiff.median_run(base)], cand.runs[rundiff.median_run(cand)])
        point += any(r.key == "indexSelectSmallIndex" for r in shown.outliers)
        gated += any(r.key == "indexSelectSmallIndex" for r in rundiff.compare_sides(base, cand).outliers)
    return point / sims, gated / sims


def test_a_deviation_under_the_threshold_is_not_an_outlier_across_runs() -> None:
    # 1.20x beyond the scale, under the 1.25x threshold, with 5% run-to-run noise: the
    # median runs alone flag it about a third of the time; the interval almost never.
    point, gated = flagged_rates(1.20, 0.05)
    assert point > 0.2
    assert gated <= 0.025


def test_a_real_outlier_is_found_across_runs() -> None:
    assert flagged_rates(3.0, 0.05) == (1.0, 1.0)


def test_runs_with_no_kernel_time_report_without_a_time_interval(tmp_path: Path) -> None:
    # Copies only: no kernel, graph or NVTX time in any run, nothing to take a log of.
    paths = []
    for i in range(4):
        fp = fpspec.fingerprint({}, memcpy={"HtoD": (2, 1 << 20, 900 + i)}, source=f"r{i}.json")
        paths.append(tmp_path / f"r{i}.json")
        paths[-1].write_text(fingerprint_to_json(fp))
    single = run_cli(paths[0], paths[2], "--no-rules")[0]
    code, out, err = run_cli("--base", *paths[:2], "--candidate", *paths[2:], "--no-rules")
    # The same outcome as one run per side (no kernel data to judge), and no traceback.
    assert (code, err) == (single, "")
    assert "kernel time none in some run · scale none" in " ".join(out.split())
    code, out, _ = run_cli("--base", *paths[:2], "--candidate", *paths[2:], "-f", "json")
    doc = json.loads(out)
    assert doc["runs"]["kernel_time"] is None
    assert [k["key"] for k in doc["runs"]["keys"]] == ["HtoD"]


def false_alarms(runs: int, sims: int = 400, seed: int = 7) -> tuple[float, float]:
    """Simulated A/A diffs (``_jittered`` runs, gather noise 2%): the share of whole diffs
    with any key changed, and the share of all tests that said changed."""
    rng = np.random.default_rng(seed)
    any_changed = changed = tested = 0
    for _ in range(sims):
        base = _set([_jittered(rng, 1.0, 0.02, i) for i in range(runs)])
        cand = _set([_jittered(rng, 1.0, 0.02, i) for i in range(runs)])
        r = rundiff.compare_sides(base, cand).runs
        assert r is not None
        verdicts = [c.verdict for k in r.keys for _, c in k.measures if c.p_value is not None]
        hits = sum(v is RunVerdict.CHANGED for v in verdicts)
        any_changed += hits > 0
        changed += hits
        tested += len(verdicts)
    return any_changed / sims, changed / tested


@pytest.mark.parametrize("runs", [3, 5])
def test_a_whole_a_a_diff_stays_under_alpha(runs: int) -> None:
    # One correction over every key and measure of the diff: the chance that an A/A diff
    # calls anything changed stays under alpha (0.05), keys correlated as they are.
    whole, per_test = false_alarms(runs)
    assert whole <= 0.05
    assert per_test <= 0.05


def test_kernels_across_runs_are_named_as_in_the_other_tables(tmp_path: Path) -> None:
    # The real example: demangled keys are long C++ signatures; the runs section names a
    # kernel by the same label as the headline and the kernel table.
    import shutil
    import sqlite3

    h100 = Path(__file__).resolve().parents[2] / "examples" / "h100"
    bs1, bs16 = h100 / "bs1.sqlite", h100 / "bs16.sqlite"
    # The candidate's runs are captures of their own (a base run is refused there): each
    # with one kernel a nanosecond longer.
    again = []
    for src in (bs16, bs1):
        dst = tmp_path / src.name
        shutil.copyfile(src, dst)
        with sqlite3.connect(dst) as con:
            con.execute('UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET "end" = "end" + 1 WHERE rowid = 1')
        con.close()
        again.append(dst)
    # Not repeats of one build: --mixed-runs takes them anyway, for their names.
    runs_args = ("--base", bs1, bs16, "--candidate", *again, "--no-rules", "--mixed-runs")
    _, text, _ = run_cli(*runs_args, "--details", "--width", "200")
    section = text[text.index("Across runs (2 vs 2 runs)") :].split("\n\n")[0]
    kernels = [line.strip() for line in section.splitlines() if line.startswith("  kernel ")]
    assert "kernel indexSelectSmallIndex" in kernels
    assert not [k for k in kernels if "(" in k or "void " in k]
    _, md, _ = run_cli(*runs_args, "--format", "markdown")
    assert "| kernel | <code>indexSelectSmallIndex</code> |" in md
    assert "<code>void at::native" not in md
