"""Fingerprint many traces (the map step): one JSON file each, written by this process.

The work runs sequentially, in ``jobs`` local processes, or on an existing Dask
``distributed`` cluster (``scheduler``, an address such as ``tcp://host:8786``; the
optional extra ``nsysdiff[dask]``, imported only then). Workers return the fingerprint's
JSON text (kilobytes) and this process writes every file, so a cluster's workers need
read access to the traces and nothing else. Every trace is read exactly as
``nsysdiff fingerprint TRACE`` reads it, so the files are identical whichever way ran
them. The first trace that fails stops the batch with its own error.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import FIRST_EXCEPTION, Future, ProcessPoolExecutor, wait
from dataclasses import dataclass
from pathlib import Path

from nsysdiff import api
from nsysdiff.cli.root import notify
from nsysdiff.errors import NsysdiffError, UsageError
from nsysdiff.fingerprint.model import fingerprint_to_json
from nsysdiff.fingerprint.scope import ScopeOptions


@dataclass(frozen=True, slots=True)
class Job:
    trace: Path
    output: Path


def plan(traces: Sequence[Path], out_dir: Path) -> tuple[Job, ...]:
    """One ``out_dir/STEM.json`` per trace; two traces with one stem would overwrite."""
    jobs: dict[str, Job] = {}
    for trace in traces:
        name = f"{trace.stem}.json"
        if name in jobs:
            raise UsageError(
                f"{trace}: {jobs[name].trace} has the same name, and both would be written to "
                f"{out_dir / name}; fingerprint them into different directories"
            )
        jobs[name] = Job(trace, out_dir / name)
    return tuple(jobs.values())


def fingerprint_json(trace: str, options: ScopeOptions, keep_export: str | None = None) -> str:
    """The fingerprint of one trace as JSON text (what a worker runs)."""
    keep = Path(keep_export) if keep_export is not None else None
    return fingerprint_to_json(api.load(trace, options, keep_export=keep, notify=notify))


def run(
    jobs: Sequence[Job],
    options: ScopeOptions,
    *,
    workers: int = 1,
    scheduler: str | None = None,
    keep_export: Path | None = None,
) -> None:
    """Fingerprint every job's trace into its output file."""
    if workers < 1:
        raise UsageError(f"--jobs {workers}: must be 1 or more")
    # Absolute paths: a worker process or a cluster's worker may run in another directory.
    traces = [os.path.abspath(j.trace) for j in jobs]
    keep = os.path.abspath(keep_export) if keep_export is not None else None
    texts: Iterable[str]
    if scheduler is not None:
        from nsysdiff.cli import scheduler as dask_scheduler

        texts = dask_scheduler.fingerprints(scheduler, traces, options, keep, fingerprint_json)
    elif workers > 1 and len(jobs) > 1:
        texts = _in_processes(min(workers, len(jobs)), traces, options, keep)
    else:
        texts = (fingerprint_json(t, options, keep) for t in traces)
    for job, text in zip(jobs, texts, strict=True):
        _write(job.output, text)


def _write(path: Path, text: str) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    except OSError as e:
        raise NsysdiffError(f"{path}: can't write ({e.strerror})") from None


def _in_processes(workers: int, traces: Sequence[str], options: ScopeOptions, keep: str | None) -> list[str]:
    with ProcessPoolExecutor(max_workers=workers) as pool:
        futures = [pool.submit(fingerprint_json, t, options, keep) for t in traces]
        return _first_error(futures, lambda f: f.result())


def _first_error(futures: Sequence[Future[str]], result: Callable[[Future[str]], str]) -> list[str]:
    """Results in order; on the first failure, cancel what has not started and raise it."""
    done, _ = wait(futures, return_when=FIRST_EXCEPTION)
    failed = [f for f in futures if f in done and f.exception() is not None]
    if failed:
        for f in futures:
            f.cancel()
        raise failed[0].exception()  # type: ignore[misc]
    return [result(f) for f in futures]
