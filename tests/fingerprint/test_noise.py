"""Noise profiles: A/A runs with known jitter recover it; the profile file is untrusted input;
budgets judged against it fail, pass or stay inconclusive as documented."""

from __future__ import annotations

import json
import math
import shutil
import sqlite3
from collections.abc import Callable
from datetime import date
from pathlib import Path
from typing import Any

import fpspec
import numpy as np
import pytest
from conftest import real_trace, run_cli

from nsysdiff import api
from nsysdiff.compare.diff import compare
from nsysdiff.errors import ExitCode, FingerprintError, UsageError
from nsysdiff.fingerprint import noise, runset
from nsysdiff.fingerprint.model import Fingerprint, fingerprint_to_json
from nsysdiff.fingerprint.noise import KeyKind
from nsysdiff.rules import evaluate, load_rules
from nsysdiff.rules.noise_limits import attach
from nsysdiff.synth.builder import TraceBuilder
from nsysdiff.trace import inputs

GEMM = "ampere_sgemm_128x64_nn"
NORM = "rms_norm_kernel"


def _jittered(
    rng: np.random.Generator,
    sigmas: dict[str, float],
    scale: dict[str, float] | None = None,
    source: str = "run.sqlite",
) -> Fingerprint:
    """One run: each kernel 100 calls of 100 us, its total times exp(N(0, sigma))."""
    scale = scale or {}
    ks = {
        name: (100, round(10_000_000 * scale.get(name, 1.0) * math.exp(rng.normal(0.0, sigma))))
        for name, sigma in sigmas.items()
    }
    return fpspec.fingerprint(ks, source=source)


def _run_set(fps: list[Fingerprint]) -> runset.RunSet:
    return runset.run_set(fps, [f"aa{i}.sqlite" for i in range(len(fps))])


# --- the profile recovers known noise ------------------------------------------------------

SIGMAS = {0.005: 10, 0.01: 10, 0.02: 10, 0.05: 10}  # per-run SD of the log -> kernels with it


def test_simulated_runs_recover_the_planted_noise() -> None:
    """12 A/A runs, 40 kernels with known log-normal jitter (0.5% to 5%): the SD per kernel
    is within the chi distribution's spread of the truth, and averaged over the 10 kernels
    of one level within 15% of it (the standard error of that mean is about 7%)."""
    rng = np.random.default_rng(20261124)
    sigmas = {f"kernel_{s}_{i}": s for s, n in SIGMAS.items() for i in range(n)}
    profile = noise.measure(_run_set([_jittered(rng, sigmas) for _ in range(12)]))
    kernels = {k.key: k for k in profile.keys if k.kind is KeyKind.KERNEL}
    assert set(kernels) == set(sigmas) and profile.partial == ()
    for level in SIGMAS:
        got = np.array([kernels[name].mean.sd_log for name, s in sigmas.items() if s == level])
        robust = np.array([kernels[name].mean.robust_log for name, s in sigmas.items() if s == level])
        assert np.all((got > 0.3 * level) & (got < 1.8 * level)), (level, got)
        assert abs(got.mean() / level - 1) < 0.15, (level, got.mean())
        # The robust spread estimates the same SD under normal noise, less precisely.
        assert abs(robust.mean() / level - 1) < 0.35, (level, robust.mean())
        # Calls are the same in every run: the total and the per-call mean move together.
        totals = np.array([kernels[name].total.sd_log for name, s in sigmas.items() if s == level])
        assert np.allclose(got, totals, rtol=1e-6)
        assert all(
            kernels[name].total.width == pytest.approx(math.sqrt(2) * kernels[name].total.sd_log)
            for name, s in sigmas.items()
            if s == level
        )


