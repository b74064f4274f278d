"""Budgets against the measured noise: limits in noise widths, and "too small to tell".

A noise profile (:mod:`nsysdiff.fingerprint.noise`) holds A/A runs of the base build. For a budget
the noise of exactly what it judges (its selection, metric and per-step division) is
measured in every run of the profile: the SD of the log value across the runs, and the
noise width ``sqrt(2) x SD`` of a one-against-one diff.

- ``max_noise_widths: K`` fails when the judged value grows by more than ``K`` widths
  (and by more than ``min_ratio`` when given).
- Any limit that lies within one width of no change (``max_ratio: 1.02x`` against a
  ±3.4% noise) can't be told from the noise: the finding is *inconclusive* instead of a
  coin flip, unless the change itself is clear of the noise (beyond
  :data:`CLEAR_WIDTHS` widths either way), which is judged as usual.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from nsysdiff.errors import RuleError, UsageError
from nsysdiff.fingerprint import runset
from nsysdiff.fingerprint.model import Fingerprint
from nsysdiff.fingerprint.noise import PAIR, NoiseProfile, fmt_width, spreads
from nsysdiff.rules import limits
from nsysdiff.rules.limits import LimitKind
from nsysdiff.rules.model import RuleSet, Section

# A change beyond this many noise widths either way is no coin flip, whatever the limit.
CLEAR_WIDTHS = 3.0

METRIC_WORDS = {
    "total_time": "total time",
    "calls": "call count",
    "mean": "per-call mean",
    "p50": "p50",
    "p90": "p90",
    "bytes": "bytes",
    "ops": "op count",
    "share": "share of kernel time",
}


@dataclass(frozen=True, slots=True)
class SubjectNoise:
    """The noise of one subject's judged value across the runs of a profile."""

    sd_log: float | None  # None when some run of the profile has no value for it
    present: int  # runs of the profile with a value
    runs: int  # runs in the profile

    @property
    def width(self) -> float | None:
        return None if self.sd_log is None else PAIR * self.sd_log


def subjects(per_run: Sequence[Mapping[str, float | None]]) -> dict[str, SubjectNoise]:
    """Per subject, its noise from one mapping of subject -> value per run of the profile."""
    runs = len(per_run)
    names = sorted({s for values in per_run for s in values})
    found: dict[str, SubjectNoise] = {}
    complete: list[str] = []
    rows: list[list[float]] = []
    for name in names:
        values = [v.get(name) for v in per_run]
        ok = [v for v in values if v is not None and v > 0]
        if len(ok) == runs:
            complete.append(name)
            rows.append(ok)
        else:
            found[name] = SubjectNoise(None, len(ok), runs)
    if complete:
        sd, _ = spreads(np.array(rows, dtype=np.float64))
        found.update((name, SubjectNoise(float(sd[i]), runs, runs)) for i, name in enumerate(complete))
    return found


def too_small(allowed: float | None, change: float | None, noise: SubjectNoise | None) -> bool:
    """Whether a limit ``allowed`` (a log change from the base value) is within one noise
    width of no change while the observed log ``change`` is not clear of the noise."""
    if allowed is None or change is None or noise is None or noise.width is None:
        return False
    w = noise.width
    return abs(allowed) < w and abs(change) <= CLEAR_WIDTHS * w


def log_change(before: float | None, after: float | None) -> float | None:
    """``ln(after / before)``, or None where either is missing or not positive."""
    if before is None or after is None or before <= 0 or after <= 0:
        return None
    return math.log(after / before)


def fmt_change(log_value: float) -> str:
    """A log change as the relative change it stands for: ``+2.0%``."""
    return f"{100.0 * math.expm1(log_value):+.1f}%"


def below_noise(allowed: float, noise: SubjectNoise, metric: str, subject: str) -> str:
    """The reason a limit is too small to tell, as findings and reports give it."""
    assert noise.width is not None
    return (
        f"limit {fmt_change(allowed)} is below the measured noise {fmt_width(noise.width)} "
        f"of the {METRIC_WORDS[metric]} of {subject} over {noise.runs} runs"
    )


