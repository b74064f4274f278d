"""``nsysdiff history`` end to end, and a diff whose base is the history of main
(``--base history:STORE@main~5``)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import histories
import pytest
from conftest import otava_test, real_trace, run_cli

from nsysdiff.fingerprint.model import fingerprint_to_json
from nsysdiff.history import store as st
from nsysdiff.synth.builder import TraceBuilder

GEMM = "nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_TNT"


def _main_history(directory: Path, commits: int = 12) -> Path:
    """``commits`` commits of main, 3 runs each, the spec build with its noise."""
    base, noise = histories.spec_build()
    path = directory / "main.sqlite"
    s = st.create_or_open(path)
    for commit, runs in histories.history(base, noise, lambda c, n: 1.0, commits=commits):
        for fp in runs:
            s.add(fp, ref="main", commit=commit)
    s.close()
    return path


def _candidates(directory: Path, gemm: float, n: int = 3, seed: int = 99) -> list[str]:
    base, noise = histories.spec_build()

    def plan(c: int, name: str) -> float:
        return gemm if name == GEMM else 1.0

    ((_, runs),) = histories.history(base, noise, plan, commits=1, runs=n, seed=seed)
    out = []
    for i, fp in enumerate(runs):
        p = directory / f"pr{i}.json"
        p.write_text(fingerprint_to_json(fp), encoding="utf-8")
        out.append(str(p))
    return out


def test_add_list_show(tmp_path: Path) -> None:
    b = TraceBuilder()
    b.kernel("gemm_kernel", 1_000, 50_000)
    b.kernel("softmax_kernel", 60_000, 5_000)
    trace = b.write(tmp_path / "run.sqlite")
    # A second run of the same build: the same calls, other times.
    b2 = TraceBuilder()
    b2.kernel("gemm_kernel", 1_000, 51_000)
    b2.kernel("softmax_kernel", 60_000, 5_100)
    again = b2.write(tmp_path / "run2.sqlite")
    store = tmp_path / "ci" / "perf.sqlite"
    code, out, err = run_cli("history", "add", store, trace, again, "--ref", "main", "--commit", "abc123")
    assert (code, out) == (0, "")
    assert err == f"nsysdiff: added 2 runs to {store}: main@abc123#1, main@abc123#2\n"
    code, _, err = run_cli(
        "history",
        "add",
        f"sqlite:///{store}",
        trace,
        "--ref",
        "main",
        "--commit",
        "def456",
        "--failed",
    )
    assert code == 0 and "main@def456#1" in err
    code, out, _ = run_cli("history", "list", store, "--width", "120")
    assert code == 0 and "3 runs of 2 commits on 1 ref: main" in " ".join(out.split())
    assert out.count("failed") == 1
    code, out, _ = run_cli("history", "show", store, "gemm_kernel", "--width", "100")
    assert code == 0 and "kernel gemm_kernel" in out and "trend: " in out and out.count("failed") == 1
    code, out, err = run_cli("history", "show", store, "gemm")
    assert (code, out) == (2, "") and "no key 'gemm'" in err and "'gemm_kernel'" in err


def test_bad_stores_are_one_line_exit_2(tmp_path: Path) -> None:
    foreign = tmp_path / "foreign.sqlite"
    foreign.write_bytes(b"SQLite format 3\x00" + b"\x00" * 200)
    text = tmp_path / "notes.txt"
    text.write_text("hello\n")
    for argv in (
        ("history", "list", str(tmp_path / "missing.sqlite")),
        ("history", "list", str(text)),
        ("history", "changes", str(foreign)),
        ("history", "show", str(text), "k"),
        ("--base", f"history:{text}@main~5", "--candidate", *_candidates(tmp_path, 1.0)),
        ("--base", f"history:{foreign}@main~5", "--candidate", *_candidates(tmp_path, 1.0)),
    ):
        code, out, err = run_cli(*argv)
        assert (code, out) == (2, ""), argv
        assert err.count("\n") == 1 and err.startswith("nsysdiff: error: "), err


def test_changes_needs_otava_says_so_in_one_line(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    store = _main_history(tmp_path, commits=6)
    monkeypatch.setitem(sys.modules, "otava", None)
    code, out, err = run_cli("history", "changes", store)
    assert (code, out) == (2, "")
    assert err == "nsysdiff: error: history changes needs Apache Otava's E-Divisive: pip install 'nsysdiff[history]'\n"


def test_pr_diff_against_the_history_of_main(tmp_path: Path) -> None:
    """5 runs of main as the base, 3 runs of the PR: an unchanged PR passes, a PR whose GEMM
    is 8% slower fails, each with intervals from the runs of both sides."""
    store = _main_history(tmp_path)
    spec = f"history:{store}@main~5"
    (tmp_path / "same").mkdir()
    same = _candidates(tmp_path / "same", 1.0)
    code, out, err = run_cli("--base", spec, "--candidate", *same, "--format", "json")
    doc = json.loads(out)
    assert (code, err) == (0, ""), out[:2000]
    assert doc["runs"]["base_runs"] == 5 and doc["runs"]["candidate_runs"] == 3
    assert doc["runs"]["base_sources"][0].endswith(":main@0010c0ffeec0#2")
    slow = _candidates(tmp_path, 1.08)
    rules = tmp_path / "gemm.yaml"
    rules.write_text(
        "version: 1\nrules:\n  - id: gemm-each\n    kind: budget\n    level: error\n    kernel: ^nvjet\n"
        "    each: true\n    metric: total_time\n    max_ratio: 1.05x\n",
        encoding="utf-8",
    )
    code, out, err = run_cli("--base", spec, "--candidate", *slow, "--rules", rules, "--format", "json")
    doc = json.loads(out)
    assert code == 1, out[:2000]
    assert [f["subject"] for f in doc["findings"] if f["rule_id"] == "gemm-each" and f["level"] == "error"] == [GEMM]
    (gemm,) = [k for k in doc["runs"]["keys"] if k["kind"] == "kernel" and k["key"] == GEMM]
    assert gemm["total"]["ci_low"] > 1.06 and gemm["total"]["ci_high"] < 1.10
    # The positional form reads the same.
    code, _, _ = run_cli(spec, slow[0], "--no-rules")
    assert code == 0


def test_first_run_without_a_store_is_inconclusive(tmp_path: Path) -> None:
    code, out, err = run_cli(
        "--base",
        f"history:{tmp_path / 'none.sqlite'}@main~5",
        "--candidate",
        *_candidates(tmp_path, 1.0),
    )
    assert (code, out) == (3, "")
    assert "no history store yet" in err and err.count("\n") == 1
    assert not (tmp_path / "none.sqlite").exists()


def test_history_base_refuses_fewer_than_two(tmp_path: Path) -> None:
    store = _main_history(tmp_path, commits=1)
    other_gpu = tmp_path / "h200.json"
    fp = histories.spec_build()[0]
    import dataclasses

    from nsysdiff.trace.records import GpuInfo

    fp = dataclasses.replace(fp, meta=dataclasses.replace(fp.meta, gpus=(GpuInfo(0, "NVIDIA H200", 132),)))
    other_gpu.write_text(fingerprint_to_json(fp), encoding="utf-8")
    code, out, err = run_cli("--base", f"history:{store}@main~5", "--candidate", other_gpu)
    assert (code, out) == (3, "")
    assert "0 runs of 'main' comparable with the candidate (GPU 'NVIDIA H200'" in err and err.count("\n") == 1


def test_pr_diff_against_history_built_from_the_real_repeats(tmp_path: Path) -> None:
    """Main's history built from h100/llm_bs16 with the noise its repeat shows; the PR is the
    two real captures themselves (llm_bs16 and llm_bs16_r2): a repeat of one build passes."""
    from nsysdiff import api

    first, repeat = real_trace("h100/llm_bs16"), real_trace("h100/llm_bs16_r2")
    fp1, fp2 = api.load(first), api.load(repeat)
    noise = histories.noise_of(fp1, fp2)
    store = tmp_path / "main.sqlite"
    s = st.create_or_open(store)
    for commit, runs in histories.history(fp1, noise, lambda c, n: 1.0, commits=4, runs=2):
        for fp in runs:
            s.add(fp, ref="main", commit=commit)
    s.close()
    code, out, _ = run_cli("--base", f"history:{store}@main~5", "--candidate", first, repeat, "--format", "json")
    doc = json.loads(out)
    assert code == 0, out[:3000]
    assert doc["runs"]["base_runs"] == 5 and doc["runs"]["candidate_runs"] == 2


@otava_test
def test_names_from_a_store_reach_the_terminal_inert(tmp_path: Path) -> None:
    """A kernel name (from a trace) and a ref (from a tampered store) carrying escape
    sequences and workflow commands print neutralised in every history output."""
    import sqlite3

    import fpspec

    evil = "gemm\x1b[31m\n::error::pwned\u2028::warning::x"
    store = tmp_path / "h.sqlite"
    s = st.create_or_open(store)
    for i in range(8):
        s.add(
            fpspec.fingerprint({evil: (10, 1_000_000 * (2 if i >= 4 else 1)), "k": (5, 50_000)}),
            ref="main",
            commit=f"c{i}",
        )
    s.close()
    con = sqlite3.connect(store)
    con.execute("DROP TRIGGER entries_append_only_update")
    con.execute("UPDATE entries SET gpu = 'H100\x1b]0;title\x07\n::set-output name=x::y' WHERE id = 8")
    con.commit()
    con.close()
    outputs = []
    for argv in (("list", store), ("show", store, evil), ("changes", store), ("changes", store, "--format", "json")):
        code, out, err = run_cli("history", *argv)
        outputs.append(out + err)
    # The tampered schema is refused; the rows before it were printed inert.
    assert "schema differs" in outputs[0]
    con = sqlite3.connect(store)
    con.execute(st._SCHEMA[4])
    con.commit()
    con.close()
    outputs = []
    for argv in (("list", store), ("show", store, evil), ("changes", store), ("changes", store, "--format", "json")):
        code, out, err = run_cli("history", *argv)
        assert code == 0, err
        outputs.append(out + err)
    for text in outputs:
        assert "\x1b" not in text and "\x07" not in text and "\u2028" not in text
        for line in text.splitlines():
            assert not "".join(line.split()).startswith("::"), line
    assert "pwned" in outputs[1] and "H100" in outputs[0]


def test_add_a_run_set_adds_each_run(tmp_path: Path) -> None:
    from nsysdiff.fingerprint.runset import run_set, run_set_to_json

    base, noise = histories.spec_build()
    ((_, runs),) = histories.history(base, noise, lambda c, n: 1.0, commits=1, runs=3)
    saved = tmp_path / "runs.json"
    saved.write_text(run_set_to_json(run_set(runs, ["a", "b", "c"])), encoding="utf-8")
    code, _, err = run_cli("history", "add", tmp_path / "h.sqlite", saved, "--ref", "main", "--commit", "c0")
    assert code == 0 and err.endswith("main@c0#1, main@c0#2, main@c0#3\n")
