"""CSV: the kernel table on stdout, one file per table with -o DIR, no formula cells."""

from __future__ import annotations

import csv
import io
from collections import defaultdict
from pathlib import Path

import pytest
from conftest import run_cli, traces_dir
from render.test_render import HOSTILE, MakeReport, hostile_specs

from nsysdiff.render import csv_report
from nsysdiff.safe import neutral

ROOT = Path(__file__).resolve().parents[2]
CASCADE = ROOT / "examples" / "cascade"


def rows_of(text: str) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(text)))


@pytest.mark.parametrize("cell", ["=HYPERLINK(1)", "+1+1", "-2+3", "@SUM(A1)"])
def test_formula_cells_are_neutralised(cell: str) -> None:
    assert neutral.csv_cell(cell) == "'" + cell
    assert neutral.csv_cell("plain_kernel") == "plain_kernel"


def test_tab_and_carriage_return_become_visible_escapes() -> None:
    # A cell starting with either could be read as a formula; escaped, it starts with "\".
    assert (neutral.csv_cell("\tx"), neutral.csv_cell("\rx")) == ("\\x09x", "\\x0dx")


@pytest.mark.parametrize("name", [HOSTILE, "=cmd|' /C calc'!A0", "@SUM(1+1)*cmd|' /C calc'!A0"])
def test_hostile_kernel_names_stay_inert(make_report: MakeReport, name: str) -> None:
    report = make_report(specs=hostile_specs(name))
    rows = rows_of(csv_report.render(report))
    hostile = [r for r in rows if r["Name"].lstrip("'").startswith(name[:4])]
    assert hostile, rows
    for r in rows:
        for value in r.values():
            assert not value.startswith(("=", "+", "@")), value
            assert "\n" not in value and "\r" not in value
            assert not (value.startswith("-") and not _number(value)), value


def _number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def test_kernel_table_columns_and_exact_numbers(make_report: MakeReport) -> None:
    report = make_report()
    rows = rows_of(csv_report.render(report))
    assert list(rows[0])[:7] == [
        "Name",
        "Demangled Name",
        "Category",
        "Family",
        "Base Total Time (ns)",
        "Base Instances",
        "Base Avg (ns)",
    ]
    by_key = {r.key: r for r in report.diff.kernels}
    for row in rows:
        r = by_key[row["Demangled Name"]]
        assert row["Base Total Time (ns)"] == (str(int(r.base.total_ns)) if r.base else "")
        assert row["Delta (ns)"] == str(round(r.delta_ns))
        assert "-0.0" not in row.values()


def test_cli_csv_on_stdout_and_one_file_per_table(tmp_path: Path) -> None:
    args = ["diff", str(CASCADE / "bs1.sqlite"), str(CASCADE / "bs16.sqlite"), "--no-rules"]
    res = run_cli(*args, "--format", "csv", "-o", str(tmp_path))
    assert res.exit_code == 0, res.stderr
    assert res.stdout.startswith("Name,Demangled Name,")
    assert len(rows_of(res.stdout)) == 35
    written = sorted(p.name for p in tmp_path.iterdir())
    assert written == [
        "categories.csv",
        "devices.csv",
        "findings.csv",
        "kernels.csv",
        "memory.csv",
        "nvtx.csv",
        "sync.csv",
    ]
    assert (tmp_path / "kernels.csv").read_text() == res.stdout
    sync = rows_of((tmp_path / "sync.csv").read_text())
    assert sync[0]["Call"] == "cudaStreamSynchronize"


@pytest.mark.skipif(
    not (traces_dir() / "nsys-stats" / "fuser_h100_report1_gpukernsum.csv").exists(),
    reason="real traces not found",
)
@pytest.mark.parametrize("trace", ["fuser_h100_report1", "fuser_h200_2025", "nsysai_mfu_h100x2_before"])
def test_kernel_csv_matches_nsys_stats_gpukernsum(trace: str) -> None:
    """Per demangled name, total time and instances as `nsys stats` prints them (its rows
    are per name, grid and block: summed by name here)."""
    path = traces_dir() / f"{trace}.sqlite"
    oracle = traces_dir() / "nsys-stats" / f"{trace}_gpukernsum.csv"
    if not path.exists() or not oracle.exists() or not oracle.read_text().strip():
        pytest.skip("no kernels or no oracle for this trace")
    res = run_cli("diff", str(path), str(path), "--no-rules", "--format", "csv")
    assert res.exit_code == 0, res.stderr
    ours = {
        r["Demangled Name"]: (int(r["Base Total Time (ns)"]), int(r["Base Instances"])) for r in rows_of(res.stdout)
    }
    theirs: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for r in rows_of(oracle.read_text()):
        theirs[r["Name"]][0] += int(r["Total Time (ns)"])
        theirs[r["Name"]][1] += int(r["Instances"])
    assert ours == {k: tuple(v) for k, v in theirs.items()}


@pytest.mark.skipif(
    not (traces_dir() / "nsys-stats" / "fuser_h100_report1_gpukernsum.csv").exists(),
    reason="real traces not found",
)
@pytest.mark.parametrize(
    "trace", ["fuser_h100_report1", "fuser_h200_2025", "nsysai_mfu_h100x2_before", "pipit_cloverleaf_a100"]
)
def test_by_name_and_launch_matches_gpukernsum_rows(trace: str) -> None:
    """--by name+launch: one row per (name, grid, block), as gpukernsum prints them,
    to the nanosecond."""
    path = traces_dir() / f"{trace}.sqlite"
    oracle = traces_dir() / "nsys-stats" / f"{trace}_gpukernsum.csv"
    if not path.exists() or not oracle.exists() or not oracle.read_text().strip():
        pytest.skip("no kernels or no oracle for this trace")
    args = ["diff", str(path), str(path), "--no-rules", "--format", "csv", "--by", "name+launch"]
    res = run_cli(*args)
    assert res.exit_code == 0, res.stderr
    ours = {
        r["Demangled Name"]: (int(r["Base Total Time (ns)"]), int(r["Base Instances"])) for r in rows_of(res.stdout)
    }
    theirs = {}
    for r in rows_of(oracle.read_text()):
        grid = ",".join(r["GridXYZ"].split())
        block = ",".join(r["BlockXYZ"].split())
        theirs[f"{r['Name']} [grid {grid}, block {block}]"] = (int(r["Total Time (ns)"]), int(r["Instances"]))
    assert ours == theirs