def test_exact_figures_of_three_runs() -> None:
    """Three runs with known totals: SD, robust spread and medians exactly as defined."""
    totals = [10_000_000, 10_300_000, 9_700_000]
    fps = [
        fpspec.fingerprint({GEMM: (100, t), NORM: (50, 1_000_000)}, nvtx={"step": (4, t + 1_000_000)}) for t in totals
    ]
    profile = noise.measure(_run_set(fps))
    gemm = next(k for k in profile.keys if (k.kind, k.key) == (KeyKind.KERNEL, GEMM))
    logs = np.log(np.array(totals, dtype=float))
    assert gemm.total.sd_log == pytest.approx(float(np.std(logs, ddof=1)), rel=1e-12)
    assert gemm.total.robust_log == pytest.approx(noise.MAD_TO_SD * float(np.log(10_300_000 / 10_000_000)))
    assert (gemm.median_total_ns, gemm.median_mean_ns) == (10_000_000, 100_000)
    norm = next(k for k in profile.keys if (k.kind, k.key) == (KeyKind.KERNEL, NORM))
    assert norm.total == noise.Spread(0.0, 0.0)
    kinds = {k.kind for k in profile.keys}
    assert kinds == {KeyKind.KERNEL, KeyKind.FAMILY, KeyKind.CATEGORY, KeyKind.NVTX}


def test_keys_in_some_runs_are_listed_apart() -> None:
    fps = [
        fpspec.fingerprint({GEMM: (100, 10_000_000), **({"flaky_kernel": (3, 1000)} if i == 1 else {})})
        for i in range(3)
    ]
    profile = noise.measure(_run_set(fps))
    assert noise.PartialKey(KeyKind.KERNEL, "flaky_kernel", 1) in profile.partial
    assert all(k.key != "flaky_kernel" for k in profile.keys)


def test_one_run_is_not_enough() -> None:
    with pytest.raises(UsageError, match="a noise profile needs at least 2 runs of one build, got 1"):
        noise.measure(_run_set([fpspec.fingerprint({GEMM: (1, 10)})]))


def test_json_round_trip() -> None:
    rng = np.random.default_rng(7)
    profile = noise.measure(_run_set([_jittered(rng, {GEMM: 0.02, NORM: 0.01}) for _ in range(4)]))
    again = noise.profile_from_json(noise.profile_to_json(profile), "p.json")
    assert again == profile


# --- the command ----------------------------------------------------------------------------


def _trace(path: Path, factor: float) -> str:
    """A run whose every kernel lasts ``factor`` times its nominal duration."""
    b = TraceBuilder()
    for i in range(20):
        b.kernel(GEMM, 100_000 * i, round(40_000 * factor))
        b.kernel(NORM, 100_000 * i + 50_000, round(5_000 * factor**0.5))
    b.nvtx_range("step", 0, 2_000_000)
    return str(b.write(path))


def test_noise_command_on_traces(tmp_path: Path) -> None:
    factors = [1.0, 1.03, 0.97, 1.01, 0.99]
    traces = [_trace(tmp_path / f"aa{i}.sqlite", f) for i, f in enumerate(factors)]
    out = tmp_path / "noise.json"
    code, stdout, err = run_cli("noise", *traces, "-o", str(out), "--width", "100")
    assert (code, err) == (0, "")
    assert stdout.startswith("nsysdiff noise: 5 runs of one build")
    assert "Noisiest per-call means" in stdout and "A noise width is the SD" in stdout
    profile = api.load_noise_profile(out)
    gemm = next(k for k in profile.keys if (k.kind, k.key) == (KeyKind.KERNEL, GEMM))
    want = float(np.std(np.log([round(40_000 * f) for f in factors]), ddof=1))
    assert gemm.mean.sd_log == pytest.approx(want, rel=1e-12)
    # The noisiest key comes first: the GEMM moves with the factor, the norm with its root.
    rows = [line.split()[0] for line in stdout.splitlines() if line.startswith((GEMM, NORM))]
    assert rows.index(GEMM) < rows.index(NORM)


def test_noise_command_formats(tmp_path: Path) -> None:
    traces = [_trace(tmp_path / f"aa{i}.sqlite", f) for i, f in enumerate([1.0, 1.02])]
    code, stdout, _ = run_cli("noise", *traces, "--format", "json")
    assert code == 0 and json.loads(stdout)["runs"] == 2
    code, stdout, _ = run_cli("noise", *traces, "--format", "markdown")
    assert code == 0 and stdout.startswith("### nsysdiff noise: 2 runs") and "| key | kind |" in stdout


