from __future__ import annotations

import pytest

from nsysdiff.fingerprint.families import family, strip_templates


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("nvjet_tst_192x192_64x4_2x1_v_bz_coopB_TNN", "nvjet_tst_256x128_64x4_1x2_h_bz_coopA_NTT"),
        ("nvjet_hsh_128x256_64x4_2x1_v_bz_coopA_NTN", "nvjet_hsh_256x128_64x4_1x2_h_bz_coopA_NTT"),
        (
            "sm80_xmma_gemm_f16f16_f16f32_f32_tn_n_tilesize64x256x8_stage3_warpsize1x4x1_tensor16x8x16_kernel",
            "sm80_xmma_gemm_f16f16_f16f32_f32_nn_n_tilesize128x128x32_stage4_warpsize2x2x1_tensor16x8x16_kernel",
        ),
        (
            "ampere_fp16_s16816gemm_fp16_128x128_ldg8_f2f_stages_32x5_tn",
            "ampere_fp16_s16816gemm_fp16_256x128_ldg8_f2f_stages_64x3_nn",
        ),
        ("triton_poi_fused_add_3", "triton_poi_fused_add_11"),
    ],
)
def test_variants_share_a_family(a: str, b: str) -> None:
    assert family(a) == family(b)


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("nvjet_tst_192x192_64x4_2x1_v_bz_coopB_TNN", "nvjet_hsh_192x192_64x4_2x1_v_bz_coopB_TNN"),
        ("flash_fwd_kernel", "flash_bwd_kernel"),
        ("rms_norm_kernel", "fused_add_rms_norm_kernel"),
    ],
)
def test_different_operations_stay_apart(a: str, b: str) -> None:
    assert family(a) != family(b)


def test_templates_and_return_type_are_stripped() -> None:
    assert strip_templates("void at::native::k<(int)4, F<G>>(int, T)") == "at::native::k"
    assert family("void at::native::k<(int)4>(int)") == "at::native::k"
