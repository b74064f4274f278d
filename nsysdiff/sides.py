"""The two sides of a diff, read at once.

Reading a trace is nearly all SQLite work, and SQLite releases the GIL while it works, so
reading the candidate on a thread of its own beside the base takes a diff of two traces
from the sum of the two reads to about the longer one when two cores are free. Memory is
the two reads' together (each is bounded on its own, see ``benchmarks/README.md``).

Errors are those of a sequential read, base first: when the base fails, its error is
reported and the candidate's read is stopped; when the candidate fails first, the base's
read is stopped and the candidate's error is reported. A Ctrl-C stops both.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, TypeVar

from nsysdiff.trace.schema import ReadStopped, resume_reads, stop_reads

_T = TypeVar("_T")


def read_both(base: Callable[[], _T], cand: Callable[[], _T]) -> tuple[_T, _T]:
    """``(base(), cand())``, the two calls run at once (``cand`` on a second thread)."""
    pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="nsysdiff-candidate")
    try:
        later = pool.submit(cand)
        later.add_done_callback(_stop_if_failed)
        try:
            first = base()
        except ReadStopped:
            # Stopped because the candidate failed: its error is the one to report.
            later.result()
            raise
        return first, later.result()
    except BaseException:
        stop_reads()
        raise
    finally:
        pool.shutdown(wait=True)
        resume_reads()


def _stop_if_failed(done: Future[Any]) -> None:
    if done.exception() is not None:
        stop_reads()