def test_noise_command_mixes_inputs(tmp_path: Path) -> None:
    traces = [_trace(tmp_path / f"aa{i}.sqlite", f) for i, f in enumerate([1.0, 1.02, 0.98])]
    saved = tmp_path / "two.json"
    assert run_cli("fingerprint", "--run-set", traces[0], traces[1], "-o", str(saved))[0] == 0
    code, stdout, err = run_cli("noise", str(saved), traces[2], "-f", "json")
    assert (code, err) == (0, "")
    assert json.loads(stdout)["sources"] == [f"{saved} runs[0]", f"{saved} runs[1]", traces[2]]


def test_noise_command_needs_two_runs(tmp_path: Path) -> None:
    code, stdout, err = run_cli("noise", _trace(tmp_path / "one.sqlite", 1.0), "-o", str(tmp_path / "n.json"))
    assert (code, stdout) == (2, "")
    assert err == (
        "nsysdiff: error: a noise profile needs at least 2 runs of one build, got 1 "
        f"({tmp_path / 'one.sqlite'}); capture the same build again and give every run\n"
    )
    assert not (tmp_path / "n.json").exists()


# --- hostile profiles ----------------------------------------------------------------------


@pytest.fixture(scope="module")
def good() -> str:
    rng = np.random.default_rng(3)
    return noise.profile_to_json(noise.measure(_run_set([_jittered(rng, {GEMM: 0.02, NORM: 0.01}) for _ in range(3)])))


def _edit(good: str, change: Callable[[dict[str, Any]], object]) -> str:
    doc = json.loads(good)
    change(doc)
    return json.dumps(doc)


HOSTILE: dict[str, tuple[Callable[[str], str], str]] = {
    "negative SD": (
        lambda g: _edit(g, lambda d: d["keys"][0]["mean"].update(sd_log=-0.1)),
        "p.json: malformed noise profile at $.keys[0].mean.sd_log: -0.1 is less than the minimum of 0",
    ),
    "NaN": (
        lambda g: g.replace('"sd_log": ', '"sd_log": NaN, "x": ', 1),
        "p.json: malformed noise profile at $.keys[0].total.sd_log: NaN is not of type 'number'",
    ),
    "unknown kind": (
        lambda g: _edit(g, lambda d: d["keys"][0].update(kind="stream")),
        "p.json: malformed noise profile at $.keys[0].kind: 'stream' is not one of",
    ),
    "a width edited by hand": (
        lambda g: _edit(g, lambda d: d["keys"][0]["mean"].update(sd_log=d["keys"][0]["mean"]["sd_log"] * 0.5)),
        "p.json: malformed noise profile at $.keys[0]: does not match the runs it was measured from",
    ),
    "a key removed": (
        lambda g: _edit(g, lambda d: d["keys"].pop()),
        "p.json: malformed noise profile at $.keys[",
    ),
    "a partial key invented": (
        lambda g: _edit(g, lambda d: d["partial"].append({"kind": "kernel", "key": "x", "runs": 1})),
        "p.json: malformed noise profile at $.partial: does not match the runs",
    ),
    "run count disagrees": (
        lambda g: _edit(g, lambda d: d.update(runs=7)),
        "p.json: malformed noise profile at $.runs: 7 runs, 3 fingerprints and 3 sources",
    ),
    "a run that is no fingerprint": (
        lambda g: _edit(g, lambda d: d["fingerprints"][1].update(kernels=5)),
        "p.json fingerprints[1]: malformed fingerprint at $.kernels",
    ),
    "runs of different GPUs": (
        lambda g: _edit(g, lambda d: d["fingerprints"][2]["meta"]["gpus"][0].update(name="NVIDIA A100")),
        "p.json fingerprints[2]: GPU model 'NVIDIA A100' differs from the other runs of its side",
    ),
    "another format": (
        lambda g: _edit(g, lambda d: d.update(format="nsysdiff-run-set")),
        'p.json: not an nsysdiff noise profile (no "format": "nsysdiff-noise-profile")',
    ),
    "a later version": (
        lambda g: _edit(g, lambda d: d.update(version=2)),
        "p.json: noise profile format version 2 is not supported (this nsysdiff reads version 1)",
    ),
    "nested too deeply": (
        lambda g: "[" * 100_000 + "]" * 100_000,
        "p.json: not a noise profile (JSON nested too deeply)",
    ),
    "huge integer in a run": (
        lambda g: _edit(g, lambda d: d["fingerprints"][0]["kernels"][0].update(calls=2**70)),
        "p.json fingerprints[0]: malformed fingerprint at $.kernels[0].calls: 'an integer of 22 digits' is not of type "
        "'integer'",
    ),
    "huge integer": (
        lambda g: g.replace('"runs": 3', '"runs": ' + "9" * 5000, 1),
        "p.json: malformed noise profile at $.runs: an integer of 5000 digits is not of type 'integer'",
    ),
}


