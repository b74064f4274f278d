"""Baselines from history: the spec, the last N comparable runs, failed runs left out."""

from __future__ import annotations

from pathlib import Path

import fpspec
import pytest

from nsysdiff.errors import InconclusiveError, UsageError
from nsysdiff.history import baseline
from nsysdiff.history import store as st


def _fp(total: int, gpu: str = "NVIDIA H100 80GB HBM3"):
    return fpspec.fingerprint({"gemm": (10, total), "softmax": (10, 50_000)}, gpu=gpu)


@pytest.fixture
def store(tmp_path: Path) -> Path:
    """Commits c0..c7 on main, one run each with total 1000+i; c5 failed a gate; c3 ran on an H200;
    a PR branch's run in between."""
    path = tmp_path / "h.sqlite"
    s = st.create_or_open(path)
    for i in range(8):
        gpu = "NVIDIA H200" if i == 3 else "NVIDIA H100 80GB HBM3"
        s.add(_fp(1000 + i, gpu), ref="main", commit=f"c{i}", failed=i == 5)
        if i == 4:
            s.add(_fp(9999), ref="pr-12", commit="p0")
    s.close()
    return path


def _totals(runs) -> list[int]:
    return [next(k.total_ns for k in fp.kernels if k.name == "gemm") for fp in runs.runs]


def test_parse() -> None:
    assert baseline.parse("history:perf.sqlite@main~5") == baseline.Spec("perf.sqlite", "main", 5, False)
    assert baseline.parse("history:a@b.sqlite@release/1.2") == baseline.Spec("a@b.sqlite", "release/1.2", 5, False)
    assert baseline.parse("history:/x/h.sqlite@main~12+failed") == baseline.Spec("/x/h.sqlite", "main", 12, True)
    for bad in ("history:perf.sqlite", "history:@main~5", "history:s@main~1", "history:s@main~x", "perf@main~5"):
        with pytest.raises(UsageError):
            baseline.parse(bad)


def test_last_n_comparable_runs_skip_failed_and_other_gpus(store: Path) -> None:
    s = st.open_store(store)
    runs = baseline.pick(s, baseline.parse(f"history:{store}@main~4"), _fp(1))
    # c7, c6, (c5 failed), c4, (c3 on an H200), c2: the newest four comparable, oldest first.
    assert _totals(runs) == [1002, 1004, 1006, 1007]
    assert runs.sources[0].endswith(":main@c2#1")
    s.close()


def test_failed_runs_only_when_asked(store: Path) -> None:
    s = st.open_store(store)
    runs = baseline.pick(s, baseline.parse(f"history:{store}@main~3+failed"), _fp(1))
    assert _totals(runs) == [1005, 1006, 1007]
    s.close()


def test_comparable_with_the_candidate_gpu(store: Path) -> None:
    s = st.open_store(store)
    with pytest.raises(InconclusiveError, match=r"1 run of 'main' comparable .*NVIDIA H200.* at least 2") as e:
        baseline.pick(s, baseline.parse(f"history:{store}@main~5"), _fp(1, "NVIDIA H200"))
    assert e.value.exit_code == 3
    assert str(e.value).endswith("; 7 runs of 'main' were captured otherwise (GPU, scope or graph mode)")
    s.close()


def test_refuses_fewer_than_two(tmp_path: Path) -> None:
    path = tmp_path / "h.sqlite"
    s = st.create_or_open(path)
    s.add(_fp(1000), ref="main", commit="c0")
    s.add(_fp(1001), ref="main", commit="c1", failed=True)
    with pytest.raises(InconclusiveError, match=r"at least 2; 1 failed run left out, ask for them with \+failed"):
        baseline.pick(s, baseline.parse(f"history:{path}@main~5"), None)
    with pytest.raises(InconclusiveError, match="no runs of ref 'dev' yet"):
        baseline.pick(s, baseline.parse(f"history:{path}@dev~5"), None)
    s.close()


def test_a_missing_store_is_a_first_run(tmp_path: Path) -> None:
    from nsysdiff import api

    with pytest.raises(InconclusiveError, match="no history store yet") as e:
        api.history_baseline(f"history:{tmp_path}/none.sqlite@main~5", None)
    assert e.value.exit_code == 3


def test_a_slip_of_the_store_or_ref_is_bad_input_with_did_you_mean(store: Path) -> None:
    """Read as a first run (inconclusive), a typo would pass a job that lets inconclusive pass."""
    from nsysdiff import api

    for spec, meant in (
        (f"history:{store}e@main~5", f"did you mean '{store}'"),
        (f"history:{store.with_name('x.sqlite')}@main~5", None),  # another name: a first run
        (f"history:{store}@mian~5", "did you mean 'main'"),
        (f"history:{store}@mai~5", "did you mean 'main'"),
        (f"history:{store}@pr-13~5", None),  # another branch (one substitution): its first runs
    ):
        if meant is None:
            with pytest.raises(InconclusiveError):
                api.history_baseline(spec, None)
            continue
        with pytest.raises(UsageError, match=meant) as e:
            api.history_baseline(spec, None)
        assert e.value.exit_code == 2, spec


def test_what_is_a_slip() -> None:
    assert st.slip("mian", ["main", "dev"]) == "main"
    assert st.slip("mainn", ["main"]) == st.slip("man", ["main"]) == "main"
    assert st.slip("release-2.1", ["release-2.0"]) is None  # a substitution: another name
    assert st.slip("main", ["main"]) is None
    assert st.slip("ab", ["a", "b"]) is None  # two names one slip away: no guess
