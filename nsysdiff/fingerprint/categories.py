"""The default kernel taxonomy: ordered patterns over what a kernel *is*, first match wins.

A kernel is matched on its identity (:func:`identity`): its qualified function name
(``cudnn::detail::implicit_convolve_sgemm``), without the template arguments, the
parameter list or the return type, and, for a generic wrapper (``cutlass::device_kernel``,
``cutlass::Kernel2``, ``xmma_cudnn::gemm::kernel``), the head of the operation it wraps
(``cutlass::conv::kernel::ImplicitGemmConvolution``, ``flash::FlashAttnFwdSm90``). Never the
parameters: ``fft2d_r2c_32x32(..., cudnn::reduced_divisor, ...)`` is an FFT, not a reduction.

The order is part of the contract. What a kernel does comes before the words its epilogue
adds: a cuDNN convolution fused with its ReLU (``volta_scudnn_winograd_128x128_ldg1_ldg4_relu_
tile148t_nt_v1``) is a convolution, not an element-wise kernel, and a cuDNN attention kernel
(``..._sdpa_..._flash_fprop_...``) is attention, not a convolution pass. Generated kernels
(``triton_poi_fused__scaled_dot_product_cudnn_attention_...``) are placed by their generator
before the aten ops their names list. Persistent ``nvjet`` GEMMs must not fall into cuBLAS.
``tests/fingerprint/golden/categories.tsv`` holds the names this order is checked against.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from nsysdiff.fingerprint.families import strip_templates


@dataclass(frozen=True, slots=True)
class Category:
    name: str
    pattern: re.Pattern[str]  # searched in the kernel's identity
    description: str


def _c(name: str, pattern: str, description: str) -> Category:
    return Category(name, re.compile(pattern, re.IGNORECASE), description)


TAXONOMY: tuple[Category, ...] = (
    _c(
        "torch.compile",
        r"^triton_(poi|red|per|tem|for|fused)_|^triton__\d|^device_kernel$",
        "torch.compile / Inductor generated kernels (triton_poi_*, triton_red_*, ...), whatever aten ops they fuse",
    ),
    _c(
        "nccl",
        r"nccl|cross_device_reduce|all_?reduce|all_?gather|reduce_?scatter|all_?to_?all|nvshmem",
        "NCCL and other collective communication (custom all-reduce, NVSHMEM)",
    ),
    _c(
        "attention",
        r"flash(?!infer)|fmha|attention|attn|sdpa|reshape_and_cache|cascade|mha_|mmha|xqa|"
        r"multihead|(decode|prefill)_?with_?(paged_?|ragged_?)?kv|kv_?cache|merge_?states?|mergestate",
        "attention: flash/fused attention, paged attention, KV-cache writes, LSE merges",
    ),
    _c(
        "fft",
        r"fft|(^|::|\s)(sp|dp|hp|bp)(radix|vector)\d|bluestein|(pre|post)process[crzd]2[crzd]|flip_filter",
        "FFTs: cuFFT kernels and cuDNN's FFT convolutions (fft2d_r2c_*, regular_fft, spRadix*::kernel*)",
    ),
    _c(
        "convolution",
        r"convol|(^|_|::)conv(\dd)?(_|$)|conv\dd_|winograd|im2col|col2im|vol2col|col2vol|scudnn|"
        r"[shi]\d{3,5}cudnn|xmma_(fprop|dgrad|wgrad)|\d(fprop|dgrad|wgrad)_|implicit_gemm\W+(fprop|dgrad|wgrad)|"
        r"(^|_|::)(dgrad|wgrad)(\dd)?_(alg|engine)|dgrad\dd|wgrad\dd|cudnn::(cnn|gemm)::",
        "convolutions: cuDNN (implicit/explicit GEMM, Winograd, xmma fprop/dgrad/wgrad), CUTLASS conv",
    ),
    _c("gemm.nvjet", r"(^|::)nvjet", "persistent GEMM kernels from cuBLASLt's nvjet (Hopper and later)"),
    _c("gemm.cutlass", r"cutlass", "CUTLASS kernels (GEMMs, their split-K reductions)"),
    _c(
        "gemm.cublas",
        r"cublas|xmma_gemm|(^|::)(sm\d+|ampere|volta|turing|hopper|maxwell|kepler|pascal|blackwell)_\w*gemm|"
        r"gemv|splitKreduce|(^|::)[sdhczi]?gemm|gemmk1|gemmSN|[shi]\d+gemm|(^|::)(dot|axpy|scal|nrm2|asum)_kernel",
        "cuBLAS / cuBLASLt GEMM and GEMV kernels (heuristic kernel selection)",
    ),
    _c(
        "gemm.other",
        r"gemm|matmul|marlin|mul_mat|fused_moe_kernel|(^|_|::)(bmm|mm)(_|$)",
        "other GEMM kernels (DeepGEMM, Marlin, Triton MoE and matmul kernels, hand-written GEMMs)",
    ),
    _c(
        "normalization",
        r"norm(?!al(?!i))|(^|_|::)bn_(fw|bw)|batchnorm",
        "RMSNorm, LayerNorm, GroupNorm, BatchNorm",
    ),
    _c(
        "sampling",
        r"sampl|multinomial|top_?k_?top_?p|topp|argmax|distribution_",
        "token sampling: top-k/top-p, multinomial, random draws",
    ),
    _c(
        "reduction",
        r"reduc|softmax|sort|topk|scan|cub::|histogram|cumsum|pool",
        "reductions, softmax, sort, scan, top-k, pooling",
    ),
    _c(
        "memory",
        r"memcpy|memset|copy|(^|_|::)cat_|CatArray|gather|scatter|index_?select|index_|fill|transpose|"
        r"nchwToNhwc|nhwcToNchw|permute",
        "kernel-based copies, gathers, scatters, fills and layout transforms",
    ),
    _c(
        "elementwise",
        r"elementwise|element_wise|pointwise|vectorized_|unrolled_|act_and_mul|silu|gelu|relu|tanh|sigmoid|dropout|"
        r"rotary|(^|_|::)rope|op_tensor|op_generic_tensor|scalePackedTensor|add_?tensor|"
        r"(^|_|::)(add|mul|sub|div|scale|cast|clamp|where)(_|$)",
        "element-wise arithmetic and activations",
    ),
)
OTHER = "other"

# A wrapper that names no operation: what it runs is its first template argument.
_WRAPPER = re.compile(r"^(device_kernel|kernel\d*|globalKernel)$", re.IGNORECASE)
_ANONYMOUS = re.compile(r"\(anonymous namespace\)::|<unnamed>::")
_HEAD_END = re.compile(r"[<>,()]")


def identity(short: str, demangled: str) -> str:
    """What a kernel is matched on: its qualified function name, and for a generic wrapper
    the head of its first template argument (see the module docstring)."""
    full = _ANONYMOUS.sub("", demangled or short)
    qualified = strip_templates(full) if ("<" in full or "(" in full) else full.rsplit(" ", 1)[-1]
    base = qualified.rsplit("::", 1)[-1]
    ident = qualified if base == short or not short else f"{short} {qualified}"
    if _WRAPPER.match(base):
        start = full.find(base + "<")
        if start >= 0:
            rest = full[start + len(base) + 1 :]
            end = _HEAD_END.search(rest)
            head = (rest[: end.start()] if end else rest).strip()
            if head:
                ident = f"{ident} {head}"
    return ident


def categorize(short: str, demangled: str) -> str:
    """Name of the first category whose pattern matches the kernel's :func:`identity`."""
    ident = identity(short, demangled)
    for cat in TAXONOMY:
        if cat.pattern.search(ident):
            return cat.name
    return OTHER


def names() -> tuple[str, ...]:
    return (*(c.name for c in TAXONOMY), OTHER)
