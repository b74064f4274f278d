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
        # cuDNN convolutions fused with their ReLU are convolutions, not element-wise kernels.
        ("turing_fp16_s1688cudnn_fp16_256x64_sliced1x2_ldg8_relu_f2f_exp_small_nhwc_tn_v1", "", "convolution"),
        ("volta_scudnn_winograd_128x128_ldg1_ldg4_relu_tile148t_nt_v1", "", "convolution"),
        ("winogradForwardData4x4", "void cudnn::winograd_nonfused::winogradForwardData4x4<float>(P)", "convolution"),
        ("implicit_convolve_sgemm", "void cudnn::detail::implicit_convolve_sgemm<float, float>(int)", "convolution"),
        # A cuDNN FFT that takes a cudnn::reduced_divisor is still an FFT.
        ("fft2d_r2c_32x32", "void fft2d_r2c_32x32<float, false, 0u, false>(float2 *, cudnn::reduced_divisor)", "fft"),
        ("fft2d_c2r_32x32", "void fft2d_c2r_32x32<float>(float *, cudnn::reduced_divisor, bool)", "fft"),
        # Inductor's kernels are placed by their generator, whatever aten ops they fuse.
        ("triton_poi_fused__scaled_dot_product_cudnn_attention__to_copy_0", "", "torch.compile"),
        ("fmha_cutlassF_f16_aligned_64x64_rf_sm80", "", "attention"),
    ],
)
def test_taxonomy(short: str, demangled: str, want: str) -> None:
    assert categorize(short, demangled or short) == want


def test_every_category_is_documented() -> None:
    assert all(c.description for c in TAXONOMY)
    assert names()[-1] == OTHER and len(set(names())) == len(names())
