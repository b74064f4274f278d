"""Fingerprinting many traces: sequential, local processes (-j) and a Dask cluster agree."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import run_cli

from nsysdiff import api
from nsysdiff.cli import batch
from nsysdiff.errors import ExitCode, TraceError, UsageError
from nsysdiff.fingerprint.model import fingerprint_to_json
from nsysdiff.fingerprint.scope import ScopeOptions
from nsysdiff.synth.builder import TraceBuilder


def _traces(root: Path, n: int = 4) -> list[Path]:
    out = []
    for i in range(n):
        b = TraceBuilder()
        for k in range(20 + i):
            b.launch(f"kernel_{k % 3}", 10_000 * k, 10_000 * k + 2_000, 1_000 + 37 * i + k)
            b.nvtx_range(f"step {k % 2}", 10_000 * k, 10_000 * k + 9_000)
        out.append(b.write(root / f"rank{i}.sqlite"))
    return out


def _expected(traces: list[Path], options: ScopeOptions | None = None) -> dict[str, str]:
    return {f"{t.stem}.json": fingerprint_to_json(api.load(t, options)) for t in traces}


def _written(out: Path) -> dict[str, str]:
    return {p.name: p.read_text(encoding="utf-8") for p in sorted(out.glob("*.json"))}


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_many_traces_one_file_each(tmp_path: Path, jobs: str) -> None:
    traces = _traces(tmp_path)
    out = tmp_path / "fps"
    res = run_cli("fingerprint", *map(str, traces), "-o", str(out), "-j", jobs, "--nvtx", "step 1")
    assert res.exit_code == 0, res.stderr
    assert _written(out) == _expected(traces, ScopeOptions(nvtx="step 1"))


def test_one_trace_into_a_directory(tmp_path: Path) -> None:
    (trace,) = _traces(tmp_path, 1)
    out = tmp_path / "fps"
    out.mkdir()
    assert run_cli("fingerprint", str(trace), "-o", str(out)).exit_code == 0
    assert _written(out) == _expected([trace])


def test_many_traces_need_a_directory(tmp_path: Path) -> None:
    res = run_cli("fingerprint", *map(str, _traces(tmp_path, 2)))
    assert res.exit_code == ExitCode.BAD_INPUT
    assert "-o DIR" in res.stderr


def test_same_stem_twice_is_refused(tmp_path: Path) -> None:
    traces = _traces(tmp_path, 1)
    other = tmp_path / "other"
    other.mkdir()
    twin = _traces(other, 1)[0]
    with pytest.raises(UsageError, match="same name"):
        batch.plan([traces[0], twin], tmp_path / "out")


def test_a_bad_trace_stops_the_batch_with_its_error(tmp_path: Path) -> None:
    traces = _traces(tmp_path, 3)
    bad = tmp_path / "broken.sqlite"
    bad.write_text("not a database\n", encoding="utf-8")
    res = run_cli("fingerprint", str(traces[0]), str(bad), str(traces[1]), "-o", str(tmp_path / "o"), "-j", "2")
    assert res.exit_code == ExitCode.BAD_INPUT
    assert str(bad) in res.stderr and "Traceback" not in res.stderr
    with pytest.raises(TraceError):
        batch.run(batch.plan([bad], tmp_path / "o2"), ScopeOptions())


def test_jobs_must_be_positive(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="--jobs 0"):
        batch.run(batch.plan(_traces(tmp_path, 2), tmp_path / "o"), ScopeOptions(), workers=0)


def test_unreachable_scheduler_is_one_line(tmp_path: Path) -> None:
    pytest.importorskip("distributed")
    res = run_cli(
        "fingerprint", *map(str, _traces(tmp_path, 2)), "-o", str(tmp_path / "o"), "--scheduler", "tcp://127.0.0.1:9"
    )
    assert res.exit_code == ExitCode.BAD_INPUT
    assert "--scheduler tcp://127.0.0.1:9: can't connect" in res.stderr


def test_dask_local_cluster(tmp_path: Path) -> None:
    """The same map step on a two-worker LocalCluster over loopback: identical files."""
    distributed = pytest.importorskip("distributed")
    traces = _traces(tmp_path, 5)
    out = tmp_path / "fps"
    with distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1", dashboard_address=None
    ) as cluster:
        res = run_cli("fingerprint", *map(str, traces), "-o", str(out), "--scheduler", cluster.scheduler_address)
        assert res.exit_code == 0, res.stderr
        assert _written(out) == _expected(traces)
        bad = tmp_path / "broken.sqlite"
        bad.write_text("not a database\n", encoding="utf-8")
        res = run_cli(
            "fingerprint", str(traces[0]), str(bad), "-o", str(tmp_path / "o"), "--scheduler", cluster.scheduler_address
        )
        assert res.exit_code == ExitCode.BAD_INPUT
        assert str(bad) in res.stderr
