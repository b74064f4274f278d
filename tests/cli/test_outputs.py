"""Output paths and exports that would overwrite an input or fail after the verdict.

Every ``-o`` is checked before any trace is read (it can be written, it is no input, a
directory where one is meant); an ``.nsys-rep`` export kept with ``--keep-export`` never
takes the name of a file that exists (an input, the other side's export); a report whose
``-o`` can't be written after all keeps a failed verdict's exit code.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest
from conftest import run_cli, run_process
from fpspec import fingerprint

from nsysdiff.cli import outputs
from nsysdiff.fingerprint.model import fingerprint_to_json
from nsysdiff.synth.builder import TraceBuilder

KERNELS = {f"kernel_{i}": (100, 1_000_000 + i) for i in range(30)}
REPORT = b"NVIDIA Tegra Profiler Report\x00\x01" + bytes(200)


def _fake_nsys(bin_dir: Path, trace: Path, log: Path) -> None:
    """An ``nsys`` that copies ``trace`` to its --output (as ``nsys export`` would write it)."""
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


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def pair(tmp_path: Path) -> tuple[Path, Path]:
    """Two traces whose diff fails the default rules (exit 1)."""
    paths = []
    for name, slow in (("a.sqlite", 3_000), ("b.sqlite", 40_000)):
        b = TraceBuilder()
        for i in range(50):
            b.launch("gemm" if i % 2 else "elementwise", 100_000 * i, 100_000 * i + 5_000, slow if i % 2 else 3_000)
        paths.append(b.write(tmp_path / name))
    return paths[0], paths[1]


@pytest.mark.parametrize(
    "argv",
    [
        ["fingerprint", "{a}", "-o", "{a}"],
        ["summary", "{a}", "-o", "{a}"],
        ["summary", "{a}", "{b}", "-o", "{b}"],
        ["noise", "{a}", "{b}", "-o", "{b}"],
        ["fingerprint", "{a}", "{b}", "--run-set", "-o", "{a}"],
        ["diff", "{a}", "{b}", "-o", "{b}"],
        ["diff", "{a}", "{b}", "-o", "{link}"],
    ],
    ids=["fingerprint", "summary", "summary-ranks", "noise", "run-set", "diff", "diff-through-a-link"],
)
def test_an_output_naming_an_input_is_refused_before_reading(pair: tuple[Path, Path], argv: list[str]) -> None:
    a, b = pair
    link = a.parent / "link.json"
    link.symlink_to(b)
    before = {p: _digest(p) for p in (a, b)}
    code, out, err = run_cli(*(w.format(a=a, b=b, link=link) for w in argv))
    assert (code, out) == (2, "")
    assert len(err.splitlines()) == 1 and "is the input" in err, err
    assert {p: _digest(p) for p in (a, b)} == before


def test_a_saved_fingerprint_diffed_into_itself(tmp_path: Path) -> None:
    a = tmp_path / "A.json"
    a.write_text(fingerprint_to_json(fingerprint(KERNELS)), encoding="utf-8")
    before = _digest(a)
    code, _, err = run_cli("diff", a, a, "-o", a)
    assert code == 2 and "is the input" in err
    assert _digest(a) == before


def test_an_output_in_a_missing_directory_fails_before_the_report(pair: tuple[Path, Path], tmp_path: Path) -> None:
    a, b = pair
    code, out, err = run_cli(a, b, "-o", tmp_path / "nodir" / "x.json")
    assert (code, out) == (2, "")  # no FAIL report printed before the error
    assert err.startswith("nsysdiff: error: -o ") and "no such directory" in err and len(err.splitlines()) == 1


def test_a_failed_verdict_keeps_its_code_when_a_report_is_lost(
    monkeypatch: pytest.MonkeyPatch, pair: tuple[Path, Path], tmp_path: Path
) -> None:
    a, b = pair
    out_file = tmp_path / "r.json"
    real_write = Path.write_text

    def full_disk(self: Path, *args: object, **kwargs: object) -> int:
        if self == out_file:
            raise OSError(28, "No space left on device")
        return real_write(self, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(Path, "write_text", full_disk)
    code, out, err = run_cli(a, b, "-o", out_file)
    assert code == 1 and "FAIL" in out
    assert "No space left on device" in err
    assert outputs.settle(0, ["lost"]) == 2 and outputs.settle(3, ["lost"]) == 3 and outputs.settle(1, []) == 1


def test_fingerprint_into_a_directory_named_with_a_slash(pair: tuple[Path, Path], tmp_path: Path) -> None:
    a, _ = pair
    code, _, err = run_cli("fingerprint", a, "-o", f"{tmp_path / 'newdir'}{os.sep}")
    assert code == 0, err
    assert (tmp_path / "newdir").is_dir() and (tmp_path / "newdir" / "a.json").is_file()


def test_several_fingerprints_into_one_json_name(pair: tuple[Path, Path], tmp_path: Path) -> None:
    a, b = pair
    code, _, err = run_cli("fingerprint", a, b, "-o", tmp_path / "set.json")
    assert code == 2 and "use --run-set for one file, or -o DIR" in err
    assert not (tmp_path / "set.json").exists()


def test_fingerprint_into_a_directory_holding_an_input(tmp_path: Path) -> None:
    d = tmp_path / "d"
    d.mkdir()
    saved = d / "a.json"
    saved.write_text(fingerprint_to_json(fingerprint(KERNELS)), encoding="utf-8")
    other = d / "b.json"
    other.write_text(fingerprint_to_json(fingerprint(KERNELS)), encoding="utf-8")
    before = _digest(saved)
    code, _, err = run_cli("fingerprint", saved, other, "-o", d)
    assert code == 2 and "is the input" in err
    assert _digest(saved) == before


# --- --keep-export --------------------------------------------------------------------------


@pytest.fixture
def nsys(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, pair: tuple[Path, Path]) -> Path:
    _fake_nsys(tmp_path / "bin", pair[1], tmp_path / "nsys.log")
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}")
    return tmp_path / "nsys.log"


def test_a_kept_export_never_replaces_its_own_input(tmp_path: Path, nsys: Path) -> None:
    d = tmp_path / "d"
    d.mkdir()
    rep = d / "r.sqlite"  # a report renamed .sqlite: its export would have its name
    rep.write_bytes(REPORT)
    code, _, err = run_cli("summary", rep, "--keep-export", d)
    assert code == 0, err
    assert rep.read_bytes() == REPORT
    assert (d / "r-2.sqlite").is_file() and f"kept as {d / 'r-2.sqlite'}" in err


def test_a_kept_export_never_replaces_the_other_side(
    tmp_path: Path,
    nsys: Path,
    pair: tuple[Path, Path],
) -> None:
    d = tmp_path / "d"
    d.mkdir()
    rep = d / "r.nsys-rep"
    rep.write_bytes(REPORT)
    cand = d / "r.sqlite"
    cand.write_bytes(pair[0].read_bytes())
    before = _digest(cand)
    code, _, err = run_cli(rep, cand, "--keep-export", d, "--no-rules")
    assert code == 0, err
    assert _digest(cand) == before


def test_two_reports_with_one_name_are_kept_apart(tmp_path: Path, nsys: Path) -> None:
    reps = []
    for side in ("base", "cand"):
        (tmp_path / side).mkdir()
        reps.append(tmp_path / side / "report1.nsys-rep")
        reps[-1].write_bytes(REPORT)
    keep = tmp_path / "keep"
    code, _, err = run_cli(*reps, "--keep-export", keep, "--no-rules")
    assert code == 0, err
    assert sorted(p.name for p in keep.iterdir()) == ["report1-2.sqlite", "report1.sqlite"]


def test_a_report_named_like_an_option(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, nsys: Path) -> None:
    monkeypatch.chdir(tmp_path)
    Path("-x.nsys-rep").write_bytes(REPORT)
    code, _, err = run_cli("summary", "--", "-x.nsys-rep")
    assert code == 0, err
    assert nsys.read_text(encoding="utf-8").split()[-1] == str(tmp_path / "-x.nsys-rep")
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    code, _, err = run_cli("summary", "--", "-x.nsys-rep")
    assert code == 2 and f"--output {tmp_path / '-x.sqlite'} {tmp_path / '-x.nsys-rep'}" in err


def test_keep_export_with_fingerprint_into_a_directory(tmp_path: Path, nsys: Path) -> None:
    reps = []
    for name in ("p1", "p2"):
        reps.append(tmp_path / f"{name}.nsys-rep")
        reps[-1].write_bytes(REPORT)
    keep = tmp_path / "keep"
    code, _, err = run_cli("fingerprint", *reps, "-o", tmp_path / "fps", "--keep-export", keep)
    assert code == 0, err
    assert sorted(p.name for p in keep.iterdir()) == ["p1.sqlite", "p2.sqlite"]


# --- -o DIR: every file the CSV writer can write; outputs that are FIFOs -----------------------


@pytest.mark.parametrize("name", ["api.csv", "steps.csv", "kernels.csv"])
def test_a_csv_file_linked_to_an_input_is_refused(pair: tuple[Path, Path], tmp_path: Path, name: str) -> None:
    a, b = pair
    out = tmp_path / "csv"
    out.mkdir()
    os.link(a, out / name)
    before = _digest(a)
    code, out_text, err = run_cli("diff", a, b, "-o", out)
    assert (code, out_text) == (2, "")
    assert len(err.splitlines()) == 1 and "is the input" in err, err
    assert _digest(a) == before


def test_the_names_checked_are_every_table_the_writer_writes(tmp_path: Path) -> None:
    from stepspec import two_steps

    from nsysdiff.render import csv_report

    a = two_steps(tmp_path / "a.sqlite")
    out = tmp_path / "csv"
    out.mkdir()
    code, _, err = run_cli("diff", a, a, "--per", "decode_step", "-o", out)
    assert code == 0, err
    written = {p.name for p in out.iterdir()}
    assert {"api.csv", "steps.csv"} <= written
    assert written <= set(csv_report.FILE_NAMES)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this platform")
@pytest.mark.parametrize(
    "argv",
    [
        ["diff", "{a}", "{b}", "-o", "{fifo}"],
        ["summary", "{a}", "-o", "{fifo}"],
        ["fingerprint", "{a}", "-o", "{fifo}"],
        ["fingerprint", "{a}", "{b}", "--run-set", "-o", "{fifo}"],
        ["noise", "{a}", "{b}", "-o", "{fifo}"],
        ["diff", "{a}", "{b}", "-o", "{dir}"],
        ["fingerprint", "{a}", "-o", "{dir}"],
    ],
    ids=["diff", "summary", "fingerprint", "run-set", "noise", "diff-csv-dir", "fingerprint-dir"],
)
def test_an_output_that_is_a_fifo_is_refused(pair: tuple[Path, Path], tmp_path: Path, argv: list[str]) -> None:
    a, b = pair
    fifo = tmp_path / "out.fifo"
    os.mkfifo(fifo)
    d = tmp_path / "dir"
    d.mkdir()
    for name in ("kernels.csv", "a.json"):
        os.mkfifo(d / name)
    # A process of its own: a write that blocks on the FIFO fails the test instead of hanging it.
    code, out, err = run_process(*(w.format(a=a, b=b, fifo=fifo, dir=d) for w in argv), timeout=60)
    assert (code, out) == (2, "")
    assert len(err.splitlines()) == 1 and "FIFO" in err, err


@pytest.mark.parametrize("variable", ["GITHUB_STEP_SUMMARY", "GITHUB_OUTPUT"])
def test_a_github_file_naming_an_input_is_refused_before_reading(
    pair: tuple[Path, Path], tmp_path: Path, variable: str
) -> None:
    a, b = pair
    link = tmp_path / "summary.md"
    link.symlink_to(b)
    before = {p: _digest(p) for p in (a, b)}
    code, out, err = run_cli("diff", a, b, env={"GITHUB_ACTIONS": "true", variable: str(link)})
    assert (code, out) == (2, "")
    assert len(err.splitlines()) == 1 and "is the input" in err, err
    assert {p: _digest(p) for p in (a, b)} == before
