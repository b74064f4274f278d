"""The registry of rule kinds: one module per kind, each exporting ``KIND``."""

from __future__ import annotations

from nsysdiff.rules import (
    budget,
    collective_wait,
    danger_zone,
    invariance,
    noise_limits,
    outlier,
    step_budget,
    structure,
    tail,
    waivers,
)
from nsysdiff.rules.model import Kind, Section

KINDS: dict[str, Kind] = {
    k.name: k
    for k in (
        budget.KIND,
        step_budget.KIND,
        outlier.KIND,
        danger_zone.KIND,
        structure.KIND,
        invariance.KIND,
        collective_wait.KIND,
        tail.KIND,
    )
}

# Documented like a kind (``nsysdiff rules explain waivers``) but a top-level section.
SECTIONS: dict[str, Section] = {s.name: s for s in (waivers.SECTION, noise_limits.SECTION)}
