"""A baseline from history: the last N comparable runs of a ref, as the base side of a
multi-run diff (``--base history:STORE@main~5``).

Comparable means the same GPU model, scope and graph mode as the candidate (the same
identity :func:`nsysdiff.fingerprint.runset.check_comparable` requires of one side's runs).
A run a gate failed (added with ``--failed``) is never picked unless the spec asks for it
(``history:STORE@main~5+failed``): a regressed run must not become the next baseline.

A store that does not exist yet, or holds fewer than 2 comparable runs, is inconclusive
(exit 3), not bad input: that is a branch's first runs, which a CI job can let pass
(``fail-on-inconclusive: false``) while ``history add`` fills the store. A store that is
there but foreign, damaged or tampered with is bad input (exit 2), and so is a slip of
the keyboard: a store or ref that is missing where one a transposed, extra or missing
character away exists (``hist.sqlitee``, ``@mian``) says "did you mean", since read as a
branch's first runs it would pass a job that lets inconclusive pass.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import NoReturn

from nsysdiff import units as u
from nsysdiff.errors import InconclusiveError, UsageError
from nsysdiff.fingerprint import runset
from nsysdiff.fingerprint.model import Fingerprint
from nsysdiff.history import store as st

PREFIX = "history:"
DEFAULT_RUNS = 5
MAX_RUNS = 1000
_SPEC = re.compile(r"(?P<store>.+)@(?P<ref>[A-Za-z0-9._/@-]+?)(?:~(?P<n>[0-9]{1,4}))?(?P<failed>\+failed)?")


@dataclass(frozen=True, slots=True)
class Spec:
    """``history:STORE@REF~N``: where the store is, which ref, how many runs."""

    store: str
    ref: str
    runs: int
    with_failed: bool


def is_spec(text: str) -> bool:
    return text.startswith(PREFIX)


def missing_store(path: Path) -> NoReturn:
    """A store that is not there: a slip of its name is bad input (exit 2), else it is
    the first run's (inconclusive, exit 3)."""
    try:
        near = [p.name for p in path.parent.iterdir() if p.is_file()] if path.parent.is_dir() else []
    except OSError:
        near = []
    meant = st.slip(path.name, near)
    if meant is not None:
        raise UsageError(f"{path}: no history store; did you mean {str(path.with_name(meant))!r}?")
    raise InconclusiveError(
        f"{path}: no history store yet, so no baseline (the first 'nsysdiff history add' creates it)"
    )


def parse(text: str) -> Spec:
    """``history:STORE@REF[~N][+failed]``; N defaults to :data:`DEFAULT_RUNS`."""
    m = _SPEC.fullmatch(text[len(PREFIX) :]) if is_spec(text) else None
    if m is None:
        raise UsageError(
            f"{text[:120]!r}: expected history:STORE@REF~N (e.g. history:perf.sqlite@main~5), "
            "optionally ending in +failed"
        )
    n = int(m["n"]) if m["n"] else DEFAULT_RUNS
    if not 2 <= n <= MAX_RUNS:
        raise UsageError(f"{text[:120]!r}: ~{n}: a baseline takes 2 to {MAX_RUNS} runs")
    return Spec(m["store"], m["ref"], n, m["failed"] is not None)


def comparable(entries: tuple[st.Entry, ...], like: tuple[str, str, str], *, with_failed: bool) -> list[st.Entry]:
    """The entries with identity ``like`` (GPU, scope, graph mode), oldest first."""
    gpu, scope, mode = like
    return [
        e
        for e in entries
        if (e.provenance.gpu, e.provenance.scope, e.provenance.graph_mode) == (gpu, scope, mode)
        and (with_failed or not e.provenance.failed)
    ]


def pick(store: st.Store, spec: Spec, like: Fingerprint | None) -> runset.RunSet:
    """The last ``spec.runs`` comparable runs of ``spec.ref`` as a run set (oldest first).
    ``like`` is the candidate: its identity decides what is comparable; without one, the
    newest entry's does. Fewer than 2 comparable runs is inconclusive (exit 3), in one
    line: the store is sound, it just can't give a baseline yet (a branch's first runs)."""
    entries = store.entries(spec.ref)
    if not entries:
        hint = st.unknown_ref(store, spec.ref)
        if hint:
            raise UsageError(f"{store.path}: no runs of ref {spec.ref!r}{hint}")
        raise InconclusiveError(
            f"{store.path}: no runs of ref {spec.ref!r} yet, so no baseline (add runs with 'nsysdiff history add')"
        )
    ident = st.identity(like) if like is not None else _identity(entries[-1])
    chosen = comparable(entries, ident, with_failed=spec.with_failed)[-spec.runs :]
    if len(chosen) < 2:
        failed = sum(e.provenance.failed for e in entries)
        left_out = failed and not spec.with_failed
        hint = f"; {u.plural(failed, 'failed run')} left out, ask for them with +failed" if left_out else ""
        others = len(entries) - len(comparable(entries, ident, with_failed=True))
        if others:
            hint += f"; {u.plural(others, 'run')} of {spec.ref!r} were captured otherwise (GPU, scope or graph mode)"
        raise InconclusiveError(
            f"{store.path}: {u.plural(len(chosen), 'run')} of {spec.ref!r} comparable with the candidate "
            f"(GPU {ident[0]!r}, {st.scope_words(ident[1])}, graph mode {ident[2]}); a history baseline needs "
            f"at least 2{hint}"
        )
    fps = [store.fingerprint(e) for e in chosen]
    return runset.run_set(fps, [f"{store.path}:{e.label}" for e in chosen])


def _identity(e: st.Entry) -> tuple[str, str, str]:
    return e.provenance.gpu, e.provenance.scope, e.provenance.graph_mode