def unmeasured(noise: SubjectNoise | None, metric: str, subject: str) -> str:
    """The reason a limit in noise widths can't judge a subject."""
    if noise is None:
        return f"no noise measured for the {METRIC_WORDS[metric]} of {subject}: the noise profile lacks it"
    return (
        f"no noise measured for the {METRIC_WORDS[metric]} of {subject}: in {noise.present} of "
        f"{noise.runs} runs of the noise profile (unstable structure)"
    )


def evidence(noise: SubjectNoise) -> str:
    """What the noise evidence adds to a finding."""
    assert noise.width is not None
    return f"noise {fmt_width(noise.width)} (one width, SD over {noise.runs} A/A runs)"


def check_fits(profile: NoiseProfile, base: Fingerprint) -> None:
    """The profile must measure the base's build as the diff sees it: same scope, graph
    mode and GPU model as the base, else its noise is another machine's or another
    selection's, and judging against it would mislead."""
    try:
        runset.check_comparable((profile.runs.runs[0], base), (profile.runs.sources[0], base.meta.source))
    except UsageError as e:
        raise UsageError(f"the noise profile does not fit the base: {e}") from None


def attach(ruleset: RuleSet, profile: NoiseProfile | None) -> RuleSet:
    """``ruleset`` with ``profile`` as the noise every budget judges against (in place of
    the one its rule files name)."""
    rules = tuple(
        dataclasses.replace(rule, options=dataclasses.replace(rule.options, noise=profile))
        if rule.kind in ("budget", "step")
        else rule
        for rule in ruleset.rules
    )
    return dataclasses.replace(ruleset, rules=rules, noise=profile)


def require(ruleset: RuleSet) -> None:
    """A budget with a limit in noise widths needs a profile: raised before any trace is read."""
    if ruleset.noise is not None:
        return
    for rule in ruleset.rules:
        if rule.kind == "budget" and limits.find(rule.options.limits, LimitKind.MAX_NOISE_WIDTHS) is not None:
            raise RuleError(
                f"{rule.source}:{rule.line}: rule {rule.id!r}: key 'max_noise_widths': needs a noise "
                "profile: give --noise-profile FILE, or noise_profile: FILE in the rule file "
                "(make one with `nsysdiff noise RUN... -o FILE`)"
            )


SECTION = Section(
    name="noise_profile",
    summary="The noise profile budgets judge against: limits in noise widths, and too small to tell.",
    doc="""\
`noise_profile: FILE` (top level) names a noise profile written by `nsysdiff noise RUN...
-o FILE` from A/A runs of the base build. The path is relative to the rule file and must
stay under its directory (no absolute path, no `../`, symlinks resolved); the profile is
read and validated with the rule file, before any trace. `nsysdiff diff --noise-profile
FILE` overrides it; of several rule files, the last one naming a profile wins.

With a profile, every budget measures the noise of what it judges (its selection,
metric and per-step division) in each run of the profile. A noise width is the SD of
ln(candidate / base) between two runs of one build: sqrt(2) x the SD of one run's log
value.

- `max_noise_widths: 3` (a budget limit) fails when the value grows by more than 3
  widths; `min_ratio: 1.02x` beside it also requires more than +2%. A subject the
  profile lacks, or has in only some runs, can't be judged by it: inconclusive.
- Any limit (max_ratio, max_increase, max_value, max_share) that lies within one width
  of no change is too small to tell: the finding is inconclusive ("limit +2.0% is below
  the measured noise ±3.4% of the per-call mean of X over 5 runs") unless the change
  itself is beyond 3 widths either way, which is judged as usual.

An inconclusive finding at a failing level (error; warning with --strict) makes the
outcome inconclusive, exit 3, unless another rule fails. Without a profile, budgets
judge exactly as they always have.
""",
    options=(),
)
