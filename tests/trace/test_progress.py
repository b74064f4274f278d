"""Progress: on stderr while reading, only on a terminal outside CI, never on stdout."""

from __future__ import annotations

import io
import os
import pty
import subprocess
import threading

from conftest import NSYSDIFF, ROOT, run_process

from nsysdiff import api
from nsysdiff.trace import progress

CASCADE = ROOT / "examples" / "cascade"
ARGS = (CASCADE / "bs1.sqlite", CASCADE / "bs16.sqlite", "--no-rules")
DIFF = [*NSYSDIFF, *map(str, ARGS)]


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("CI", "GITHUB_ACTIONS", "COLUMNS")}
    return {**env, **extra}


def _run_with_stderr_on_a_pty(args: list[str], env: dict[str, str]) -> tuple[str, str]:
    """(stdout, what the terminal on stderr saw)."""
    leader, follower = pty.openpty()
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=follower, env=env, cwd=ROOT)
    os.close(follower)
    seen = b""
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # the child closed the terminal
            break
        if not chunk:
            break
        seen += chunk
    out = proc.stdout.read() if proc.stdout else b""
    proc.wait(timeout=60)
    os.close(leader)
    return out.decode(), seen.decode(errors="replace")


def test_progress_on_a_terminal_names_side_and_table() -> None:
    out, err = _run_with_stderr_on_a_pty(DIFF, _env())
    assert "reading base: kernels" in err and "reading candidate: NVTX ranges" in err
    assert out.startswith("nsysdiff: NOT JUDGED") and "reading" not in out


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_every_step_of_both_sides_is_drawn() -> None:
    """The two sides report from threads of their own: each step is drawn before the other
    side's next one replaces it (the end-to-end test above only sees what was drawn)."""
    screen = _Terminal()
    steps = [f"table {i}" for i in range(150)]
    with progress.reading(stream=screen, environ={}) as step:
        start = threading.Barrier(2)

        def side(name: str) -> None:
            start.wait()
            for what in steps:
                step(name, what)

        threads = [threading.Thread(target=side, args=(name,)) for name in ("base", "candidate")]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    drawn = screen.getvalue()
    missing = [f"{s}: {w}" for s in ("base", "candidate") for w in steps if f"reading {s}: {w} " not in drawn]
    assert missing == []


def test_silent_with_quiet_in_ci_and_off_a_terminal() -> None:
    for args, env in (
        ([*DIFF, "--quiet"], _env()),
        (DIFF, _env(CI="true")),
        (DIFF, _env(GITHUB_ACTIONS="true")),
    ):
        out, err = _run_with_stderr_on_a_pty(args, env)
        assert "reading" not in err, (args, env)
        assert out.startswith("nsysdiff: NOT JUDGED")
    piped = run_process(*ARGS, env={"CI": None, "GITHUB_ACTIONS": None, "COLUMNS": None})
    assert piped.stderr == "" and piped.stdout.startswith("nsysdiff: NOT JUDGED")


def test_steps_reach_the_callback_in_order() -> None:
    seen: list[tuple[str, str]] = []
    api.load(CASCADE / "bs1.sqlite", progress=lambda side, what: seen.append((side, what)), side="base")
    assert [w for _, w in seen] == [
        "kernels",
        "metadata",
        "memcpy",
        "memset",
        "host API calls",
        "NVTX ranges",
        "kernel tails",
        "reducing to a fingerprint",
    ]
    assert {s for s, _ in seen} == {"base"}


def test_reading_is_silent_unless_wanted() -> None:
    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    assert progress.wanted(False, Tty(), {}) and not progress.wanted(True, Tty(), {})
    assert not progress.wanted(False, io.StringIO(), {})
    assert not progress.wanted(False, Tty(), {"CI": "1"})
    with progress.reading(quiet=True, stream=Tty()) as step:
        assert step is progress.silent
