#include "core/catalog.h"

#include <gtest/gtest.h>

namespace gpuscope {
namespace {

TEST(Catalog, PlainSoftmaxIsManualAttentionNotTheLoss) {
  EXPECT_TRUE(is_plain_softmax("void (anonymous namespace)::softmax_warp_forward<float, float, float, 10, false, false>"));
  EXPECT_TRUE(is_plain_softmax("void (anonymous namespace)::softmax_warp_backward<float, float, float, 10, false, false>"));
  EXPECT_TRUE(is_plain_softmax("void gpuscope::gpt::SoftmaxKernel<__nv_bfloat16, true>(__nv_bfloat16*, int, int)"));
  EXPECT_FALSE(is_plain_softmax(
      "void at::native::(anonymous namespace)::cunn_SoftMaxForward<8, c10::BFloat16, float, c10::BFloat16, "
      "at::native::(anonymous namespace)::LogSoftMaxForwardEpilogue>"));
  EXPECT_FALSE(is_plain_softmax("triton_red_fused__log_softmax_prepare_softmax_online_18"));
  EXPECT_FALSE(is_plain_softmax("flash_fwd_kernel_softmax"));  // fused attention
  EXPECT_FALSE(is_plain_softmax("vectorized_elementwise_kernel"));
}

TEST(Catalog, KernelCategories) {
  EXPECT_EQ(classify_kernel("nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_NNT"), KernelCategory::kGemm);
  EXPECT_EQ(classify_kernel("void cutlass::Kernel2<cutlass_80_simt_sgemm_256x128_8x4_nn_align1>"), KernelCategory::kGemm);
  EXPECT_EQ(classify_kernel("cudnn_generated_fort_native_sdpa_sm90_flash_bprop_wgmma_f16_knob_26"),
            KernelCategory::kAttention);
  EXPECT_EQ(classify_kernel("ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevComm*, unsigned long, ncclWork*)"),
            KernelCategory::kCommunication);
  EXPECT_EQ(classify_kernel("void at::native::(anonymous namespace)::multi_tensor_apply_kernel<FusedAdamMathFunctor>"),
            KernelCategory::kOptimizer);
  // Demangled lambdas must not read as the LAMB optimizer.
  EXPECT_EQ(classify_kernel("void at::native::unrolled_elementwise_kernel<at::native::direct_copy_kernel_cuda("
                            "at::TensorIteratorBase&)::{lambda()#3}>"),
            KernelCategory::kElementwise);
  EXPECT_EQ(classify_kernel("void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<float>"),
            KernelCategory::kReduction);
  EXPECT_EQ(classify_kernel("triton_per_fused__to_copy_add_native_layer_norm_backward_view_9"), KernelCategory::kReduction);
  EXPECT_EQ(classify_kernel("triton_poi_fused_gelu_gelu_backward_view_6"), KernelCategory::kElementwise);
  EXPECT_EQ(classify_kernel("Memcpy HtoD (Pageable -> Device)"), KernelCategory::kCopySet);
  EXPECT_EQ(classify_kernel("my_custom_kernel"), KernelCategory::kOther);
  // Custom kernels by the words of their own name.
  EXPECT_EQ(classify_kernel("Scale(float const*, float*, unsigned long, float)"), KernelCategory::kElementwise);
  EXPECT_EQ(classify_kernel("AddC(float const*, float*, unsigned long, float)"), KernelCategory::kElementwise);
  EXPECT_EQ(classify_kernel("void ns::bias_add_kernel<4>(float*)"), KernelCategory::kElementwise);
  EXPECT_EQ(classify_kernel("SumKernel(float const*, unsigned long, float*)"), KernelCategory::kReduction);
  EXPECT_EQ(classify_kernel("FusedChain(float const*, float*, unsigned long, int)"), KernelCategory::kOther);
  EXPECT_EQ(classify_kernel("Additive(float*)"), KernelCategory::kOther);  // Words, not substrings.
  EXPECT_EQ(classify_kernel("gpuscope::workloads::(anonymous namespace)::Square(float const*, float*)"),
            KernelCategory::kElementwise);
}

TEST(Catalog, PrecisionFromNamesAndDtypes) {
  EXPECT_EQ(precision_from_kernel_name("sm80_xmma_gemm_f32f32_tf32f32_f32_tn_n"), Precision::kTf32);
  EXPECT_EQ(precision_from_kernel_name("sm80_xmma_gemm_f32f32_f32f32_f32_tn_n_tilesize128x128x8_ffma"), Precision::kFp32);
  EXPECT_EQ(precision_from_kernel_name("cutlass_80_tensorop_bf16_s16816gemm_relu_bf16_64x64"), Precision::kBf16);
  EXPECT_EQ(precision_from_kernel_name("sm90_xmma_gemm_e4m3e4m3_e4m3f32_f32"), Precision::kFp8);
  EXPECT_EQ(precision_from_kernel_name("cudnn_generated_fort_native_sdpa_sm90_flash_bprop_wgmma_f16"), Precision::kUnknown);
  EXPECT_EQ(precision_from_dtype("c10::BFloat16"), Precision::kBf16);
  EXPECT_EQ(precision_from_dtype("c10::Half"), Precision::kFp16);
  EXPECT_EQ(precision_from_dtype("float"), Precision::kFp32);
  EXPECT_EQ(precision_from_dtype("long int"), Precision::kUnknown);
}

TEST(Catalog, DensePeaksByName) {
  EXPECT_EQ(peak_tflops("NVIDIA H200", Precision::kBf16), 989.4);
  EXPECT_EQ(peak_tflops("NVIDIA H100 80GB HBM3", Precision::kFp8), 1978.9);
  EXPECT_EQ(peak_tflops("NVIDIA H100 80GB HBM3", Precision::kTf32), 494.7);
  EXPECT_EQ(peak_tflops("NVIDIA H100 PCIe", Precision::kBf16), 756);
  EXPECT_EQ(peak_tflops("NVIDIA A100-SXM4-80GB", Precision::kBf16), 312);
  EXPECT_EQ(peak_tflops("NVIDIA A100-PG509-200", Precision::kTf32), 156);
  EXPECT_FALSE(peak_tflops("NVIDIA A100-SXM4-80GB", Precision::kFp8).has_value());  // No fp8 on Ampere.
  EXPECT_EQ(peak_tflops("NVIDIA L4", Precision::kBf16), 121);
  EXPECT_EQ(peak_tflops("NVIDIA L40S", Precision::kBf16), 362);
  EXPECT_FALSE(peak_tflops("NVIDIA L40", Precision::kBf16).has_value());  // Not L4, not L40S.
  EXPECT_FALSE(peak_tflops("AMD Radeon Graphics", Precision::kBf16).has_value());
}

}  // namespace
}  // namespace gpuscope
