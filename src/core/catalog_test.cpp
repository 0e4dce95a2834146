#include "core/catalog.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "input/trace_input.h"

namespace gpuscope {
namespace {

namespace fs = std::filesystem;

std::string source_dir() {
  if (const char* env = std::getenv("GPUSCOPE_SOURCE_DIR")) return env;
  return GPUSCOPE_SOURCE_DIR;
}

struct CatalogRow {
  std::string category;
  std::string precision;
  std::string library;
  int line = 0;
};

// testdata/catalog/kernels.tsv: name, category, precision, library; '#' starts a comment line.
std::map<std::string, CatalogRow> read_catalog() {
  std::map<std::string, CatalogRow> rows;
  std::ifstream in(fs::path(source_dir()) / "testdata" / "catalog" / "kernels.tsv");
  EXPECT_TRUE(in) << "missing testdata/catalog/kernels.tsv";
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    if (line.empty() || line[0] == '#') continue;
    std::vector<std::string> cols;
    for (size_t start = 0;;) {
      const size_t tab = line.find('\t', start);
      cols.push_back(line.substr(start, tab - start));
      if (tab == std::string::npos) break;
      start = tab + 1;
    }
    EXPECT_EQ(cols.size(), 4u) << "kernels.tsv:" << n << ": want name, category, precision, library";
    if (cols.size() != 4) continue;
    EXPECT_TRUE(rows.emplace(cols[0], CatalogRow{cols[1], cols[2], cols[3], n}).second)
        << "kernels.tsv:" << n << ": duplicate row";
  }
  return rows;
}

TEST(Catalog, TableRowsMatchTheClassifier) {
  const auto rows = read_catalog();
  ASSERT_GT(rows.size(), 300u);
  for (const auto& [name, row] : rows) {
    const KernelInfo k = describe_kernel(name);
    EXPECT_EQ(category_name(k.category), row.category) << "kernels.tsv:" << row.line << ": " << name;
    EXPECT_EQ(precision_name(k.precision), row.precision) << "kernels.tsv:" << row.line << ": " << name;
    EXPECT_EQ(library_name(k.library), row.library) << "kernels.tsv:" << row.line << ": " << name;
  }
}

// Every kernel name in the recorded traces has a reviewed row, so a new trace forces one. Traces
// the reader rejects contribute no kernels to any report and are skipped.
TEST(Catalog, TableCoversEveryKernelInTestdata) {
  const auto rows = read_catalog();
  std::set<std::string> missing;
  int traces = 0;
  for (const char* dir : {"pytorch", "hta"}) {
    std::vector<fs::path> files;
    for (const auto& e : fs::directory_iterator(fs::path(source_dir()) / "testdata" / dir)) {
      if (e.path().string().ends_with(".json.gz")) files.push_back(e.path());
    }
    std::sort(files.begin(), files.end());
    for (const auto& f : files) {
      auto t = read_trace_file(f.string());
      if (!t.ok()) continue;
      ++traces;
      for (const Kernel& k : t->kernels) {
        const std::string name(t->strings.view(k.name));
        if (!rows.contains(name)) missing.insert(name);
      }
    }
  }
  EXPECT_GE(traces, 10);
  std::string list;
  for (const auto& n : missing) list += "\n  " + n;
  EXPECT_TRUE(missing.empty()) << missing.size()
                               << " kernel names in testdata lack a row in testdata/catalog/kernels.tsv "
                               << "(scripts/catalog_kernel_names.py --missing prints them):" << list;
}

TEST(Catalog, PlainSoftmaxIsManualAttentionNotTheLoss) {
  EXPECT_TRUE(
      is_plain_softmax("void (anonymous namespace)::softmax_warp_forward<float, float, float, 10, false, false>"));
  EXPECT_TRUE(
      is_plain_softmax("void (anonymous namespace)::softmax_warp_backward<float, float, float, 10, false, false>"));
  EXPECT_TRUE(is_plain_softmax("void gpuscope::gpt::SoftmaxKernel<__nv_bfloat16, true>(__nv_bfloat16*, int, int)"));
  EXPECT_FALSE(is_plain_softmax(
      "void at::native::(anonymous namespace)::cunn_SoftMaxForward<8, c10::BFloat16, float, c10::BFloat16, "
      "at::native::(anonymous namespace)::LogSoftMaxForwardEpilogue>"));
  EXPECT_FALSE(is_plain_softmax("triton_red_fused__log_softmax_prepare_softmax_online_18"));
  EXPECT_FALSE(is_plain_softmax("flash_fwd_kernel_softmax"));  // fused attention
  EXPECT_FALSE(is_plain_softmax("vectorized_elementwise_kernel"));
}

TEST(Catalog, CudnnLayoutConversions) {
  EXPECT_TRUE(is_layout_conversion(
      "void cudnn::engines_precompiled::nchwToNhwcKernel<__nv_bfloat16, __nv_bfloat16, float, false, true, "
      "(cudnnKernelDataType_t)0>"));
  EXPECT_TRUE(is_layout_conversion("void cudnn::engines_precompiled::nhwcToNchwKernel<float, float, float, true>"));
  EXPECT_FALSE(is_layout_conversion("sm90_xmma_fprop_implicit_gemm_bf16bf16_bf16f32_f32_nhwckrsc_nchw"));
  EXPECT_FALSE(is_layout_conversion("vectorized_elementwise_kernel<direct_copy_kernel_cuda>"));
}

TEST(Catalog, KernelCategories) {
  EXPECT_EQ(classify_kernel("nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_NNT"), KernelCategory::kGemm);
  EXPECT_EQ(classify_kernel("void cutlass::Kernel2<cutlass_80_simt_sgemm_256x128_8x4_nn_align1>"),
            KernelCategory::kGemm);
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
  EXPECT_EQ(classify_kernel("triton_per_fused__to_copy_add_native_layer_norm_backward_view_9"),
            KernelCategory::kReduction);
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
  EXPECT_EQ(precision_from_kernel_name("sm80_xmma_gemm_f32f32_f32f32_f32_tn_n_tilesize128x128x8_ffma"),
            Precision::kFp32);
  EXPECT_EQ(precision_from_kernel_name("cutlass_80_tensorop_bf16_s16816gemm_relu_bf16_64x64"), Precision::kBf16);
  // cuBLAS's CUTLASS 16x8x8 kernels on sm80 without a 16-bit type are TF32.
  EXPECT_EQ(precision_from_kernel_name("void cutlass::Kernel<cutlass_80_tensorop_s1688gemm_64x64_32x6_tn_align4>(int)"),
            Precision::kTf32);
  EXPECT_EQ(precision_from_kernel_name("sm90_xmma_gemm_e4m3e4m3_e4m3f32_f32"), Precision::kFp8);
  EXPECT_EQ(precision_from_kernel_name("cudnn_generated_fort_native_sdpa_sm90_flash_bprop_wgmma_f16"),
            Precision::kUnknown);
  EXPECT_EQ(precision_from_dtype("c10::BFloat16"), Precision::kBf16);
  EXPECT_EQ(precision_from_dtype("c10::Half"), Precision::kFp16);
  EXPECT_EQ(precision_from_dtype("float"), Precision::kFp32);
  EXPECT_EQ(precision_from_dtype("long int"), Precision::kUnknown);
}

// Families and conventions the recorded traces do not cover.
TEST(Catalog, LibraryConventions) {
  const auto is = [](std::string_view name, KernelCategory c, Precision p, KernelLibrary l) {
    const KernelInfo k = describe_kernel(name);
    EXPECT_EQ(category_name(k.category), category_name(c)) << name;
    EXPECT_EQ(precision_name(k.precision), precision_name(p)) << name;
    EXPECT_EQ(library_name(k.library), library_name(l)) << name;
  };
  using C = KernelCategory;
  using P = Precision;
  using L = KernelLibrary;
  // A cuDNN convolution with a fused ReLU is a convolution, not elementwise.
  is("cudnn_ampere_scudnn_128x64_relu_xregs_large_nn_v1", C::kConvolution, P::kFp32, L::kCudnn);
  is("cudnn_infer_volta_hcudnn_128x128_relu_small_nn_v1", C::kConvolution, P::kFp16, L::kCudnn);
  // Tensile: one letter when all types agree ("SB" = single, beta), else input/output/compute.
  is("Cijk_Ailk_Bljk_SB_Bias_AS_SAV_UserArgs_MT64x16x16_MI16x16x1_SN", C::kGemm, P::kFp32, L::kTensile);
  is("Cijk_Ailk_Bljk_HHS_BH_MT128x128x32_MI32x32x8x1_SN_1LDSB0", C::kGemm, P::kFp16, L::kTensile);
  is("Cijk_Alik_Bljk_BBS_BH_Bias_HA_S_SAV_UserArgs_MT256x256x64", C::kGemm, P::kBf16, L::kTensile);
  is("Cijk_Ailk_Bjlk_DB_MT64x64x8_SE_K1", C::kGemm, P::kFp64, L::kTensile);
  // nvjet: input/compute/output letters.
  is("nvjet_hsh_256x128_64x4_2x1_v_bz_TNN", C::kGemm, P::kFp16, L::kCublas);
  is("nvjet_tst_128x128_64x4_1x2_h_bz_coopA", C::kGemm, P::kBf16, L::kCublas);
  is("nvjet_qqtst_128x256_128x6_2x1_2cta_v_bz_TNT", C::kGemm, P::kFp8, L::kCublas);
  is("nvjet_sss_tf32_128x256_TNT", C::kGemm, P::kTf32, L::kCublas);
  is("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64", C::kGemm, P::kBf16, L::kCublas);
  is("volta_h884gemm_64x64_ldg8_nn", C::kGemm, P::kFp16, L::kCublas);
  is("ampere_fp16_s16816gemm_fp16_128x128_ldg8_f2f_stages_32x5_nn", C::kGemm, P::kFp16, L::kCublas);
  is("ampere_bf16_s16816gemm_bf16_128x64_ldg8_f2f_stages_64x3_tn", C::kGemm, P::kBf16, L::kCublas);
  // The literal 8 of "ILi8E" in a (truncated) mangled CUTLASS convolution is not int8.
  is("_ZN7cutlass6KernelINS_4conv6kernel23ImplicitGemmConvolutionINS1_11threadblock22ImplicitGemmMultistageINS_4gemm9"
     "GemmShapeILi128ELi128ELi32EEENS4_52Conv2dFpropActivationTileAccessIteratorOptimizedINS_11MatrixShapeILi8ELi32EE"
     "ENS_6half_tE",
     C::kConvolution, P::kFp16, L::kCutlass);
  is("void cutlass::device_kernel<cutlass::gemm::kernel::GemmUniversal<cute::tuple<int, int, int, int>, "
     "cutlass::gemm::collective::CollectiveMma<cutlass::bfloat16_t, float> > >(int)",
     C::kGemm, P::kBf16, L::kCutlass);
  // Fused attention.
  is("void flash_fwd_kernel<Flash_fwd_kernel_traits<128, 128, 64, 4, false, false, cutlass::bfloat16_t>, "
     "false>(Flash_fwd_params)",
     C::kAttention, P::kBf16, L::kFlashAttention);
  is("fmha_cutlassF_f32_aligned_64x64_rf_sm80(PyTorchMemEffAttention::AttentionKernel<float, cutlass::arch::Sm80, "
     "true, 64, 64, "
     "64, true, true>::Params)",
     C::kAttention, P::kFp32, L::kAten);
  is("fmha_cutlassB_bf16_aligned_128x64_k128_sm80", C::kAttention, P::kBf16, L::kAten);
  // Triton templates are GEMMs (or what their fused name says); pointwise/reduction by prefix.
  is("triton_tem_fused_addmm_gelu_0", C::kGemm, P::kUnknown, L::kTriton);
  is("triton_tem_fused_convolution_1", C::kConvolution, P::kUnknown, L::kTriton);
  is("triton_tem_fused_flex_attention_0", C::kAttention, P::kUnknown, L::kTriton);
  // NCCL: the data type of reducing collectives only.
  is("ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevComm*, unsigned long, ncclWork*)", C::kCommunication, P::kBf16,
     L::kNccl);
  is("ncclDevKernel_AllGather_RING_LL(ncclDevComm*, unsigned long, ncclWork*)", C::kCommunication, P::kUnknown,
     L::kNccl);
  // MIOpen.
  is("MIOpenBatchNormFwdTrainSpatial", C::kReduction, P::kUnknown, L::kMiopen);
  is("igemm_fwd_gtcx_nhwc_fp16_bx0_ex1_bt128x128x32", C::kConvolution, P::kFp16, L::kMiopen);
  is("naive_conv_fwd_nchw_float_double_float", C::kConvolution, P::kFp32, L::kMiopen);
  // ATen: the function, not its functor, decides (index_add's ReduceAdd is not a reduction).
  is("void at::native::indexFuncLargeIndex<float, int, unsigned int, 1, 1, -2, true, at::native::ReduceAdd>(int)",
     C::kElementwise, P::kFp32, L::kAten);
  is("void at::native::(anonymous namespace)::multi_tensor_apply_kernel<at::native::(anonymous "
     "namespace)::TensorListMetadata"
     "<1>, at::native::(anonymous namespace)::LpNormFunctor<float, 2, float, float>, float*, int>(int)",
     C::kReduction, P::kFp32, L::kAten);
  // Blackwell block-scaled GEMMs: the bf16 in the name is the output; fp8 inputs (MXFP8, or
  // MXFP8 x MXFP4 at the f8f6f4 rate) are fp8 math; fp4-only has no catalogue type, never bf16.
  is("cutlass3x_sm100_bstensorop_s256x128x128gemm_block_scaled_ue8m0xe4m3_ue8m0xe2m1_f32_bf16_bf16_256x128x128_2x1x1_0_"
     "tnt_align32",
     C::kGemm, P::kFp8, L::kCutlass);
  is("cutlass3x_sm100_bstensorop_s256x128x256gemm_block_scaled_ue8m0xe2m1_ue8m0xe2m1_f32_bf16_bf16_256x128x256_2x1x1_0_"
     "tnt_align32",
     C::kGemm, P::kUnknown, L::kCutlass);
  // Symmetric-memory all-reduce (NVLink multicast): communication, not a reduction.
  is("void c10d::symmetric_memory::multimem_all_reduce_kernel<c10::BFloat16, 16, 4>(c10::BFloat16*, unsigned long)",
     C::kCommunication, P::kUnknown, L::kAten);
  is("multimem_all_reduce_kernel", C::kCommunication, P::kUnknown, L::kAten);
}

TEST(Catalog, DemanglesWhereItCan) {
  EXPECT_EQ(demangle_kernel_name("_Z5ScalePKfPfmf"), "Scale(float const*, float*, unsigned long, float)");
  EXPECT_EQ(demangle_kernel_name("_ZN7cutlass6KernelINS_4conv"), "_ZN7cutlass6KernelINS_4conv");  // Truncated.
  EXPECT_EQ(demangle_kernel_name("nvjet_tst_64x8"), "nvjet_tst_64x8");
  EXPECT_EQ(classify_kernel("_Z5ScalePKfPfmf"), KernelCategory::kElementwise);
}

TEST(Catalog, SupportedTypesByDevice) {
  // V100: fp16 tensor cores, no bf16, no TF32.
  EXPECT_EQ(device_supports("Tesla V100-SXM2-16GB", Precision::kFp16), true);
  EXPECT_EQ(device_supports("Tesla V100-SXM2-16GB", Precision::kBf16), false);
  EXPECT_EQ(device_supports("Tesla V100-SXM2-16GB", Precision::kTf32), false);
  EXPECT_FALSE(peak_tflops("Tesla V100-SXM2-32GB", Precision::kBf16).has_value());
  EXPECT_EQ(peak_tflops("Tesla V100-SXM2-32GB", Precision::kFp16), 125);
  EXPECT_EQ(peak_tflops("Tesla V100-PCIE-32GB", Precision::kFp16), 112);
  EXPECT_EQ(preferred_half_precision("Tesla V100-SXM2-16GB"), Precision::kFp16);
  EXPECT_EQ(preferred_half_precision("NVIDIA A100-SXM4-80GB"), Precision::kBf16);
  // Ampere: bf16 and TF32, no FP8; Hopper adds FP8.
  EXPECT_EQ(device_supports("NVIDIA A100-PG509-200", Precision::kTf32), true);
  EXPECT_EQ(device_supports("NVIDIA A100-PG509-200", Precision::kFp8), false);
  EXPECT_EQ(device_supports("NVIDIA H100 80GB HBM3", Precision::kFp8), true);
  EXPECT_EQ(device_supports("NVIDIA H200", Precision::kBf16), true);
  // AMD: CDNA2 has bf16 but no TF32/FP8; CDNA3 has both.
  EXPECT_EQ(device_supports("AMD Instinct MI250X / MI250", Precision::kBf16), true);
  EXPECT_EQ(device_supports("AMD Instinct MI250X / MI250", Precision::kTf32), false);
  EXPECT_EQ(peak_tflops("AMD Instinct MI250X / MI250", Precision::kBf16), 383);
  EXPECT_EQ(device_supports("AMD Instinct MI300X", Precision::kFp8), true);
  EXPECT_EQ(peak_tflops("AMD Instinct MI300X", Precision::kBf16), 1307.4);
  EXPECT_TRUE(is_amd_device("AMD Instinct MI250X / MI250"));
  EXPECT_FALSE(is_amd_device("NVIDIA H200"));
  // Unknown device or precision: no claim either way.
  EXPECT_FALSE(device_supports("Some Future GPU", Precision::kBf16).has_value());
  EXPECT_FALSE(device_supports("NVIDIA H200", Precision::kUnknown).has_value());
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
