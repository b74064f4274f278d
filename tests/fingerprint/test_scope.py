"""Scopes: windows, NVTX attribution, skip-first, per-step normalisation, phases, graphs."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from conftest import real_trace, run_cli, traces_dir

from nsysdiff import api
from nsysdiff.compare.diff import Verdict, compare
from nsysdiff.errors import UsageError
from nsysdiff.fingerprint import scope
from nsysdiff.fingerprint.model import fingerprint_to_json
from nsysdiff.fingerprint.scope import ScopeOptions, parse_window
from nsysdiff.synth.builder import TraceBuilder

ATTN = "flash_fwd_splitkv_kernel"
GEMM = "sm90_xmma_gemm_bf16bf16_bf16f32"
NORM = "rms_norm_kernel"
US = 1_000
MS = 1_000_000


def _step(b: TraceBuilder, t: int, slow: float, tid: int, graph: str | None) -> int:
    """One decode step starting at CPU time t; returns its end."""
    work = [(ATTN, int(20 * US * slow)), (GEMM, 60 * US), (NORM, 10 * US)]
    if graph is None:
        cpu = t + 1 * US
        for name, dur in work:
            b.launch(name, cpu, cpu + 5 * US, dur, tid=tid)
            cpu += 10 * US
    elif graph == "node":
        cid = b.runtime("cudaGraphLaunch_v10000", t + 1 * US, 3 * US, tid=tid)
        gpu = t + 5 * US
        for node, (name, dur) in enumerate(work, start=1):
            b.kernel(name, gpu, dur, correlation_id=cid, graph_node_id=node)
            gpu += dur
    else:
        b.graph_launch(t + 5 * US, sum(d for _, d in work), cpu_start=t + 1 * US, tid=tid)
    return t + 200 * US


def serving(path: Path, steps: int, *, slow: float = 1.0, graph: str | None = None, tid: int = 1001) -> Path:
    """Model load (no range), prefill, then `steps` decode_step ranges under a decode range."""
    b = TraceBuilder()
    b.launch("load_weights_kernel", 0, 10 * US, 2 * MS, tid=tid)
    t = 5 * MS
    b.launch(GEMM, t + 1 * US, t + 5 * US, 500 * US, tid=tid)
    b.nvtx_range("prefill", t, t + 1 * MS, tid=tid)
    t += 2 * MS
    decode_start = t
    for _ in range(steps):
        end = _step(b, t, slow, tid, graph)
        b.nvtx_range("decode_step", t, end, tid=tid)
        b.nvtx_range("sample", end - 20 * US, end - 10 * US, tid=tid)  # nested, no work
        t = end + 10 * US
    b.nvtx_range("decode", decode_start, t, tid=tid)
    return b.write(path)


# --- options ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "start", "end"),
    [
        ("2s:5s", 2_000_000_000, 5_000_000_000),
        ("500ms:", 500 * MS, None),
        (":3s", 0, 3_000_000_000),
        ("1.5ms:2ms", 1_500_000, 2 * MS),
        ("0:10us", 0, 10 * US),
        ("100ns:1us", 100, 1000),
    ],
)
def test_parse_window(text: str, start: int, end: int | None) -> None:
    w = parse_window(text)
    assert (w.start_ns, w.end_ns) == (start, end)


@pytest.mark.parametrize("text", ["5s", "2:5", "5s:2s", ":", "a:b", "1h:2h", "2s:2s", "-1s:2s"])
def test_parse_window_rejects(text: str) -> None:
    with pytest.raises(UsageError, match="--window"):
        parse_window(text)


@pytest.mark.parametrize("command", ["summary", "diff", "fingerprint", "noise"])
@pytest.mark.parametrize("bound", ["9" * 400, "9" * 400 + "s", "9223372036854775808ns", "1e3s"])
def test_a_huge_window_bound_is_refused_in_one_line(tmp_path: Path, command: str, bound: str) -> None:
    missing = tmp_path / "never-read.sqlite"  # refused before any input is read
    args = [missing, missing] if command in ("diff", "noise") else [missing]
    code, out, err = run_cli(command, *args, "--window", f"0:{bound}")
    assert (code, out) == (2, "")
    assert len(err.splitlines()) == 1 and "--window" in err and "Traceback" not in err, err


def test_a_window_bound_at_int64s_end_is_exact() -> None:
    assert parse_window(":9223372036854775807ns").end_ns == 2**63 - 1
    assert parse_window(":9223372036.854775807s").end_ns == 2**63 - 1


def test_canonical_window_text() -> None:
    assert ScopeOptions(window="2000ms:5s").window_text == "2s:5s"
    assert ScopeOptions(window="1500us:").window_text == "1500us:"


def test_option_errors() -> None:
    with pytest.raises(UsageError, match="--skip-first needs"):
        ScopeOptions(skip_first=2)
    with pytest.raises(UsageError, match="--window-origin"):
        ScopeOptions(window="1s:", window_origin="start")
    with pytest.raises(UsageError, match="NVTX range name"):
        ScopeOptions(nvtx="@dom")


# --- attribution core ------------------------------------------------------------------


def _inside(start: int, end: int, tid: int, ranges: list[tuple[int, int, int, bool]]) -> bool:
    """nsys's rule, one event at a time: push/pop ranges hold their thread's events,
    start/end ranges those of any thread of their process (one process here)."""
    return any(rs <= start and end <= re and (not pp or rt == tid) for rs, re, rt, pp in ranges)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_attribution_matches_brute_force(tmp_path: Path, seed: int) -> None:
    """Random nested and overlapping ranges of both kinds on several threads: the launches
    SQLite keeps are exactly those a per-event check keeps, and so are the ranges."""
    rng = np.random.default_rng(seed)
    b = TraceBuilder()
    ranges: dict[str, list[tuple[int, int, int, bool]]] = {"hot": [], "cold": []}
    for _ in range(60):
        name = "hot" if rng.random() < 0.5 else "cold"
        start = int(rng.integers(0, 100_000))
        end = start + int(rng.integers(1, 8_000))
        tid = int(rng.integers(1, 4))
        pp = bool(rng.random() < 0.7)
        suffix = f", seq = {int(rng.integers(0, 99))}" if rng.random() < 0.5 else ""
        b.nvtx_range(name + suffix, start, end, tid=tid, push_pop=pp, end_tid=None if pp else tid % 3 + 1)
        ranges[name].append((start, end, tid, pp))
    want_calls = 0
    for i in range(400):
        start = int(rng.integers(0, 110_000))
        end = start + int(rng.integers(0, 300))
        tid = int(rng.integers(1, 4))
        b.launch(f"k{i % 7}", start, start + 50, 10, tid=tid, api_duration=end - start)
        want_calls += _inside(start, end, tid, ranges["hot"])
    path = b.write(tmp_path / "t.sqlite")
    fp = api.load(path, ScopeOptions(nvtx="hot"))
    assert fp.kernel_calls == want_calls
    cold_in_hot = sum(_inside(s, e, t, ranges["hot"]) for s, e, t, _ in ranges["cold"])
    got = {r.name: r.count for r in fp.nvtx}
    assert got.get("cold", 0) == cold_in_hot
    assert got["hot"] == len(ranges["hot"])  # every range lies inside itself


# --- NVTX attribution on traces --------------------------------------------------------


def test_nvtx_attribution_threads_and_nesting(tmp_path: Path) -> None:
    b = TraceBuilder()
    b.nvtx_range("outer", 0, 1 * MS, tid=1)
    b.nvtx_range("inner", 100 * US, 200 * US, tid=1)
    b.launch("k_inner", 150 * US, 150 * US, 10 * US, tid=1)  # nested: in outer and inner
    b.launch("k_outer", 500 * US, 500 * US, 10 * US, tid=1)
    b.launch("k_other_thread", 150 * US, 160 * US, 10 * US, tid=2)  # push/pop: not ours
    b.launch("k_outside", 2 * MS, 2 * MS, 10 * US, tid=1)
    # A start/end range opened on thread 3 and closed on thread 4: process-wide.
    b.nvtx_range("async", 3 * MS, 4 * MS, tid=3, push_pop=False, end_tid=4)
    b.launch("k_async", 3_500 * US, 3_500 * US, 10 * US, tid=4)
    b.nvtx_range("traced", 5 * MS, 6 * MS, tid=5, domain="mine")
    b.launch("k_domain", 5_500 * US, 5_500 * US, 10 * US, tid=5)
    path = b.write(tmp_path / "t.sqlite")

    def names(**kw: object) -> set[str]:
        fp = api.load(path, ScopeOptions(**kw))  # type: ignore[arg-type]
        return {k.name for k in fp.kernels}

    assert names(nvtx="outer") == {"k_inner", "k_outer"}
    assert names(nvtx="inner") == {"k_inner"}
    assert names(nvtx="async") == {"k_async"}
    assert names(nvtx="in.*") == {"k_inner"}  # regex, full match: "inner" not "outer"
    assert names(nvtx="traced@mine") == {"k_domain"}
    assert names(nvtx="traced@.*") == {"k_domain"}
    with pytest.raises(UsageError, match="no NVTX range"):
        names(nvtx="traced@other")
    fp = api.load(path, ScopeOptions(nvtx="outer"))
    total = 6 * 10 * US
    assert fp.scope.coverage == pytest.approx(2 * 10 * US / total)
    assert fp.scope.nvtx == "outer"


def test_nvtx_names_are_folded(tmp_path: Path) -> None:
    b = TraceBuilder()
    b.nvtx_range("aten::mm, seq = 1, op_id = 7", 0, 100 * US)
    b.launch("k", 10 * US, 10 * US, 5 * US)
    fp = api.load(b.write(tmp_path / "t.sqlite"), ScopeOptions(nvtx="aten::mm"))
    assert [k.name for k in fp.kernels] == ["k"]
    assert [(r.name, r.count) for r in fp.nvtx] == [("aten::mm", 1)]


def test_serving_scope_steps_and_coverage(tmp_path: Path) -> None:
    path = serving(tmp_path / "s.sqlite", 10)
    fp = api.load(path, ScopeOptions(nvtx="decode", per="decode_step"))
    assert fp.scope.steps == 10
    assert {k.name: k.calls for k in fp.kernels} == {ATTN: 10, GEMM: 10, NORM: 10}
    step_ns = (20 + 60 + 10) * US
    assert fp.kernel_ns == 10 * step_ns
    assert fp.scope.coverage == pytest.approx(10 * step_ns / (10 * step_ns + 2 * MS + 500 * US))
    nvtx = {r.name: r.count for r in fp.nvtx}
    assert nvtx == {"decode": 1, "decode_step": 10, "sample": 10}  # prefill is outside


def test_skip_first(tmp_path: Path) -> None:
    path = serving(tmp_path / "s.sqlite", 10)
    fp = api.load(path, ScopeOptions(nvtx="decode", per="decode_step", skip_first=3))
    assert fp.scope.steps == 7 and fp.scope.skip_first == 3
    assert {k.calls for k in fp.kernels} == {7}
    # Without --nvtx, skipping the steps also drops model load and prefill (warm-up).
    fp = api.load(path, ScopeOptions(per="decode_step", skip_first=1))
    assert {k.name: k.calls for k in fp.kernels} == {ATTN: 9, GEMM: 9, NORM: 9}
    with pytest.raises(UsageError, match="nothing would be left"):
        api.load(path, ScopeOptions(per="decode_step", skip_first=10))


def test_window(tmp_path: Path) -> None:
    path = serving(tmp_path / "s.sqlite", 10)
    # The first kernel (model load) starts at 10us; prefill's GEMM at 5ms + 5us.
    fp = api.load(path, ScopeOptions(window=":4ms"))
    assert [k.name for k in fp.kernels] == ["load_weights_kernel"]
    assert fp.scope.window == "0s:4ms" and fp.scope.window_origin == "kernel"
    fp = api.load(path, ScopeOptions(window="4990us:5ms", window_origin="kernel"))
    assert [k.name for k in fp.kernels] == [GEMM]
    fp = api.load(path, ScopeOptions(window="5ms:5010us", window_origin="capture"))
    assert [k.name for k in fp.kernels] == [GEMM]  # capture starts at 0 here
    fp = api.load(path, ScopeOptions(window="6ms:", per="decode_step"))
    # --per keeps the work inside the steps: all of the window's kernels here.
    assert fp.scope.steps == 10 and fp.scope.coverage == 1.0


def test_per_step_normalisation_flags_nothing(tmp_path: Path) -> None:
    opts = ScopeOptions(nvtx="decode", per="decode_step")
    b = api.load(serving(tmp_path / "b.sqlite", 10), opts)
    c = api.load(serving(tmp_path / "c.sqlite", 20), opts)
    d = compare(b, c)
    assert d.per_step and d.headline.per == "decode_step"
    assert (d.headline.base_steps, d.headline.candidate_steps) == (10, 20)
    assert d.headline.base_per_step_ns == d.headline.candidate_per_step_ns == 90 * US
    assert d.headline.ratio == pytest.approx(1.0)
    assert d.headline.scale == pytest.approx(1.0)
    assert all(r.verdict is Verdict.UNCHANGED for r in (*d.kernels, *d.families, *d.categories))
    assert all(r.base and r.candidate and r.base.calls == r.candidate.calls == 1 for r in d.kernels)
    assert all(r.verdict is Verdict.UNCHANGED for r in d.nvtx)
    # Without --per the totals double and every row regresses.
    raw = compare(
        api.load(tmp_path / "b.sqlite", ScopeOptions(nvtx="decode")),
        api.load(tmp_path / "c.sqlite", ScopeOptions(nvtx="decode")),
    )
    assert not raw.per_step and raw.headline.ratio == pytest.approx(2.0)


def test_phases(tmp_path: Path) -> None:
    path = serving(tmp_path / "s.sqlite", 4)
    phases = (("prefill", ("prefill",)), ("decode", ("decode",)))
    opts = ScopeOptions(per="decode_step", phases=phases)
    fp = api.load(path, opts)
    phases = {p.name: p for p in fp.phases}
    assert list(phases) == ["prefill", "decode"]
    assert phases["prefill"].ranges == 1 and phases["decode"].ranges == 1
    assert {k.name for k in phases["prefill"].fingerprint.kernels} == {GEMM}
    assert phases["decode"].fingerprint.scope.steps == 4
    assert phases["prefill"].fingerprint.scope.steps is None
    assert phases["decode"].patterns == ("decode",)
    assert not phases["decode"].fingerprint.phases
    d = compare(fp, api.load(serving(tmp_path / "c.sqlite", 8), opts))
    assert [p.name for p in d.phases] == ["prefill", "decode"]
    assert d.phases[1].diff.headline.ratio == pytest.approx(1.0)


def test_phases_file(tmp_path: Path) -> None:
    f = tmp_path / "phases.yaml"
    f.write_text("phases:\n  prefill: prefill\n  decode: [decode, 'gen.*']\n")
    assert scope.load_phases(f) == (("prefill", ("prefill",)), ("decode", ("decode", "gen.*")))
    for text, match in [
        ("phases: []\n", "expected a mapping"),
        ("phases:\n  decode: 3\n", "decode: expected an NVTX pattern"),
        ("other: 1\n", "top-level `phases:`"),
        ("phases: [\n", "YAML syntax error"),
    ]:
        f.write_text(text)
        with pytest.raises(UsageError, match=match):
            scope.load_phases(f)


# --- CUDA graphs -----------------------------------------------------------------------


def test_graph_launches_are_attributed_once(tmp_path: Path) -> None:
    path = serving(tmp_path / "g.sqlite", 5, graph="graph")
    fp = api.load(path, ScopeOptions(nvtx="decode", per="decode_step"))
    assert fp.meta.graph_launches == 5 and fp.meta.graph_total_ns == 5 * 90 * US
    assert fp.kernels == ()  # graph mode: no kernel rows for replays, nothing counted twice
    whole = api.load(path)
    assert whole.meta.graph_launches == 5
    node = api.load(serving(tmp_path / "n.sqlite", 5, graph="node"), ScopeOptions(nvtx="decode"))
    assert {k.name: k.calls for k in node.kernels} == {ATTN: 5, GEMM: 5, NORM: 5}
    assert node.meta.graph_mode.value == "node"


# --- saved fingerprints ----------------------------------------------------------------


def test_saved_fingerprint_scope_must_match(tmp_path: Path) -> None:
    opts = ScopeOptions(nvtx="decode", per="decode_step")
    saved = tmp_path / "b.json"
    saved.write_text(fingerprint_to_json(api.load(serving(tmp_path / "b.sqlite", 6), opts)))
    fp = api.load(saved, opts)
    assert fp.scope.steps == 6
    assert api.load(saved).scope.nvtx == "decode"
    with pytest.raises(UsageError, match="can't be re-scoped"):
        api.load(saved, ScopeOptions(nvtx="prefill"))


# --- CLI -------------------------------------------------------------------------------


def test_cli_fingerprint_saves_scope(tmp_path: Path) -> None:
    path = serving(tmp_path / "s.sqlite", 3)
    res = run_cli("fingerprint", str(path), "--nvtx", "decode", "--per", "decode_step")
    assert res.exit_code == 0, res.stderr
    doc = json.loads(res.stdout)
    assert doc["scope"]["nvtx"] == "decode" and doc["scope"]["steps"] == 3


def test_cli_bad_window_exits_2(tmp_path: Path) -> None:
    path = serving(tmp_path / "s.sqlite", 3)
    res = run_cli("summary", str(path), "--window", "5")
    assert res.exit_code == 2
    assert "--window '5'" in res.stderr


def test_cli_rescoping_saved_fingerprint_exits_2(tmp_path: Path) -> None:
    saved = tmp_path / "b.json"
    saved.write_text(fingerprint_to_json(api.load(serving(tmp_path / "b.sqlite", 3))))
    res = run_cli("diff", str(saved), str(saved), "--nvtx", "decode", "--no-rules")
    assert res.exit_code == 2
    assert "can't be re-scoped" in res.stderr


def test_cli_bad_phases_file_exits_2(tmp_path: Path) -> None:
    path = serving(tmp_path / "s.sqlite", 3)
    bad = tmp_path / "p.yaml"
    bad.write_text("phases:\n  decode: {}\n")
    res = run_cli("summary", str(path), "--phases", str(bad))
    assert res.exit_code == 2
    assert "decode: expected an NVTX pattern" in res.stderr


def test_done_when_tpot(tmp_path: Path) -> None:
    """Serving pair, N differs, one decode kernel 20% slower per call: fails on it alone."""
    base = serving(tmp_path / "base.sqlite", 12)
    cand = serving(tmp_path / "cand.sqlite", 20, slow=1.2)
    scoped = ["--nvtx", "decode", "--per", "decode_step"]
    args = ["diff", str(base), str(cand), *scoped, "--rules", "tpot"]
    res = run_cli(*args, "--format", "json")
    assert res.exit_code == 1, res.stderr
    doc = json.loads(res.stdout)
    overall = doc["overall"]
    assert (overall["base_steps"], overall["candidate_steps"]) == (12, 20)
    assert overall["base_per_step_ns"] == 90 * US
    assert overall["candidate_per_step_ns"] == 94 * US
    failed = [f for f in doc["findings"] if f["level"] == "error" and not f["waived"]]
    # The slower attention kernel, per call and as GPU time per step (named there).
    assert {f["rule_id"] for f in failed} == {"attention-per-call", "step-gpu-time"}
    assert all(ATTN in f["subject"] for f in failed if f["rule_id"] == "step-gpu-time")
    kernels = {r["name"]: r for r in doc["kernels"]}
    slowed = [n for n, r in kernels.items() if r["verdict"] != "unchanged"]
    assert slowed == [ATTN]
    text = run_cli(*args, "--details", "--width", "120")
    assert text.exit_code == 1
    assert "12 → 20 decode_step ranges" in text.stdout
    assert "per step     90.00 us → 94.00 us" in text.stdout
    assert "coverage" in text.stdout and "Comparability" in text.stdout


def test_graph_vs_node_is_inconclusive(tmp_path: Path) -> None:
    g = serving(tmp_path / "g.sqlite", 5, graph="graph")
    n = serving(tmp_path / "n.sqlite", 5, graph="node")
    res = run_cli("diff", str(n), str(g), "--nvtx", "decode", "--per", "decode_step")
    assert res.exit_code == 3, res.stderr
    assert "--cuda-graph-trace=node" in res.stdout
    assert "graph trace modes differ" in res.stdout


# --- real traces -----------------------------------------------------------------------

REAL = traces_dir()


def _real(name: str) -> Path:
    path = REAL / name
    if not path.is_file():
        pytest.skip(f"{path} not found (set NSYSDIFF_TRACES)")
    return path


def test_real_saxpy_nvtx() -> None:
    fp = api.load(_real("pipit_saxpy_mpi_a100.sqlite"), ScopeOptions(nvtx="saxpy"))
    assert [(k.name, k.calls) for k in fp.kernels] == [("saxpy", 5)]
    assert fp.scope.coverage == pytest.approx(1.0)


@pytest.mark.parametrize(
    ("name", "nvtx"),
    [
        ("nsysai_mfu_h100x2_before.sqlite", "ncclGroupEnd"),
        ("nsysai_mfu_h100x2_after.sqlite", "aten::copy_"),
        ("fuser_h100_report1.sqlite", "ExpressionEvaluator::evaluate"),
        ("fuser_h200_2025.sqlite", ".*"),
    ],
)
def test_real_nvtx_coverage(name: str, nvtx: str) -> None:
    res = run_cli("summary", str(_real(name)), "--nvtx", nvtx, "--format", "json")
    assert res.exit_code == 0, res.stderr
    cov = json.loads(res.stdout)["scope"]["coverage"]
    assert cov is None or 0.0 <= cov <= 1.0


def test_scoped_kernels_keep_their_mangled_names(tmp_path: Path) -> None:
    # A scope filters the launches into a table of its own first; the mangled name travels.
    fp = api.load(serving(tmp_path / "t.sqlite", 3), ScopeOptions(nvtx="decode_step"))
    assert {k.name: k.mangled for k in fp.kernels} == {n: f"_Z{len(n)}{n}v" for n in (ATTN, GEMM, NORM)}


def test_per_divides_only_the_work_inside_the_steps(tmp_path: Path) -> None:
    # Model load and prefill run outside the decode steps: a per-step figure that counted
    # them would be the whole trace divided by the step count.
    path = serving(tmp_path / "s.sqlite", 10)
    fp = api.load(path, ScopeOptions(per="decode_step"))
    assert {k.name: k.calls for k in fp.kernels} == {ATTN: 10, GEMM: 10, NORM: 10}
    assert fp.kernel_ns == 10 * (20 + 60 + 10) * US
    assert fp.scope.coverage == pytest.approx(fp.kernel_ns / (fp.kernel_ns + 2 * MS + 500 * US))
    d = compare(fp, api.load(serving(tmp_path / "t.sqlite", 20), ScopeOptions(per="decode_step")))
    assert d.headline.base_per_step_ns == d.headline.candidate_per_step_ns == (20 + 60 + 10) * US
    # The ranges listed stay those of the whole scope: prefill is not inside a step.
    assert {r.name for r in fp.nvtx} >= {"prefill", "decode", "decode_step"}


@pytest.mark.parametrize(("base", "cand", "per_step"), [("llm_bs1", "llm_bs16", (2_003_253, 2_751_905))])
def test_per_step_kernel_time_of_real_decode_steps(base: str, cand: str, per_step: tuple[int, int]) -> None:
    # The decode steps of llm_bs1 and llm_bs16 hold 2.00 and 2.75 ms of kernel time each;
    # the whole trace (prefill included) divided by 32 would be 2.12 and 3.94 ms.
    opts = ScopeOptions(per="decode_step")
    d = compare(api.load(real_trace(f"h100/{base}"), opts), api.load(real_trace(f"h100/{cand}"), opts))
    assert d.headline.base_per_step_ns is not None and d.headline.candidate_per_step_ns is not None
    got = (round(d.headline.base_per_step_ns), round(d.headline.candidate_per_step_ns))
    assert got == per_step


def test_a_rule_packs_step_range_is_the_per_of_a_trace_that_has_it(tmp_path: Path) -> None:
    path = serving(tmp_path / "s.sqlite", 10)
    fp = api.load(path, scope.options(step_ranges=("no_such_range", "decode_step")))
    assert fp.scope.per == "decode_step" and fp.steps is not None and len(fp.steps.steps) == 10
    assert fp == api.load(path, ScopeOptions(per="decode_step"))
    # Fallback: a trace without any of the ranges is read whole, without steps.
    assert api.load(path, scope.options(step_ranges=("no_such_range",))) == api.load(path)
    # An explicit --per wins.
    fp = api.load(path, scope.options(per="sample", step_ranges=("decode_step",)))
    assert fp.scope.per == "sample"


def test_diff_with_the_tpot_pack_reads_steps(tmp_path: Path) -> None:
    a, b = serving(tmp_path / "a.sqlite", 10), serving(tmp_path / "b.sqlite", 20)
    result = run_cli("diff", str(a), str(b), "--rules", "tpot", "--format", "json")
    assert result.exit_code == 0, result.stderr
    overall = json.loads(result.stdout)["overall"]
    assert (overall["per"], overall["base_steps"], overall["candidate_steps"]) == ("decode_step", 10, 20)
    assert overall["base_per_step_ns"] == overall["candidate_per_step_ns"] == (20 + 60 + 10) * US


def test_the_tpot_pack_never_judges_steps_on_one_side(tmp_path: Path) -> None:
    # A side without the step range is no step comparison: inconclusive with the reason on
    # the first line, never a silent whole-trace pass (a fingerprint saved without --per
    # is told apart from a trace whose range is gone).
    a, b = serving(tmp_path / "a.sqlite", 10), serving(tmp_path / "b.sqlite", 10)
    saved = tmp_path / "a.json"
    saved.write_text(fingerprint_to_json(api.load(a)), encoding="utf-8")  # saved without --per
    result = run_cli("diff", str(saved), str(b), "--rules", "tpot")
    assert result.exit_code == 3, result.stderr
    first = " ".join(result.stdout.split("\n\n")[0].split())
    assert "steps on one side only: the base has decode_step ranges but was saved without steps" in first


def test_a_noise_profile_without_steps_keeps_the_sides_whole(tmp_path: Path) -> None:
    runs = [serving(tmp_path / f"r{i}.sqlite", 10, slow=1.0 + i / 100) for i in range(3)]
    profile = tmp_path / "noise.json"
    made = run_cli("noise", *map(str, runs), "-o", str(profile))
    assert made.exit_code == 0, made.stderr
    args = ["diff", str(runs[0]), str(runs[1]), "--rules", "tpot", "--noise-profile", str(profile), "--format", "json"]
    result = run_cli(*args)
    assert result.exit_code in (0, 3), result.stderr
    assert json.loads(result.stdout)["overall"]["per"] is None


@pytest.mark.parametrize(
    ("analysis", "origin"),
    [((24_437_510_426, 25_432_572_771), 0), ((1_000_000, 1_000_000_000), 1_000_000)],
    ids=["events from the capture start", "events on the capture's clock"],
)
def test_the_capture_origin_is_on_the_events_clock(tmp_path: Path, analysis: tuple[int, int], origin: int) -> None:
    # nsys 2025.3's H100 captures record startTime 24.4 s while their events count from the
    # capture start (12 ms to 969 ms of a 995 ms capture); other exports put both on one clock.
    b = TraceBuilder(analysis_window=analysis)
    for i, start in enumerate((12_000_000, 20_000_000, 500_000_000, 969_000_000)):
        b.kernel(f"k{i}", start, 1_000)
    path = b.write(tmp_path / "t.sqlite")
    fp = api.load(
        path,
        ScopeOptions(
            window=f"{(20_000_000 - origin) // 1000}us:{(501_000_000 - origin) // 1000}us", window_origin="capture"
        ),
    )
    assert [k.name for k in fp.kernels] == ["k1", "k2"]


def test_a_real_capture_window_counts_from_its_capture_start() -> None:
    # llm_bs1: startTime 24.4 s on another clock; its kernels run from 12 ms to 969 ms.
    path = real_trace("h100/llm_bs1")
    whole = api.load(path)
    fp = api.load(path, ScopeOptions(window="0s:1s", window_origin="capture"))
    assert fp.kernel_calls == whole.kernel_calls and fp.kernel_ns == whole.kernel_ns


def _node_mode(path: Path) -> Path:
    """Four steps of a node-mode CUDA graph capture: per step one cudaGraphLaunch call whose
    two node kernels carry its correlationId, a warm-up launch before the first step."""
    b = TraceBuilder()
    for k in range(5):
        t = 1_000_000 + k * 1_000_000
        call = b.runtime("cudaGraphLaunch_v10000", t, 5_000)
        b.kernel("gemm", t + 10_000, 30_000, correlation_id=call, graph_node_id=2 * k + 1)
        b.kernel("norm", t + 50_000, 10_000, correlation_id=call, graph_node_id=2 * k + 2)
        if k:  # the first replay is warm-up, outside the steps
            b.nvtx_range("decode_step", t, t + 500_000)
    return b.write(path)


@pytest.mark.parametrize(
    "options",
    [ScopeOptions(per="decode_step"), ScopeOptions(nvtx="decode_step"), ScopeOptions(window="1ms:")],
    ids=["per", "nvtx", "window"],
)
def test_a_scoped_node_mode_read_counts_its_graph_launches(tmp_path: Path, options: ScopeOptions) -> None:
    path = _node_mode(tmp_path / "t.sqlite")
    whole = api.load(path)
    assert (whole.meta.graph_launches, whole.meta.graph_total_ns) == (5, 5 * 40_000)
    fp = api.load(path, options)
    assert (fp.meta.graph_launches, fp.meta.graph_total_ns) == (4, 4 * 40_000)
