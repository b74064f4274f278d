"""A history names kernels as the diff does: by their short labels, which ``history show``
takes back as keys, and which its suggestions and ``history changes`` show whole."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import fpspec
import histories
import pytest
from conftest import otava_test, run_cli

from nsysdiff.history import store as st

ADD = "void at::native::elementwise_kernel<128, 4, at::native::AddFunctor<float>>(int, at::native::AddFunctor<float>)"
MUL = "void at::native::elementwise_kernel<128, 4, at::native::MulFunctor<float>>(int, at::native::MulFunctor<float>)"
GEMM = "void cutlass::Kernel2<cutlass_80_tensorop_s1688gemm_128x128_16x5_nn_align4>(Params)"


def _store(tmp_path: Path, commits: int = 4, step_at: int | None = None) -> Path:
    kernels = [
        fpspec.kernel("elementwise_kernel", 100, 2_000_000, demangled=ADD),
        fpspec.kernel("elementwise_kernel", 100, 3_000_000, demangled=MUL),
        fpspec.kernel("Kernel2", 50, 9_000_000, demangled=GEMM),
    ]
    base = fpspec.fingerprint(kernels)
    noise = {k.demangled: 0.002 for k in kernels}

    def plan(commit: int, key: str) -> float:
        return 1.2 if step_at is not None and commit >= step_at and key == ADD else 1.0

    path = tmp_path / "h.sqlite"
    s = st.create_or_open(path)
    for commit, runs in histories.history(base, noise, plan, commits=commits, runs=2):
        for fp in runs:
            s.add(fp, ref="main", commit=commit)
    s.close()
    return path


def test_show_takes_the_diffs_label_and_names_the_signature(tmp_path: Path) -> None:
    path = _store(tmp_path)
    code, out, err = run_cli("history", "show", path, "elementwise_kernel ⟨AddFunctor⟩", "--width", "200")
    assert (code, err) == (0, "")
    assert out.splitlines()[0] == "nsysdiff history: kernel elementwise_kernel ⟨AddFunctor⟩"
    assert f"signature: {ADD}" in out
    # The signature is still a key, and names the same series.
    code, again, _ = run_cli("history", "show", path, ADD, "--width", "200")
    assert code == 0 and again == out
    code, out, _ = run_cli("history", "show", path, "Kernel2", "--width", "200")
    assert code == 0 and out.startswith("nsysdiff history: kernel Kernel2\n")


def test_suggestions_are_whole_labels_that_paste_back(tmp_path: Path) -> None:
    path = _store(tmp_path)
    code, out, err = run_cli("history", "show", path, "native::elementwise")
    assert (code, out) == (2, "")
    assert "keys containing it: 'elementwise_kernel ⟨AddFunctor⟩', 'elementwise_kernel ⟨MulFunctor⟩'" in err
    assert "void" not in err
    suggestion = err.split("keys containing it: ", 1)[1].split(", ")[0]
    code, out, _ = run_cli("history", "show", path, *shlex.split(suggestion), "--width", "200")
    assert code == 0 and "kernel elementwise_kernel ⟨AddFunctor⟩" in out
    # A label's own words are found too, though its signature lacks them as typed.
    code, _, err = run_cli("history", "show", path, "⟨Mul")
    assert code == 2 and "'elementwise_kernel ⟨MulFunctor⟩'" in err


@otava_test
def test_changes_name_a_kernel_by_its_label(tmp_path: Path) -> None:
    path = _store(tmp_path, commits=24, step_at=12)
    code, out, err = run_cli("history", "changes", path, "--width", "120")
    assert (code, err) == (0, "")
    rows = [line for line in out.splitlines() if "elementwise_kernel ⟨AddFunctor⟩" in line]
    assert rows and "kernel" in rows[0] and "+20" in rows[0]
    assert not any(line.split()[:1] == ["void"] for line in out.splitlines())
    code, out, _ = run_cli("history", "changes", path, "--format", "json")
    steps = [(s["key"], s["label"]) for s in json.loads(out)["steps"] if s["kind"] == "kernel"]
    assert code == 0 and steps == [(ADD, "elementwise_kernel ⟨AddFunctor⟩")]


@pytest.mark.parametrize(
    ("key", "name"), [(ADD, "elementwise_kernel"), (GEMM, "Kernel2"), ("nvjet_tst_64x8", "nvjet_tst_64x8")]
)
def test_short_name_of_a_signature_is_nsys_short_name(key: str, name: str) -> None:
    from nsysdiff.compare.labels import short_name

    assert short_name(key) == name
