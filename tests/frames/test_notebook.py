"""The worked notebook (examples/notebook/h100.ipynb) runs, as the plain script it mirrors,
and prints what the committed notebook shows: its outputs are checked, not just its running."""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pandas")
pytest.importorskip("matplotlib")

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "examples" / "notebook" / "h100.py"
NOTEBOOK = SCRIPT.with_suffix(".ipynb")
_MARK = re.compile(r"^# %%( \[markdown\])?$", re.M)


def cells(script: str) -> list[tuple[str, str]]:
    """``(kind, source)`` per cell of a percent-format script (``# %%`` / ``# %% [markdown]``)."""
    out = []
    marks = list(_MARK.finditer(script))
    for m, nxt in zip(marks, [*marks[1:], None], strict=True):
        body = script[m.end() : nxt.start() if nxt else len(script)].strip("\n")
        if m.group(1):
            # "# # Title" is the heading "# Title": one comment mark comes off, not two.
            lines = (line[2:] if line.startswith("# ") else line.removeprefix("#") for line in body.splitlines())
            out.append(("markdown", "\n".join(lines)))
        else:
            out.append(("code", body))
    return out


def run(out_dir: Path) -> list[str]:
    """Every code cell run in one namespace, as a kernel would; the text each printed."""
    namespace: dict[str, Any] = {"__name__": "__main__"}
    printed = []
    env = {"NSYSDIFF_EXAMPLES": str(ROOT / "examples"), "NSYSDIFF_NOTEBOOK_OUT": str(out_dir)}
    old = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        for kind, source in cells(SCRIPT.read_text(encoding="utf-8")):
            if kind == "code":
                buf = io.StringIO()
                with contextlib.redirect_stdout(buf):
                    exec(compile(source, str(SCRIPT), "exec"), namespace)
                printed.append(buf.getvalue())
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    return printed


def notebook(printed: list[str]) -> dict[str, Any]:
    """The .ipynb of the script, with the outputs it printed (nbformat 4.5, deterministic)."""
    out_iter = iter(printed)
    nb_cells = []
    for i, (kind, source) in enumerate(cells(SCRIPT.read_text(encoding="utf-8"))):
        cell: dict[str, Any] = {
            "cell_type": kind,
            "id": f"cell-{i}",
            "metadata": {},
            "source": source.splitlines(keepends=True),
        }
        if kind == "code":
            text = next(out_iter)
            cell["execution_count"] = None
            stream = {"name": "stdout", "output_type": "stream", "text": text.splitlines(keepends=True)}
            cell["outputs"] = [stream] if text else []
        nb_cells.append(cell)
    return {
        "cells": nb_cells,
        "metadata": {
            "kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
            "language_info": {"name": "python"},
        },
        "nbformat": 4,
        "nbformat_minor": 5,
    }


def test_the_notebook_runs_and_shows_what_is_committed(tmp_path: Path, update_golden: bool) -> None:
    printed = run(tmp_path)
    want = notebook(printed)
    if update_golden:
        NOTEBOOK.write_text(json.dumps(want, indent=1, ensure_ascii=False, sort_keys=True) + "\n", encoding="utf-8")
    assert json.loads(NOTEBOOK.read_text(encoding="utf-8")) == want
    png = (tmp_path / "families.png").read_bytes()
    assert png.startswith(b"\x89PNG") and len(png) > 10_000


def test_the_notebook_finds_the_suspects(tmp_path: Path) -> None:
    text = "".join(run(tmp_path))
    assert "scale 1.55x" in text
    assert "outliers: indexSelectSmallIndex\n" in text
    assert "batch-invariance: exit 1" in text
    for rule in ("attention-path", "gemm-selection", "launch-split"):
        assert re.search(rf"error\s+{rule}", text)
    # The GPU computes 1.24 ms of a ~14 ms decode step; the host takes most of the rest.
    assert re.search(r"Compute \(ms\)\s+1\.24\n", text) and re.search(r"Host \(ms\)\s+10\.\d+\n", text)
    assert "(ns)  " not in text.split("mean per step:")[1]


def test_the_script_runs_from_any_directory(tmp_path: Path) -> None:
    # Not only from the repository root: the examples are found beside the script.
    env = {k: v for k, v in os.environ.items() if not k.startswith("NSYSDIFF_")}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    done = subprocess.run(
        [sys.executable, str(SCRIPT)], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "batch-invariance: exit 1" in done.stdout and (tmp_path / "families.png").exists()
