"""The distribution statistics of a diff, against scipy's own."""

from __future__ import annotations

import numpy as np
import pytest

from nsysdiff.model import QUANTILE_GRID
from nsysdiff.stats import compare_sketches

sps = pytest.importorskip("scipy.stats")


@pytest.mark.parametrize("seed", range(20))
def test_compare_sketches_equals_scipy(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = len(QUANTILE_GRID)
    # Integer-valued sketches with repeats, so ties between and within sketches occur.
    b = np.sort(rng.integers(100, 100 + 3 * (seed + 1), n)).astype(np.float64)
    c = np.sort(rng.integers(100 + seed, 110 + 3 * (seed + 1), n)).astype(np.float64)
    got = compare_sketches(b.tolist(), c.tolist())
    u = sps.mannwhitneyu(c, b, alternative="two-sided").statistic
    ks = sps.ks_2samp(b, c, method="asymp").statistic
    assert got == (float(u) / (n * n), float(ks))


def test_compare_sketches_does_not_import_scipy() -> None:
    import subprocess
    import sys

    code = (
        "import sys; from nsysdiff.stats import compare_sketches; "
        "compare_sketches([1.0, 2.0, 3.0], [2.0, 3.0, 4.0]); "
        "print('scipy' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
