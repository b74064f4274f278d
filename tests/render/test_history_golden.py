"""Golden output of ``nsysdiff history list|show|changes`` on the simulated history of
tests/histories.py (a +8% GEMM step at commit 40, a drift, a return to the old level)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from pathlib import Path

import histories
import pytest
from conftest import run_cli

from nsysdiff.history import store as st

GEMM = "nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_TNT"
DRIFT = "nvjet_sm90_tst_64x8_64x16_4x2_h_bz_TNT"
BACK = "nvjet_sm90_tst_64x16_64x16_4x1_v_bz_TNT"
START = datetime(2026, 3, 1, tzinfo=timezone.utc)


@pytest.fixture(scope="module")
def history_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("history")
    base, noise = histories.spec_build()
    s = st.create_or_open(directory / "main.sqlite")
    plan = histories.done_when_plan(GEMM, DRIFT, BACK)
    for i, (commit, runs) in enumerate(histories.history(base, noise, plan)):
        for fp in runs:
            s.add(fp, ref="main", commit=commit, failed=i == 41, now=START + timedelta(hours=i))
    s.close()
    return directory


@pytest.mark.parametrize(
    ("name", "argv"),
    [
        ("list.txt", ("list", "main.sqlite", "--last", "8", "--width", "120")),
        ("show.txt", ("show", "main.sqlite", GEMM, "--kind", "kernel", "--last", "12", "--width", "100")),
        ("show.step.txt", ("show", "main.sqlite", "decode_step", "--last", "6", "--width", "100")),
        ("changes.txt", ("changes", "main.sqlite", "--width", "140")),
        ("changes.80.txt", ("changes", "main.sqlite", "--width", "80")),
        ("changes.json", ("changes", "main.sqlite", "--format", "json")),
    ],
)
def test_history_golden(
    monkeypatch: pytest.MonkeyPatch,
    golden: Callable[[str, str], None],
    history_dir: Path,
    name: str,
    argv: tuple[str, ...],
) -> None:
    monkeypatch.chdir(history_dir)
    code, out, err = run_cli("history", *argv)
    assert (code, err) == (0, "")
    golden(f"history/{name}", out)


def test_docs_show_the_golden_output() -> None:
    """docs/history.md quotes these reports verbatim."""
    docs = (Path(__file__).resolve().parents[2] / "docs" / "history.md").read_text(encoding="utf-8")
    for name in ("changes.80.txt", "show.txt", "show.step.txt"):
        text = (Path(__file__).parent / "golden" / "history" / name).read_text(encoding="utf-8")
        assert text in docs, name
