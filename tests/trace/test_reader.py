"""The reader on synthetic exports of every schema generation, and proof it never writes.

Every expected number here is computed by hand or from the builder's inputs, never by
the code under test; nothing needs ../shared (the read-only proof also runs on a copy
of a real trace when one is there).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sqlite3
import stat
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import pytest
from conftest import real_traces, run_process

from nsysdiff.api import fingerprint_trace
from nsysdiff.fingerprint.model import Fingerprint, fingerprint_from_json, fingerprint_to_json
from nsysdiff.fingerprint.reduce import fold_nvtx
from nsysdiff.fingerprint.scope import ScopeOptions
from nsysdiff.synth.builder import Generation, Gpu, TraceBuilder
from nsysdiff.trace import kernels, names
from nsysdiff.trace.launches import Grouping
from nsysdiff.trace.reader import open_trace
from nsysdiff.trace.records import QUANTILE_GRID, GpuInfo, LaunchConfig

OLD = (Generation.V2020_3, Generation.V2021)  # no metadata, no ENUM tables
VERSIONS = {
    Generation.V2020_3: (None, None),
    Generation.V2021: (None, None),
    Generation.V2022: ("2022.4.2.1", "3.0.0"),
    Generation.V2024: ("2024.6.2.25", "3.16.1"),
    Generation.V2026: ("2026.2.1.210", "3.25.0"),
}
H100 = "NVIDIA H100 80GB HBM3"
TWO_GPUS = (Gpu(0, H100, 132), Gpu(1, "NVIDIA H200", 132))

Fill = Callable[[TraceBuilder], None]


@pytest.fixture(params=list(Generation), ids=lambda g: g.value)
def generation(request: pytest.FixtureRequest) -> Generation:
    return Generation(request.param)


def build(path: Path, generation: Generation, fill: Fill, **kwargs: object) -> Path:
    kwargs.setdefault("gpus", TWO_GPUS)
    builder = TraceBuilder(generation, **kwargs)  # type: ignore[arg-type]
    fill(builder)
    return builder.write(path)


# --- metadata -----------------------------------------------------------------------


def test_metadata_versions(tmp_path: Path, generation: Generation) -> None:
    path = build(tmp_path / "t.sqlite", generation, lambda b: b.kernel("k", 1_000, 500))
    with open_trace(path) as r:
        meta = r.metadata()
    assert (meta.nsys_version, meta.schema_version) == VERSIONS[generation]
    if generation in OLD:
        # No ANALYSIS_DETAILS: the fingerprint falls back to the kernels' extent.
        assert (meta.capture_start_ns, meta.capture_end_ns) == (None, None)
        fp = fingerprint_trace(path)
        assert (fp.meta.capture_start_ns, fp.meta.capture_end_ns) == (1_000, 1_500)
    else:
        assert (meta.capture_start_ns, meta.capture_end_ns) == (1_000, 1_500)


def test_gpu_names(tmp_path: Path, generation: Generation) -> None:
    path = build(tmp_path / "t.sqlite", generation, lambda b: b.kernel("k", 0, 10))
    with open_trace(path) as r:
        assert r.metadata().gpus == (GpuInfo(0, H100, 132), GpuInfo(1, "NVIDIA H200", 132))
        table = "TARGET_INFO_CUDA_GPU" if generation is Generation.V2020_3 else "TARGET_INFO_GPU"
        assert table in r.schema.tables
    assert fingerprint_trace(path).meta.gpus[0].name == H100


def test_no_gpu_table(tmp_path: Path, generation: Generation) -> None:
    path = build(tmp_path / "t.sqlite", generation, lambda b: b.kernel("k", 0, 10), gpu_table=False)
    with open_trace(path) as r:
        assert r.metadata().gpus == ()
    assert fingerprint_trace(path).meta.gpus == ()


# --- kernels ------------------------------------------------------------------------

ADD = "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>>(int)"
MUL = "void at::native::vectorized_elementwise_kernel<4, at::native::MulFunctor<float>>(int)"
FLASH = "void flash::flash_fwd_kernel<Flash_fwd_kernel_traits<128, 64>>(Params)"


def _kernel_mix(b: TraceBuilder) -> dict[str, tuple[str, int, int]]:
    """Launches with odd durations on two devices; returns demangled -> (short, calls, ns)."""
    want: dict[str, list[int]] = {}
    shorts: dict[str, str] = {}
    t = 1_000
    for i in range(40):
        for short, demangled, base in (
            ("vectorized_elementwise_kernel", ADD, 1_003),
            ("vectorized_elementwise_kernel", MUL, 2_017),
            ("flash_fwd_kernel", FLASH, 50_011),
            ("nvjet_tst_192x192_64x4_2x1_v_bz_coopB_TNN", None, 30_001),
        ):
            if short == "flash_fwd_kernel" and i % 3:
                continue
            duration = base + (i * 7919) % 997  # distinct, not round
            key = demangled or short
            b.kernel(short, t, duration, demangled=demangled, device=i % 2)
            acc = want.setdefault(key, [0, 0])
            acc[0] += 1
            acc[1] += duration
            shorts[key] = short
            t += duration + 333
    return {k: (shorts[k], c, ns) for k, (c, ns) in want.items()}


def test_kernel_calls_and_total_exact(tmp_path: Path, generation: Generation) -> None:
    expected: dict[str, tuple[str, int, int]] = {}

    def fill(b: TraceBuilder) -> None:
        expected.update(_kernel_mix(b))

    path = build(tmp_path / "t.sqlite", generation, fill)
    fp = fingerprint_trace(path)
    got = {k.demangled: (k.name, k.calls, k.total_ns) for k in fp.kernels}
    assert got == expected
    # Two demangled names with one short name stay two kernels, both names kept.
    assert {k.demangled for k in fp.kernels if k.name == "vectorized_elementwise_kernel"} == {
        ADD,
        MUL,
    }
    assert fp.kernel_calls == sum(c for _, c, _ in expected.values())
    assert fp.kernel_ns == sum(ns for _, _, ns in expected.values())
    flash = next(k for k in fp.kernels if k.name == "flash_fwd_kernel")
    assert [(d.device, d.calls) for d in flash.devices] == [(0, 7), (1, 7)]
    with open_trace(path) as r:
        groups = r.kernels()
    assert set(zip(groups.short, groups.demangled, strict=True)) >= {
        ("vectorized_elementwise_kernel", ADD),
        ("flash_fwd_kernel", FLASH),
    }
    assert int(groups.calls.sum()) == fp.kernel_calls
    assert int(groups.total_ns.sum()) == fp.kernel_ns


def test_kernel_quantiles(tmp_path: Path, generation: Generation) -> None:
    durations = [100, 200, 300, 400, 1_000]
    path = build(
        tmp_path / "t.sqlite",
        generation,
        lambda b: [b.kernel("k", 10_000 * i, d) for i, d in enumerate(durations)],
    )
    (k,) = fingerprint_trace(path).kernels
    assert (k.calls, k.total_ns, k.min_ns, k.p50_ns, k.max_ns) == (5, 2_000, 100, 300, 1_000)
    assert k.mean_ns == 400


def test_launch_configs(tmp_path: Path, generation: Generation) -> None:
    def fill(b: TraceBuilder) -> None:
        b.kernel(
            "gemm", 0, 10, grid=(132, 1, 1), block=(256, 1, 1), registers=168, static_smem=1_024, dynamic_smem=98_304
        )
        b.kernel(
            "gemm", 100, 10, grid=(132, 1, 1), block=(256, 1, 1), registers=168, static_smem=1_024, dynamic_smem=98_304
        )
        b.kernel("gemm", 200, 10, grid=(66, 2, 1), block=(128, 2, 1), registers=90)
        b.kernel("other", 300, 10)

    fp = fingerprint_trace(build(tmp_path / "t.sqlite", generation, fill))
    gemm = next(k for k in fp.kernels if k.name == "gemm")
    assert set(gemm.configs) == {
        LaunchConfig((132, 1, 1), (256, 1, 1), 168, 1_024, 98_304, 0, 0, calls=2),
        LaunchConfig((66, 2, 1), (128, 2, 1), 90, 0, 0, 0, 0, calls=1),
    }
    other = next(k for k in fp.kernels if k.name == "other")
    assert other.configs == (LaunchConfig((1, 1, 1), (128, 1, 1), 32, 0, 0, 0, 0, calls=1),)


def _calls(configs: tuple[LaunchConfig, ...]) -> list[tuple[int, int | None, int | None]]:
    return [(c.grid[0], c.local_mem_total, c.calls) for c in configs]


def test_launch_configs_count_their_launches_over_devices(tmp_path: Path, generation: Generation) -> None:
    """A shape's launches are summed over the devices (and processes) that ran it, and a
    kernel of several shapes counts each; local memory tells shapes apart."""

    def fill(b: TraceBuilder) -> None:
        for i, (grid, device) in enumerate([(4, 0), (4, 1), (4, 1), (8, 0), (8, 0), (8, 0), (8, 1)]):
            b.kernel("gemm", 100 * i, 10, grid=(grid, 1, 1), device=device)
        for i in range(3):
            b.kernel("solo", 1_000 + 100 * i, 10, device=i % 2)

    path = build(tmp_path / "t.sqlite", generation, fill)
    with sqlite3.connect(path) as con:  # the last gemm launch of grid 8 reserved more local memory
        con.execute("UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET localMemoryTotal = 1048576 WHERE start = 600")
        con.execute("UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET localMemoryPerThread = 16")
    fp = fingerprint_trace(path)
    gemm = next(k for k in fp.kernels if k.name == "gemm")
    assert _calls(gemm.configs) == [(4, 0, 3), (8, 0, 3), (8, 1_048_576, 1)]
    assert {c.local_mem_per_thread for c in gemm.configs} == {16}
    assert sum(c.calls or 0 for c in gemm.configs) == gemm.calls
    solo = next(k for k in fp.kernels if k.name == "solo")
    assert _calls(solo.configs) == [(1, 0, 3)]
    # By name and launch shape, each kernel counts its own shape's launches.
    by_shape = fingerprint_trace(path, by=Grouping.name_launch)
    assert sorted(c for k in by_shape.kernels if k.name.startswith("gemm") for c in _calls(k.configs)) == [
        (4, 0, 3),
        (8, 0, 3),
        (8, 1_048_576, 1),
    ]
    # Values too far apart to pack into one integer are grouped on as columns.
    with sqlite3.connect(path) as con:
        con.execute(f"UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET localMemoryTotal = {1 << 62} WHERE start = 600")
    wide = next(k for k in fingerprint_trace(path).kernels if k.name == "gemm")
    assert _calls(wide.configs) == [(4, 0, 3), (8, 0, 3), (8, 1 << 62, 1)]
    # A scoped read counts the launches in its scope only.
    scoped = fingerprint_trace(path, ScopeOptions(window="0ns:350ns"))
    assert _calls(next(k for k in scoped.kernels if k.name == "gemm").configs) == [(4, 0, 3), (8, 0, 1)]


# --- memory operations and API calls ------------------------------------------------


def _copies(b: TraceBuilder) -> None:
    b.kernel("k", 0, 10)
    t = 1_000
    for kind, n, nbytes, dur in (
        ("HtoD", 3, 4_096, 1_001),
        ("DtoH", 2, 1_000_000, 20_003),
        ("DtoD", 4, 65_536, 777),
        ("PtoP", 1, 8_388_608, 90_001),
    ):
        for _ in range(n):
            b.memcpy(kind, t, dur, nbytes)
            t += dur + 50


COPIES = {
    "HtoD": (3, 3 * 4_096, 3 * 1_001),
    "DtoH": (2, 2 * 1_000_000, 2 * 20_003),
    "DtoD": (4, 4 * 65_536, 4 * 777),
    "PtoP": (1, 8_388_608, 90_001),
}


def test_memcpy_by_kind(tmp_path: Path, generation: Generation) -> None:
    path = build(tmp_path / "t.sqlite", generation, _copies)
    with open_trace(path) as r:
        # Old exports have no ENUM_CUDA_MEMCPY_OPER: the built-in mapping names the kinds.
        assert ("ENUM_CUDA_MEMCPY_OPER" in r.schema.tables) == (generation not in OLD)
        got = {c.kind: (c.ops, c.bytes, c.total_ns) for c in r.memcpy()}
    assert got == COPIES
    fp = fingerprint_trace(path)
    dtod = next(c for c in fp.memcpy if c.kind == "DtoD")
    assert dtod.gbps == pytest.approx(65_536 / 777)


def test_memcpy_kinds_resolved_by_enum_name(tmp_path: Path) -> None:
    """When the ENUM table is present its names win over the built-in ids."""
    path = build(tmp_path / "t.sqlite", Generation.V2024, _copies)
    con = sqlite3.connect(path)
    con.execute("UPDATE ENUM_CUDA_MEMCPY_OPER SET name = 'CUDA_MEMCPY_KIND_X' WHERE id = 8")
    con.execute("UPDATE ENUM_CUDA_MEMCPY_OPER SET name = 'CUDA_MEMCPY_KIND_DTOD' WHERE id = 1")
    con.execute("UPDATE ENUM_CUDA_MEMCPY_OPER SET name = 'CUDA_MEMCPY_KIND_HTOD' WHERE id = 8")
    con.commit()
    con.close()
    with open_trace(path) as r:
        got = {c.kind: c.ops for c in r.memcpy()}
    assert got == {"DtoD": 3, "DtoH": 2, "HtoD": 4, "PtoP": 1}


def test_memset(tmp_path: Path, generation: Generation) -> None:
    def fill(b: TraceBuilder) -> None:
        b.memset(0, 1_501, 1 << 20)
        b.memset(5_000, 499, 4_096, device=1)

    path = build(tmp_path / "t.sqlite", generation, fill)
    fp = fingerprint_trace(path)
    assert [(m.kind, m.ops, m.bytes, m.total_ns) for m in fp.memset] == [("memset", 2, (1 << 20) + 4_096, 2_000)]


def test_sync_calls_suffix_stripped(tmp_path: Path, generation: Generation) -> None:
    def fill(b: TraceBuilder) -> None:
        b.runtime("cudaStreamSynchronize_v3020", 0, 1_000)
        b.runtime("cudaStreamSynchronize_v3020", 2_000, 3_001)
        b.runtime("cudaDeviceSynchronize_v3020", 6_000, 50_000)
        b.runtime("cudaEventSynchronize_v3020", 60_000, 7)
        b.runtime("cudaMalloc_v3020", 70_000, 9_000)  # not a sync call
        b.launch("k", 80_000, 81_000, 100)  # cudaLaunchKernel_v7000

    fp = fingerprint_trace(build(tmp_path / "t.sqlite", generation, fill))
    assert [(s.name, s.calls, s.total_ns) for s in fp.sync] == [
        ("cudaDeviceSynchronize", 1, 50_000),
        ("cudaEventSynchronize", 1, 7),
        ("cudaStreamSynchronize", 2, 4_001),
    ]


def test_driver_sync_calls_count_in_a_whole_read_as_in_a_window(tmp_path: Path, generation: Generation) -> None:
    """A whole read takes the runtime table's sync calls from its census; the driver's
    (cuCtxSynchronize and the like) count too, as a windowed read counts them."""

    def fill(b: TraceBuilder) -> None:
        b.launch("k", 0, 1_000, 100)
        b.runtime("cudaStreamSynchronize_v3020", 2_000, 1_000)

    path = build(tmp_path / "t.sqlite", generation, fill)
    with sqlite3.connect(path) as con:
        con.execute("CREATE TABLE CUPTI_ACTIVITY_KIND_DRIVER AS SELECT * FROM CUPTI_ACTIVITY_KIND_RUNTIME WHERE 0")
        nid = con.execute("SELECT max(id) + 1 FROM StringIds").fetchone()[0]
        con.execute("INSERT INTO StringIds (id, value) VALUES (?, 'cuCtxSynchronize')", (nid,))
        row = con.execute("SELECT * FROM CUPTI_ACTIVITY_KIND_RUNTIME LIMIT 1").fetchone()
        cols = [d[1] for d in con.execute("PRAGMA table_info(CUPTI_ACTIVITY_KIND_RUNTIME)")]
        values = dict(zip(cols, row, strict=True)) | {"start": 5_000, "end": 5_250, "nameId": nid}
        con.execute(
            f"INSERT INTO CUPTI_ACTIVITY_KIND_DRIVER ({', '.join(cols)}) VALUES ({', '.join('?' * len(cols))})",
            [values[c] for c in cols],
        )
    whole = [(x.name, x.calls, x.total_ns) for x in fingerprint_trace(path).sync]
    assert whole == [("cuCtxSynchronize", 1, 250), ("cudaStreamSynchronize", 1, 1_000)]
    with open_trace(path) as r:
        assert [(x.name, x.calls, x.total_ns) for x in r.sync_calls()] == whole


# --- NVTX ---------------------------------------------------------------------------


def _nvtx(b: TraceBuilder) -> None:
    b.kernel("k", 0, 10)
    b.nvtx_range("aten::mm, seq = 12, op_id = 345", 100, 200)
    b.nvtx_range("aten::mm, seq = 13, op_id = 346", 300, 450)
    b.nvtx_range("aten::mm, op_id = 347", 500, 510)
    b.nvtx_range("forward", 0, 1_000, registered=True)
    b.nvtx_range("forward", 2_000, 2_500, registered=True)
    b.nvtx_range("decode_step", 0, 9_000, domain="vllm")
    b.nvtx_range("sample", 9_100, 9_400, push_pop=False, domain="vllm", end_tid=1002)
    b.nvtx_mark("checkpoint", 9_500)  # a mark, not a range


def test_nvtx_ranges_names_domains_and_folding(tmp_path: Path, generation: Generation) -> None:
    path = build(tmp_path / "t.sqlite", generation, _nvtx)
    with open_trace(path) as r:
        raw = {(x.name, x.domain): (x.count, x.total_ns) for x in r.nvtx_summary()}
    # Registered strings (textId) resolve through StringIds like explicit text.
    assert raw[("forward", "")] == (2, 1_500)
    # PyTorch's per-call suffixes are cut in SQL, so GROUP BY merges the calls.
    assert raw[("aten::mm", "")] == (3, 260)
    assert not any("op_id" in n for n, _ in raw)
    assert raw[("decode_step", "vllm")] == (1, 9_000)
    assert raw[("sample", "vllm")] == (1, 300)
    assert "checkpoint" not in {n for n, _ in raw}
    assert "vllm" not in {n for n, _ in raw}  # the domain-create row is not a range
    fp = fingerprint_trace(path)
    assert sorted((x.name, x.domain, x.count, x.total_ns) for x in fp.nvtx) == [
        ("aten::mm", "", 3, 260),
        ("decode_step", "vllm", 1, 9_000),
        ("forward", "", 2, 1_500),
        ("sample", "vllm", 1, 300),
    ]


@pytest.mark.parametrize(
    ("raw", "folded"),
    [
        ("aten::mm, seq = 12, op_id = 345", "aten::mm"),
        ("aten::addmm, op_id = 9", "aten::addmm"),
        ("aten::linear, sizes = [[8, 16], [16, 16]], input_op_ids = [3]", "aten::linear"),
        ("aten::copy_, stashed seq = 4", "aten::copy_"),
        ("forward", "forward"),
        ("step, epoch 3", "step, epoch 3"),
    ],
)
def test_fold_nvtx(raw: str, folded: str) -> None:
    assert fold_nvtx(raw) == folded


# --- busy and idle time -------------------------------------------------------------


def test_busy_time_is_union_of_intervals(tmp_path: Path, generation: Generation) -> None:
    def fill(b: TraceBuilder) -> None:
        # Device 0: [1000,1100) [1050,1150) [1200,1300) [1250,1260) [1300,1400) [2000,2100)
        # union = [1000,1150) + [1200,1400) + [2000,2100) = 150 + 200 + 100 = 450
        for start, dur in ((1_000, 100), (1_050, 100), (1_200, 100), (1_250, 10), (1_300, 100), (2_000, 100)):
            b.kernel("a", start, dur, device=0, stream=7 + start % 3)
        # Device 1: one long kernel covering two short ones: [5000,6000) -> 1000.
        b.kernel("b", 5_000, 1_000, device=1)
        b.kernel("c", 5_100, 10, device=1)
        b.kernel("c", 5_900, 100, device=1)

    fp = fingerprint_trace(build(tmp_path / "t.sqlite", generation, fill))
    dev = {d.device: d for d in fp.devices}
    assert (dev[0].kernels, dev[0].kernel_ns, dev[0].busy_ns, dev[0].span_ns) == (
        6,
        510,
        450,
        1_100,
    )
    assert (dev[1].kernels, dev[1].kernel_ns, dev[1].busy_ns, dev[1].span_ns) == (
        3,
        1_110,
        1_000,
        1_000,
    )
    assert dev[0].idle_pct == pytest.approx(100 * (1 - 450 / 1_100))
    assert dev[1].idle_pct == 0.0
    assert fp.busy_ns == 1_450


@pytest.mark.parametrize(
    ("intervals", "union"),
    [
        ([], 0),
        ([(0, 10)], 10),
        ([(0, 10), (10, 20)], 20),  # touching
        ([(0, 100), (10, 20), (30, 40)], 100),  # nested
        ([(50, 60), (0, 10), (5, 15)], 25),  # unsorted
        ([(0, 10), (0, 10)], 10),  # identical
    ],
)
def test_busy_ns(tmp_path: Path, intervals: list[tuple[int, int]], union: int) -> None:
    def fill(b: TraceBuilder) -> None:
        for start, end in intervals:
            b.kernel("k", start, end - start)

    fp = fingerprint_trace(build(tmp_path / "t.sqlite", Generation.V2024, fill))
    assert fp.busy_ns == union


@pytest.mark.parametrize("chunk", [3, 1 << 16])
def test_quantiles_equal_numpy_percentile(tmp_path: Path, chunk: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """Exact per-name percentiles from the duration histogram, whatever the chunking:
    repeated durations, a single call, two devices, names interleaved in time."""
    rng = np.random.default_rng(11)
    durations = {
        "many_repeats": rng.integers(100, 110, 500),
        "all_distinct": rng.permutation(np.arange(1_000, 1_000 + 997) * 7),
        "skewed": np.concatenate([np.full(90, 50), rng.integers(10_000, 90_000, 11)]),
        "single": np.array([12_345]),
        "pair": np.array([10, 11]),
    }
    monkeypatch.setattr(kernels, "_CHUNK", chunk)

    def fill(b: TraceBuilder) -> None:
        t = 0
        for i in range(max(len(d) for d in durations.values())):
            for name, d in durations.items():
                if i < len(d):
                    b.kernel(name, t, int(d[i]), device=i % 2)
                    t += int(d[i]) + 1

    fp = fingerprint_trace(build(tmp_path / "t.sqlite", Generation.V2024, fill))
    for k in fp.kernels:
        want = np.percentile(durations[k.name], QUANTILE_GRID)
        assert k.quantiles_ns == tuple(float(x) for x in want), k.name
        assert (k.calls, k.total_ns) == (len(durations[k.name]), int(durations[k.name].sum()))


def test_summary_json_idle_pct(tmp_path: Path) -> None:
    from nsysdiff.render.summary import summary_data

    def fill(b: TraceBuilder) -> None:
        b.kernel("a", 0, 100)
        b.kernel("a", 300, 100)  # busy 200 over a 400 ns span: 50% idle

    data = summary_data(fingerprint_trace(build(tmp_path / "t.sqlite", Generation.V2024, fill)))
    assert data["totals"]["busy_ns"] == 200
    assert data["totals"]["idle_pct"] == pytest.approx(50.0)
    assert data["totals"]["devices"][0]["idle_pct"] == pytest.approx(50.0)


# --- shapes a reader must survive ---------------------------------------------------


def test_missing_tables_are_zero_events(tmp_path: Path, generation: Generation) -> None:
    path = build(tmp_path / "t.sqlite", generation, lambda b: b.kernel("k", 0, 10))
    with open_trace(path) as r:
        absent = {
            "CUPTI_ACTIVITY_KIND_MEMCPY",
            "CUPTI_ACTIVITY_KIND_MEMSET",
            "CUPTI_ACTIVITY_KIND_RUNTIME",
            "NVTX_EVENTS",
        }
        assert not absent & set(r.schema.tables)
        assert (r.memcpy(), r.memset(), r.sync_calls(), r.nvtx_summary()) == ((), (), (), ())
        assert r.nvtx_keys() == ()
    fp = fingerprint_trace(path)
    assert (fp.memcpy, fp.memset, fp.sync, fp.nvtx) == ((), (), (), ())
    assert fp.kernel_calls == 1


def test_empty_export(tmp_path: Path, generation: Generation) -> None:
    path = build(tmp_path / "t.sqlite", generation, lambda b: None)
    fp = fingerprint_trace(path)
    assert not fp.meta.has_kernels
    assert (fp.kernels, fp.devices, fp.memcpy, fp.nvtx) == ((), (), (), ())


def _without_source(fp: Fingerprint) -> str:
    data = json.loads(fingerprint_to_json(fp))
    data["meta"].pop("source")
    return json.dumps(data, sort_keys=True)


def _everything(b: TraceBuilder) -> None:
    _kernel_mix(b)
    _copies(b)
    b.memset(500_000, 100, 64)
    b.runtime("cudaStreamSynchronize_v3020", 600_000, 1_000)
    b.nvtx_range("aten::mm, seq = 1", 0, 10)


def test_extra_unknown_columns_ignored(tmp_path: Path, generation: Generation) -> None:
    plain = build(tmp_path / "plain.sqlite", generation, _everything)
    extra = build(tmp_path / "extra.sqlite", generation, _everything, extra_columns=True)
    con = sqlite3.connect(extra)
    for table in ("CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMSET", "NVTX_EVENTS"):
        con.execute(f"ALTER TABLE {table} ADD COLUMN name TEXT DEFAULT 'x'")
        con.execute(f"ALTER TABLE {table} ADD COLUMN futureColumn INTEGER DEFAULT 7")
    con.commit()
    con.close()
    with open_trace(extra) as r:
        assert "name" in r.schema.tables["CUPTI_ACTIVITY_KIND_MEMCPY"]
    assert _without_source(fingerprint_trace(extra)) == _without_source(fingerprint_trace(plain))


BAD = b"bad\xff\xfename\xc3"


def test_invalid_utf8_text_does_not_crash(tmp_path: Path, generation: Generation) -> None:
    def fill(b: TraceBuilder) -> None:
        b.kernel("broken_kernel", 0, 100)
        b.kernel("fine_kernel", 200, 50)
        b.nvtx_range("broken_range", 0, 300)
        b.nvtx_range("broken_registered", 0, 300, registered=True)

    path = build(tmp_path / "t.sqlite", generation, fill, invalid_utf8_env=True)
    con = sqlite3.connect(path)
    for name in ("broken_kernel", "broken_registered"):
        con.execute(f"UPDATE StringIds SET value = CAST(x'{BAD.hex()}' AS TEXT) WHERE value = ?", (name,))
    con.execute(f"UPDATE NVTX_EVENTS SET text = CAST(x'{BAD.hex()}' AS TEXT) WHERE text = 'broken_range'")
    con.commit()
    con.close()
    fp = fingerprint_trace(path)
    names = {k.name: k.total_ns for k in fp.kernels}
    assert names["fine_kernel"] == 50
    (broken,) = [n for n in names if n != "fine_kernel"]
    assert broken.startswith("bad") and "\ufffd" in broken and names[broken] == 100
    assert all(r.name.startswith("bad") for r in fp.nvtx)
    assert sum(r.count for r in fp.nvtx) == 2
    run_summary(path, "--format", "text")  # rich output of the replaced characters too


def test_nvtx_only_export(tmp_path: Path, generation: Generation) -> None:
    def fill(b: TraceBuilder) -> None:
        b.nvtx_range("train_step", 0, 5_000)
        b.nvtx_range("train_step", 6_000, 9_000)

    path = build(tmp_path / "t.sqlite", generation, fill)
    with open_trace(path) as r:
        assert "CUPTI_ACTIVITY_KIND_KERNEL" not in r.schema.tables
        assert not r.has_kernels()
        assert len(r.kernels().calls) == 0
        assert r.first_kernel_ns() is None
    fp = fingerprint_trace(path)
    assert not fp.meta.has_kernels
    assert fp.kernels == () and fp.devices == ()
    assert [(x.name, x.count, x.total_ns) for x in fp.nvtx] == [("train_step", 2, 8_000)]
    out = run_summary(path, "--format", "json")
    assert json.loads(out)["meta"]["has_kernels"] is False
    assert "kernel data is absent" in run_summary(path)


def test_graph_mode_detected(tmp_path: Path) -> None:
    def fill(b: TraceBuilder) -> None:
        b.kernel("k", 0, 10)
        b.graph_launch(100, 40_000)
        b.graph_launch(50_000, 30_000)

    with open_trace(build(tmp_path / "t.sqlite", Generation.V2024, fill)) as r:
        meta = r.metadata()
    assert (meta.graph_mode.value, meta.graph_launches, meta.graph_total_ns) == ("graph", 2, 70_000)


# --- read-only proof ----------------------------------------------------------------


def run_summary(path: Path, *args: str) -> str:
    """`python -m nsysdiff summary PATH ARGS` in a real process (no shared state), which passes silently."""
    code, out, err = run_process("summary", path, *args, env={"COLUMNS": "160"})
    assert code == 0, err
    assert err == ""
    return out


def snapshot(directory: Path) -> dict[str, tuple[str, int, int]]:
    """Every entry of `directory`: sha256, mtime (ns) and mode."""
    out = {}
    for entry in sorted(directory.iterdir()):
        st = entry.stat()
        out[entry.name] = (
            hashlib.sha256(entry.read_bytes()).hexdigest(),
            st.st_mtime_ns,
            st.st_mode,
        )
    return out


def assert_untouched(path: Path, *args: str) -> str:
    before = snapshot(path.parent)
    out = run_summary(path, *args)
    assert snapshot(path.parent) == before  # no -journal/-wal/-shm, same bytes and mtime
    return out


def _sample(b: TraceBuilder) -> None:
    _everything(b)
    b.nvtx_range("step", 0, 2_000_000)


def _alone(src: Path, tmp_path: Path, name: str) -> Path:
    """`src` copied (with its mtime) into an otherwise empty directory."""
    d = tmp_path / name
    d.mkdir()
    dst = d / src.name
    shutil.copy2(src, dst)
    os.utime(dst, ns=(1_600_000_000_000_000_000, 1_600_000_000_000_000_000))  # distinctive
    return dst


@pytest.fixture
def restore_modes(tmp_path: Path) -> Iterator[list[Path]]:
    """Paths whose permissions a test removed, made writable again for cleanup."""
    changed: list[Path] = []
    yield changed
    for p in reversed(changed):
        p.chmod(stat.S_IRWXU if p.is_dir() else stat.S_IRUSR | stat.S_IWUSR)


def test_summary_never_writes_beside_the_trace(tmp_path: Path, generation: Generation) -> None:
    built = build(tmp_path / "t.sqlite", generation, _sample)
    trace = _alone(built, tmp_path, "alone")
    assert_untouched(trace, "--format", "json")
    assert_untouched(trace, "--format", "text")
    assert [p.name for p in trace.parent.iterdir()] == ["t.sqlite"]


def test_summary_on_read_only_file_and_directory(
    tmp_path: Path, generation: Generation, restore_modes: list[Path]
) -> None:
    # Root ignores these modes, so the snapshot comparison is what proves nothing is
    # written; for other users this also proves no write is even needed.
    trace = _alone(build(tmp_path / "t.sqlite", generation, _sample), tmp_path, "ro")
    trace.chmod(0o444)
    restore_modes.append(trace)
    trace.parent.chmod(0o555)
    restore_modes.append(trace.parent)
    out = assert_untouched(trace, "--format", "json")
    assert json.loads(out)["totals"]["kernel_launches"] == fingerprint_trace(trace).kernel_calls


def test_wal_mode_file_gets_no_wal_or_shm(tmp_path: Path) -> None:
    """A file left in WAL mode would make an ordinary reader create -wal and -shm."""
    path = build(tmp_path / "t.sqlite", Generation.V2024, _sample)
    con = sqlite3.connect(path)
    assert con.execute("PRAGMA journal_mode = WAL").fetchone() == ("wal",)
    con.close()
    trace = _alone(path, tmp_path, "wal")
    assert_untouched(trace, "--format", "json")


_REAL = real_traces()


@pytest.mark.skipif(not _REAL, reason="real traces not found")
def test_real_trace_untouched(tmp_path: Path, restore_modes: list[Path]) -> None:
    src = next((p for p in _REAL if p.name == "fuser_h100_report1.sqlite"), _REAL[0])
    trace = _alone(src, tmp_path, "real")
    assert_untouched(trace, "--format", "json")
    trace.chmod(0o444)
    restore_modes.append(trace)
    trace.parent.chmod(0o555)
    restore_modes.append(trace.parent)
    assert_untouched(trace, "--format", "text")


# --- mangled names ------------------------------------------------------------------------

FWD = "void ns::fwd<1>(float *)"
FWD_MANGLED = "_ZN2ns3fwdILi1EEEvPf"


def _mangled_mix(b: TraceBuilder) -> None:
    # A plain name (the builder mangles it itself), a template with its mangled name on two
    # devices and two shapes, and a template whose export left the mangled name NULL.
    b.kernel("gemm", 0, 10)
    b.kernel("fwd", 20, 10, demangled=FWD, mangled=FWD_MANGLED, device=0)
    b.kernel("fwd", 40, 10, demangled=FWD, mangled=FWD_MANGLED, device=1, grid=(2, 1, 1))
    # (the builder mangles only a short name that is a plain identifier)
    b.kernel("bwd<2>", 60, 10, demangled="void ns::bwd<2>(float *)")


@pytest.mark.parametrize("shapes", [False, True], ids=["name", "name+launch"])
def test_kernel_mangled_names_where_the_generation_has_them(
    tmp_path: Path, generation: Generation, shapes: bool
) -> None:
    path = build(tmp_path / "t.sqlite", generation, _mangled_mix)
    with open_trace(path) as r:
        groups = r.kernels(shapes=shapes)
    got = {(d.split(" [grid")[0], m) for d, m in zip(groups.demangled, groups.mangled, strict=True)}
    if generation in OLD:  # no mangledName column before 2022
        assert got == {("gemm", None), (FWD, None), ("void ns::bwd<2>(float *)", None)}
    else:
        assert got == {("gemm", "_Z4gemmv"), (FWD, FWD_MANGLED), ("void ns::bwd<2>(float *)", None)}


def test_mangled_name_is_the_least_id_of_its_group(tmp_path: Path) -> None:
    # Two launches of one demangled name with different mangled names (not seen in real
    # exports, but possible in a crafted one): the name interned first (the least id) wins,
    # whichever launch comes first, and a NULL on one launch does not hide the other's.
    def fill(b: TraceBuilder) -> None:
        b.string_id("_Zfirst")
        b.kernel("k", 0, 10, demangled="void k()", mangled="_Zsecond")
        b.kernel("k", 20, 10, demangled="void k()", mangled="_Zfirst")
        b.kernel("j<1>", 40, 10, demangled="void j<1>()")  # no mangled name: NULL
        b.kernel("j<1>", 60, 10, demangled="void j<1>()", mangled="_Zj")

    fp = fingerprint_trace(build(tmp_path / "t.sqlite", Generation.V2024, fill))
    assert {k.demangled: k.mangled for k in fp.kernels} == {"void k()": "_Zfirst", "void j<1>()": "_Zj"}
    assert fingerprint_from_json(fingerprint_to_json(fp), "t.json") == fp


def _real_and_h100() -> list[Path]:
    h100 = real_traces()[0].parent / "h100" if real_traces() else None
    return real_traces() + (sorted(h100.glob("*.sqlite")) if h100 and h100.is_dir() else [])


@pytest.mark.skipif(not real_traces(), reason="real traces not found")
@pytest.mark.parametrize("trace", _real_and_h100(), ids=lambda p: p.name)
def test_real_mangled_names(trace: Path) -> None:
    with sqlite3.connect(f"file:{trace}?mode=ro", uri=True) as con:
        cols = {row[1] for row in con.execute("PRAGMA table_info(CUPTI_ACTIVITY_KIND_KERNEL)")}
    fp = fingerprint_trace(trace)
    if "mangledName" not in cols:
        assert all(k.mangled is None for k in fp.kernels)
        return
    for k in fp.kernels:
        # C++ kernels are mangled; extern "C" ones (Triton, nvjet, nvFuser) keep their name.
        assert k.mangled is not None
        assert k.mangled.startswith("_Z") or k.mangled == k.demangled, (k.demangled, k.mangled)
    assert any(k.mangled is not None and k.mangled.startswith("_Z") for k in fp.kernels)


_NEAR = (
    "aten::linear",
    "aten::linear, seq = 1, op_id = 2",
    "aten::linear, op_id = 3",
    "aten::linear, custom",
    "aten::linear_backward, seq = 3",
    "aten::linearity",
    "aten::linea",
    "aten::linear,seq = 4",
    "Aten::linear",
    "aten::linear\n, seq = 5",
    "",
    ", seq = 6",
)


@pytest.mark.parametrize("wanted", [1, 2, 9])
def test_range_copy_keeps_exactly_the_ranges_of_its_keys(tmp_path: Path, wanted: int) -> None:
    # The copy compares each name with the keys before folding it (up to a few keys):
    # names that share a start with a key, or a key and a comma, must not slip through.
    b = TraceBuilder()
    for i, text in enumerate(_NEAR):
        b.nvtx_range(text, 100 * i, 100 * i + 50, registered=i % 2 == 1)
    with open_trace(b.write(tmp_path / "near.sqlite")) as r:
        keys = sorted(r.nvtx_keys(), key=lambda k: (k.sql_name != "aten::linear", k.sql_name))[:wanted]
        r.load_ranges([(k, 0) for k in keys])
        ((copied,),) = r.con.execute("SELECT count(*) FROM temp.nsysdiff_r").fetchall()
    folded = [names.long_name(t.encode()) for t in _NEAR]  # the SQL fold, as its tests prove
    assert copied == sum(f in {k.sql_name for k in keys} for f in folded)
    assert keys[0].sql_name == "aten::linear" and keys[0].count == 3


def test_census_and_unscoped_nvtx_summary_are_one_pass(tmp_path: Path) -> None:
    # A scope's census of range names and its unscoped NVTX summary read the same rows:
    # the second asks nothing of SQLite's fold again.
    b = TraceBuilder()
    for i in range(20):
        b.nvtx_range(f"step, seq = {i}", 100 * i, 100 * i + 50)
    searched: list[str] = []

    def instr(hay: str, needle: str) -> int:
        searched.append(hay)
        return hay.find(needle) + 1

    with open_trace(b.write(tmp_path / "t.sqlite")) as r:
        r.con.create_function("instr", 2, instr)
        (key,) = r.nvtx_keys()
        folded = len(searched)
        (row,) = r.nvtx_summary()
    assert folded and len(searched) == folded
    assert (key.sql_name, key.count, row.name, row.count, row.total_ns) == ("step", 20, "step", 20, 1_000)
