"""DataFrame views: tidy, typed as documented, equal to the fingerprint and to `nsys stats`."""

from __future__ import annotations

import csv
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import pytest
from conftest import otava_test

pd = pytest.importorskip("pandas")
pytest.importorskip("pyarrow")

from conftest import traces_dir  # noqa: E402
from runs import write_runs  # noqa: E402

import nsysdiff.api as nd  # noqa: E402
from nsysdiff.synth.builder import TraceBuilder  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]


def _shared() -> list[Path]:
    d = traces_dir()
    return sorted([*d.glob("*.sqlite"), *d.glob("h100/*.sqlite")]) if d.is_dir() else []


SHARED = _shared()


def _stats(trace: Path, report: str) -> list[dict[str, str]]:
    path = trace.parent / "nsys-stats" / f"{trace.stem}_{report}.csv"
    if not path.exists() or path.stat().st_size == 0:
        return []
    with path.open(newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def _trace(tmp_path: Path, name: str = "t.sqlite", slow: float = 1.0) -> Path:
    b = TraceBuilder()
    t = 1_000
    for i in range(4):
        b.kernel("ampere_bf16_s16816gemm_bf16_128x128_ldg8_f2f_tn", t, round(10_000 * slow))
        b.kernel("vectorized_elementwise_kernel", t + 20_000, 2_001 + i)
        t += 50_000
    b.memcpy("HtoD", t, 3_000, 4096)
    b.memcpy("DtoH", t + 5_000, 1_000, 512)
    b.memset(t + 9_000, 500, 256)
    b.nvtx_range("decode_step", 0, t)
    return b.write(tmp_path / name)


def test_kernels_frame_is_typed_and_exact(tmp_path: Path) -> None:
    fp = nd.load(_trace(tmp_path))
    k = nd.kernels_frame(fp)
    assert list(k.columns[:4]) == ["Name", "Demangled Name", "Family", "Category"]
    assert str(k["Total Time (ns)"].dtype) == "Int64" and str(k["Instances"].dtype) == "Int64"
    assert str(k["Name"].dtype) == "string" and str(k["Time (%)"].dtype) == "Float64"
    assert not any(str(t).startswith("float") or str(t) == "object" for t in k.dtypes)
    row = k.set_index("Name").loc["vectorized_elementwise_kernel"]
    assert (row["Total Time (ns)"], row["Instances"]) == (2_001 + 2_002 + 2_003 + 2_004, 4)
    assert row["Avg (ns)"] == 2_002  # 2002.5 rounded to the nanosecond, as the CSV rounds it
    assert (row["Min (ns)"], row["Max (ns)"]) == (2_001, 2_004)
    assert k["Total Time (ns)"].sum() == fp.kernel_ns
    assert k["Time (%)"].sum() == pytest.approx(100.0)


def test_group_copy_range_frames_sum_to_the_fingerprint(tmp_path: Path) -> None:
    fp = nd.load(_trace(tmp_path))
    assert nd.families_frame(fp)["Total Time (ns)"].sum() == fp.kernel_ns
    cats = nd.categories_frame(fp)
    assert cats["Total Time (ns)"].sum() == fp.kernel_ns
    assert cats["Kernels"].sum() == len(fp.kernels)
    copies = nd.copies_frame(fp).set_index("Operation")
    assert copies.loc["HtoD", "Total (bytes)"] == 4096 and copies.loc["memset", "Count"] == 1
    assert copies.loc["DtoH", "Throughput (GB/s)"] == pytest.approx(512 / 1_000)
    ranges = nd.nvtx_frame(fp)
    assert list(ranges["Range"]) == ["decode_step"] and ranges["Instances"].iloc[0] == 1


def test_diff_frames_line_up_with_the_diff(tmp_path: Path) -> None:
    d = nd.compare(nd.load(_trace(tmp_path, "a.sqlite")), nd.load(_trace(tmp_path, "b.sqlite", slow=1.5)))
    rows = nd.diff_frame(d).set_index("Name")
    gemm = rows.loc["ampere_bf16_s16816gemm_bf16_128x128_ldg8_f2f_tn"]
    assert gemm["Delta (ns)"] == 4 * 5_000 and gemm["Ratio"] == pytest.approx(1.5)
    assert gemm["Per-call Effect (ns)"] == 20_000 and gemm["Count Effect (ns)"] == 0
    assert rows["Delta (ns)"].sum() == d.candidate.kernel_ns - d.base.kernel_ns
    assert set(nd.diff_frame(d, "families")["Family"]) == {r.key for r in d.families}
    parts = nd.attribution_frame(d)
    effects = parts[["Count Effect (ns)", "Per-call Effect (ns)", "Resized (ns)", "New (ns)", "Removed (ns)"]].sum(
        axis=1
    )
    assert (effects == parts["Delta (ns)"]).all()
    assert parts["Delta (ns)"].sum() == d.attribution.delta_ns
    copies = nd.diff_copies_frame(d)
    assert list(copies["Operation"]) == ["HtoD", "DtoH", "memset"] or set(copies["Operation"]) == {
        "HtoD",
        "DtoH",
        "memset",
    }
    with pytest.raises(ValueError, match="unknown table"):
        nd.diff_frame(d, "nope")


def test_a_per_step_diff_keeps_fractional_calls_apart_from_integer_times(tmp_path: Path) -> None:
    from nsysdiff.fingerprint.scope import ScopeOptions

    opts = ScopeOptions(per="decode_step")
    d = nd.compare(nd.load(_trace(tmp_path, "a.sqlite"), opts), nd.load(_trace(tmp_path, "b.sqlite"), opts))
    assert d.per_step
    rows = nd.diff_frame(d)
    assert str(rows["Base Instances"].dtype) == "Float64"
    assert str(rows["Base Total Time (ns)"].dtype) == "Int64"


def test_runs_frames_hold_intervals_q_values_and_every_run(tmp_path: Path) -> None:
    base, cand = write_runs(tmp_path, 3)
    d = nd.compare(nd.load_runs(base), nd.load_runs(cand))
    runs = nd.runs_frame(d)
    assert set(runs["Measure"]) == {"total_ns", "calls", "mean_ns"}
    assert not runs.duplicated(["Kind", "Key", "Measure"]).any()  # tidy: one row per key and measure
    gemm = runs[(runs["Key"] == "ampere_bf16_s16816gemm_bf16_128x128_ldg8_f2f_tn") & (runs["Measure"] == "mean_ns")]
    low, high = gemm["CI Low"].iloc[0], gemm["CI High"].iloc[0]
    assert low < gemm["Ratio"].iloc[0] < high and low > 1.0
    assert gemm["Verdict"].iloc[0] == "changed"
    values = nd.run_values_frame(d)
    per_key = values.groupby(["Kind", "Key", "Measure", "Side"]).size()
    assert set(per_key) == {3}
    totals = values[(values["Measure"] == "total_ns") & (values["Kind"] == "kernel")]
    assert totals["Value (ns)"].notna().all() and totals["Calls"].isna().all()


def test_one_run_per_side_gives_empty_but_typed_runs_frames(tmp_path: Path) -> None:
    fp = nd.load(_trace(tmp_path))
    d = nd.compare(fp, fp)
    assert nd.runs_frame(d).empty and "Q Value" in nd.runs_frame(d).columns
    assert nd.run_values_frame(d).empty


def test_every_frame_writes_parquet_and_reads_back_equal(tmp_path: Path) -> None:
    a = nd.load(_trace(tmp_path, "a.sqlite"))
    d = nd.compare(a, nd.load(_trace(tmp_path, "b.sqlite", slow=2.0)))
    frames = {
        "kernels": nd.kernels_frame(a),
        "families": nd.families_frame(a),
        "categories": nd.categories_frame(a),
        "copies": nd.copies_frame(a),
        "nvtx": nd.nvtx_frame(a),
        "sync": nd.sync_frame(a),
        "diff": nd.diff_frame(d),
        "diff_copies": nd.diff_copies_frame(d),
        "attribution": nd.attribution_frame(d),
        "runs": nd.runs_frame(d),
        "run_values": nd.run_values_frame(d),
    }
    for name, df in frames.items():
        path = tmp_path / f"{name}.parquet"
        df.to_parquet(path)
        pd.testing.assert_frame_equal(pd.read_parquet(path), df, check_dtype=True)


def test_the_command_line_never_imports_pandas() -> None:
    code = "import sys, nsysdiff.cli, nsysdiff.api; sys.exit('pandas' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], cwd=ROOT).returncode == 0


def test_a_frame_without_pandas_says_how_to_get_it(tmp_path: Path) -> None:
    # Importing the API works without pandas; making a frame names the extra to install.
    code = (
        "import sys; sys.modules['pandas'] = None; import nsysdiff.api as nd\n"
        f"fp = nd.load({str(_trace(tmp_path))!r})\n"
        "try:\n    nd.kernels_frame(fp)\nexcept ImportError as e:\n    print(e)"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == 'nsysdiff\'s DataFrame views need pandas: pip install "nsysdiff[pandas]"'


@pytest.mark.skipif(not SHARED, reason="real traces not found")
@pytest.mark.parametrize("trace", SHARED, ids=[f"{p.parent.name}/{p.stem}" for p in SHARED])
def test_frames_equal_the_fingerprint_and_nsys_stats(trace: Path) -> None:
    fp = nd.load(trace)
    k = nd.kernels_frame(fp)
    assert k["Total Time (ns)"].sum() == fp.kernel_ns and k["Instances"].sum() == fp.kernel_calls
    want: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for row in _stats(trace, "gpukernsum"):  # grouped by (name, grid, block): sum per name
        want[row["Name"]][0] += int(row["Instances"])
        want[row["Name"]][1] += int(row["Total Time (ns)"])
    got = {r["Demangled Name"]: [int(r["Instances"]), int(r["Total Time (ns)"])] for _, r in k.iterrows()}
    assert got == dict(want)
    mem = {
        (r["Operation"].removeprefix("[CUDA memcpy ").removeprefix("[CUDA ").rstrip("]")): (
            int(r["Count"]),
            int(r["Total Time (ns)"]),
        )
        for r in _stats(trace, "gpumemtimesum")
    }
    copies = nd.copies_frame(fp)
    assert {
        o: (int(c), int(t)) for o, c, t in copies[["Operation", "Count", "Total Time (ns)"]].itertuples(index=False)
    } == mem


def test_steps_frames_split_every_period_exactly(tmp_path: Path) -> None:
    b = TraceBuilder()
    t = 0
    for _ in range(3):
        b.nvtx_range("decode_step", t, t + 80_000)
        b.runtime("cudaLaunchKernel_v7000", t + 1_000, 8_000)
        b.kernel("vectorized_elementwise_kernel", t + 10_000, 20_000)
        t += 100_000
    fp = nd.load(b.write(tmp_path / "s.sqlite"), nd.ScopeOptions(per="decode_step"))
    assert fp.steps is not None
    steps = nd.steps_frame(fp)
    parts = [
        c
        for c in steps.columns
        if c.endswith("(ns)")
        and c.split(" (")[0] in {"Compute", "Communication", "Copies", "Launch-bound", "Sync", "Host", "Between"}
    ]
    assert len(parts) == 7 and len(steps) == 3
    assert (steps[parts].sum(axis=1) == steps["Period (ns)"]).all()
    assert list(steps["Period (ns)"]) == [s.period_ns for s in fp.steps.steps]
    assert str(steps["Period (ns)"].dtype) == "Int64"
    calls = nd.step_calls_frame(fp)
    assert list(calls["Family"]) == [c.family.value for c in fp.steps.call_times]
    assert calls["Num Calls"].sum() == sum(c.calls for s in fp.steps.steps for c in s.calls)
    assert nd.steps_frame(nd.load(_trace(tmp_path))).empty  # no --per: no steps, same columns


@otava_test
def test_history_frames_show_the_series_and_its_change_point(tmp_path: Path) -> None:
    import histories

    from nsysdiff.history import store as st

    gemm = "nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_TNT"
    base, noise = histories.spec_build()
    path = tmp_path / "main.sqlite"
    s = st.create_or_open(path)
    drift, back = "nvjet_sm90_tst_64x8_64x16_4x2_h_bz_TNT", "nvjet_sm90_tst_64x16_64x16_4x1_v_bz_TNT"
    plan = histories.done_when_plan(gemm, drift, back)
    for commit, runs in histories.history(base, noise, plan, seed=0):
        for fp in runs:
            s.add(fp, ref="main", commit=commit)
    s.close()
    series = nd.history_frame(path, "main", gemm, "kernel")
    assert len(series) == 60 and set(series["Runs"]) == {3}
    assert str(series["Total Time (ns)"].dtype) == "Int64"
    flagged = series[series["Change Point"]]
    assert list(flagged.index) == [40]  # the +8% step planted at commit 40, found there
    assert flagged["Step CI Low"].iloc[0] < flagged["Step Ratio"].iloc[0] < flagged["Step CI High"].iloc[0]
    assert flagged["Step Ratio"].iloc[0] == pytest.approx(1.08, abs=0.01)
    found = nd.history_changes_frame(path, "main")
    assert set(found["Change"]) == {"step", "drift"}
    assert not found.duplicated(["Change", "Kind", "Key", "Commit"]).any()
    series.to_parquet(tmp_path / "s.parquet")
    found.to_parquet(tmp_path / "c.parquet")


def test_a_frame_given_the_wrong_thing_says_what_to_pass(tmp_path: Path) -> None:
    fp = nd.load(_trace(tmp_path))
    d = nd.compare(fp, fp)
    with pytest.raises(TypeError, match=r"diff_frame takes a Diff \(nd.compare\(base, candidate\).*not a Fingerprint"):
        nd.diff_frame(fp)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"kernels_frame takes a Fingerprint \(nd.load\(path\)\), not a Diff"):
        nd.kernels_frame(d)  # type: ignore[arg-type]
    report = nd.check(d, "default")
    with pytest.raises(TypeError, match=r"not a Report; pass report.diff"):
        nd.attribution_frame(report)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"findings_frame takes a Report"):
        nd.findings_frame(d)  # type: ignore[arg-type]


