"""The steps of two sides compared: the time per step, its exact attribution, host calls per step."""

from __future__ import annotations

import dataclasses
import random

import fpspec
import pytest

from nsysdiff.compare import steps as sd
from nsysdiff.compare.diff import compare
from nsysdiff.fingerprint.model import Fingerprint
from nsysdiff.fingerprint.steps import HostCalls, Step, StepPart, StepParts, Steps
from nsysdiff.trace.records import HostFamily


def _random_steps(rng: random.Random, n: int) -> Steps:
    """Steps with arbitrary integer parts (each period their exact sum) and host calls."""
    out = []
    for i in range(n):
        parts = [rng.randrange(0, 5_000_000) for _ in StepPart]
        if i == n - 1:
            parts[-1] = 0  # the last step's period is its duration: nothing between
        period = sum(parts)
        calls = tuple(
            HostCalls(f, rng.randrange(1, 50), rng.randrange(1, 10**6), rng.randrange(0, 10**4))
            for f in HostFamily
            if rng.random() < 0.7
        )
        out.append(Step(i * 10**7, period - parts[-1], period, StepParts(*parts), calls, parts[0]))
    return Steps("decode_step", "", tuple(out), ())


@pytest.mark.parametrize("seed", range(20))
def test_attribution_adds_up_to_the_nanosecond(seed: int) -> None:
    rng = random.Random(seed)
    b, c = _random_steps(rng, rng.randrange(1, 40)), _random_steps(rng, rng.randrange(1, 40))
    d = sd.compare(b, c)
    assert d is not None
    # Exact in integers: every side's part totals add up to its period total...
    for side, steps in ((d.base, b), (d.candidate, c)):
        assert sum(side.part_totals) == side.period_total_ns == sum(s.period_ns for s in steps.steps)
    # ...so the change of the mean period is exactly the sum of the parts' changes
    # (cross-multiplied by the step counts to stay in integers).
    nb, nc = d.base.steps, d.candidate.steps
    parts = sum(ct * nb - bt * nc for bt, ct in zip(d.base.part_totals, d.candidate.part_totals, strict=True))
    assert parts == d.candidate.period_total_ns * nb - d.base.period_total_ns * nc
    assert sum(p.delta_ns for p in d.parts) == pytest.approx(d.delta_ns, abs=1e-6)


def test_counts_per_step_are_exact_and_the_first_line_names_them() -> None:
    from nsysdiff.render import steps as lines

    base = fpspec.steps(
        32,
        28_000_000,
        27_800_000,
        parts={"compute": 2_000_000},
        calls={"launch": (696, 8_000), "sync": (1, 11_000), "copy_d2h": (1, 75_000)},
    )
    cand = fpspec.steps(
        32,
        28_100_000,
        27_900_000,
        parts={"compute": 2_000_000},
        calls={"launch": (696, 8_000), "sync": (2, 11_000), "copy_d2h": (2, 75_000)},
    )
    d = sd.compare(base, cand)
    assert d is not None
    changes = [(f.family, f.delta_calls) for f in d.count_changes()]
    assert changes == [(HostFamily.SYNC, 1.0), (HostFamily.COPY_D2H, 1.0)]
    assert lines.first_lines(d)[1] == "+1 sync call and +1 D2H copy per step"


def test_a_gap_between_steps_is_named_with_kernels_unchanged() -> None:
    from nsysdiff.render import steps as lines

    base = fpspec.steps(32, 28_000_000, 27_800_000, parts={"compute": 2_000_000})
    cand = fpspec.steps(32, 56_000_000, 27_800_000, parts={"compute": 2_000_000})
    d = sd.compare(base, cand)
    assert d is not None
    assert [p.part for p in d.material()] == [StepPart.BETWEEN]
    assert lines.first_lines(d)[0] == (
        "time per step 27.99 ms → 55.12 ms (1.97x): +27.12 ms between steps, kernels unchanged"
    )


def test_tail_is_p99_over_p50() -> None:
    flat = sd.side(fpspec.steps(100, 10_000_000, 9_000_000))
    tailed = sd.side(fpspec.steps(100, 10_000_000, 9_000_000, slow_every=10, slow_ns=10_000_000))
    assert flat.tail == pytest.approx(1.0, abs=0.02) and not flat.systematic_tail
    assert tailed.tail is not None and tailed.tail > sd.TAIL_RATIO and tailed.systematic_tail


def test_the_diff_carries_steps_only_when_both_sides_have_them() -> None:
    fp = fpspec.fingerprint({"gemm_a": (10, 1_000_000)})
    with_steps = dataclasses.replace(fp, steps=fpspec.steps(4, 10_000_000, 9_000_000))
    assert compare(fp, fp).steps is None
    assert compare(fp, with_steps).steps is None
    d = compare(with_steps, with_steps)
    assert d.steps is not None and d.steps.delta_ns == 0 and d.steps.ratio() == 1.0


def _run(period_ns: int, launch_ns: int) -> Fingerprint:
    fp = fpspec.fingerprint({"gemm_a": (10, 1_000_000)})
    steps = fpspec.steps(
        8,
        period_ns,
        period_ns - 200_000,
        parts={"compute": 1_000_000},
        calls={"launch": (100, launch_ns), "sync": (1, 10_000)},
    )
    return dataclasses.replace(fp, steps=steps)


def test_several_runs_compare_step_figures_with_the_other_keys() -> None:
    from nsysdiff.compare.rundiff import compare_sides
    from nsysdiff.fingerprint import runset
    from nsysdiff.fingerprint.runset import KeyKind

    base = runset.run_set([_run(10_000_000 + k * 100_000, 8_000) for k in range(3)], ["b0", "b1", "b2"])
    cand = runset.run_set([_run(20_000_000 + k * 100_000, 8_000) for k in range(3)], ["c0", "c1", "c2"])
    d = compare_sides(base, cand)
    assert d.runs is not None and d.runs.steps is not None
    assert [len(x) for x in d.runs.steps] == [3, 3]
    keys = {k.key: k for k in d.runs.keys if k.kind is KeyKind.STEP}
    wanted = {"period", "duration", "part:between", "part:compute", "part:host", "calls:launch", "calls:sync"}
    assert wanted <= set(keys)
    period = keys["period"].total
    assert period.ci_low is not None and period.ci_low > 1.8  # the period doubled in every run
    assert keys["calls:launch"].calls.ratio == 1.0  # counts per step: exact, unchanged
    # One correction over every key: the step keys are among those counted.
    assert d.runs.tested >= len(keys)


def test_the_noise_profile_measures_step_figures() -> None:
    from nsysdiff.fingerprint import noise, runset
    from nsysdiff.fingerprint.runset import KeyKind

    rs = runset.run_set([_run(10_000_000 + k * 300_000, 8_000 + 100 * k) for k in range(3)], ["a", "b", "c"])
    profile = noise.measure(rs)
    steps = {k.key: k for k in profile.keys if k.kind is KeyKind.STEP}
    assert steps["period"].total.width > 0 and steps["calls:launch"].mean.width > 0
    again = noise.profile_from_json(noise.profile_to_json(profile), "p.json")
    assert [k.key for k in again.keys if k.kind is KeyKind.STEP] == list(steps)
