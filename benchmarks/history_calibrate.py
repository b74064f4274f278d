#!/usr/bin/env python3
"""The false-alarm rate and the power of ``nsysdiff history changes``, measured on
simulated histories (the figures docs/history.md states).

Each history is one key over ``--commits`` commits of 3 runs; a run's value is log-normal
noise of width ``--sd`` (the scan is scale-free: only the width relative to a step
matters). Pure-noise histories give the false-alarm rate: the share of keys with any
step or drift. Histories with one step of k noise widths at 2/3 of the way give the power:
the share where a step is found within one commit of it.

Usage: ``python benchmarks/history_calibrate.py [--histories 20000] [--max-pvalue 1e-5]``.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from scipy.stats import beta

from nsysdiff.history import changes


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--histories", type=int, default=20_000)
    ap.add_argument("--commits", type=int, default=60)
    ap.add_argument("--sd", type=float, default=0.003)
    ap.add_argument("--max-pvalue", type=float, default=changes.DEFAULT_MAX_PVALUE)
    ap.add_argument("--window", type=int, default=changes.DEFAULT_WINDOW)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    engine = changes.engine()
    rng = np.random.default_rng(a.seed)
    commits = tuple(f"c{i}" for i in range(a.commits))
    at = 2 * a.commits // 3

    def scan(step: float) -> tuple[bool, bool, bool]:
        runs = np.exp(rng.normal(0.0, a.sd, (a.commits, 3))) * 1e6
        runs[at:] *= step
        steps, drifts = changes.key_changes(engine, "kernel", "k", commits, runs.tolist(), a.max_pvalue, a.window)
        return bool(steps), bool(drifts), any(abs(s.index - at) <= 1 for s in steps)

    t = time.perf_counter()
    results = [scan(1.0) for _ in range(a.histories)]
    seconds = time.perf_counter() - t
    alarms = sum(s or d for s, d, _ in results)
    upper = float(beta.ppf(0.95, alarms + 1, a.histories - alarms))
    print(
        f"pure noise: {a.histories:,} histories of {a.commits} commits x 3 runs, max p {a.max_pvalue:g}, "
        f"window {a.window}: {alarms} with a change point ({sum(s for s, _, _ in results)} steps, "
        f"{sum(d for _, d, _ in results)} drifts) = {alarms / a.histories:.4%}, 95% upper bound {upper:.4%} "
        f"({seconds / a.histories * 1e3:.2f} ms per key)"
    )
    per = max(200, a.histories // 20)
    for widths in (1, 2, 3, 5):
        step = float(np.exp(widths * a.sd))
        found = sum(hit for _, _, hit in (scan(step) for _ in range(per)))
        print(
            f"step of {widths} run widths ({(step - 1):.2%}) at commit {at}: found at {at}+/-1 in "
            f"{found / per:.1%} of {per:,}"
        )


if __name__ == "__main__":
    main()
