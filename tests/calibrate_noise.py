"""The calibration table of docs/noise.md: noise-relative budgets on simulated pairs.

``python tests/calibrate_noise.py`` (about 25 s) prints one line per setting. Every
comparison draws a fresh profile of A/A runs, a base run and a candidate run (one
kernel, 100 calls, log-normal noise per run, fixed seed), so the width's own sampling
error counts. Not collected by pytest: the suite checks the same behaviour on 200 pairs
(``tests/fingerprint/test_noise.py``).
"""

from __future__ import annotations

import math
import sys
import tempfile
from datetime import date
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))

import fpspec

from nsysdiff.compare.diff import compare
from nsysdiff.fingerprint import noise, runset
from nsysdiff.fingerprint.model import Fingerprint
from nsysdiff.rules import RuleSet, evaluate, load_rules
from nsysdiff.rules.noise_limits import attach

GEMM = "ampere_sgemm_128x64_nn"
COMPARISONS = 1000
TODAY = date(2026, 1, 1)
WIDTHS = "    max_noise_widths: 3\n"
TIGHT = "    max_ratio: 1.02x\n"


def run(rng: np.random.Generator, sigma: float, scale: float = 1.0) -> Fingerprint:
    return fpspec.fingerprint({GEMM: (100, round(1e7 * scale * math.exp(rng.normal(0.0, sigma))))})


def rules(folder: Path, limit: str) -> RuleSet:
    path = folder / "rules.yaml"
    path.write_text(f"version: 1\nrules:\n  - id: r\n    kind: budget\n    kernel: sgemm\n    metric: mean\n{limit}")
    return load_rules([str(path)])


def trial(rng: np.random.Generator, ruleset: RuleSet, runs: int, sigma: float, change: float) -> tuple[bool, bool]:
    """(failed, inconclusive) of one comparison against a fresh profile (none when runs is 0)."""
    if runs:
        aa = [run(rng, sigma) for _ in range(runs)]
        ruleset = attach(ruleset, noise.measure(runset.run_set(aa, [f"aa{i}" for i in range(runs)])))
    findings, _ = evaluate(compare(run(rng, sigma), run(rng, sigma, change)), ruleset, today=TODAY)
    return any(not f.inconclusive for f in findings), any(f.inconclusive for f in findings)


def main() -> None:
    rng = np.random.default_rng(2026)
    with tempfile.TemporaryDirectory() as d:
        widths, tight = rules(Path(d), WIDTHS), rules(Path(d), TIGHT)
    settings = [
        (widths, "max_noise_widths: 3", 5, 0.01, 1.0),
        (widths, "max_noise_widths: 3", 10, 0.01, 1.0),
        (widths, "max_noise_widths: 3", 5, 0.01, 1.05),
        (widths, "max_noise_widths: 3", 10, 0.01, 1.05),
        (widths, "max_noise_widths: 3", 5, 0.02, 1.10),
        (widths, "max_noise_widths: 3", 10, 0.02, 1.10),
        (tight, "max_ratio: 1.02x", 0, 0.02, 1.0),
        (tight, "max_ratio: 1.02x", 5, 0.02, 1.0),
        (tight, "max_ratio: 1.02x", 0, 0.02, 1.03),
        (tight, "max_ratio: 1.02x", 5, 0.02, 1.03),
        (tight, "max_ratio: 1.02x", 5, 0.005, 1.0),
    ]
    for ruleset, name, runs, sigma, change in settings:
        outcomes = [trial(rng, ruleset, runs, sigma, change) for _ in range(COMPARISONS)]
        failed = sum(f for f, _ in outcomes) / COMPARISONS
        undecided = sum(i for _, i in outcomes) / COMPARISONS
        profile = f"{runs}-run profile" if runs else "no profile"
        print(
            f"{name}, change {change:.2f}x, noise {sigma:.1%}, {profile}: fails {failed:.1%}, "
            f"inconclusive {undecided:.1%}"
        )


if __name__ == "__main__":
    main()
