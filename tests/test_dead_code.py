"""No dead code: every name the package defines has a caller.

vulture reads the package and everything that calls it from outside (the tests, the
benchmarks, the scripts and the examples) and reports the package's names that nothing
uses. What a framework or a library calls is listed in tests/vulture_whitelist.py.
"""

from __future__ import annotations

from pathlib import Path

import vulture
from conftest import ROOT

PACKAGE = ROOT / "nsysdiff"
# A name used here is used: the whitelist is among the tests.
CALLERS = (ROOT / "tests", ROOT / "benchmarks", ROOT / "scripts", ROOT / "examples")
# Called by click through its decorators, never by name.
FRAMEWORK_DECORATORS = ["@*.command", "@*.callback"]
# 60, vulture's lowest, so every finding counts: 60 is what it gives an unused function,
# method, class, property, attribute or variable, the dead names this test is for (the
# levels above add only unused imports and unreachable code). A false positive goes into
# the whitelist, where it is named, rather than under a higher threshold, which would hide
# every dead function with it.
MIN_CONFIDENCE = 60


def test_every_name_has_a_caller() -> None:
    v = vulture.Vulture(ignore_decorators=FRAMEWORK_DECORATORS)
    v.scavenge([str(PACKAGE), *map(str, CALLERS)])
    dead = [
        item.get_report()
        for item in v.get_unused_code(min_confidence=MIN_CONFIDENCE)
        if Path(item.filename).resolve().is_relative_to(PACKAGE)
    ]
    assert not dead, (
        "nothing calls these names: delete them, or, where a framework or a library calls one, "
        "list it in tests/vulture_whitelist.py\n" + "\n".join(dead)
    )


def test_every_whitelisted_name_exists() -> None:
    # Each line of the whitelist looks its name up: importing it fails on a name that is gone.
    import vulture_whitelist  # noqa: F401
