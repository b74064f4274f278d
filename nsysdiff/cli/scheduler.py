"""``fingerprint --scheduler ADDRESS``: the map step on an existing Dask ``distributed`` cluster.

The address comes from the command line, but what answers there may be anything: a
listener that accepts and never speaks, an HTTP server whose reply Dask would read as a
frame length of exabytes, a cluster that dies halfway. So the address is checked before
any connection, the connection and every call are bounded (``NSYSDIFF_SCHEDULER_TIMEOUT``
seconds, default 10; the fingerprints themselves may take as long as they take while the
scheduler answers), the work runs on a daemon thread while the main thread waits in short
steps (a Ctrl-C stops the wait at once), and every failure of the cluster is one line,
exit 2. A trace that fails on a worker raises its own error, as in a local run.
"""

from __future__ import annotations

import contextlib
import math
import os
import re
import sys
import threading
from collections.abc import Callable, Sequence
from typing import Any

from nsysdiff.errors import NsysdiffError, UsageError
from nsysdiff.fingerprint.scope import ScopeOptions

TIMEOUT_ENV = "NSYSDIFF_SCHEDULER_TIMEOUT"
DEFAULT_TIMEOUT_S = 10.0
# scheme://host:port, the host a name, an IPv4 address or a bracketed IPv6 address.
_ADDRESS = re.compile(r"^(?:(?:tcp|tls)://)?(?:[A-Za-z0-9.-]{1,253}|\[[0-9A-Fa-f:.]{2,45}\]):(\d{1,5})$")
_POLL_S = 0.1


class SchedulerError(NsysdiffError):
    """The cluster named by --scheduler could not be used."""


def timeout_s() -> float:
    text = os.environ.get(TIMEOUT_ENV, "")
    if not text:
        return DEFAULT_TIMEOUT_S
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and 0 < value <= 3600):
        raise UsageError(
            f"{TIMEOUT_ENV}={text!r}: give the seconds to wait for the scheduler, above 0 and at most 3600"
        )
    return value


def check_address(address: str) -> None:
    m = _ADDRESS.match(address)
    if m is None or not 0 < int(m.group(1)) < 65536:
        raise UsageError(f"--scheduler {address!r}: not a scheduler address; give tcp://HOST:PORT")


def fingerprints(
    address: str, traces: Sequence[str], options: ScopeOptions, keep: str | None, task: Callable[..., str]
) -> list[str]:
    """``task(trace, options, keep)`` for every trace on the cluster at ``address``, in order."""
    check_address(address)
    limit = timeout_s()
    try:
        import dask
        from distributed import Client
    except ImportError:
        raise UsageError("--scheduler needs Dask's distributed package: pip install 'nsysdiff[dask]'") from None
    _quiet_client_finaliser()
    state: dict[str, Any] = {}
    connected = threading.Event()
    finished = threading.Event()

    def work() -> None:
        try:
            seconds = f"{limit}s"
            # Dask wants the TCP keepalive timeout to be at least 11 s (its probes).
            timeouts = {
                "distributed.comm.timeouts.connect": seconds,
                "distributed.comm.timeouts.tcp": f"{max(limit, 11.0)}s",
            }
            with dask.config.set(timeouts):
                client = Client(address, timeout=seconds, set_as_default=False)  # type: ignore[no-untyped-call]
                state["client"] = client
                connected.set()
                futures = client.map(task, list(traces), [options] * len(traces), [keep] * len(traces), pure=False)
                state["texts"] = list(client.gather(futures))  # type: ignore[no-untyped-call]
        except BaseException as e:
            state["error"] = e
        finally:
            finished.set()
            _close(state.get("client"), limit)

    thread = threading.Thread(target=work, name="nsysdiff-scheduler", daemon=True)
    thread.start()
    # Short waits: the main thread stays free for a Ctrl-C.
    waited = 0.0
    while not finished.is_set():
        finished.wait(_POLL_S)
        if not connected.is_set():
            waited += _POLL_S
            if waited > limit + 1:
                raise SchedulerError(
                    f"--scheduler {address}: no answer within {limit:g} s (is it a Dask scheduler? "
                    f"{TIMEOUT_ENV} sets the wait)"
                )
    error = state.get("error")
    if error is None:
        return list(state["texts"])
    if isinstance(error, NsysdiffError):
        raise error  # a trace's own error, raised on the worker
    if isinstance(error, KeyboardInterrupt):
        raise error
    what = "can't connect" if not connected.is_set() else "failed"
    detail = " ".join(f"{type(error).__name__}: {error}".split())[:300]
    raise SchedulerError(f"--scheduler {address}: {what} ({detail})")


def _quiet_client_finaliser() -> None:
    """A ``Client`` whose construction failed still closes itself when collected, and a
    close that times out prints a traceback at exit ("Exception ignored in Client.__del__");
    the failure has been reported in one line already, so that trace is dropped."""
    previous = sys.unraisablehook
    if getattr(previous, "_nsysdiff", False):
        return

    def hook(unraisable: Any) -> None:
        if "distributed" in getattr(type(unraisable.object), "__module__", "") or "Client.__del__" in repr(
            unraisable.object
        ):
            return
        previous(unraisable)

    hook._nsysdiff = True  # type: ignore[attr-defined]
    sys.unraisablehook = hook


def _close(client: Any, limit: float) -> None:
    if client is None:
        return
    # Closing a broken connection can fail in many ways; the run's outcome is decided already.
    with contextlib.suppress(BaseException):
        client.close(timeout=limit)
