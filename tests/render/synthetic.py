"""A small synthetic diff, built from hand-made fingerprints, for the renderer tests.

It echoes the cascade-attention case at a small scale: everything about 1.10x slower,
``reshape_and_cache_flash_kernel`` 5.14x per call with its count unchanged, a GEMM
variant swap within one family, the same launch count with different kernels, more
device-to-device copies. Findings and rule results are written by hand so that these
tests depend only on the diff engine and the report model, not on the rule engine.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from nsysdiff.compare.diff import Settings, compare
from nsysdiff.errors import ExitCode
from nsysdiff.fingerprint.model import (
    DeviceShare,
    DeviceStats,
    Fingerprint,
    GroupStats,
    KernelStats,
    RangeStats,
    Scope,
    TraceMeta,
)
from nsysdiff.rules.report import Finding, Level, Outcome, Report, RuleResult
from nsysdiff.trace.records import QUANTILE_GRID, ApiStats, CopyStats, GpuInfo, LaunchConfig

RESHAPE = (
    "void vllm::reshape_and_cache_flash_kernel<__nv_bfloat16, __nv_bfloat16, "
    "(vllm::Fp8KVCacheDataType)0>(__nv_bfloat16 const*, __nv_bfloat16 const*, "
    "__nv_bfloat16*, __nv_bfloat16*, long const*, int, int, int, int, int, int, "
    "float const*, float const*)"
)
ELEMENTWISE = (
    "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, "
    "std::array<char*, 1ul> >(int, at::native::FillFunctor<float>, std::array<char*, 1ul>)"
)
BITWISE_OR = (
    "void at::native::elementwise_kernel<128, 2, at::native::gpu_kernel_impl<"
    "at::native::BitwiseOrFunctor<long> >(at::TensorIteratorBase&, "
    "at::native::BitwiseOrFunctor<long> const&)::{lambda(int)#1}>(int, "
    "at::native::gpu_kernel_impl<at::native::BitwiseOrFunctor<long> >(at::TensorIteratorBase&, "
    "at::native::BitwiseOrFunctor<long> const&)::{lambda(int)#1})"
)
FLASH = "void flash::flash_fwd_splitkv_kernel<Flash_fwd_kernel_traits<128, 64, 128, 4> >(Flash_fwd_params)"
RMS_NORM = "void vllm::rms_norm_kernel<c10::BFloat16>(c10::BFloat16*, c10::BFloat16 const*, float, int, int)"
SPLIT_K = "void cublasLt::splitKreduce_kernel<32, 16, int, float, float>(cublasLt::cublasSplitKParams<float>)"
MERGE = "void vllm::merge_attn_states_kernel<__nv_bfloat16, 128u>(__nv_bfloat16*, float*)"

# (short name, demangled, family, category, base (calls, total_ns), candidate (calls, total_ns))
Spec = tuple[str, str, str, str, tuple[int, int] | None, tuple[int, int] | None]
KERNELS: tuple[Spec, ...] = (
    ("device_kernel", "device_kernel", "device_kernel", "torch.compile", (748, 877_380_000), (748, 965_118_000)),
    (
        "vectorized_elementwise_kernel",
        ELEMENTWISE,
        "vectorized_elementwise_kernel",
        "elementwise",
        (883, 60_980_000),
        (883, 66_470_000),
    ),
    (
        "nvjet_tst_192x192_64x4_2x1_v_bz_coopB_TNN",
        "nvjet_tst_192x192_64x4_2x1_v_bz_coopB_TNN",
        "nvjet_tst_*_bz_*",
        "gemm.nvjet",
        (28, 51_940_000),
        None,
    ),
    (
        "nvjet_tst_256x128_64x4_1x2_h_bz_coopA_NTT",
        "nvjet_tst_256x128_64x4_1x2_h_bz_coopA_NTT",
        "nvjet_tst_*_bz_*",
        "gemm.nvjet",
        None,
        (28, 60_100_000),
    ),
    (
        "nvjet_tst_128x256_64x4_1x2_h_bz_coopA_NNT",
        "nvjet_tst_128x256_64x4_1x2_h_bz_coopA_NNT",
        "nvjet_tst_*_bz_*",
        "gemm.nvjet",
        (112, 150_000_000),
        (112, 203_000_000),
    ),
    (
        "reshape_and_cache_flash_kernel",
        RESHAPE,
        "vllm::reshape_and_cache_flash_kernel",
        "attention",
        (392, 1_200_000),
        (392, 6_170_000),
    ),
    (
        "flash_fwd_splitkv_kernel",
        FLASH,
        "flash::flash_fwd_splitkv_kernel",
        "attention",
        (392, 45_000_000),
        (392, 49_500_000),
    ),
    ("rms_norm_kernel", RMS_NORM, "vllm::rms_norm_kernel", "normalization", (784, 20_000_000), (784, 22_400_000)),
    (
        "elementwise_kernel",
        BITWISE_OR,
        "at::native::elementwise_kernel",
        "elementwise",
        (200, 3_000_000),
        (200, 3_270_000),
    ),
    ("splitKreduce_kernel", SPLIT_K, "cublasLt::splitKreduce_kernel", "gemm.cublas", (392, 2_000_000), None),
    ("merge_attn_states_kernel", MERGE, "vllm::merge_attn_states_kernel", "attention", None, (392, 4_500_000)),
)

SHAPE = (0.62, 0.7, 0.8, 0.85, 0.9, 0.94, 0.97, 1.0, 1.02, 1.05, 1.08, 1.15, 1.25, 1.6, 2.1)
assert len(SHAPE) == len(QUANTILE_GRID)


def kernel(name: str, demangled: str, fam: str, cat: str, calls: int, total_ns: int) -> KernelStats:
    mean = total_ns / calls
    return KernelStats(
        name=name,
        demangled=demangled,
        family=fam,
        category=cat,
        calls=calls,
        total_ns=total_ns,
        quantiles_ns=tuple(round(mean * s, 1) for s in SHAPE),
        devices=(DeviceShare(0, calls, total_ns),),
        configs=(LaunchConfig((132, 1, 1), (128, 1, 1), 64, 0, 1024),),
    )


def fingerprint(
    source: str,
    nsys: str,
    kernels: Sequence[KernelStats],
    memcpy: Sequence[CopyStats],
    memset: Sequence[CopyStats],
    sync: Sequence[ApiStats],
    nvtx: Sequence[RangeStats],
) -> Fingerprint:
    ordered = tuple(sorted(kernels, key=lambda k: (-k.total_ns, k.demangled)))
    cats: dict[str, list[int]] = {}
    for k in ordered:
        a = cats.setdefault(k.category, [0, 0, 0])
        a[0] += k.calls
        a[1] += k.total_ns
        a[2] += 1
    total = sum(k.total_ns for k in ordered)
    calls = sum(k.calls for k in ordered)
    return Fingerprint(
        meta=TraceMeta(
            source=source,
            nsys_version=nsys,
            schema_version="3.11.1",
            gpus=(GpuInfo(0, "NVIDIA H200", 132),),
            capture_start_ns=0,
            capture_end_ns=2_000_000_000,
            has_kernels=bool(ordered),
        ),
        kernels=ordered,
        categories=tuple(
            sorted(
                (GroupStats(n, c, t, m) for n, (c, t, m) in cats.items()),
                key=lambda g: (-g.total_ns, g.name),
            )
        ),
        memcpy=tuple(memcpy),
        memset=tuple(memset),
        sync=tuple(sync),
        nvtx=tuple(nvtx),
        devices=(DeviceStats(0, calls, total, total, int(total * 1.25)),) if ordered else (),
        scope=Scope(),
    )


def pair(specs: Sequence[Spec] = KERNELS) -> tuple[Fingerprint, Fingerprint]:
    base = [kernel(n, d, f, c, *b) for n, d, f, c, b, _ in specs if b]
    cand = [kernel(n, d, f, c, *x) for n, d, f, c, _, x in specs if x]
    b = fingerprint(
        "bs1.sqlite",
        "2024.5.1.113",
        base,
        memcpy=(
            CopyStats("DtoD", 29, 81_000_000, 900_000),
            CopyStats("DtoH", 70, 1_120_000, 310_000),
            CopyStats("HtoD", 1000, 52_000_000, 4_400_000),
        ),
        memset=(CopyStats("memset", 345, 9_400_000, 520_000),),
        sync=(
            ApiStats("cudaDeviceSynchronize", 2, 3_100_000),
            ApiStats("cudaStreamSynchronize", 120, 41_000_000),
        ),
        nvtx=(
            RangeStats("decode", "vllm", 64, 1_180_000_000),
            RangeStats("prefill", "vllm", 1, 90_000_000),
        ),
    )
    c = fingerprint(
        "bs16.sqlite",
        "2024.6.2.225",
        cand,
        memcpy=(
            CopyStats("DtoD", 53, 163_000_000, 1_700_000),
            CopyStats("DtoH", 54, 860_000, 250_000),
            CopyStats("HtoD", 1040, 54_100_000, 4_520_000),
        ),
        memset=(CopyStats("memset", 429, 11_700_000, 640_000),),
        sync=(
            ApiStats("cudaDeviceSynchronize", 3, 4_400_000),
            ApiStats("cudaStreamSynchronize", 120, 44_800_000),
        ),
        nvtx=(
            RangeStats("decode", "vllm", 64, 1_300_000_000),
            RangeStats("prefill", "vllm", 1, 98_000_000),
        ),
    )
    return b, c


FINDINGS = (
    Finding(
        Level.ERROR,
        "outlier-kernels",
        "outlier",
        "reshape_and_cache_flash_kernel",
        observed="5.14x (4.67x beyond the overall 1.10x)",
        limit="1.25x beyond the overall scale",
        evidence="calls 392 → 392, per call 5.14x mean; per-call effect +4.97 ms, count effect 0",
        message="A kernel scaled abnormally against the rest of the trace.",
    ),
    Finding(
        Level.ERROR,
        "attention-budget",
        "budget",
        "attention",
        observed="+13.97 ms (+30.2%)",
        limit="+10%",
        evidence="46.20 ms → 60.17 ms over 1,176 → 1,176 calls",
        message="Attention kernels must not grow faster than 10% per release.",
    ),
    Finding(
        Level.WARNING,
        "d2d-copies",
        "budget",
        "DtoD",
        observed="bytes 2.01x",
        limit="1.50x",
        evidence="ops 29 → 53, 81.00 MB → 163.00 MB",
    ),
    Finding(
        Level.INFO,
        "variant-drift",
        "structure",
        "nvjet_tst_*_bz_*",
        observed="1 appeared (60.10 ms), 1 disappeared (51.94 ms)",
        limit="",
        evidence="heuristic GEMM selection picked a different tile shape",
        statistical=False,
    ),
    Finding(
        Level.ERROR,
        "total-budget",
        "budget",
        "kernel time",
        observed="1.11x",
        limit="1.05x",
        evidence="1.212 s → 1.342 s",
        waived=True,
        waiver_reason="bs16 is expected to be slower (until 2099-01-01)",
    ),
)

RULES = (
    RuleResult("attention-budget", "budget", Level.ERROR, "attention time grows at most 10%", 1),
    RuleResult("d2d-copies", "budget", Level.WARNING, "device-to-device bytes grow at most 1.5x", 1),
    RuleResult("outlier-kernels", "outlier", Level.ERROR, "no kernel scales abnormally", 1),
    RuleResult("sync-budget", "budget", Level.ERROR, "synchronising calls grow at most 1.2x", 0),
    RuleResult("total-budget", "budget", Level.ERROR, "kernel time grows at most 5%", 0),
    RuleResult("variant-drift", "structure", Level.INFO, "report kernel variant swaps", 1),
)


def build_report(
    specs: Sequence[Spec] = KERNELS,
    findings: Sequence[Finding] = FINDINGS,
    rules: Sequence[RuleResult] = RULES,
    **overrides: object,
) -> Report:
    b, c = pair(specs)
    d = compare(b, c, Settings())
    report = Report(
        diff=d,
        findings=tuple(findings),
        rules=tuple(rules),
        outcome=Outcome.FAIL,
        exit_code=ExitCode.REGRESSION,
        notes=("nsys versions differ: 2024.5.1.113 vs 2024.6.2.225",),
        packs=("default", "rules/team.yaml"),
    )
    return dataclasses.replace(report, **overrides)  # type: ignore[arg-type]