@pytest.mark.parametrize("case", HOSTILE, ids=list(HOSTILE))
def test_hostile_profiles_exit_2_in_one_line(good: str, case: str, tmp_path: Path) -> None:
    edit, message = HOSTILE[case]
    path = tmp_path / "p.json"
    path.write_text(edit(good), encoding="utf-8")
    with pytest.raises(FingerprintError) as info:
        noise.profile_from_json(path.read_text(encoding="utf-8"), "p.json")
    assert message in str(info.value) and "\n" not in str(info.value)
    b, c = fpspec.saved_pair(tmp_path, {GEMM: (100, 10_000_000)}, {GEMM: (100, 10_000_000)})
    code, stdout, err = run_cli("diff", b, c, "--noise-profile", str(path))
    assert (code, stdout) == (2, "") and err.count("\n") == 1 and str(path) in err


def _mutate(rng: np.random.Generator, doc: Any) -> None:
    """Replace, delete or retype one value anywhere in the document, in place."""
    hostile: list[Any] = [None, -1, 0, 1e308, -0.5, "x", "", [], {}, True, 2**70, [1, "a"], {"k": None}]
    parent: Any = None
    key: Any = None
    node = doc
    for _ in range(int(rng.integers(1, 8))):
        children = list(node.items()) if isinstance(node, dict) else list(enumerate(node))
        if not children:
            break
        key, child = children[int(rng.integers(len(children)))]
        parent = node
        if not isinstance(child, (dict, list)) or rng.random() < 0.3:
            break
        node = child
    if parent is None:
        return
    if isinstance(parent, dict) and rng.random() < 0.2:
        del parent[key]
    else:
        parent[key] = hostile[int(rng.integers(len(hostile)))]


def test_mutated_profiles_are_refused_in_one_line_or_read(good: str) -> None:
    """300 random edits of a good profile (a value replaced, retyped or deleted, anywhere,
    the embedded fingerprints included): each is read, or refused with one line naming
    the file; nothing else escapes."""
    rng = np.random.default_rng(12)
    refused = 0
    for _ in range(300):
        doc = json.loads(good)
        _mutate(rng, doc)
        try:
            noise.profile_from_json(json.dumps(doc), "p.json")
        except FingerprintError as e:
            refused += 1
            assert str(e).startswith("p.json") and "\n" not in str(e), str(e)
    assert refused > 200


