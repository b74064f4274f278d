"""The two sides of a diff, read at once.

Reading a trace is nearly all SQLite work, and SQLite releases the GIL while it works, so
reading the two sides on threads of their own takes a diff of two traces from the sum of
the two reads to about the longer one when two cores are free. Memory is
the two reads' together (each is bounded on its own, see ``benchmarks/README.md``).

Errors are those of a sequential read, base first: when the base fails, its error is
reported and the candidate's read is stopped; when the candidate fails first, the base's
read is stopped and the candidate's error is reported. A Ctrl-C stops both at once: the
main thread only waits, and Python runs signal handlers in the main thread alone.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import TimeoutError as WaitedTooLong
from contextlib import contextmanager
from typing import Any, TypeVar

from nsysdiff.trace.schema import ReadStopped, resume_reads, stop_reads

_T = TypeVar("_T")


def read_both(base: Callable[[], _T], cand: Callable[[], _T]) -> tuple[_T, _T]:
    """``(base(), cand())``, the two calls run at once, each on a thread of its own.

    The calling (main) thread only waits, so a Ctrl-C reaches it at once: it stops every
    read, and the KeyboardInterrupt goes on up once they have stopped.
    """
    with _reading(workers=2) as pool:
        first = pool.submit(base)
        later = pool.submit(cand)
        later.add_done_callback(_stop_if_failed)
        try:
            b = _result(first)
        except ReadStopped:
            # Stopped because the candidate failed: its error is the one to report.
            _result(later)
            raise
        return b, _result(later)


def read_one(read: Callable[[], _T]) -> _T:
    """``read()`` on a thread of its own, so that a Ctrl-C stops it at once (a query
    holds the main thread until it returns, and Python handles signals only between)."""
    with _reading(workers=1) as pool:
        return _result(pool.submit(read))


@contextmanager
def _reading(workers: int) -> Iterator[ThreadPoolExecutor]:
    """Worker threads for reads: any exception (a failed side, a Ctrl-C) stops every read,
    and the pool is left only once they have all stopped."""
    pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="nsysdiff-read")
    try:
        yield pool
    except BaseException:
        stop_reads()
        raise
    finally:
        pool.shutdown(wait=True)
        resume_reads()


# How often the waiting main thread wakes. A wait with no timeout can miss a Ctrl-C that
# arrives just before it blocks (the handler then runs only when the wait ends, and a
# read may never end); waking this often bounds the delay instead.
_WAKE_S = 0.1


def _result(done: Future[_T]) -> _T:
    while True:
        try:
            return done.result(timeout=_WAKE_S)
        except WaitedTooLong:
            continue


def _stop_if_failed(done: Future[Any]) -> None:
    if done.exception() is not None:
        stop_reads()
