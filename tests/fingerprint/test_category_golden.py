"""The kernel taxonomy against a table of real kernel names, reviewed by hand.

``golden/categories.tsv`` lists kernel names (cuDNN, cuFFT, cuBLAS/cuBLASLt, CUTLASS,
FlashAttention, FlashInfer, Triton, NCCL, ATen, vLLM, and every kernel of the real traces)
with the category each one is. A change of the taxonomy shows here as a diff of that table;
``--update-golden`` rewrites the categories (and adds the real traces' new kernels) for a
review of the change by hand.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from conftest import real_traces, traces_dir

from nsysdiff.fingerprint.categories import categorize, identity, names

GOLDEN = Path(__file__).parent / "golden" / "categories.tsv"


def _rows() -> list[tuple[str, str, str] | str]:
    """The table: (category, short name, demangled name), or a comment line as it is."""
    out: list[tuple[str, str, str] | str] = []
    for line in GOLDEN.read_text(encoding="utf-8").splitlines():
        if not line or line.startswith("#"):
            out.append(line)
            continue
        category, short, demangled = line.split("\t")
        out.append((category, short, demangled or short))
    return out


def _write(rows: list[tuple[str, str, str] | str]) -> None:
    lines = [r if isinstance(r, str) else "\t".join((r[0], r[1], "" if r[2] == r[1] else r[2])) for r in rows]
    GOLDEN.write_text("\n".join(lines) + "\n", encoding="utf-8")


def _diff(changes: list[tuple[str, str, str]]) -> str:
    return "\n".join(f"  {short}: table says {want}, taxonomy says {got}" for short, want, got in changes)


def test_every_kernel_in_the_table_has_its_category(update_golden: bool) -> None:
    rows = _rows()
    changes = []
    for i, r in enumerate(rows):
        if isinstance(r, str):
            continue
        got = categorize(r[1], r[2])
        if got != r[0]:
            changes.append((r[1], r[0], got))
            rows[i] = (got, r[1], r[2])
    if changes and update_golden:
        _write(rows)
        return
    assert not changes, f"{len(changes)} kernels changed category (--update-golden to accept):\n{_diff(changes)}"


def test_the_table_uses_only_known_categories_and_covers_each() -> None:
    used = {r[0] for r in _rows() if not isinstance(r, str)}
    assert used <= set(names())
    assert used == set(names())  # every category has names that show what it holds


def _trace_kernels(path: Path) -> set[tuple[str, str]]:
    """Every (short, demangled) kernel name of a real export, read-only."""
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    con.text_factory = lambda b: b.decode("utf-8", "replace")
    try:
        tables = {t for (t,) in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        if "CUPTI_ACTIVITY_KIND_KERNEL" not in tables:
            return set()
        rows = con.execute(
            "SELECT DISTINCT s.value, d.value FROM CUPTI_ACTIVITY_KIND_KERNEL k "
            "JOIN StringIds s ON s.id = k.shortName JOIN StringIds d ON d.id = k.demangledName"
        ).fetchall()
        return {(str(s), str(d)) for s, d in rows}
    finally:
        con.close()


@pytest.mark.skipif(not real_traces(), reason="real traces not found (set NSYSDIFF_TRACES or add ../shared/traces)")
def test_every_kernel_of_the_real_traces_is_in_the_table(update_golden: bool) -> None:
    rows = _rows()
    table = {(r[1], identity(r[1], r[2])): r[0] for r in rows if not isinstance(r, str)}
    paths = [*real_traces(), *sorted((traces_dir() / "h100").glob("*.sqlite"))]
    missing: dict[tuple[str, str], tuple[str, str]] = {}
    changes = []
    for path in paths:
        for short, demangled in _trace_kernels(path):
            key = (short, identity(short, demangled))
            if key not in table:
                best = missing.get(key)
                if best is None or len(demangled) < len(best[1]):
                    missing[key] = (short, demangled)
            elif table[key] != categorize(short, demangled):
                changes.append((short, table[key], categorize(short, demangled)))
    if missing and update_golden:
        _write([*rows, *((categorize(s, d), s, d) for s, d in sorted(missing.values()))])
        return
    assert not missing, "kernels of the real traces not in the table (--update-golden adds them):\n" + "\n".join(
        f"  {s}" for s, _ in sorted(missing.values())
    )
    assert not changes, _diff(changes)


@pytest.mark.parametrize(
    ("short", "demangled", "ident"),
    [
        (
            "fft2d_r2c_32x32",
            "void fft2d_r2c_32x32<float, false, 0u, false>(float2 *, cudnn::reduced_divisor)",
            "fft2d_r2c_32x32",
        ),
        (
            "Kernel2",
            "void cutlass::Kernel2<cutlass_80_simt_sgemm_128x32_8x5_nn_align1>(T1::Params)",
            "cutlass::Kernel2 cutlass_80_simt_sgemm_128x32_8x5_nn_align1",
        ),
        (
            "device_kernel",
            "void cutlass::device_kernel<(anonymous namespace)::cutlass_3x_gemm<float>::GemmKernel>(P)",
            "cutlass::device_kernel cutlass_3x_gemm",
        ),
        ("device_kernel", "void device_kernel<(int)128>(void **)", "device_kernel"),
        ("saxpy", "saxpy", "saxpy"),
    ],
)
def test_identity_is_the_function_and_what_a_wrapper_runs(short: str, demangled: str, ident: str) -> None:
    # Never the parameters: a cuDNN FFT takes a cudnn::reduced_divisor, and is no reduction.
    assert identity(short, demangled) == ident
