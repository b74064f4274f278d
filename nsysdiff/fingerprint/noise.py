"""Noise calibration: A/A runs of one build become a per-key noise profile.

Several runs of the *same* build on the same machine differ only by run-to-run noise.
Per key (kernel, family, category, copy kind, NVTX range) the profile keeps the spread
of the log total and of the log per-call mean across the runs, two ways:

- ``sd_log``: the sample standard deviation (``ddof=1``) of the natural log. **The rules
  use this one.** With the 2 to 10 runs an A/A calibration has, it is the efficient
  estimate (the median absolute deviation keeps about 37% of the information, and with
  3 runs it is zero whenever two runs agree), and a run with a hiccup widens it, which
  errs towards "too small to tell" rather than towards a false regression.
- ``robust_log``: ``1.4826 x`` the median absolute deviation of the log around its median
  (equal to the SD under normal noise): shown beside it, so that a key whose SD is far
  above its robust spread points at one odd run rather than steady noise.

A *noise width* is what a one-against-one diff of this build sees: the SD of
``ln(candidate / base)`` for two runs, ``sqrt(2) x sd_log``. Keys that only some runs
have are listed apart: a kernel that comes and goes is unstable structure, not noise.

The profile keeps the runs' fingerprints too, so that a rule can measure the noise of
exactly what it judges (a sum of kernels, a per-step value, a percentile) in every run;
the per-key figures are derived from them and checked against them on load.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from nsysdiff.errors import FingerprintError, UsageError
from nsysdiff.fingerprint import FORMAT_VERSION, runset
from nsysdiff.fingerprint.model import FORMAT, fingerprint_from_json, to_data
from nsysdiff.fingerprint.runset import KeyKind, Measure, RunSet
from nsysdiff.trace import inputs

PROFILE_FORMAT = "nsysdiff-noise-profile"
PROFILE_VERSION = 1
MIN_RUNS = 2
# 1 / Phi^-1(3/4): the MAD of normal data times this is its standard deviation.
MAD_TO_SD = 1.482602218505602
# The SD of the difference of two independent runs' logs, in SDs of one run.
PAIR = math.sqrt(2.0)
KINDS = (KeyKind.KERNEL, KeyKind.FAMILY, KeyKind.CATEGORY, KeyKind.COPY, KeyKind.NVTX, KeyKind.STEP)


@dataclass(frozen=True, slots=True)
class Spread:
    """The spread of one measure's natural log across the runs."""

    sd_log: float  # sample SD, ddof=1: what the rules use
    robust_log: float  # 1.4826 x median absolute deviation around the median

    @property
    def width(self) -> float:
        """The noise width: SD of the log ratio of two runs."""
        return PAIR * self.sd_log


@dataclass(frozen=True, slots=True)
class KeyNoise:
    """One key present in every run, with its medians and spreads."""

    kind: KeyKind
    key: str
    median_total_ns: float
    median_mean_ns: float
    total: Spread
    mean: Spread


@dataclass(frozen=True, slots=True)
class PartialKey:
    """A key that only some runs have: unstable structure, not noise."""

    kind: KeyKind
    key: str
    runs: int  # how many runs have it


@dataclass(frozen=True, slots=True)
class NoiseProfile:
    """The noise of one build: its runs and, per key, the spread across them."""

    runs: RunSet
    keys: tuple[KeyNoise, ...]  # by kind (KINDS order), then key
    partial: tuple[PartialKey, ...]

    @property
    def count(self) -> int:
        return len(self.runs.runs)


def width(sd_log: float) -> float:
    """The noise width of a one-against-one diff, from the SD of one run's log value."""
    return PAIR * sd_log


def fmt_width(log_width: float) -> str:
    """A noise width as the relative change it stands for: ``±3.4%`` (``±0.25%`` under 1%)."""
    pct = 100.0 * math.expm1(log_width)
    return f"±{pct:.2f}%" if pct < 1 else f"±{pct:.1f}%"


def spreads(values: npt.NDArray[np.float64]) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    """(SD, robust spread) of the log of each row of a keys x runs array of positive values."""
    logs = np.log(values)
    sd = logs.std(axis=1, ddof=1)
    med = np.median(logs, axis=1, keepdims=True)
    robust = MAD_TO_SD * np.median(np.abs(logs - med), axis=1)
    return sd, robust


def measure(rs: RunSet) -> NoiseProfile:
    """The noise profile of ``rs``: at least :data:`MIN_RUNS` runs of one build."""
    if len(rs.runs) < MIN_RUNS:
        raise UsageError(
            f"a noise profile needs at least {MIN_RUNS} runs of one build, got {len(rs.runs)} "
            f"({', '.join(rs.sources)}); capture the same build again and give every run"
        )
    keys: list[KeyNoise] = []
    partial: list[PartialKey] = []
    for kind in KINDS:
        totals = runset.per_run_values(rs, kind, Measure.TOTAL)
        means = runset.per_run_values(rs, kind, Measure.PER_CALL)
        names = sorted(totals.values)
        if names:
            t = np.array([totals.values[k] for k in names], dtype=np.float64)
            m = np.array([means.values[k] for k in names], dtype=np.float64)
            t_sd, t_robust = spreads(t)
            m_sd, m_robust = spreads(m)
            t_med, m_med = np.median(t, axis=1), np.median(m, axis=1)
            keys.extend(
                KeyNoise(
                    kind,
                    key,
                    float(t_med[i]),
                    float(m_med[i]),
                    Spread(float(t_sd[i]), float(t_robust[i])),
                    Spread(float(m_sd[i]), float(m_robust[i])),
                )
                for i, key in enumerate(names)
            )
        if totals.partial:
            # A key counts as present in a run where it ran (positive calls and time).
            present: Counter[str] = Counter()
            wanted = set(totals.partial)
            for fp, source in zip(rs.runs, rs.sources, strict=True):
                alone = runset.per_run_values(RunSet((fp,), (source,)), kind, Measure.TOTAL)
                present.update(wanted & set(alone.values))
            partial.extend(PartialKey(kind, key, present[key]) for key in totals.partial)
    return NoiseProfile(rs, tuple(keys), tuple(partial))