def test_kernel_names_are_told_apart_as_the_csv_tells_them() -> None:
    h100 = Path(__file__).resolve().parents[2] / "examples" / "h100"
    base, cand = nd.load(h100 / "bs1.sqlite"), nd.load(h100 / "bs16.sqlite")
    k = nd.kernels_frame(base)
    assert k["Name"].nunique() == k["Demangled Name"].nunique() == len(k)
    report = nd.diff(base, cand, None)
    rows = nd.diff_frame(report.diff)
    assert rows["Name"].nunique() == len(rows)
    done = subprocess.run(
        [sys.executable, "-m", "nsysdiff", h100 / "bs1.sqlite", h100 / "bs16.sqlite", "--no-rules", "--format", "csv"],
        check=False,
        capture_output=True,
        text=True,
    )
    kernels_csv = done.stdout.split("\n\n")[0].splitlines()
    csv_names = {r["Demangled Name"]: r["Name"] for r in csv.DictReader(kernels_csv)}
    assert dict(zip(rows["Demangled Name"], rows["Name"], strict=True)) == csv_names
    parts = nd.attribution_frame(report.diff)
    assert dict(zip(parts["Demangled Name"], parts["Name"], strict=True)) == {
        key: csv_names[key] for key in parts["Demangled Name"]
    }
