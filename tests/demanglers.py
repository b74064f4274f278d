"""One program's kernels as two demanglers spell them: instant-ngp and tiny-cuda-nn kernels
of a training step, as nsys 2021.2 (GCC's demangler) and 2021.3 (NVIDIA's EDG-based one)
name them."""

from __future__ import annotations

_UPDATE = "ngp::Testbed::update_density_grid_nerf(float, unsigned int, unsigned int, CUstream_st{p})"
_TRAIN = "ngp::Testbed::train_nerf_step(unsigned int, ngp::Testbed::NerfCounters{r}, CUstream_st{p})"
_XAVIER = "tcnn::GPUMatrix<__half, (tcnn::MatrixLayout)0>::initialize_xavier_uniform<tcnn::pcg32>({a}, float)"
_INFER = (
    "tcnn::NetworkWithInputEncoding<__half>::inference_mixed_precision<float, tcnn::GPUMatrix<float, "
    "(tcnn::MatrixLayout)1>>(CUstream_st{p}, {a}, tcnn::GPUMatrixDynamic<__half>{r}, bool)"
)
# (GCC's spelling, EDG's spelling) of each kernel.
NGP = (
    # Spelled alike by both, or told apart by the spellings matched before.
    (
        "ngp::bitfield_max_pool(unsigned int, unsigned char const*, unsigned char*)",
        "ngp::bitfield_max_pool(unsigned int, const unsigned char *, unsigned char *)",
    ),
    (
        "ngp::grid_to_bitfield(unsigned int, unsigned int, float const*, unsigned char*, float const*)",
        "ngp::grid_to_bitfield(unsigned int, unsigned int, const float *, unsigned char *, const float *)",
    ),
    (
        "ngp::ema_grid_samples_nerf(unsigned int, float, unsigned int, float*, float const*)",
        "ngp::ema_grid_samples_nerf(unsigned int, float, unsigned int, float *, const float *)",
    ),
    (
        "ngp::mark_untrained_density_grid(unsigned int, float*, unsigned int, ngp::TrainingXForm const*, unsigned int const*, bool)",
        "ngp::mark_untrained_density_grid(unsigned int, float *, unsigned int, const ngp::TrainingXForm *, const unsigned int *, bool)",
    ),
    (
        "ngp::generate_grid_samples_nerf_nonuniform(unsigned int, tcnn::pcg32, unsigned int, ngp::BoundingBox, float const*, ngp::NerfPosition*, unsigned int*, unsigned int, float)",
        "ngp::generate_grid_samples_nerf_nonuniform(unsigned int, tcnn::pcg32, unsigned int, ngp::BoundingBox, const float *, ngp::NerfPosition *, unsigned int *, unsigned int, float)",
    ),
    (
        "ngp::splat_grid_samples_nerf_max_nearest_neighbor(unsigned int, unsigned int const*, __half const*, float*, float, float)",
        "ngp::splat_grid_samples_nerf_max_nearest_neighbor(unsigned int, const unsigned int *, const __half *, float *, float, float)",
    ),
    (
        "ngp::generate_training_samples_nerf(unsigned int, ngp::BoundingBox, unsigned int, unsigned int*, tcnn::pcg32, unsigned int*, unsigned int*, unsigned int const*, unsigned int, ngp::TrainingXForm const*, unsigned char const*, bool, ngp::NerfCoordinate*, unsigned int*)",
        "ngp::generate_training_samples_nerf(unsigned int, ngp::BoundingBox, unsigned int, unsigned int *, tcnn::pcg32, unsigned int *, unsigned int *, const unsigned int *, unsigned int, const ngp::TrainingXForm *, const unsigned char *, bool, ngp::NerfCoordinate *, unsigned int *)",
    ),
    (
        "ngp::compute_loss_kernel_train_nerf(unsigned int, ngp::ELossType, unsigned int const*, unsigned int const*, unsigned int*, float, tcnn::pcg32, __half const*, float*, __half*, float*)",
        "ngp::compute_loss_kernel_train_nerf(unsigned int, ngp::ELossType, const unsigned int *, const unsigned int *, unsigned int *, float, tcnn::pcg32, const __half *, float *, __half *, float *)",
    ),
    (
        "void tcnn::kernel_grid<__half, 3u, 2u, 16u, (tcnn::HashType)1>(unsigned int, unsigned int, tcnn::GridOffsetTable, unsigned int, float, float, float, float const*, tcnn::InterpolationType, tcnn::GridType, __half const*, tcnn::MatrixView<float const>, __half*, float*)",
        "void tcnn::kernel_grid<__half, (unsigned int)3, (unsigned int)2, (unsigned int)16, (tcnn::HashType)1>(unsigned int, unsigned int, tcnn::GridOffsetTable, unsigned int, float, float, float, const float *, tcnn::InterpolationType, tcnn::GridType, const T1 *, tcnn::MatrixView<const float>, T1 *, float *)",
    ),
    (
        "void tcnn::kernel_grid_backward<__half, __half, 3u, 2u, (tcnn::HashType)1>(unsigned int, unsigned int, tcnn::GridOffsetTable, unsigned int, float, float, bool, tcnn::InterpolationType, tcnn::GridType, __half*, tcnn::MatrixView<float const>, __half const*)",
        "void tcnn::kernel_grid_backward<__half, __half, (unsigned int)3, (unsigned int)2, (tcnn::HashType)1>(unsigned int, unsigned int, tcnn::GridOffsetTable, unsigned int, float, float, bool, tcnn::InterpolationType, tcnn::GridType, T2 *, tcnn::MatrixView<const float>, const T1 *)",
    ),
    (
        "void tcnn::kernel_mlp_fused<64, 8, __half, false>(tcnn::Activation, __half const*, __half const*, __half*, __half*, unsigned int, unsigned int, unsigned int, unsigned int, unsigned int, nvcuda::wmma::layout_t, nvcuda::wmma::layout_t)",
        "void tcnn::kernel_mlp_fused<(int)64, (int)8, __half, (bool)0>(tcnn::Activation, const __half *, const __half *, T3 *, T3 *, unsigned int, unsigned int, unsigned int, unsigned int, unsigned int, nvcuda::wmma::layout_t, nvcuda::wmma::layout_t)",
    ),
    (
        "void tcnn::kernel_mlp_fused<64, 8, __half, true>(tcnn::Activation, __half const*, __half const*, __half*, __half*, unsigned int, unsigned int, unsigned int, unsigned int, unsigned int, nvcuda::wmma::layout_t, nvcuda::wmma::layout_t)",
        "void tcnn::kernel_mlp_fused<(int)64, (int)8, __half, (bool)1>(tcnn::Activation, const __half *, const __half *, T3 *, T3 *, unsigned int, unsigned int, unsigned int, unsigned int, unsigned int, nvcuda::wmma::layout_t, nvcuda::wmma::layout_t)",
    ),
    (
        "void tcnn::kernel_mlp_fused_backward<64, 8, __half>(tcnn::Activation, __half const*, __half*, __half const*, __half*, unsigned int, unsigned int, nvcuda::wmma::layout_t)",
        "void tcnn::kernel_mlp_fused_backward<(int)64, (int)8, __half>(tcnn::Activation, const __half *, __half *, const T3 *, __half *, unsigned int, unsigned int, nvcuda::wmma::layout_t)",
    ),
    (
        "void tcnn::kernel_activation<__half>(unsigned int, tcnn::Activation, __half const*, __half*)",
        "void tcnn::kernel_activation<__half>(unsigned int, tcnn::Activation, const T1 *, T1 *)",
    ),
    (
        "void tcnn::kernel_activation_backward_output<__half>(unsigned int, tcnn::Activation, __half const*, __half const*, __half*)",
        "void tcnn::kernel_activation_backward_output<__half>(unsigned int, tcnn::Activation, const T1 *, const T1 *, T1 *)",
    ),
    (
        "void tcnn::adam_step<__half>(unsigned int, unsigned int, float, float, float, float, float, float, float, float, float, float const*, float*, float*, __half*, float*, float*)",
        "void tcnn::adam_step<__half>(unsigned int, unsigned int, float, float, float, float, float, float, float, float, float, const float *, float *, float *, T1 *, float *, float *)",
    ),
    (
        "void tcnn::kernel_sh<__half>(unsigned int, unsigned int, tcnn::PitchedPtr<float const>, tcnn::PitchedPtr<__half>, float*)",
        "void tcnn::kernel_sh<__half>(unsigned int, unsigned int, tcnn::PitchedPtr<const float>, tcnn::PitchedPtr<T1>, float *)",
    ),
    # Matched only by the whole name spelled one way: lambdas, literals with placeholders.
    (
        f"void tcnn::parallel_for_kernel<{_UPDATE.format(p='*')}::{{lambda(unsigned long)#1}}>(unsigned long, {_UPDATE.format(p='*')}::{{lambda(unsigned long)#1}})",
        f"void tcnn::parallel_for_kernel<{_UPDATE.format(p=' *')}::[lambda(unsigned long) (instance 1)]>(unsigned long, T1)",
    ),
    (
        f"void tcnn::parallel_for_kernel<{_UPDATE.format(p='*')}::{{lambda(unsigned long)#2}}>(unsigned long, {_UPDATE.format(p='*')}::{{lambda(unsigned long)#2}})",
        f"void tcnn::parallel_for_kernel<{_UPDATE.format(p=' *')}::[lambda(unsigned long) (instance 2)]>(unsigned long, T1)",
    ),
    (
        f"void tcnn::parallel_for_kernel<{_TRAIN.format(p='*', r='&')}::{{lambda(unsigned long)#1}}>(unsigned long, {_TRAIN.format(p='*', r='&')}::{{lambda(unsigned long)#1}})",
        f"void tcnn::parallel_for_kernel<{_TRAIN.format(p=' *', r=' &')}::[lambda(unsigned long) (instance 1)]>(unsigned long, T1)",
    ),
    (
        "void ngp::fill_rollover<float, 4ul>(unsigned int, unsigned int, unsigned int const*, float*)",
        "void ngp::fill_rollover<float, (unsigned long)4>(unsigned int, unsigned int, const unsigned int *, T1 *)",
    ),
    (
        "void ngp::fill_rollover<float, 4ul>(unsigned int, unsigned int, float const*, float*)",
        "void ngp::fill_rollover<float, (unsigned long)4>(unsigned int, unsigned int, const T1 *, T1 *)",
    ),
    (
        f"void tcnn::parallel_for_kernel<{_XAVIER.format(a='tcnn::pcg32&')}::{{lambda(unsigned long)#1}}>(unsigned long, {_XAVIER.format(a='tcnn::pcg32&')}::{{lambda(unsigned long)#1}})",
        f"void tcnn::parallel_for_kernel<{_XAVIER.format(a='T1 &')}::[lambda(unsigned long) (instance 1)]>(unsigned long, T1)",
    ),
    (
        f"void tcnn::parallel_for_kernel<{_INFER.format(p='*', a='tcnn::GPUMatrix<float, (tcnn::MatrixLayout)1> const&', r='&')}::{{lambda(unsigned long)#1}}>(unsigned long, {_INFER.format(p='*', a='tcnn::GPUMatrix<float, (tcnn::MatrixLayout)1> const&', r='&')}::{{lambda(unsigned long)#1}})",
        f"void tcnn::parallel_for_kernel<{_INFER.format(p=' *', a='const T2 &', r=' &')}::[lambda(unsigned long) (instance 1)]>(unsigned long, T1)",
    ),
)
# The last of NGP that differ by a lambda's, a literal's or a placeholder's spelling.
SPELLED_APART = 7
