"""CLI conventions: one-line usage errors, -h, validated options, did-you-mean, inputs told
by content, .nsys-rep export, and a process whose stdout closes, fills or gets Ctrl-C.

The command runs in this process through the console script's entry point (tests/conftest.py);
what depends on the real process (pipes, descriptors, signals) runs one.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import click
import pytest
from conftest import NSYSDIFF, run_cli
from fpspec import fingerprint

from nsysdiff import api, cli
from nsysdiff.cli import options
from nsysdiff.errors import TraceError
from nsysdiff.fingerprint.model import fingerprint_to_json
from nsysdiff.synth.builder import Generation, TraceBuilder

KERNELS = {f"kernel_{i}": (100, 1_000_000 + i) for i in range(300)}


@pytest.fixture(scope="module")
def fps(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A base and a candidate whose diff fails the default rules (exit 1)."""
    d = tmp_path_factory.mktemp("fps")
    slower = dict(KERNELS, kernel_7=(100, 9_000_000))
    base, cand = d / "base.json", d / "cand.json"
    base.write_text(fingerprint_to_json(fingerprint(KERNELS)), encoding="utf-8")
    cand.write_text(fingerprint_to_json(fingerprint(slower)), encoding="utf-8")
    return base, cand


@pytest.fixture(scope="module")
def trace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    b = TraceBuilder(Generation.V2024)
    for i in range(200):
        b.launch("gemm" if i % 2 else "elementwise", 10_000 * i, 10_000 * i + 3_000, 2_000)
    return b.write(tmp_path_factory.mktemp("trace") / "t.sqlite")


# --- usage errors: exact and one line ---------------------------------------------------

USAGE = {
    "typo in a command": (
        ["sumary", "x.sqlite"],
        "'sumary' is no command and no file; did you mean 'nsysdiff summary'? (commands: comment, "
        "diff, fingerprint, history, noise, rules, summary)",
    ),
    "bad choice": (
        ["summary", "x.sqlite", "--format", "html"],
        "--format: 'html' is not one of 'text', 'markdown', 'json' (see 'nsysdiff summary --help')",
    ),
    "width 0": (
        ["diff", "a", "b", "--width", "0"],
        "--width: 0 is too small; give the report width in columns, at least 40 (see 'nsysdiff diff --help')",
    ),
    "negative z": (
        ["diff", "a", "b", "--z-threshold", "-1"],
        "--z-threshold: '-1' is not positive; give a positive number such as 3.5 (see 'nsysdiff diff --help')",
    ),
    "nan z": (
        ["diff", "a", "b", "--z-threshold", "nan"],
        "--z-threshold: 'nan' is not a finite number; give a positive number such as 3.5 (see 'nsysdiff diff --help')",
    ),
    "noise 0": (
        ["diff", "a", "b", "--noise", "0"],
        "--noise: '0' is below 1; give a ratio of at least 1, such as 1.25x (see 'nsysdiff diff --help')",
    ),
    "min-share 5": (
        ["diff", "a", "b", "--min-share", "5"],
        "--min-share: '5' is not a share; give a percentage such as 0.1% or a fraction below 1 such as "
        "0.001 (did you mean 5%?) (see 'nsysdiff diff --help')",
    ),
    "top -3": (
        ["summary", "x.sqlite", "--top", "-3"],
        "--top: -3 is too small; give the number of rows to show, at least 1 (see 'nsysdiff summary --help')",
    ),
    "skip-first not a number": (
        ["summary", "x.sqlite", "--skip-first", "two"],
        "--skip-first: expected a whole number (see 'nsysdiff summary --help')",
    ),
    "rules with no-rules": (
        ["diff", "a", "b", "--rules", "default", "--no-rules"],
        "--rules and --no-rules contradict each other: give one of them",
    ),
    "missing candidate": (
        ["diff", "a"],
        "missing CANDIDATE: the usage is 'nsysdiff diff [OPTIONS] BASE CANDIDATE' (see 'nsysdiff diff --help')",
    ),
    "missing trace": (
        ["summary"],
        "missing TRACE...: the usage is 'nsysdiff summary [OPTIONS] TRACE...' (see 'nsysdiff summary --help')",
    ),
    "missing rule file": (
        ["rules", "validate"],
        "missing FILE|PACK...: the usage is 'nsysdiff rules validate [OPTIONS] FILE|PACK...' (see "
        "'nsysdiff rules validate --help')",
    ),
    "unknown option": (
        ["diff", "a", "b", "--top", "3"],
        "No such option: --top (see 'nsysdiff diff --help')",
    ),
}


