"""``fold_nvtx`` on names from untrusted traces: same folding as the regex it replaces, linear time."""

from __future__ import annotations

import random
import re
import time

from nsysdiff.fingerprint.reduce import fold_nvtx

# The definition fold_nvtx must keep: the suffix regex as first written (quadratic in the
# name's length, so only run here on short names).
_REFERENCE = re.compile(r",\s*(seq|op_id|stashed seq|sizes|input_op_ids)\s*=.*$")


def test_fold_nvtx_matches_the_suffix_regex_on_random_names() -> None:
    rng = random.Random(20261124)
    pieces = [",", " ", "\n", "\t", "seq", "op_id", "stashed seq", "sizes", "=", "x", "aten::mm"]
    for _ in range(5_000):
        name = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 12)))
        assert fold_nvtx(name) == _REFERENCE.sub("", name), repr(name)


def test_fold_nvtx_is_linear_on_a_hostile_name() -> None:
    # Every ", seq=" is a key whose suffix fails only at the final line break: the old regex
    # rescanned the rest of the name from each, ~4.6 s on this 96,002-character name.
    name = ", seq=" * 16_000 + "\nx"
    start = time.perf_counter()
    assert fold_nvtx(name) == name
    assert time.perf_counter() - start < 0.5
