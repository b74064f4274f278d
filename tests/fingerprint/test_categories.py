from __future__ import annotations

import pytest

from nsysdiff.fingerprint.categories import OTHER, TAXONOMY, categorize, names


@pytest.mark.parametrize(
    ("short", "demangled", "want"),
    [
        ("nvjet_tst_192x192_64x4_2x1_v_bz_coopB_TNN", "", "gemm.nvjet"),
        (
            "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas",
            "",
            "gemm.cublas",
        ),
        ("gemv2T_kernel_val", "", "gemm.cublas"),
        ("splitKreduce_kernel", "", "gemm.cublas"),
        ("device_kernel", "void cutlass::device_kernel<GemmKernel>(Params)", "gemm.cutlass"),
        ("device_kernel", "void device_kernel<(int)128>(void **)", "torch.compile"),
        ("triton_poi_fused_add_0", "", "torch.compile"),
        ("flash_fwd_kernel", "", "attention"),
        ("reshape_and_cache_flash_kernel", "", "attention"),
        ("merge_attn_states_kernel", "", "attention"),
        ("fused_add_rms_norm_kernel", "", "normalization"),
        ("vectorized_elementwise_kernel", "", "elementwise"),
        ("reduce_kernel", "", "reduction"),
        ("ncclDevKernel_SendRecv", "", "nccl"),
        ("CatArrayBatchedCopy", "", "memory"),
        ("saxpy", "saxpy(int, float, float *, float *)", OTHER),
    ],
)
def test_taxonomy(short: str, demangled: str, want: str) -> None:
    assert categorize(short, demangled or short) == want


def test_every_category_is_documented() -> None:
    assert all(c.description for c in TAXONOMY)
    assert names()[-1] == OTHER and len(set(names())) == len(names())