@pytest.mark.parametrize("case", USAGE, ids=list(USAGE))
def test_usage_error_is_one_exact_line(case: str) -> None:
    argv, message = USAGE[case]
    assert run_cli(*argv) == (2, "", f"nsysdiff: error: {message}\n")


def test_multi_line_messages_are_one_line(monkeypatch: pytest.MonkeyPatch, trace: Path) -> None:
    def load(*_: object, **__: object) -> None:
        raise TraceError("t.sqlite: database disk image is malformed\n  (page 7)")

    monkeypatch.setattr(api, "load", load)
    code, out, err = run_cli("summary", trace)
    assert (code, out, err) == (2, "", "nsysdiff: error: t.sqlite: database disk image is malformed (page 7)\n")


def test_shares_and_ratios_as_the_docs_write_them(fps: tuple[Path, Path]) -> None:
    base, _ = fps
    argv = ["diff", base, base, "--min-share", "0.1%", "--min-deviation", "1.25x", "--noise", "1.05x"]
    code, out, err = run_cli(*argv)
    assert (code, err) == (0, "")
    assert out.startswith("nsysdiff: PASS")


@pytest.mark.parametrize(("text", "share"), [("0.1%", 0.001), ("0.001", 0.001), ("5%", 0.05), ("0", 0.0)])
def test_share_values(text: str, share: float) -> None:
    assert options.share(text) == pytest.approx(share)


def test_short_help_and_readable_metavars() -> None:
    for argv in (["-h"], ["diff", "-h"], ["summary", "-h"], ["rules", "-h"], ["rules", "explain", "-h"]):
        r = run_cli(*argv)
        assert r.exit_code == 0, (argv, r.stderr)
        assert r.stdout.startswith("Usage: "), argv
        assert "<list[" not in r.stdout and "<float>" not in r.stdout and "<int>" not in r.stdout, argv
    r = run_cli("diff", "-h")
    # Arguments by their metavar alone: not typer's "{BASE}" or "BASE <path>".
    assert " diff [OPTIONS] [BASE] [CANDIDATE]\n" in r.stdout
    assert "--base RUN..." in r.stdout and "--candidate RUN..." in r.stdout
    assert "<path>" not in r.stdout and "{" not in r.stdout
    assert "-r, --rules PACK|FILE" in r.stdout
    assert "--min-share SHARE" in r.stdout


def _options(command: click.Command, path: str = "nsysdiff") -> list[tuple[str, click.Option]]:
    if isinstance(command, click.Group):
        ctx = click.Context(command)
        subs = [(name, command.get_command(ctx, name)) for name in command.list_commands(ctx)]
        return [o for name, sub in subs if sub is not None for o in _options(sub, f"{path} {name}")]
    return [(path, p) for p in command.params if isinstance(p, click.Option) and not p.hidden]


def test_shared_options_read_the_same_in_every_command() -> None:
    """An option several commands take is declared once: its names, help, default and parser
    are the same wherever it appears, and --window is always the time range."""
    shared = ("window", "window_origin", "skip_first", "nvtx", "per", "width", "quiet", "names", "by", "phases")
    forms: dict[str, set[tuple[object, ...]]] = {}
    where: dict[str, list[str]] = {}
    for command, p in _options(cli.app):
        if p.name in shared:
            func = getattr(p.type, "func", type(p.type))
            forms.setdefault(p.name, set()).add((tuple(p.opts), p.help, p.default, p.metavar, func))
            where.setdefault(p.name, []).append(command.removeprefix("nsysdiff "))
    assert {name: len(f) for name, f in forms.items()} == dict.fromkeys(shared, 1)
    assert where["window"] == ["summary", "fingerprint", "noise", "diff", "history add"]


# --- inputs recognised by content ---------------------------------------------------------


def test_fingerprint_with_any_name(fps: tuple[Path, Path], tmp_path: Path) -> None:
    txt = tmp_path / "fp.txt"
    txt.write_bytes(fps[0].read_bytes())
    code, out, _ = run_cli("diff", txt, fps[0])
    assert code == 0 and out.startswith("nsysdiff: PASS")


