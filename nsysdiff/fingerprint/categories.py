"""The default kernel taxonomy: ordered patterns, first match wins.

Matched against the short name first and then the demangled name, so that a kernel is
placed by what it does (``flash_fwd_kernel``) before the library it came from. The order
is part of the contract: persistent ``nvjet`` GEMMs must not fall into cuBLAS, and
CUTLASS's ``device_kernel`` must not fall into torch.compile.
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Category:
    name: str
    pattern: re.Pattern[str]
    description: str
    # A demangled name that matches this is not in the category even if the short
    # name is: CUTLASS's kernels are also called ``device_kernel``.
    exclude: re.Pattern[str] | None = None


def _c(name: str, pattern: str, description: str, exclude: str | None = None) -> Category:
    return Category(
        name,
        re.compile(pattern, re.IGNORECASE),
        description,
        re.compile(exclude, re.IGNORECASE) if exclude else None,
    )


TAXONOMY: tuple[Category, ...] = (
    _c(
        "nccl",
        r"^nccl|ncclDevKernel|ncclKernel",
        "NCCL collective and point-to-point communication",
    ),
    _c("gemm.nvjet", r"^nvjet", "persistent GEMM kernels from cuBLASLt's nvjet (Hopper and later)"),
    _c(
        "gemm.cublas",
        r"cublas|xmma_gemm|^(sm\d+|ampere|volta|turing|hopper|maxwell)_.*(gemm|gemv)|gemv|"
        r"splitKreduce|^gemm|gemmk1|s\d+gemm|h\d+gemm",
        "cuBLAS / cuBLASLt GEMM and GEMV kernels (heuristic kernel selection)",
    ),
    _c("gemm.cutlass", r"cutlass", "CUTLASS kernels"),
    _c(
        "attention",
        r"flash|fmha|attention|attn|reshape_and_cache|paged_attention|cascade|mha_|xformers",
        "attention: flash attention, paged attention, KV-cache writes, LSE merges",
    ),
    _c(
        "torch.compile",
        r"^device_kernel$|^triton",
        "torch.compile / Inductor and Triton generated kernels",
        exclude=r"cutlass",
    ),
    _c(
        "normalization",
        r"norm",
        "RMSNorm, LayerNorm, GroupNorm, BatchNorm",
    ),
    _c(
        "sampling",
        r"sampl|multinomial|top_?k_?top_?p|topp|argmax|distribution_",
        "token sampling: top-k/top-p, multinomial, random draws",
    ),
    _c(
        "reduction",
        r"reduce|reduction|softmax|sort|topk|scan|cub::|histogram|cumsum",
        "reductions, softmax, sort, scan, top-k",
    ),
    _c(
        "memory",
        r"memcpy|memset|copy|cat_|CatArray|gather|scatter|index_?select|index_|fill|transpose",
        "kernel-based copies, gathers, scatters and fills",
    ),
    _c(
        "elementwise",
        r"elementwise|vectorized|unrolled|functor|act_and_mul|silu|gelu|relu|rotary|rope|"
        r"add|mul|_kernel_",
        "element-wise arithmetic and activations",
    ),
)
OTHER = "other"


def categorize(short: str, demangled: str) -> str:
    """Name of the first category whose pattern matches the short, then demangled, name."""
    for cat in TAXONOMY:
        if cat.pattern.search(short) and not (cat.exclude and cat.exclude.search(demangled)):
            return cat.name
    for cat in TAXONOMY:
        if cat.pattern.search(demangled):
            return cat.name
    return OTHER


def names() -> tuple[str, ...]:
    return (*(c.name for c in TAXONOMY), OTHER)
