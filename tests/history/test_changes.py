"""Change points on a simulated history of main: a +8% step in one GEMM at commit 40, a
slow drift, a return to the old level, and pure-noise keys that must stay quiet.

The history is built from a build's fingerprint with each kernel's run-to-run noise
(tests/histories.py): from the real H100 repeats (llm_bs16 and llm_bs16_r2) when they are
present, and from a spec-built decode step with noise in the same range always.
"""

from __future__ import annotations

from pathlib import Path

import histories
import numpy as np
import pytest
from conftest import real_trace
from scipy.stats import binom

from nsysdiff import api
from nsysdiff.fingerprint.model import Fingerprint
from nsysdiff.history import changes
from nsysdiff.history import store as st

GEMM = "nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_TNT"
DRIFT = "nvjet_sm90_tst_64x8_64x16_4x2_h_bz_TNT"
BACK = "nvjet_sm90_tst_64x16_64x16_4x1_v_bz_TNT"
PLANTED = (GEMM, DRIFT, BACK)


def _store(tmp_path: Path, base: Fingerprint, noise: dict[str, float], seed: int = 0) -> Path:
    path = tmp_path / "main.sqlite"
    s = st.create_or_open(path)
    for commit, runs in histories.history(base, noise, histories.done_when_plan(GEMM, DRIFT, BACK), seed=seed):
        for fp in runs:
            s.add(fp, ref="main", commit=commit)
    s.close()
    return path


def _check_done_when(path: Path, base: Fingerprint) -> changes.Changes:
    c = api.history_changes(
        path, "main", max_pvalue=changes.DEFAULT_MAX_PVALUE, window=changes.DEFAULT_WINDOW, last=None
    )
    assert len(c.commits) == 60 and c.runs == 180
    kernel_steps = [s for s in c.steps if s.kind == "kernel"]

    # The step: at commit 40 +/- 1, +8% with an interval around it that excludes no change.
    (step,) = [s for s in kernel_steps if s.key == GEMM]
    assert abs(step.index - 40) <= 1
    assert step.ci_low is not None and step.ci_high is not None
    assert 1.0 < step.ci_low <= 1.08 <= step.ci_high
    assert 1.07 < step.ratio < 1.09 and step.p_value < changes.DEFAULT_MAX_PVALUE

    # The drift: reported as a drift with its slope per commit, not as a staircase of steps.
    (drift,) = [d for d in c.drifts if d.key == DRIFT and d.kind == "kernel"]
    assert drift.ci_low <= 1.0015 <= drift.ci_high and drift.ci_low > 1.0
    assert not [s for s in kernel_steps if s.key == DRIFT]

    # The excursion: up at 15, back at 28 to the level before it.
    up, down = sorted((s for s in kernel_steps if s.key == BACK), key=lambda s: s.index)
    assert abs(up.index - 15) <= 1 and abs(down.index - 28) <= 1
    assert 1.04 < up.ratio < 1.06 and 0.94 < down.ratio < 0.96
    assert down.returns_to == c.commits[up.index]

    # Pure-noise keys: no kernel, family or category without a planted kernel moves (an
    # NVTX range holds every kernel, so it moves with them).
    planted = {(k.kind, k.key) for k in (*c.steps, *c.drifts) if k.key in PLANTED}
    families = {k.family for k in base.kernels if k.demangled in PLANTED}
    categories = {k.category for k in base.kernels if k.demangled in PLANTED}
    quiet = [
        (k.kind, k.key)
        for k in (*c.steps, *c.drifts)
        if (k.kind, k.key) not in planted
        and not (k.kind == "family" and k.key in families)
        and not (k.kind == "category" and k.key in categories)
        and k.kind != "nvtx"
    ]
    assert quiet == []
    return c


@pytest.fixture(scope="module")
def spec_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base, noise = histories.spec_build()
    return _store(tmp_path_factory.mktemp("spec"), base, noise)


def test_done_when_on_a_spec_built_history(spec_store: Path) -> None:
    _check_done_when(spec_store, histories.spec_build()[0])


def test_done_when_on_the_real_h100_repeats(tmp_path: Path) -> None:
    first = api.load(real_trace("h100/llm_bs16"))
    repeat = api.load(real_trace("h100/llm_bs16_r2"))
    noise = histories.noise_of(first, repeat)
    # The repeats' own noise: kernel totals within 0.3% for the large kernels.
    assert noise[GEMM] < 0.003
    _check_done_when(_store(tmp_path, first, noise), first)