def test_fingerprint_through_process_substitution(fps: tuple[Path, Path]) -> None:
    base, cand = fps
    r = subprocess.run(
        ["bash", "-c", f'{" ".join(NSYSDIFF)} "$0" <(cat "$1")', str(base), str(cand)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert r.returncode == 1, r.stderr
    assert r.stdout.startswith("nsysdiff: FAIL")


def test_fifo_without_writer_does_not_hang(tmp_path: Path) -> None:
    fifo = tmp_path / "fp.fifo"
    os.mkfifo(fifo)
    code, out, err = run_cli("summary", fifo)
    assert (code, out) == (2, "")
    assert err == f"nsysdiff: error: {fifo}: is empty, not an nsys SQLite export or a fingerprint\n"


REPORT = b"NVIDIA Tegra Profiler Report\x00\x01" + bytes(200)


def test_renamed_report_gets_the_export_command(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    rep = tmp_path / "run.sqlite"
    rep.write_bytes(REPORT)
    code, out, err = run_cli("summary", rep)
    assert (code, out) == (2, "")
    assert err == (
        f"nsysdiff: error: {rep}: an Nsight Systems report, not an SQLite export, and nsys is not on "
        f"PATH; export it first: nsys export --type sqlite --output {tmp_path / 'run-export.sqlite'} {rep}\n"
    )


def _fake_nsys(bin_dir: Path, trace: Path, log: Path) -> None:
    """An ``nsys`` that copies ``trace`` to its --output and logs its arguments."""
    bin_dir.mkdir()
    script = bin_dir / "nsys"
    script.write_text(
        "#!/bin/sh\n"
        f'echo "$@" >> "{log}"\n'
        'while [ $# -gt 0 ]; do [ "$1" = --output ] && out="$2"; shift; done\n'
        f'cp "{trace}" "$out"\n',
        encoding="utf-8",
    )
    script.chmod(0o755)


def test_report_exported_with_nsys_in_a_temporary_directory(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, trace: Path
) -> None:
    log = tmp_path / "nsys.log"
    _fake_nsys(tmp_path / "bin", trace, log)
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}")
    inputs = tmp_path / "in"
    inputs.mkdir()
    rep = inputs / "profile.nsys-rep"
    rep.write_bytes(REPORT)
    code, out, err = run_cli("summary", rep, "--format", "json")
    assert code == 0, err
    assert '"kernel_launches": 200' in out
    assert err == (
        f"nsysdiff: exported {rep} to SQLite with nsys, in a temporary directory (--keep-export DIR keeps it)\n"
    )
    assert sorted(p.name for p in inputs.iterdir()) == ["profile.nsys-rep"]  # nothing beside the input
    args = log.read_text(encoding="utf-8").split()
    assert args[:5] == ["export", "--type", "sqlite", "--force-overwrite", "true"]
    assert args[-1] == str(rep.absolute())
    assert not Path(args[-2]).exists()  # the temporary export is gone


def test_keep_export(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, trace: Path) -> None:
    _fake_nsys(tmp_path / "bin", trace, tmp_path / "nsys.log")
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}")
    rep = tmp_path / "profile.qdrep"
    rep.write_bytes(REPORT)
    keep = tmp_path / "exports"
    code, _, err = run_cli("fingerprint", rep, "--keep-export", keep)
    assert code == 0, err
    assert err == f"nsysdiff: exported {rep} to SQLite with nsys, kept as {keep / 'profile.sqlite'}\n"
    assert (keep / "profile.sqlite").read_bytes() == trace.read_bytes()


def test_failed_export_is_one_line(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "nsys").write_text("#!/bin/sh\necho 'bad report\nfile is corrupt' >&2\nexit 3\n", encoding="utf-8")
    (bin_dir / "nsys").chmod(0o755)
    monkeypatch.setenv("PATH", str(bin_dir))
    rep = tmp_path / "p.nsys-rep"
    rep.write_bytes(REPORT)
    code, _, err = run_cli("summary", rep)
    lines = err.splitlines()
    assert code == 2 and len(lines) == 1  # the error alone: the note comes after a successful export
    assert lines[0].startswith(f"nsysdiff: error: {rep}: nsys export failed (exit 3): file is corrupt; the command")


def test_a_report_from_a_newer_nsys_says_which_and_what_to_do(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "nsys").write_text(
        '#!/bin/sh\nif [ "$1" = --version ]; then\n'
        '  echo "NVIDIA Nsight Systems version 2023.2.3.1001-32894139v0"; exit 0\nfi\n'
        "echo 'Importer error status: Version number is invalid: 2024@4@2@133-34939958v0' >&2\nexit 1\n",
        encoding="utf-8",
    )
    (bin_dir / "nsys").chmod(0o755)
    monkeypatch.setenv("PATH", str(bin_dir))
    rep = tmp_path / "p.nsys-rep"
    rep.write_bytes(REPORT)
    code, _, err = run_cli("summary", rep)
    assert code == 2 and len(err.splitlines()) == 1, err
    assert f"{rep}: written by Nsight Systems 2024.4.2.133, newer than the nsys on PATH (version 2023.2.3.1001)" in err
    assert "export it with nsys 2024.4.2.133 or later" in err and "@" not in err.split("PATH")[1]


# --- waivers that match nothing ---------------------------------------------------------------


def test_waiver_that_matches_nothing_warns(fps: tuple[Path, Path], tmp_path: Path) -> None:
    rules = tmp_path / "rules.yaml"
    rules.write_text(
        "version: 1\nextends: default\nwaivers:\n  - rule: total-time\n    subject: no such kernel\n"
        "    reason: r\n    expires: 2999-01-01\n",
        encoding="utf-8",
    )
    code, _, err = run_cli("diff", fps[0], fps[0], "--rules", rules)
    assert code == 0
    assert err == (f"nsysdiff: warning: {rules}:4: waiver for rule 'total-time' matches no finding (no such kernel)\n")


# --- the real process: closed pipe, closed or full stdout, Ctrl-C ------------------------------


def test_closed_pipe_leaves_the_exit_code_to_the_verdict(fps: tuple[Path, Path]) -> None:
    base, cand = fps
    runs = [
        ([base, base, "-f", "json"], 0),
        ([base, cand, "-f", "json"], 1),
        (["summary", base, "-f", "json"], 0),
        (["fingerprint", base], 0),
        (["summary", base], 0),
        (["rules", "list"], 0),
    ]
    for argv, verdict in runs:
        p = subprocess.Popen([*NSYSDIFF, *map(str, argv)], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        assert p.stdout is not None and p.stderr is not None
        # The reader is gone before the first write (`| head -1` after its line, without the race).
        p.stdout.close()
        assert p.wait(timeout=60) == verdict, argv
        assert p.stderr.read() == b"", argv


@pytest.mark.parametrize("redirect", [">&-", "> /dev/full"])
def test_closed_or_full_stdout(fps: tuple[Path, Path], redirect: str) -> None:
    base, cand = fps
    cmd = f'{" ".join(NSYSDIFF)} "$0" "$1" {redirect}'
    failing = subprocess.run(["bash", "-c", cmd, str(base), str(cand)], capture_output=True, text=True, check=False)
    assert failing.returncode == 1 and "Traceback" not in failing.stderr
    passing = subprocess.run(["bash", "-c", cmd, str(base), str(base)], capture_output=True, text=True, check=False)
    if redirect == ">&-":
        assert (passing.returncode, passing.stderr) == (0, "")
    else:  # the report was lost: not a pass
        assert (passing.returncode, passing.stderr) == (
            2,
            "nsysdiff: error: can't write to stdout (No space left on device)\n",
        )


def _importing_numpy(pid: int) -> bool:
    try:
        return "numpy" in Path(f"/proc/{pid}/maps").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return False


@pytest.mark.skipif(not Path("/proc/self/maps").exists(), reason="needs /proc to see the imports start")
def test_ctrl_c_during_imports_is_130_without_traceback(fps: tuple[Path, Path]) -> None:
    """SIGINT while the CLI's imports run (numpy just mapped, scipy and the rest to come).

    Waiting for numpy's library to appear in the process's memory map, rather than a fixed
    delay, lands the signal inside nsysdiff's own imports however loaded the machine is;
    the interpreter's start before that is Python's, not ours.
    """
    # On a loaded machine the whole run can end between the check and the signal: such a
    # try says nothing either way, so a few are allowed; every try the signal reaches in
    # time must be exit 130 with the one line.
    for _ in range(5):
        # A background job of a non-interactive shell starts with SIGINT ignored, and a child
        # inherits that: give the run the disposition a terminal gives it.
        p = subprocess.Popen(
            [*NSYSDIFF, "summary", str(fps[0])],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
        )
        deadline = time.monotonic() + 30
        while p.poll() is None and not _importing_numpy(p.pid) and time.monotonic() < deadline:
            time.sleep(0.001)
        assert p.poll() is None, "the process ended before its imports could be interrupted"
        p.send_signal(signal.SIGINT)
        out, err = p.communicate(timeout=60)
        if p.returncode == 0 and not err:
            continue  # the run had finished when the signal came: too late to test anything
        assert (p.returncode, out, err) == (130, b"", b"nsysdiff: interrupted\n")
        return
    pytest.fail("the interrupt never reached the process during its imports in 5 tries")
