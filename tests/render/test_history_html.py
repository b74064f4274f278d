"""The history dashboard (``nsysdiff history report STORE -o site/``) on a simulated history
of main with a planted step, a drift and a step that comes back: the index names them, each
key's page draws its series with the change point, names are escaped and file names safe."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import histories
import pytest
from conftest import run_cli
from render.htmlcheck import svg_texts, svgs

from nsysdiff.fingerprint.reduce import group_by
from nsysdiff.history import store as st
from nsysdiff.render.history_html import key_file
from nsysdiff.safe import neutral

STEP = "nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_TNT"
DRIFT = "void at::native::reduce_kernel<512, 1>(at::native::ReduceOp<float>)"
BACK = "void at::native::CatArrayBatchedCopy_vectorized<float, 4>(CatArrInputTensorMetadata)"
HOSTILE = "void evil</code><script>alert(1)</script>\n::error::x<svg onload=alert(2)>()"


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base, noise = histories.spec_build()
    # One kernel gets a hostile name: it must come out escaped everywhere.
    old = "void at::native::vectorized_elementwise_kernel<4, at::native::op_0>()"
    kernels = tuple(
        dataclasses.replace(k, name=HOSTILE, demangled=HOSTILE) if k.demangled == old else k for k in base.kernels
    )
    base = dataclasses.replace(base, kernels=kernels, categories=group_by(kernels, "category"))
    noise[HOSTILE] = noise.pop(old)
    path = tmp_path_factory.mktemp("history") / "main.sqlite"
    s = st.create_or_open(path)
    for commit, runs in histories.history(base, noise, histories.done_when_plan(STEP, DRIFT, BACK), commits=60):
        for fp in runs:
            s.add(fp, ref="main", commit=commit)
    s.close()
    return path


@pytest.fixture(scope="module")
def site(store: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("site") / "site"  # created by the command
    result = run_cli("history", "report", store, "-o", out)
    assert result.exit_code == 0, result.stderr
    assert result.stdout == "" and "pages to" in result.stderr
    return out


def test_index_names_the_planted_changes(site: Path) -> None:
    index = (site / "index.html").read_text(encoding="utf-8")
    assert "<h1>nsysdiff history: main</h1>" in index
    steps = index[index.index("<h2>Change points") : index.index("</table>", index.index("<h2>Change points"))]
    assert key_file("kernel", STEP) in steps and "0040c0ffee" in steps
    assert "Drifts (" in index and key_file("kernel", DRIFT) in index
    # Every link goes to a page of the site.
    for href in re.findall(r'href="([^"]+)"', index):
        assert (site / href).is_file(), href


def test_key_page_draws_the_series_and_the_step(site: Path) -> None:
    page = (site / key_file("kernel", STEP)).read_text(encoding="utf-8")
    (chart,) = svgs(page)
    words = " ".join(svg_texts(chart))
    assert "at 0040c0f" in words and "1.08x" in words
    assert page.count("<tr") == 61  # the header and one row per commit
    assert 'href="index.html"' in page


def test_names_are_escaped_and_files_named_safely(site: Path) -> None:
    assert "&lt;/code&gt;&lt;script&gt;alert(1)&lt;/script&gt;" in (site / "index.html").read_text(encoding="utf-8")
    # Pages are named after the key as the site shows it: one inert line.
    assert (site / key_file("kernel", neutral.text(HOSTILE))).is_file()
    for p in site.iterdir():
        assert re.fullmatch(r"[a-z]+-[A-Za-z0-9-]+-[0-9a-f]{10}\.html|index\.html", p.name), p.name
        text = p.read_text(encoding="utf-8")
        assert text.count("<script") == 1 and "<svg onload" not in text
        assert not [line for line in text.splitlines() if line.lstrip().startswith("::")]


def test_never_overwrites_the_store(store: Path, tmp_path: Path) -> None:
    code, out, err = run_cli("history", "report", store, "-o", store)
    assert (code, out) == (2, "") and f"{store}: is the input {store}; nsysdiff never writes over an input" in err