def test_false_alarms_on_pure_noise_within_the_stated_rate() -> None:
    """200 histories of 60 commits x 3 runs of 8 keys, each pure noise of its measured width
    (the scan is scale-free, so 8 widths from the spec build's range stand for all): the
    share of keys with any change point stays within the stated rate."""
    _, noise = histories.spec_build()
    widths = list(noise.items())[::3]
    engine = changes.engine()
    rng = np.random.default_rng(2025)
    commits = tuple(f"c{i}" for i in range(60))
    trials = alarms = 0
    for _ in range(200):
        for key, sd in widths:
            runs = [list(np.exp(rng.normal(0.0, sd, 3)) * 1e6) for _ in commits]
            steps, drifts = changes.key_changes(
                engine, "kernel", key, commits, runs, changes.DEFAULT_MAX_PVALUE, changes.DEFAULT_WINDOW
            )
            trials += 1
            alarms += bool(steps or drifts)
    assert trials == 200 * 8
    # Within the stated rate: no more alarms than 99.9% of samples of this size would show
    # at the rate's upper bound.
    assert alarms <= binom.ppf(0.999, trials, changes.FALSE_ALARM_UPPER)


def test_too_short_a_history_finds_nothing(tmp_path: Path) -> None:
    base, noise = histories.spec_build()
    path = tmp_path / "h.sqlite"
    s = st.create_or_open(path)
    for commit, runs in histories.history(base, noise, lambda c, n: 1.5 if c >= 3 else 1.0, commits=5, runs=2):
        for fp in runs:
            s.add(fp, ref="main", commit=commit)
    s.close()
    c = api.history_changes(path, "main", max_pvalue=1e-5, window=30, last=None)
    assert (c.steps, c.drifts, len(c.commits)) == ((), (), 5)


def test_last_scans_the_newest_commits(spec_store: Path) -> None:
    c = api.history_changes(spec_store, "main", max_pvalue=1e-5, window=30, last=30)
    assert c.commits[0] == "0030" + "c0ffee" * 6 and len(c.commits) == 30
    (step,) = [s for s in c.steps if s.kind == "kernel" and s.key == GEMM]
    assert step.commit == "0040" + "c0ffee" * 6


def test_bad_settings_are_usage_errors(tmp_path: Path) -> None:
    base, _ = histories.spec_build()
    path = tmp_path / "h.sqlite"
    s = st.create_or_open(path)
    s.add(base, ref="main", commit="c0")
    s.close()
    with pytest.raises(Exception, match="--max-pvalue"):
        api.history_changes(path, "main", max_pvalue=2.0, window=30, last=None)
    with pytest.raises(Exception, match="--commits"):
        api.history_changes(path, "main", max_pvalue=1e-5, window=2, last=None)


def test_keys_not_in_every_commit_are_structural(tmp_path: Path) -> None:
    """A kernel that appears at commit 20 is a structural change: counted, not scanned."""
    import dataclasses

    base, noise = histories.spec_build()
    newcomer = base.kernels[-1].demangled
    path = tmp_path / "h.sqlite"
    s = st.create_or_open(path)
    for i, (commit, runs) in enumerate(histories.history(base, noise, lambda c, n: 1.0, commits=30, runs=2)):
        for fp in runs:
            if i < 20:
                fp = dataclasses.replace(fp, kernels=tuple(k for k in fp.kernels if k.demangled != newcomer))
            s.add(fp, ref="main", commit=commit)
    s.close()
    c = api.history_changes(path, "main", max_pvalue=1e-5, window=30, last=None)
    assert c.structural >= 1 and all(x.key != newcomer for x in (*c.steps, *c.drifts))
    assert c.structural + c.keys == len({(k, n) for k, n in st.open_store(path).series(st.open_store(path).entries())})


def test_a_step_in_the_time_per_step(tmp_path: Path) -> None:
    """The period per step rises 5% at commit 20 while the number of steps kept varies
    (32 or 30): the scan follows the time per step, not the total."""
    base, _ = histories.spec_build()
    rng = np.random.default_rng(7)
    path = tmp_path / "h.sqlite"
    s = st.create_or_open(path)
    for c in range(40):
        for run in range(2):
            n = 32 if (c + run) % 2 else 30
            per = 3_000_000 * (1.05 if c >= 20 else 1.0)
            periods = [int(p) for p in per * np.exp(rng.normal(0.0, 0.002, n))]
            s.add(histories.with_steps(base, periods), ref="main", commit=f"c{c:02d}")
    s.close()
    c = api.history_changes(path, "main", max_pvalue=1e-5, window=30, last=None)
    (period,) = [x for x in c.steps if (x.kind, x.key) == ("step", "period")]
    assert period.commit == "c20" and 1.04 < period.ratio < 1.06
    assert abs(period.before_ns - 3_000_000) < 30_000
    assert not [x for x in c.steps if x.kind == "kernel"]
    t = api.history_trend(path, "main", "period", "step")
    assert [p.calls for p in t.points[:2]] == [32, 32] and abs(t.points[0].per_call_ns - 3e6) < 30_000