# --- JSON ----------------------------------------------------------------------------


def _spread_data(s: Spread) -> dict[str, float]:
    return {"sd_log": s.sd_log, "robust_log": s.robust_log}


def _key_data(k: KeyNoise) -> dict[str, Any]:
    return {
        "kind": k.kind.value,
        "key": k.key,
        "median_total_ns": k.median_total_ns,
        "median_mean_ns": k.median_mean_ns,
        "total": _spread_data(k.total),
        "mean": _spread_data(k.mean),
    }


def profile_data(p: NoiseProfile) -> dict[str, Any]:
    """The profile as the JSON document's data (see ``docs/noise.md``)."""
    return {
        "format": PROFILE_FORMAT,
        "version": PROFILE_VERSION,
        "runs": p.count,
        "sources": list(p.runs.sources),
        "keys": [_key_data(k) for k in p.keys],
        "partial": [{"kind": k.kind.value, "key": k.key, "runs": k.runs} for k in p.partial],
        "fingerprints": [{"format": FORMAT, "version": FORMAT_VERSION, **to_data(fp)} for fp in p.runs.runs],
    }


def profile_to_json(p: NoiseProfile) -> str:
    from nsysdiff.safe import neutral  # the same inert JSON as every report (lossless)

    return neutral.json_document(json.dumps(profile_data(p), indent=1)) + "\n"


def _close(a: float, b: float) -> bool:
    # The stored figures are derived from the stored runs; only float rounding may differ.
    return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)


def _same_key(stored: dict[str, Any], k: KeyNoise) -> bool:
    return (
        stored["kind"] == k.kind.value
        and stored["key"] == k.key
        and _close(stored["median_total_ns"], k.median_total_ns)
        and _close(stored["median_mean_ns"], k.median_mean_ns)
        and all(
            _close(stored[m][f], getattr(getattr(k, m), f)) for m in ("total", "mean") for f in ("sd_log", "robust_log")
        )
    )


def profile_from_json(text: str, source: str) -> NoiseProfile:
    """A noise profile from its JSON document: parsed strictly, checked against its
    schema, every embedded run validated as a fingerprint, and the per-key figures
    checked against the runs they were derived from. Errors are one line naming the
    file and the JSON path."""
    from nsysdiff.fingerprint import validation

    doc = validation.parse(text, source, "noise profile")
    if not isinstance(doc, dict) or doc.get("format") != PROFILE_FORMAT:
        raise FingerprintError(
            f'{source}: not an nsysdiff noise profile (no "format": "{PROFILE_FORMAT}"); '
            "make one with `nsysdiff noise RUN... -o FILE`"
        )
    if doc.get("version") != PROFILE_VERSION:
        raise FingerprintError(
            f"{source}: noise profile format version {doc.get('version')!r} is not supported "
            f"(this nsysdiff reads version {PROFILE_VERSION})"
        )
    validation.check_schema(doc, source, schema="noise-profile", what="noise profile")
    runs, sources = doc["fingerprints"], doc["sources"]
    if not doc["runs"] == len(runs) == len(sources):
        raise FingerprintError(
            f"{source}: malformed noise profile at $.runs: {doc['runs']} runs, "
            f"{len(runs)} fingerprints and {len(sources)} sources"
        )
    where = [f"{source} fingerprints[{i}]" for i in range(len(runs))]
    fps = [fingerprint_from_json(validation.redump(run), w) for run, w in zip(runs, where, strict=True)]
    try:
        runset.check_comparable(fps, where)  # named by their place in this file
    except UsageError as e:
        raise FingerprintError(str(e)) from None
    profile = measure(RunSet(tuple(fps), tuple(sources)))
    stored = doc["keys"]
    for i, k in enumerate(profile.keys):
        if i >= len(stored) or not _same_key(stored[i], k):
            raise FingerprintError(
                f"{source}: malformed noise profile at $.keys[{i}]: does not match the runs it "
                f"was measured from (expected {k.kind.value} {k.key!r}); re-create it with `nsysdiff noise`"
            )
    if len(stored) != len(profile.keys):
        raise FingerprintError(
            f"{source}: malformed noise profile at $.keys[{len(profile.keys)}]: a key the runs don't have"
        )
    expected = [{"kind": k.kind.value, "key": k.key, "runs": k.runs} for k in profile.partial]
    if doc["partial"] != expected:
        raise FingerprintError(
            f"{source}: malformed noise profile at $.partial: does not match the runs it was measured from"
        )
    return profile


def load(path: str | Path) -> NoiseProfile:
    """A saved noise profile (``nsysdiff noise ... -o FILE``), validated like a fingerprint."""
    src = inputs.recognise(Path(path))
    if src.kind is not inputs.Kind.FINGERPRINT and src.path.is_file():
        what = "an SQLite export" if src.kind is inputs.Kind.SQLITE else "an nsys report"
        raise FingerprintError(
            f"{src.path}: not a noise profile ({what}); make one with `nsysdiff noise RUN... -o FILE`"
        )
    return profile_from_json(inputs.saved_text(src), str(src.path))
