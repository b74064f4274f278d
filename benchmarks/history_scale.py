#!/usr/bin/env python3
"""The history store at scale: 1,000 commits x 3 runs of a 200-kernel fingerprint.

Builds the store once (``--keep DIR`` reuses it), then measures each command as a user
runs it, as a subprocess (interpreter start-up and imports count), best of ``--repeat``:

- ``nsysdiff history add STORE FP --ref main --commit SHA`` on the full store (target < 1 s);
- ``nsysdiff history changes STORE --ref main`` over all 1,000 commits (target < 10 s);
- ``nsysdiff history report STORE -o DIR`` over all 1,000 commits: the dashboard site, a
  page per changed or largest key (target < 0.1 s of CPU per page, the scan included);
- a history baseline: ``api.history_baseline('history:STORE@main~5', FP)`` in-process
  (target < 2 s), and the whole ``nsysdiff --base history:STORE@main~5 --candidate FP
  --no-rules --format json`` beside it;
- the store's size on disk (target < 200 MB).

Each time is reported with the child's CPU time (user + system, ``os.wait4``): the
machine may be shared, and CPU time is steadier than wall time there. Speed targets are
printed PASS/MISS; the exit status is 0 unless a command fails.

Usage: ``python benchmarks/history_scale.py [--commits 1000] [--runs 3] [--kernels 200] [--keep DIR]``.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

import fpspec  # noqa: E402
import histories  # noqa: E402

from nsysdiff import api  # noqa: E402
from nsysdiff.fingerprint.model import Fingerprint, fingerprint_to_json  # noqa: E402
from nsysdiff.history import store as st  # noqa: E402


def build_base(kernels: int) -> Fingerprint:
    """A fingerprint of ``kernels`` kernels in a dozen families and the usual categories."""
    rng = np.random.default_rng(200)
    shapes = (
        "nvjet_sm90_tst_{i}x128_64x4_h_bz_TNT",
        "void at::native::vectorized_elementwise_kernel<4, op_{i}>()",
        "void at::native::reduce_kernel<512, 1, op_{i}>()",
        "triton_poi_fused_add_{i}",
        "flash_fwd_kernel_{i}",
        "void cutlass::Kernel2<cutlass_80_gemm_{i}>()",
    )
    spec = {}
    for i in range(kernels):
        name = shapes[i % len(shapes)].format(i=i)
        calls = int(rng.integers(32, 4096))
        spec[name] = (calls, int(calls * rng.uniform(2_000, 200_000)))
    return fpspec.fingerprint(spec, gpu="NVIDIA H100 80GB HBM3", nvtx={"decode_step": (32, 80_000_000)})


def build_store(path: Path, base: Fingerprint, commits: int, runs: int) -> float:
    rng = np.random.default_rng(1)
    names = [k.demangled for k in base.kernels]
    s = st.create_or_open(path)
    t = time.perf_counter()
    for c in range(commits):
        for _ in range(runs):
            f = np.exp(rng.normal(0.0, 0.003, len(names))) * (1.08 if c >= 2 * commits // 3 else 1.0)
            s.add(histories.scaled(base, dict(zip(names, f.tolist(), strict=True))), ref="main", commit=f"{c:040x}")
    s.close()
    return time.perf_counter() - t


def timed(argv: list[str], repeat: int) -> tuple[float, float]:
    """Best wall and CPU seconds of ``argv`` as a child process."""
    best_wall = best_cpu = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t
        if os.waitstatus_to_exitcode(status) != 0:
            raise SystemExit(f"failed: {' '.join(argv)}: {proc.stderr.read().decode() if proc.stderr else ''}")
        best_wall = min(best_wall, wall)
        best_cpu = min(best_cpu, usage.ru_utime + usage.ru_stime)
    return best_wall, best_cpu


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--commits", type=int, default=1000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--kernels", type=int, default=200)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--keep", type=Path, help="Keep (and reuse) the store in DIR.")
    a = ap.parse_args()
    folder = a.keep or Path(tempfile.mkdtemp(prefix="nsysdiff-history-"))
    folder.mkdir(parents=True, exist_ok=True)
    base = build_base(a.kernels)
    store = folder / f"main-{a.commits}x{a.runs}x{a.kernels}.sqlite"
    if not store.exists():
        seconds = build_store(store, base, a.commits, a.runs)
        print(f"built {store} in {seconds:.1f} s ({seconds / (a.commits * a.runs) * 1e3:.1f} ms per run added)")
    fp = folder / "candidate.json"
    fp.write_text(fingerprint_to_json(base), encoding="utf-8")
    py = [sys.executable, "-m", "nsysdiff"]
    size = store.stat().st_size
    keys = len(st.open_store(store).series(st.open_store(store).entries()[:1]))
    print(
        f"store: {a.commits:,} commits x {a.runs} runs of {a.kernels} kernels ({keys} keys per run): "
        f"{size / 1e6:.1f} MB  [{'PASS' if size < 200e6 else 'MISS'} < 200 MB]"
    )

    # Each add is one more run of one more commit: the store grows by --repeat runs.
    add_wall, add_cpu = timed(
        [*py, "history", "add", str(store), str(fp), "--ref", "bench", "--commit", "f" * 40], a.repeat
    )
    print(f"history add: {add_wall:.2f} s wall, {add_cpu:.2f} s CPU  [{'PASS' if add_wall < 1 else 'MISS'} < 1 s]")

    wall, cpu = timed([*py, "history", "changes", str(store), "--ref", "main"], a.repeat)
    print(
        f"history changes ({a.commits:,} commits): {wall:.2f} s wall, {cpu:.2f} s CPU  "
        f"[{'PASS' if wall < 10 else 'MISS'} < 10 s]"
    )

    site = folder / "site"
    wall, cpu = timed([*py, "history", "report", str(store), "--ref", "main", "-o", str(site)], a.repeat)
    pages = sum(1 for _ in site.glob("*.html"))
    print(
        f"history report ({a.commits:,} commits, {pages} pages): {wall:.2f} s wall, {cpu:.2f} s CPU, "
        f"{cpu / pages * 1e3:.0f} ms CPU per page  [{'PASS' if cpu / pages < 0.1 else 'MISS'} < 100 ms per page]"
    )

    best = float("inf")
    cpu_best = float("inf")
    candidate = api.load(fp)
    for _ in range(a.repeat):
        t, c = time.perf_counter(), time.process_time()
        runs = api.history_baseline(f"history:{store}@main~5", candidate)
        best, cpu_best = min(best, time.perf_counter() - t), min(cpu_best, time.process_time() - c)
    assert len(runs.runs) == 5
    print(
        f"history baseline (main~5, in-process): {best:.2f} s wall, {cpu_best:.2f} s CPU  "
        f"[{'PASS' if best < 2 else 'MISS'} < 2 s]"
    )
    wall, cpu = timed(
        [*py, "--base", f"history:{store}@main~5", "--candidate", str(fp), "--no-rules", "--format", "json"], a.repeat
    )
    print(f"diff against history:STORE@main~5 (whole command): {wall:.2f} s wall, {cpu:.2f} s CPU")


if __name__ == "__main__":
    main()
