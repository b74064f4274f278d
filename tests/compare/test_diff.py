"""The diff engine on hand-made fingerprints, the cascade example and real pairs."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from conftest import ROOT, real_traces, traces_dir
from fpspec import fingerprint

from nsysdiff.api import load
from nsysdiff.compare.diff import Settings, Verdict, compare

EXAMPLE = ROOT / "examples" / "cascade"
MS = 1_000_000

# Twenty kernels that all scale ~1.10x with some spread, and one that scales 5x.
BASE = {f"k{i}": (100, (10 + i) * MS) for i in range(20)} | {"odd": (50, 5 * MS)}
CAND = {f"k{i}": (100, round((10 + i) * MS * (1.10 + 0.02 * ((i % 5) - 2)))) for i in range(20)} | {
    "odd": (50, 25 * MS)
}


def test_self_diff_flags_nothing() -> None:
    fp = fingerprint(BASE)
    d = compare(fp, fp)
    assert d.outliers == ()
    assert {r.verdict for r in d.kernels} == {Verdict.UNCHANGED}
    assert d.headline.scale == 1.0
    assert d.variants == ()


def test_scale_is_the_time_weighted_centre_and_the_odd_one_is_the_outlier() -> None:
    d = compare(fingerprint(BASE), fingerprint(CAND))
    assert d.headline.scale == pytest.approx(1.10, abs=0.021)
    assert [r.name for r in d.outliers] == ["odd"]
    odd = d.outliers[0]
    assert odd.ratio == pytest.approx(5.0)
    assert odd.outlier_score is not None and odd.outlier_score > 3.5
    assert odd.verdict is Verdict.OUTLIER


def test_effects_decompose_the_time_change_exactly() -> None:
    d = compare(fingerprint({"a": (10, 100)}), fingerprint({"a": (20, 400)}))
    (row,) = d.kernels
    assert row.count_effect_ns == pytest.approx(100)  # 10 more calls at the base mean of 10
    assert row.per_call_effect_ns == pytest.approx(200)  # 20 calls, 10 ns slower each
    assert row.count_effect_ns + row.per_call_effect_ns == row.delta_ns
    assert row.calls_ratio == 2 and row.mean_ratio == 2 and row.ratio == 4


def test_thresholds_gate_the_flag() -> None:
    b, c = fingerprint(BASE), fingerprint(CAND)
    assert compare(b, c, Settings(min_deviation=10.0)).outliers == ()
    assert compare(b, c, Settings(z_threshold=1000.0)).outliers == ()
    assert compare(b, c, Settings(min_share=0.5)).outliers == ()


def test_new_and_removed_kernels_are_named_and_not_scored() -> None:
    d = compare(fingerprint({"a": (1, 10), "gone": (1, 5)}), fingerprint({"a": (1, 10), "fresh": (2, 7)}))
    by = {r.name: r for r in d.kernels}
    assert by["gone"].verdict is Verdict.REMOVED and by["gone"].candidate is None
    assert by["fresh"].verdict is Verdict.NEW and by["fresh"].base is None
    assert by["fresh"].outlier_score is None and not by["fresh"].is_outlier


def test_variant_drift_within_a_family() -> None:
    b = fingerprint({"nvjet_tst_192x192_64x4_2x1_v_bz_coopB_TNN": (4, 40), "x": (1, 1)})
    c = fingerprint({"nvjet_tst_256x128_64x4_1x2_h_bz_coopA_NTT": (4, 80), "x": (1, 1)})
    (drift,) = compare(b, c).variants
    assert drift.family == "nvjet_tst_*_bz"
    assert [v.name for v in drift.appeared] == ["nvjet_tst_256x128_64x4_1x2_h_bz_coopA_NTT"]
    assert [v.name for v in drift.disappeared] == ["nvjet_tst_192x192_64x4_2x1_v_bz_coopB_TNN"]
    assert (drift.appeared_ns, drift.disappeared_ns) == (80, 40)


def test_same_count_different_kernels_is_called_out() -> None:
    d = compare(fingerprint({"a": (3, 10)}), fingerprint({"b": (3, 10)}))
    assert d.headline.same_count_different_kernels
    assert not compare(fingerprint({"a": (3, 10)}), fingerprint({"a": (3, 10)})).headline.same_count_different_kernels


def test_memcpy_by_kind() -> None:
    b = fingerprint({"a": (1, 1)}, memcpy={"DtoD": (29, 81_000_000, 100)})
    c = fingerprint({"a": (1, 1)}, memcpy={"DtoD": (53, 163_000_000, 200), "HtoD": (1, 8, 1)})
    dtod, htod = compare(b, c).memcpy
    assert dtod.kind == "DtoD" and dtod.ops_ratio == pytest.approx(53 / 29)
    assert htod.verdict is Verdict.NEW


# --- the example the tool exists for ----------------------------------------------------


@pytest.fixture(scope="module")
def cascade():  # type: ignore[no-untyped-def]
    return compare(load(EXAMPLE / "bs1.sqlite"), load(EXAMPLE / "bs16.sqlite"))


def test_cascade_headline(cascade) -> None:  # type: ignore[no-untyped-def]
    h = cascade.headline
    assert (h.base_launches, h.candidate_launches) == (8955, 8955)
    assert (h.base_total_ns, h.candidate_total_ns) == (1_250_000_000, 1_370_000_000)
    # device_kernel (70% of the time) scales 1.10x, most other families ~0.9x: with no
    # family holding more than a fifth of the weight, the scale sits between them.
    assert h.scale == pytest.approx(0.95, abs=0.005)
    assert (h.scale_info.low, h.scale_info.high) == (pytest.approx(0.89), pytest.approx(1.10))
    assert h.same_count_different_kernels


def test_cascade_top_outlier_is_the_kv_cache_write(cascade) -> None:  # type: ignore[no-untyped-def]
    top = cascade.outliers[0]
    assert top.name == "reshape_and_cache_flash_kernel"
    assert top.base.calls == top.candidate.calls == 392
    assert top.mean_ratio == pytest.approx(5.15, abs=0.005)
    assert top.count_effect_ns == 0 and top.per_call_effect_ns == top.delta_ns
    cats = {r.name: r for r in cascade.categories}
    assert cats["attention"].base.total_ns == 1_198_000 and cats["attention"].candidate.total_ns == 6_170_000
    assert cats["attention"].is_outlier
    assert cats["gemm.nvjet"].ratio == pytest.approx(1.35)
    assert cats["normalization"].ratio == pytest.approx(1.52)


def test_cascade_copies_and_variants(cascade) -> None:  # type: ignore[no-untyped-def]
    dtod = next(c for c in cascade.memcpy if c.kind == "DtoD")
    assert (dtod.base.ops, dtod.candidate.ops) == (29, 53)
    assert (dtod.base.bytes, dtod.candidate.bytes) == (81_000_000, 163_000_000)
    assert sum(c.base.ops for c in cascade.memcpy) == 1099
    assert sum(c.candidate.ops for c in cascade.memcpy) == 1147
    assert (cascade.memset[0].base.ops, cascade.memset[0].candidate.ops) == (345, 429)
    (drift,) = cascade.variants
    assert (len(drift.appeared), len(drift.disappeared)) == (7, 7)
    assert (drift.appeared_ns, drift.disappeared_ns) == (88_000_000, 18_000_000)


def test_cascade_census() -> None:
    fp = load(EXAMPLE / "bs1.sqlite")
    by = {k.name: (k.calls, k.total_ns) for k in fp.kernels}
    assert by["device_kernel"] == (748, 877_380_000)
    assert by["vectorized_elementwise_kernel"] == (883, 60_980_000)
    assert by["nvjet_tst_192x192_64x4_2x1_v_bz_coopB_TNN"] == (28, 51_940_000)


# --- real pairs -------------------------------------------------------------------------

needs = pytest.mark.skipif(not real_traces(), reason="real traces not found")


@needs
def test_real_mfu_before_after() -> None:
    d = compare(
        load(traces_dir() / "nsysai_mfu_h100x2_before.sqlite"),
        load(traces_dir() / "nsysai_mfu_h100x2_after.sqlite"),
    )
    assert (d.headline.base_total_ns, d.headline.candidate_total_ns) == (535_200_650, 488_835_406)
    flash = next(r for r in d.kernels if r.name == "flash_fwd_kernel")
    assert (flash.base.calls, flash.candidate.calls) == (68, 60)
    assert round(flash.delta_ns / 1e4) / 100 == -31.56
    nccl = next(r for r in d.kernels if r.name == "ncclDevKernel_SendRecv")
    assert (nccl.base.calls, nccl.candidate.calls) == (66, 62)
    assert round(nccl.delta_ns / 1e4) / 100 == 8.34
    dtod = next(c for c in d.memcpy if c.kind == "DtoD")
    assert (dtod.base.ops, dtod.base.bytes) == (986, 8_046_134_272)
    assert (dtod.candidate.ops, dtod.candidate.bytes) == (872, 7_195_376_640)


@needs
def test_real_gemm_swap_is_variant_drift() -> None:
    d = compare(
        load(traces_dir() / "fuser_h100_report1.sqlite"),
        load(traces_dir() / "fuser_h200_report1.sqlite"),
    )
    (drift,) = [v for v in d.variants if v.family.startswith("nvjet")]
    assert [v.name for v in drift.disappeared] == ["nvjet_hsh_128x256_64x4_2x1_v_bz_coopA_NTN"]
    assert [v.name for v in drift.appeared] == ["nvjet_hsh_256x128_64x4_1x2_h_bz_coopA_NTT"]


@pytest.mark.parametrize("trace", real_traces(), ids=[p.stem for p in real_traces()])
def test_real_self_diff_flags_nothing(trace: Path) -> None:
    fp = load(trace)
    d = compare(fp, fp)
    assert d.outliers == () and d.variants == ()
    assert all(r.verdict is Verdict.UNCHANGED for r in (*d.kernels, *d.categories, *d.nvtx, *d.sync))
    assert all(c.verdict is Verdict.UNCHANGED for c in (*d.memcpy, *d.memset))
    assert math.isclose(d.headline.scale, 1.0)


def test_host_time_rows_are_judged_by_the_noise_of_host_time() -> None:
    """A kernel 1.3x slower regressed (GPU time is steady); a sync wait or an API call
    1.3x slower did not: two runs of one build differ that much in host time."""
    import dataclasses as dc

    from nsysdiff.compare.diff import HOST_NOISE
    from nsysdiff.trace.records import HostApiStats

    def side(k: float, api: float) -> object:
        fp = fingerprint({"gemm": (10, int(1_000_000 * k))}, sync={"cudaStreamSynchronize": (10, int(2_000_000 * api))})
        calls = (HostApiStats("cudaMemcpyAsync_v3020", 10, int(3_000_000 * api), 300_000 * api, 1, 2),)
        return dc.replace(fp, api=calls)

    base = side(1.0, 1.0)
    for k, api, kernel, host in (
        (1.3, 1.3, Verdict.REGRESSED, Verdict.UNCHANGED),
        (1.0, 2.0, Verdict.UNCHANGED, Verdict.REGRESSED),
    ):
        d = compare(base, side(k, api))  # type: ignore[arg-type]
        assert [r.verdict for r in d.kernels] == [kernel]
        assert [r.verdict for r in d.sync] == [r.verdict for r in d.api] == [host]
    assert HOST_NOISE > 1.5  # the host-time swing measured between repeats (docs/steps.md)
    # One more sync call is an exact change: its time verdict stands.
    more = fingerprint({"gemm": (10, 1_000_000)}, sync={"cudaStreamSynchronize": (11, 2_600_000)})
    assert [r.verdict for r in compare(base, more).sync] == [Verdict.REGRESSED]  # type: ignore[arg-type]