def test_oversized_profile_is_refused_before_reading(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(inputs, "FINGERPRINT_MAX_BYTES", 1000)
    path = tmp_path / "big.json"
    path.write_text(" " * 1001, encoding="utf-8")
    with pytest.raises(FingerprintError, match=r"big\.json: 1001 bytes, larger than"):
        api.load_noise_profile(path)


def test_a_trace_is_not_a_profile(tmp_path: Path) -> None:
    trace = _trace(tmp_path / "t.sqlite", 1.0)
    with pytest.raises(FingerprintError, match=r"t\.sqlite: not a noise profile \(an SQLite export\)"):
        api.load_noise_profile(trace)
    with pytest.raises(FingerprintError, match=r"none\.json: no such file"):
        api.load_noise_profile(tmp_path / "none.json")


# --- budgets against the profile, end to end ------------------------------------------------

TIGHT = (
    "version: 1\nrules:\n  - id: gemm-tight\n    kind: budget\n    kernel: sgemm\n    metric: mean\n"
    "    max_ratio: 1.01x\n"
)
NOISY = (
    "version: 1\nrules:\n  - id: gemm-noise\n    kind: budget\n    kernel: sgemm\n    metric: mean\n"
    "    max_noise_widths: 3\n    min_ratio: 1.02x\n"
)


@pytest.fixture()
def calibrated(tmp_path: Path) -> tuple[Path, str, str, str]:
    """A profile of 6 runs with 2% noise on the GEMM, and a base, an A/A candidate and a
    candidate 30% slower per GEMM call, all saved as fingerprints."""
    rng = np.random.default_rng(11)
    sigmas = {GEMM: 0.02, NORM: 0.002}
    profile = noise.measure(_run_set([_jittered(rng, sigmas) for _ in range(6)]))
    path = tmp_path / "noise.json"
    path.write_text(noise.profile_to_json(profile), encoding="utf-8")
    saved = []
    for name, scale in (("base", 1.0), ("same", 1.0), ("slow", 1.3)):
        p = tmp_path / f"{name}.json"
        kernels = {GEMM: (100, round(10_000_000 * scale)), NORM: (100, 10_000_000)}
        fp = fpspec.fingerprint(kernels, source=f"{name}.sqlite")
        p.write_text(fingerprint_to_json(fp), encoding="utf-8")
        saved.append(str(p))
    return path, saved[0], saved[1], saved[2]


def test_a_budget_below_the_noise_is_inconclusive(calibrated: tuple[Path, str, str, str], tmp_path: Path) -> None:
    profile, base, same, _ = calibrated
    rules = tmp_path / "tight.yaml"
    rules.write_text(TIGHT, encoding="utf-8")
    # Without the profile: exactly today's verdict (a pass: no change at all).
    assert run_cli("diff", base, same, "--rules", str(rules))[0] == 0
    code, stdout, err = run_cli(
        "diff", base, same, "--rules", str(rules), "--noise-profile", str(profile), "--width", "200"
    )
    assert (code, err) == (int(ExitCode.INCONCLUSIVE), "")
    first, reason = stdout.splitlines()[:2]
    assert first.startswith("nsysdiff: INCONCLUSIVE (exit 3) · one workload · too small to tell (the reason below) · ")
    assert reason.startswith("  inconclusive: rule 'gemm-tight': limit +1.0% is ")
    assert "is below the measured noise ±" in reason and "of the per-call mean of kernel:sgemm over 6 runs" in reason


def test_a_failing_rule_decides_over_an_inconclusive_one(
    calibrated: tuple[Path, str, str, str], tmp_path: Path
) -> None:
    profile, base, same, _ = calibrated
    rules = tmp_path / "both.yaml"
    rules.write_text(
        TIGHT + "  - id: calls\n    kind: budget\n    whole: trace\n    metric: total_time\n    max_value: 1ms\n",
        encoding="utf-8",
    )
    code, stdout, _ = run_cli(
        "diff", base, same, "--rules", str(rules), "--noise-profile", str(profile), "--width", "200"
    )
    assert code == int(ExitCode.REGRESSION)
    assert "  note: rule 'gemm-tight': limit +1.0% is below the measured noise" in stdout


def test_a_rule_at_3_noise_widths(calibrated: tuple[Path, str, str, str], tmp_path: Path) -> None:
    profile, base, same, slow = calibrated
    rules = tmp_path / "noisy.yaml"
    rules.write_text(NOISY, encoding="utf-8")
    assert run_cli("diff", base, same, "--rules", str(rules), "--noise-profile", str(profile))[0] == 0
    code, stdout, _ = run_cli(
        "diff", base, slow, "--rules", str(rules), "--noise-profile", str(profile), "--width", "200"
    )
    assert code == int(ExitCode.REGRESSION)
    assert "gemm-noise · kernel:sgemm" in stdout and "noise widths vs limit max_noise_widths 3 (" in stdout


def test_the_rule_file_names_its_profile(calibrated: tuple[Path, str, str, str], tmp_path: Path) -> None:
    _, base, _, slow = calibrated
    rules = tmp_path / "noisy.yaml"
    rules.write_text(NOISY.replace("version: 1\n", "version: 1\nnoise_profile: noise.json\n"), encoding="utf-8")
    assert run_cli("rules", "validate", str(rules))[0] == 0
    assert run_cli("diff", base, slow, "--rules", str(rules))[0] == int(ExitCode.REGRESSION)


def test_a_noise_limit_without_a_profile_fails_before_reading(tmp_path: Path) -> None:
    rules = tmp_path / "noisy.yaml"
    rules.write_text(NOISY, encoding="utf-8")
    assert run_cli("rules", "validate", str(rules))[0] == 0  # the profile may come with the diff
    code, stdout, err = run_cli(
        "diff", str(tmp_path / "missing-a.sqlite"), str(tmp_path / "missing-b.sqlite"), "--rules", str(rules)
    )
    assert (code, stdout) == (2, "")
    assert err == (
        f"nsysdiff: error: {rules}:3: rule 'gemm-noise': key 'max_noise_widths': needs a noise profile: give "
        "--noise-profile FILE, or noise_profile: FILE in the rule file (make one with "
        "`nsysdiff noise RUN... -o FILE`)\n"
    )


def test_noise_profile_with_no_rules_is_a_usage_error(calibrated: tuple[Path, str, str, str]) -> None:
    profile, base, same, _ = calibrated
    code, _, err = run_cli("diff", base, same, "--no-rules", "--noise-profile", str(profile))
    assert code == 2
    assert err == "nsysdiff: error: --noise-profile judges rules; --no-rules judges none: give one of them\n"


def test_a_3_width_rule_calibrated_on_simulated_pairs(tmp_path: Path) -> None:
    """200 simulated A/A pairs and 200 pairs with a planted +10% per-call regression, 1%
    noise, the profile from 10 other runs: the 3-width rule raises at most 2% false alarms
    (about 0.75% expected: Student's t with 9 degrees of freedom past 3) and finds at least
    99% of the regressions (10% is about 6.7 widths of 1.4%)."""
    rng = np.random.default_rng(42)
    sigmas = {GEMM: 0.01}
    profile = noise.measure(_run_set([_jittered(rng, sigmas) for _ in range(10)]))
    rules = tmp_path / "r.yaml"
    rules.write_text(NOISY.replace("min_ratio: 1.02x", "min_ratio: 1.01x"), encoding="utf-8")
    ruleset = attach(load_rules([str(rules)]), profile)
    today = date(2026, 1, 1)
    alarms = found = 0
    for _ in range(200):
        base = _jittered(rng, sigmas)
        alarms += bool(evaluate(compare(base, _jittered(rng, sigmas)), ruleset, today=today)[0])
        found += bool(evaluate(compare(base, _jittered(rng, sigmas, {GEMM: 1.10})), ruleset, today=today)[0])
    assert alarms <= 4, alarms
    assert found >= 198, found


def test_a_profile_of_another_gpu_does_not_fit(calibrated: tuple[Path, str, str, str], tmp_path: Path) -> None:
    profile, _, same, _ = calibrated
    other = tmp_path / "a100.json"
    other.write_text(
        fingerprint_to_json(fpspec.fingerprint({GEMM: (100, 10_000_000)}, gpu="NVIDIA A100", source="a100.sqlite")),
        encoding="utf-8",
    )
    rules = tmp_path / "tight.yaml"
    rules.write_text(TIGHT, encoding="utf-8")
    code, stdout, err = run_cli("diff", str(other), same, "--rules", str(rules), "--noise-profile", str(profile))
    assert (code, stdout) == (2, "")
    assert err == (
        "nsysdiff: error: the noise profile does not fit the base: a100.sqlite: GPU model 'NVIDIA A100' differs "
        "from the other runs of its side (aa0.sqlite: 'NVIDIA H200'); runs of one side must be captured alike\n"
    )


def test_every_format_says_too_small_to_tell(calibrated: tuple[Path, str, str, str], tmp_path: Path) -> None:
    profile, base, same, _ = calibrated
    rules = tmp_path / "tight.yaml"
    rules.write_text(TIGHT, encoding="utf-8")
    args = ("diff", base, same, "--rules", str(rules), "--noise-profile", str(profile))
    reason = "rule 'gemm-tight': limit +1.0% is below the measured noise ±"
    out: dict[str, str] = {}
    for fmt in ("text", "markdown", "json", "github", "junit", "csv"):
        code, stdout, err = run_cli(*args, "--format", fmt, "--width", "200")
        assert (code, err) == (int(ExitCode.INCONCLUSIVE), ""), fmt
        out[fmt] = stdout
    assert "INCONCLUSIVE (exit 3) · one workload · too small to tell (the reason below)" in out["text"]
    assert "  inconclusive: " + reason in out["text"]
    assert "> Too small to tell: a limit is within the measured noise:" in out["markdown"]
    doc = json.loads(out["json"])
    assert doc["outcome"] == "inconclusive" and doc["reasons"][0].startswith(reason)
    assert [f.get("inconclusive") for f in doc["findings"]] == [True]
    assert doc["findings"][0]["fails"] is False
    assert out["github"].startswith("::warning title=gemm-tight%3A kernel%3Asgemm::")
    assert 'type="inconclusive"' in out["junit"]
    details = run_cli(*args, "--details", "--width", "200")[1]
    assert "error, inconclusive gemm-tight · kernel:sgemm" in details


def test_a_real_capture_twice_has_no_noise(tmp_path: Path) -> None:
    """There are no real A/A captures (the H100 directory holds single captures): the same
    capture given twice is the degenerate A/A pair, with a width of 0 everywhere. Judged
    against it, no limit is too small to tell, and a noise-width budget with a min_ratio
    fails exactly the kernels that grew past it per call."""
    bs1 = real_trace("h100/example_bs1")
    path = tmp_path / "noise.json"
    # The same file twice is refused (it would pass for a quiet build); the degenerate pair
    # is made on purpose here: the capture's fingerprint, and a copy whose capture ends 1 ns later.
    code, _, err = run_cli("noise", str(bs1), str(bs1), "-o", str(path))
    assert code == 2 and "the same file as" in err and not path.exists()
    first, second = tmp_path / "a.json", tmp_path / "b.json"
    assert run_cli("fingerprint", str(bs1), "-o", str(first))[0] == 0
    doc = json.loads(first.read_text(encoding="utf-8"))
    doc["meta"]["capture_end_ns"] += 1
    second.write_text(json.dumps(doc), encoding="utf-8")
    code, stdout, err = run_cli("noise", str(first), str(second), "-o", str(path), "--width", "120")
    assert (code, err) == (0, "")
    assert stdout.startswith("nsysdiff noise: 2 runs of one build · NVIDIA H100 80GB HBM3")
    profile = api.load_noise_profile(path)
    assert profile.partial == () and all(k.total.sd_log == 0 and k.mean.sd_log == 0 for k in profile.keys)
    rules = tmp_path / "rules.yaml"
    rules.write_text(
        "version: 1\nnoise_profile: noise.json\nrules:\n"
        "  - id: per-call\n    kind: budget\n    kernel: .\n    each: true\n    metric: mean\n"
        "    max_noise_widths: 3\n    min_ratio: 3x\n"
        "  - id: tight\n    kind: budget\n    whole: trace\n    max_ratio: 1.01x\n    level: warning\n",
        encoding="utf-8",
    )
    # The same build with its gather 5x slower per call (batch 16 against 1 would be a
    # resized workload, whose per-call times measure the workload and are not judged).
    slower = tmp_path / "slower.sqlite"
    shutil.copyfile(bs1, slower)
    with sqlite3.connect(slower) as con:
        con.execute(
            'UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET "end" = start + 5 * ("end" - start) WHERE shortName IN '
            "(SELECT id FROM StringIds WHERE value = 'indexSelectSmallIndex')"
        )
    con.close()
    code, stdout, _ = run_cli("diff", str(bs1), str(slower), "--rules", str(rules), "-f", "json")
    assert code == int(ExitCode.REGRESSION)
    doc = json.loads(stdout)
    assert not any(f.get("inconclusive") for f in doc["findings"])
    failed = {f["subject"] for f in doc["findings"] if f["fails"]}
    assert "indexSelectSmallIndex" in " ".join(failed)
    per_call = [f for f in doc["findings"] if f["rule_id"] == "per-call"]
    # Only the kernel that grew more than 3x per call breaches.
    assert [f["subject"] for f in per_call] == ["indexSelectSmallIndex"]
    assert per_call[0]["observed_value"] > 3


def test_a_scoped_profile_fits_only_a_diff_of_its_scope(tmp_path: Path) -> None:
    """A profile taken per decode step judges per-step budgets of a diff with that scope;
    a diff of the whole traces is another selection, and the profile is refused for it."""
    from fingerprint.test_scope import serving

    runs = [str(serving(tmp_path / f"aa{i}.sqlite", 6, slow=f)) for i, f in enumerate([1.0, 1.02, 0.98])]
    profile = tmp_path / "noise.json"
    scope = ("--nvtx", "decode", "--per", "decode_step")
    code, _, err = run_cli("noise", *runs, *scope, "-o", str(profile), "-q")
    assert (code, err) == (0, "")
    assert {(fp.scope.per, fp.scope.steps) for fp in api.load_noise_profile(profile).runs.runs} == {("decode_step", 6)}
    base = str(serving(tmp_path / "base.sqlite", 6))
    cand = str(serving(tmp_path / "cand.sqlite", 8, slow=1.5))
    rules = tmp_path / "steps.yaml"
    rules.write_text(
        "version: 1\nrules:\n  - id: step\n    kind: budget\n    whole: trace\n    per: decode_step\n"
        "    max_noise_widths: 3\n    min_ratio: 1.05x\n",
        encoding="utf-8",
    )
    judged = ("--rules", str(rules), "--noise-profile", str(profile), "-f", "json")
    code, stdout, err = run_cli("diff", base, cand, *scope, *judged)
    assert (code, err) == (int(ExitCode.REGRESSION), "")
    finding = json.loads(stdout)["findings"][0]
    assert "per decode_step (6 -> 8 steps)" in finding["evidence"] and "noise widths" in finding["observed"]
    code, stdout, err = run_cli("diff", base, cand, *judged)
    assert (code, stdout) == (2, "")
    assert err.startswith("nsysdiff: error: the noise profile does not fit the base: ") and "scope" in err


def test_a_run_set_with_a_huge_integer_is_refused(tmp_path: Path) -> None:
    """An over-long integer inside a saved run set is refused like one in a fingerprint
    (it used to reach the re-serialisation of the run and end as an internal error)."""
    traces = [_trace(tmp_path / f"aa{i}.sqlite", f) for i, f in enumerate([1.0, 1.02])]
    saved = tmp_path / "runs.json"
    assert run_cli("fingerprint", "--run-set", *traces, "-o", str(saved))[0] == 0
    doc = json.loads(saved.read_text(encoding="utf-8"))
    doc["runs"][1]["kernels"][0]["calls"] = 2**70
    saved.write_text(json.dumps(doc), encoding="utf-8")
    code, stdout, err = run_cli("noise", str(saved), traces[0])
    assert (code, stdout) == (2, "")
    assert err == (
        f"nsysdiff: error: {saved} runs[1]: malformed fingerprint at $.kernels[0].calls: 'an integer of 22 digits' "
        "is not of type 'integer'\n"
    )


def test_levels_strict_and_waivers_of_a_limit_within_the_noise(
    calibrated: tuple[Path, str, str, str], tmp_path: Path
) -> None:
    """Too small to tell decides the outcome only at a failing level, and a waiver silences it."""
    profile, base, same, _ = calibrated
    judged = ("diff", base, same, "--noise-profile", str(profile), "--rules")
    warning = tmp_path / "warning.yaml"
    warning.write_text(TIGHT + "    level: warning\n", encoding="utf-8")
    assert run_cli(*judged, str(warning))[0] == int(ExitCode.PASS)
    assert run_cli(*judged, str(warning), "--strict")[0] == int(ExitCode.INCONCLUSIVE)
    waived = tmp_path / "waived.yaml"
    waived.write_text(
        TIGHT + "waivers:\n  - rule: gemm-tight\n    subject: kernel:sgemm\n"
        "    reason: calibrating\n    expires: 2999-12-31\n",
        encoding="utf-8",
    )
    code, stdout, _ = run_cli(*judged, str(waived), "-f", "json")
    assert code == int(ExitCode.PASS)
    assert json.loads(stdout)["findings"][0]["waived"] is True
