"""Planted regressions on every real trace: does the diff find what was planted, and only that?

Each real trace with kernels is the base; the candidate is the same fingerprint with its
times changed by a known amount, every kernel jittered by up to 3% as a rerun would be:

* **A/A**: the trace against itself: nothing flagged, scale 1.
* **uniform**: every kernel 1.25x: scale 1.25, nothing flagged.
* **spike**: every kernel 1.10x, one kernel 3x: that kernel (or its family) flagged and
  nothing else; for every kernel of at least 0.5% of the time.
* **family**: every kernel 1.10x, every variant of one family 3x: that family flagged and
  nothing else; for every family of at least two variants and 0.5% of the time.

Spikes are planted in traces with at least ``MIN_FAMILIES`` material families: with fewer,
"the rest of the trace" is one or two kernels and no scale can tell which one moved.
``python tests/test_planted.py`` prints the recall and false-flag figures per trace.
"""

from __future__ import annotations

import dataclasses
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import date
from pathlib import Path

import pytest
from conftest import traces_dir

from nsysdiff.api import judge, load
from nsysdiff.compare import comparability
from nsysdiff.compare.diff import Diff, compare
from nsysdiff.fingerprint.model import Fingerprint, KernelStats
from nsysdiff.rules import evaluate, load_rules
from nsysdiff.rules.report import Outcome

BACKGROUND = 1.10
SPIKE = 3.0
UNIFORM = 1.25
JITTER = 0.03
MIN_PLANT_SHARE = 0.005
MIN_FAMILIES = 5


def _traces() -> list[Path]:
    d = traces_dir()
    found = [*sorted(d.glob("*.sqlite")), *sorted((d / "h100").glob("*.sqlite"))] if d.is_dir() else []
    return found


TRACES = _traces()
_CACHE: dict[Path, Fingerprint] = {}


def _load(path: Path) -> Fingerprint:
    if path not in _CACHE:
        _CACHE[path] = load(path)
    return _CACHE[path]


def _jitter(name: str) -> float:
    """A deterministic factor in [1 - JITTER, 1 + JITTER] per kernel."""
    return 1 + JITTER * ((zlib.crc32(name.encode()) % 2001) / 1000 - 1)


def _scaled(k: KernelStats, factor: float) -> KernelStats:
    total = max(1, round(k.total_ns * factor))
    f = total / k.total_ns if k.total_ns else 1.0
    return dataclasses.replace(k, total_ns=total, quantiles_ns=tuple(q * f for q in k.quantiles_ns))


def _plant(fp: Fingerprint, factor: Callable[[KernelStats], float], jitter: bool = True) -> Fingerprint:
    ks = tuple(_scaled(k, factor(k) * (_jitter(k.demangled) if jitter else 1.0)) for k in fp.kernels)
    return dataclasses.replace(fp, kernels=ks)


def flagged(d: Diff) -> set[str]:
    return {r.key for r in d.families if r.is_outlier} | {r.family or "" for r in d.kernels if r.is_outlier}


def _material_families(fp: Fingerprint) -> dict[str, list[KernelStats]]:
    total = fp.kernel_ns
    fams: dict[str, list[KernelStats]] = {}
    for k in fp.kernels:
        fams.setdefault(k.family, []).append(k)
    return {f: ks for f, ks in fams.items() if sum(k.total_ns for k in ks) >= 0.001 * total}


@dataclass(frozen=True, slots=True)
class Case:
    trace: str
    scenario: str
    planted: str  # the family that should be flagged ("" for none)
    flagged: frozenset[str]

    @property
    def found(self) -> bool:
        return not self.planted or self.planted in self.flagged

    @property
    def false_flags(self) -> frozenset[str]:
        return self.flagged - {self.planted}


def cases(path: Path) -> Iterator[Case]:
    fp = _load(path)
    name = path.relative_to(traces_dir()).as_posix()
    if not fp.kernels:
        return
    yield Case(name, "A/A", "", frozenset(flagged(compare(fp, fp))))
    uniform = compare(fp, _plant(fp, lambda k: UNIFORM, jitter=False))
    assert uniform.headline.scale == pytest.approx(UNIFORM, rel=1e-4), name
    yield Case(name, "uniform", "", frozenset(flagged(uniform)))
    fams = _material_families(fp)
    if len(fams) < MIN_FAMILIES:
        return
    total = fp.kernel_ns
    for k in fp.kernels:
        if k.total_ns >= MIN_PLANT_SHARE * total:
            cand = _plant(fp, lambda o, k=k: SPIKE if o.demangled == k.demangled else BACKGROUND)
            yield Case(name, f"spike {k.name}", k.family, frozenset(flagged(compare(fp, cand))))
    for fam, ks in fams.items():
        if len(ks) >= 2 and sum(k.total_ns for k in ks) >= MIN_PLANT_SHARE * total:
            cand = _plant(fp, lambda o, fam=fam: SPIKE if o.family == fam else BACKGROUND)
            yield Case(name, f"family {fam}", fam, frozenset(flagged(compare(fp, cand))))


@pytest.mark.skipif(not TRACES, reason="real traces not found (set NSYSDIFF_TRACES or add ../shared/traces)")
@pytest.mark.parametrize("path", TRACES, ids=[p.stem for p in TRACES])
def test_every_trace_against_itself_passes_the_default_pack(path: Path) -> None:
    fp = _load(path)
    reasons, notes = comparability.assess(fp, fp)
    d = compare(fp, fp)
    findings, results = evaluate(d, load_rules(["default"]), today=date(2026, 1, 1))
    report = judge(d, findings, results, reasons=reasons, notes=notes)
    assert report.outcome is Outcome.PASS, report.reasons
    assert report.findings == ()


@pytest.mark.skipif(not TRACES, reason="real traces not found (set NSYSDIFF_TRACES or add ../shared/traces)")
@pytest.mark.parametrize("path", TRACES, ids=[p.stem for p in TRACES])
def test_planted_regressions_are_found_and_nothing_else(path: Path) -> None:
    results = list(cases(path))
    missed = [c.scenario for c in results if not c.found]
    false = [(c.scenario, sorted(c.false_flags)) for c in results if c.false_flags]
    assert not missed, f"planted but not flagged: {missed}"
    assert not false, f"flagged but not planted: {false}"


def main() -> None:
    """Print the figures: per trace and scenario kind, cases, found, false flags."""
    rows: dict[tuple[str, str], list[int]] = {}
    for path in TRACES:
        for c in cases(path):
            kind = c.scenario.split(" ")[0]
            r = rows.setdefault((c.trace, kind), [0, 0, 0])
            r[0] += 1
            r[1] += c.found and bool(c.planted)
            r[2] += bool(c.false_flags)
    print(f"{'trace':<36} {'scenario':<8} {'cases':>5} {'found':>5} {'false':>5}")
    for (trace, kind), (n, found, false) in sorted(rows.items()):
        print(f"{trace:<36} {kind:<8} {n:>5} {found if kind in ('spike', 'family') else '-':>5} {false:>5}")
    totals = {
        k: [sum(v[i] for (t, kk), v in rows.items() if kk == k) for i in range(3)]
        for k in ("A/A", "uniform", "spike", "family")
    }
    print("totals:", totals)


if __name__ == "__main__":
    main()
