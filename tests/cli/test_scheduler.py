"""``fingerprint --scheduler`` against addresses that are not a Dask scheduler: bounded
waits, one line each, Ctrl-C at once; and saved inputs whose loading a Ctrl-C stops."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import NSYSDIFF, ROOT, Result, run_cli
from fpspec import fingerprint

from nsysdiff import api
from nsysdiff.errors import FingerprintError
from nsysdiff.fingerprint import runset, validation
from nsysdiff.fingerprint.model import fingerprint_to_json
from nsysdiff.synth.builder import TraceBuilder
from nsysdiff.trace.schema import ReadStopped, resume_reads, stop_reads

TIMEOUT = "1"


def _listener(answer: bytes | None) -> Iterator[int]:
    """A local TCP listener that accepts, then says ``answer`` (or nothing, ever)."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    held: list[socket.socket] = []
    stop = threading.Event()

    def serve() -> None:
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except OSError:
                continue
            held.append(conn)
            if answer is not None:
                try:
                    conn.recv(4096)
                    conn.sendall(answer)
                except OSError:
                    pass

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield server.getsockname()[1]
    stop.set()
    thread.join()
    for c in held:
        c.close()
    server.close()


@pytest.fixture
def silent() -> Iterator[int]:
    yield from _listener(None)


@pytest.fixture
def http() -> Iterator[int]:
    yield from _listener(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n" + b"\xff" * 64)


@pytest.fixture(scope="module")
def traces(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    d = tmp_path_factory.mktemp("sched")
    out = []
    for i in range(2):
        b = TraceBuilder()
        b.launch("k", 0, 1_000, 500 + i)
        out.append(b.write(d / f"t{i}.sqlite"))
    return out


def _fingerprint(traces: list[Path], out: Path, address: str) -> Result:
    pytest.importorskip("distributed")
    env = {"NSYSDIFF_SCHEDULER_TIMEOUT": TIMEOUT}
    return run_cli("fingerprint", *traces, "-o", out, "--scheduler", address, env=env)


@pytest.mark.parametrize("server", ["silent", "http"])
def test_a_scheduler_that_is_no_scheduler_fails_in_one_line(
    request: pytest.FixtureRequest, server: str, traces: list[Path], tmp_path: Path
) -> None:
    port = request.getfixturevalue(server)
    started = time.monotonic()
    code, _, err = _fingerprint(traces, tmp_path / "o", f"tcp://127.0.0.1:{port}")
    assert code == 2, err
    assert len(err.splitlines()) == 1 and f"--scheduler tcp://127.0.0.1:{port}" in err, err
    assert time.monotonic() - started < 30


@pytest.mark.parametrize("address", ["tcp://x:y:z", "tcp://127.0.0.1:99999", "http://h:1", "h o s t:1"])
def test_a_malformed_address_fails_at_once(address: str, traces: list[Path], tmp_path: Path) -> None:
    code, _, err = _fingerprint(traces, tmp_path / "o", address)
    assert code == 2 and len(err.splitlines()) == 1 and "not a scheduler address" in err, err


def test_ctrl_c_stops_a_wait_for_the_scheduler(silent: int, traces: list[Path], tmp_path: Path) -> None:
    pytest.importorskip("distributed")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "NSYSDIFF_SCHEDULER_TIMEOUT": "60"}
    proc = subprocess.Popen(
        [
            *NSYSDIFF,
            "fingerprint",
            *map(str, traces),
            "-o",
            str(tmp_path / "o"),
            "--scheduler",
            f"tcp://127.0.0.1:{silent}",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    time.sleep(4)  # connected and waiting for the handshake
    sent = time.monotonic()
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 130 and err == "nsysdiff: interrupted\n"
    assert time.monotonic() - sent < 5


def test_paths_reach_the_workers_absolute(monkeypatch: pytest.MonkeyPatch, traces: list[Path], tmp_path: Path) -> None:
    from nsysdiff.cli import batch
    from nsysdiff.cli import scheduler as dask_scheduler

    seen: list[list[str]] = []

    def record(address: str, paths: list[str], *args: object) -> list[str]:
        seen.append(list(paths))
        return ["{}\n"] * len(paths)

    monkeypatch.setattr(dask_scheduler, "fingerprints", record)
    monkeypatch.chdir(traces[0].parent)
    jobs = batch.plan([Path(t.name) for t in traces], tmp_path / "o")
    batch.run(jobs, api.ScopeOptions(), scheduler="tcp://127.0.0.1:1")
    assert seen == [[str(t) for t in traces]]


# --- saved inputs: Ctrl-C between them, and one meaning per key ----------------------------


def test_loading_many_saved_runs_stops_when_reads_are_stopped(tmp_path: Path) -> None:
    text = fingerprint_to_json(fingerprint({"k": (1, 100)}))
    paths = []
    for i in range(3):
        paths.append(tmp_path / f"f{i}.json")
        paths[-1].write_text(text, encoding="utf-8")
    stop_reads()
    try:
        with pytest.raises(ReadStopped):
            api.load_runs(paths)
        with pytest.raises(ReadStopped):
            runset.run_set_from_json(_run_set_text(text), "rs.json")
    finally:
        resume_reads()


def _run_set_text(fp_text: str) -> str:
    head = f'{{"format": "{runset.RUN_SET_FORMAT}", "version": {runset.RUN_SET_VERSION}'
    return f'{head}, "runs": [{fp_text}, {fp_text}]}}'


def test_duplicate_keys_are_refused(tmp_path: Path) -> None:
    fp_text = fingerprint_to_json(fingerprint({"k": (1, 100)}))
    head = f'{{"format": "{runset.RUN_SET_FORMAT}", "version": {runset.RUN_SET_VERSION}'
    doubled = f'{head}, "runs": [{fp_text}], "runs": [{fp_text}, {fp_text}]}}'

    with pytest.raises(FingerprintError, match="'runs' appears twice"):
        validation.parse(doubled, "rs.json")
