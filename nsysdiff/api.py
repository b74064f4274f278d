"""The entry points the CLI, the GitHub Action and notebooks share."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from nsysdiff import comparability, scope
from nsysdiff.diff import Diff
from nsysdiff.errors import ExitCode, FingerprintError
from nsysdiff.fingerprint import assemble
from nsysdiff.model import Fingerprint, GraphMode, fingerprint_from_json
from nsysdiff.report import Finding, Level, Outcome, Report, RuleResult
from nsysdiff.scope import ScopeOptions
from nsysdiff.trace.reader import RangeRow, open_trace

FINGERPRINT_MAX_BYTES = 256 << 20


def fingerprint_trace(path: str | Path, options: ScopeOptions | None = None) -> Fingerprint:
    """Read an nsys SQLite export and reduce it to a fingerprint (of ``options``' scope)."""
    with open_trace(path) as r:
        if options is not None and options.active:
            return scope.fingerprint(r, options)
        # The NVTX table is often the largest: it is read on a connection of its own
        # beside the kernel scans (SQLite releases the GIL while it works).
        with ThreadPoolExecutor(max_workers=1) as pool:
            nvtx = pool.submit(_nvtx_summary, path)
            groups = r.kernels()  # first: it also learns the graph mode that metadata reports
            meta = r.metadata()
            fp = assemble(
                path,
                meta,
                groups,
                r.has_kernels(),
                r.memcpy(),
                r.memset(),
                r.sync_calls(),
                nvtx.result(),
            )
        if meta.graph_mode in (GraphMode.GRAPH, GraphMode.MIXED):
            # Graph-mode replays have no kernel rows: their launches are what can be compared.
            fp = dataclasses.replace(fp, graphs=r.graph_launches())
        return fp


def _nvtx_summary(path: str | Path) -> tuple[RangeRow, ...]:
    with open_trace(path) as r:
        return r.nvtx_summary()


def is_fingerprint_file(path: str | Path) -> bool:
    return Path(path).suffix.lower() == ".json"


def load(path: str | Path, options: ScopeOptions | None = None) -> Fingerprint:
    """A fingerprint from either a trace or a saved ``.json`` fingerprint.

    ``options`` scope a trace; a saved fingerprint is already scoped, so options given
    with one must restate its scope (else :class:`~nsysdiff.errors.UsageError`).
    """
    p = Path(path)
    if not is_fingerprint_file(p):
        return fingerprint_trace(p, options)
    if not p.is_file():
        raise FingerprintError(f"{p}: no such file" if not p.exists() else f"{p}: not a file")
    try:
        # A 1M-kernel trace's fingerprint is tens of KiB; a file past the limit is not one
        # (and reading it whole would take the memory of the job).
        if p.stat().st_size > FINGERPRINT_MAX_BYTES:
            raise FingerprintError(f"{p}: {p.stat().st_size} bytes, larger than a fingerprint can be (256 MiB)")
        text = p.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise FingerprintError(f"{p}: can't be read ({e})") from None
    fp = fingerprint_from_json(text, str(p))
    if options is not None:
        scope.check_saved(fp, options, str(p))
    return fp


def inconclusive_reasons(
    base: Fingerprint, cand: Fingerprint, *, require_same_gpu: bool = False
) -> tuple[str, ...]:
    """Why two fingerprints can't be compared meaningfully, if they can't."""
    return comparability.assess(base, cand, require_same_gpu=require_same_gpu)[0]


def judge(
    diff: Diff,
    findings: Sequence[Finding],
    rules: Sequence[RuleResult],
    *,
    strict: bool = False,
    judged: bool = True,
    reasons: Sequence[str] = (),
    notes: Sequence[str] = (),
    packs: Sequence[str] = (),
) -> Report:
    """The outcome and exit code of a diff and its findings.

    Without a meaningful overall scale the statistics judge nothing, so the outcome is
    inconclusive, unless a structure check (a fact, not a statistic) already fails.
    """
    no_scale = comparability.scale_reason(diff) if judged else None
    order = {Level.ERROR: 0, Level.WARNING: 1, Level.INFO: 2}
    ordered = tuple(
        sorted(findings, key=lambda f: (f.waived, order[f.level], f.rule_id, f.subject))
    )
    provisional = Report(diff, ordered, tuple(rules), Outcome.PASS, ExitCode.PASS, strict=strict)
    if no_scale is not None:
        if any(not f.statistical for f in provisional.failed):
            notes = (*notes, no_scale)
        else:
            reasons = (*reasons, no_scale)
    if reasons:
        outcome, code = Outcome.INCONCLUSIVE, ExitCode.INCONCLUSIVE
    elif not judged:
        outcome, code = Outcome.UNJUDGED, ExitCode.PASS
    elif provisional.failed:
        outcome, code = Outcome.FAIL, ExitCode.REGRESSION
    else:
        outcome, code = Outcome.PASS, ExitCode.PASS
    return Report(
        diff=diff,
        findings=ordered,
        rules=tuple(rules),
        outcome=outcome,
        exit_code=code,
        reasons=tuple(reasons),
        notes=tuple(notes),
        strict=strict,
        packs=tuple(packs),
    )
