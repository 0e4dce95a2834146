// Kernel families of the vendors' libraries: NCCL, Tensile, cuBLAS(Lt), cuDNN, CUTLASS, fused
// attention, MIOpen.
#include "core/catalog_families.h"

namespace gpuscope::catalog_detail {

std::optional<KernelInfo> nccl_kernel(std::string_view raw, const ParsedName& p) {
  if (!p.base.starts_with("ncclDevKernel_") && !p.base.starts_with("ncclKernel_") &&
      !p.base.starts_with("rcclKernel_") && !p.base.starts_with("ncclDevFunc_")) {
    return std::nullopt;
  }
  (void)raw;
  KernelInfo k{KernelLibrary::kNccl, KernelCategory::kCommunication, Precision::kUnknown};
  const auto toks = underscore_tokens(p.base);
  // Collectives that move bytes without arithmetic run as int8_t/uint8_t: no data type.
  const bool reduces = std::any_of(toks.begin(), toks.end(), [](std::string_view t) {
    return t == "AllReduce" || t == "Reduce" || t == "ReduceScatter";
  });
  if (!reduces) return k;
  for (const auto tok : toks) {
    static constexpr std::array<std::pair<std::string_view, Precision>, 12> kTypes = {{{"f32", Precision::kFp32},
                                                                                       {"float", Precision::kFp32},
                                                                                       {"f16", Precision::kFp16},
                                                                                       {"half", Precision::kFp16},
                                                                                       {"bf16", Precision::kBf16},
                                                                                       {"f64", Precision::kFp64},
                                                                                       {"double", Precision::kFp64},
                                                                                       {"i8", Precision::kInt8},
                                                                                       {"int8", Precision::kInt8},
                                                                                       {"f8e4m3", Precision::kFp8},
                                                                                       {"f8e5m2", Precision::kFp8},
                                                                                       {"u8", Precision::kInt8}}};
    for (const auto& [t, prec] : kTypes)
      if (tok == t) k.precision = prec;
  }
  return k;
}

// Tensile (rocBLAS, hipBLASLt): "Cijk_Ailk_Bljk_HHS_BH_MT64x..." where the token after the index
// orders names the types: one letter when input, output and compute agree ("S"; a following
// "B" in "SB" means beta is used), else input/output/compute ("HHS", "BBS", "I8II").
std::optional<KernelInfo> tensile_kernel(const ParsedName& p) {
  if (!p.base.starts_with("Cijk_") && !p.base.starts_with("Cij_")) return std::nullopt;
  KernelInfo k{KernelLibrary::kTensile, KernelCategory::kGemm, Precision::kUnknown};
  const auto toks = underscore_tokens(p.base);
  size_t i = 1;
  while (i < toks.size() && (toks[i].starts_with("A") || toks[i].starts_with("B")) && toks[i].size() >= 3 &&
         std::all_of(toks[i].begin() + 1, toks[i].end(),
                     [](char c) { return std::islower(static_cast<unsigned char>(c)); })) {
    ++i;
  }
  if (i >= toks.size()) return k;
  const std::string_view t = toks[i];
  if (t.starts_with("F8") || t.starts_with("B8") || t.starts_with("F8B8") || t.starts_with("B8F8")) {
    k.precision = Precision::kFp8;
  } else if (t.starts_with("I8") || t.starts_with("4xi8")) {
    k.precision = Precision::kInt8;
  } else if (t.starts_with("X")) {
    k.precision = Precision::kTf32;  // xf32, CDNA3's reduced-precision fp32 matrix math.
  } else {
    switch (t.front()) {
      case 'S':
      case 'C':
        k.precision = Precision::kFp32;
        break;
      case 'D':
      case 'Z':
        k.precision = Precision::kFp64;
        break;
      case 'H':
        k.precision = Precision::kFp16;
        break;
      case 'B':
        k.precision = Precision::kBf16;
        break;
      case 'I':
        k.precision = Precision::kInt8;
        break;
      default:
        break;
    }
  }
  return k;
}

// cuBLASLt's nvjet kernels (CUDA 12.6+): "nvjet_[sm90_]<types>_<tiles>..._<layout>" where the
// types are the inputs, compute and output by letter: h fp16, t bf16, s fp32 (a "tf32" token
// when TF32), d fp64, i int8, and a leading "qq"/"ee" for fp8 inputs ("nvjet_qqtst_...").
std::optional<KernelInfo> nvjet_kernel(const ParsedName& p) {
  if (!p.base.starts_with("nvjet_")) return std::nullopt;
  KernelInfo k{KernelLibrary::kCublas, KernelCategory::kGemm, Precision::kUnknown};
  const auto toks = underscore_tokens(p.base);
  const bool tf32 = std::find(toks.begin(), toks.end(), "tf32") != toks.end();
  for (size_t i = 1; i < toks.size(); ++i) {
    const std::string_view t = toks[i];
    if (t.starts_with("sm") && t.size() > 2 && std::isdigit(static_cast<unsigned char>(t[2]))) continue;
    if (!std::all_of(t.begin(), t.end(), [](char c) { return std::islower(static_cast<unsigned char>(c)); })) break;
    if (t.starts_with("qq") || t.starts_with("ee")) {
      k.precision = Precision::kFp8;
    } else {
      switch (t.front()) {
        case 'h':
          k.precision = Precision::kFp16;
          break;
        case 't':
          k.precision = Precision::kBf16;
          break;
        case 's':
          k.precision = tf32 ? Precision::kTf32 : Precision::kFp32;
          break;
        case 'd':
          k.precision = Precision::kFp64;
          break;
        case 'i':
          k.precision = Precision::kInt8;
          break;
        default:
          break;
      }
    }
    break;
  }
  return k;
}

// NVIDIA's flat names from cuBLAS and cuDNN: "<arch>_<op>..." ("ampere_sgemm_128x64_nn",
// "volta_h884gemm_...", "sm80_xmma_gemm_f32f32_...", "sm80_xmma_fprop_implicit_gemm_tf32f32_...",
// "cudnn_infer_volta_scudnn_128x64_relu_small_nn_v1"). xmma names list the types as
// "<a><b>_<c><accumulator>": the first type is the math's.
std::optional<KernelInfo> nvidia_flat_kernel(const ParsedName& p) {
  const std::string_view b = p.base;
  const auto toks = underscore_tokens(b);
  if (toks.empty()) return std::nullopt;
  const bool cudnn = b.starts_with("cudnn") || contains(b, "_cudnn") || contains(b, "scudnn");
  const auto is_conv_op = [](std::string_view t) {
    return t == "fprop" || t == "dgrad" || t == "wgrad" || t == "conv";
  };
  // cuDNN's own convolution kernels: "[cudnn_{infer,train}_]<arch>_scudnn_[winograd_]...".
  for (const auto t : toks) {
    if (t.size() == 6 && t.substr(1) == "cudnn") {
      KernelInfo k{KernelLibrary::kCudnn, KernelCategory::kConvolution, Precision::kUnknown};
      switch (t.front()) {
        case 's':
          k.precision = Precision::kFp32;
          break;
        case 'h':
          k.precision = Precision::kFp16;
          break;
        case 'd':
          k.precision = Precision::kFp64;
          break;
        case 'i':
          k.precision = Precision::kInt8;
          break;
        default:
          break;
      }
      return k;
    }
  }
  const int sm = sm_of(b);
  const size_t xmma = std::find(toks.begin(), toks.end(), "xmma") - toks.begin();
  if (xmma < toks.size()) {
    KernelInfo k{cudnn ? KernelLibrary::kCudnn : KernelLibrary::kCublas, KernelCategory::kGemm, Precision::kUnknown};
    if (xmma + 1 < toks.size() && is_conv_op(toks[xmma + 1])) k.category = KernelCategory::kConvolution;
    // "<a><b>_<math><accumulator>_<output>": the storage types, then the math's
    // (sm80_xmma_gemm_f32f32_tf32f32_f32 is TF32 math on fp32 data).
    int typed = 0;
    for (size_t i = xmma + 1; i < toks.size() && typed < 2; ++i) {
      const std::string_view t = toks[i];
      static constexpr std::array<std::string_view, 9> kTypes = {"tf32", "bf16", "f16", "f32", "f64",
                                                                 "e4m3", "e5m2", "s8",  "i8"};
      for (const auto ty : kTypes) {
        if (t.starts_with(ty) && t.size() > ty.size() && !std::isdigit(static_cast<unsigned char>(t[ty.size()]))) {
          k.precision = ty == "f16" ? Precision::kFp16 : token_precision(ty);
          ++typed;
          break;
        }
      }
    }
    return k;
  }
  static constexpr std::array<std::string_view, 9> kArchPrefixes = {
      "maxwell_", "pascal_", "volta_", "turing_", "ampere_", "ada_", "hopper_", "sm", "cutlass"};
  // CUTLASS instance names inside cuDNN carry no SM ("cutlass_tensorop_s1688dgrad_optimized_tf32_...").
  const bool arch_named = starts_with_any(b, kArchPrefixes) && (sm > 0 || b.starts_with("cutlass"));
  if (!arch_named) return std::nullopt;
  for (const auto t : toks) {
    if (t.ends_with("gemm") || t.ends_with("gemv")) {
      return KernelInfo{b.starts_with("cutlass") ? KernelLibrary::kCutlass : KernelLibrary::kCublas,
                        KernelCategory::kGemm, blas_instance_precision(b, sm)};
    }
    if (t.ends_with("fprop") || t.ends_with("dgrad") || t.ends_with("wgrad")) {
      return KernelInfo{b.starts_with("cutlass") ? KernelLibrary::kCutlass : KernelLibrary::kCudnn,
                        KernelCategory::kConvolution, blas_instance_precision(b, sm)};
    }
  }
  return std::nullopt;
}

// CUTLASS templates: "cutlass::Kernel<cutlass_80_tensorop_s1688gemm_...>" (an instance name as
// the argument), "cutlass::device_kernel<cutlass::gemm::kernel::GemmUniversal<...>>",
// "cutlass_cudnn_train::Kernel<...ImplicitGemmConvolution<...>>" (cuDNN's private copy).
std::optional<KernelInfo> cutlass_kernel(const ParsedName& p) {
  const std::string_view q = p.qualified;
  const bool cutlass_ns =
      q.starts_with("cutlass") || p.base.starts_with("cutlass3x_") || p.base.starts_with("cutlass_");
  if (!cutlass_ns) return std::nullopt;
  const bool cudnn = contains(q, "cudnn") || any_ident_contains(p, "cutlass_cudnn");
  KernelInfo k{cudnn ? KernelLibrary::kCudnn : KernelLibrary::kCutlass, KernelCategory::kGemm, Precision::kUnknown};
  // An instance name among the arguments says it all.
  for (const auto& id : p.idents) {
    if ((id.starts_with("cutlass_") || id.starts_with("cutlass3x_")) &&
        id.find_first_of("0123456789") != std::string::npos && !contains(id, "cudnn")) {
      if (const auto flat = nvidia_flat_kernel(ParsedName{id, id, id, "", {}})) {
        KernelInfo out = *flat;
        out.library = k.library;
        return out;
      }
    }
  }
  if (has_ident(p, "conv") || any_ident_contains(p, "Convolution") || any_ident_contains(p, "Conv2d") ||
      any_ident_contains(p, "Conv3d")) {
    k.category = KernelCategory::kConvolution;
  } else if (cudnn && any_ident_contains(p, "ReduceSplitK")) {
    k.category = KernelCategory::kConvolution;  // cuDNN's split-K reduction after a wgrad.
  } else if (any_ident_contains(p, "Attention") || any_ident_contains(p, "fmha") || any_ident_contains(p, "Fmha")) {
    k.category = KernelCategory::kAttention;
  }
  k.precision = precision_of_types(p.idents);
  return k;
}

// Fused attention outside cuDNN: FlashAttention ("flash_fwd_kernel<Flash_fwd_kernel_traits<...,
// cutlass::bfloat16_t...>>", "flash::flash_bwd_dot_do_o_kernel"), PyTorch's memory-efficient
// attention ("fmha_cutlassF_bf16_aligned_64x64_rf_sm80(PyTorchMemEffAttention::AttentionKernel<...>)").
std::optional<KernelInfo> attention_kernel(const ParsedName& p) {
  const std::string lq = lower(p.qualified);
  const bool flash = lq.starts_with("flash::") || p.base.starts_with("flash_") ||
                     any_ident_contains(p, "Flash_fwd_kernel_traits") ||
                     any_ident_contains(p, "Flash_bwd_kernel_traits");
  const bool memeff = p.base.starts_with("fmha_") || contains(lq, "efficient_attention") ||
                      any_ident_contains(p, "PyTorchMemEffAttention") || contains(lq, "attention_kernel");
  if (!flash && !memeff) return std::nullopt;
  KernelInfo k{flash ? KernelLibrary::kFlashAttention : KernelLibrary::kAten, KernelCategory::kAttention,
               precision_of_types(p.idents)};
  if (k.precision == Precision::kUnknown) {
    for (const auto t : underscore_tokens(p.base)) {
      if (t == "f16")
        k.precision = Precision::kFp16;
      else if (const Precision tp = token_precision(t); tp != Precision::kUnknown)
        k.precision = tp;
      if (k.precision != Precision::kUnknown) break;
    }
  }
  return k;
}

// cuDNN outside the flat names above: runtime-compiled SDPA ("cudnn_generated_fort_native_sdpa_
// sm90_flash_fprop_wgmma_f16_knob_7_..."), the cudnn:: and cask_cudnn:: namespaces, and free
// functions of its convolution algorithms (FFT, Winograd, implicit GEMM, wgrad/dgrad engines).
std::optional<KernelInfo> cudnn_kernel(const ParsedName& p) {
  const std::string_view q = p.qualified;
  const std::string lb = lower(p.base);
  static constexpr std::array<std::string_view, 12> kConvFunctions = {
      "implicit_convolve", "explicit_convolve", "precomputed_convolve",  "fft2d_", "fft3d_",     "fft1d_", "wgrad_alg",
      "dgrad_alg",         "dgrad2d_alg",       "conv2d_grouped_direct", "im2col", "flip_filter"};
  const bool ns = q.starts_with("cudnn::") || q.starts_with("cask_cudnn");
  const bool flat_attention =
      lb.starts_with("cudnn") && (contains(lb, "sdpa") || contains(lb, "fmha") || contains(lb, "flash"));
  const bool conv_function = starts_with_any(lb, kConvFunctions) || lb == "wgrad_alg0_engine" || lb == "dgrad_engine";
  if (!ns && !conv_function && !flat_attention) return std::nullopt;
  KernelInfo k{KernelLibrary::kCudnn, KernelCategory::kConvolution, precision_of_types(p.idents)};
  if (contains(lb, "sdpa") || contains(lb, "fmha") || contains(lb, "flash") || lb.starts_with("compute_dot_do_o") ||
      lb.starts_with("convert_dq_to")) {
    k.category = KernelCategory::kAttention;
    // cuDNN's "f16" covers both 16-bit types; only an explicit bf16 or fp8 is evidence.
    k.precision = Precision::kUnknown;
    for (const auto t : underscore_tokens(lb)) {
      if (t == "bf16" || t == "e4m3" || t == "e5m2" || t == "fp8") k.precision = token_precision(t);
    }
    return k;
  }
  if (lb.starts_with("bn_") || contains(lb, "batchnorm") || contains(lb, "batch_norm") || contains(lb, "softmax") ||
      contains(lb, "pooling") || contains(lb, "lrn")) {
    k.category = KernelCategory::kReduction;
  } else if (contains(q, "::ops::") || contains(lb, "nchwtonhwc") || contains(lb, "nhwctonchw") ||
             contains(lb, "scale") || contains(lb, "activation") || contains(lb, "transpose")) {
    k.category = KernelCategory::kElementwise;
  } else if (contains(q, "::fusion::")) {
    k.category = KernelCategory::kOther;
  }
  return k;
}

// cuBLAS helpers and legacy kernels with C++ names: gemv2N_kernel, gemvx::kernel,
// gemmk1_kernel, splitKreduce_kernel, cublasLt::*, the cuBLASLt epilogue, sgemm_largek_lds64,
// scal_kernel. A helper launched by a GEMM call counts as GEMM time: the user asked for a GEMM.
std::optional<KernelInfo> cublas_kernel(const ParsedName& p) {
  const std::string_view q = p.qualified;
  const std::string lb = lower(p.base);
  static constexpr std::array<std::string_view, 8> kFunctions = {
      "gemv", "gemmk1", "gemmsn", "splitkreduce", "sgemm_largek", "dgemm_largek", "scal_kernel", "gemm_kernel"};
  const bool cublas_types = any_ident_contains(p, "cublas");
  const bool named = q.starts_with("cublas") || contains(q, "gemvx::") || starts_with_any(lb, kFunctions) ||
                     (q.starts_with("epilogue::") && cublas_types);
  if (!named && !(cublas_types && (contains(lb, "gemm") || contains(lb, "gemv")))) return std::nullopt;
  KernelInfo k{KernelLibrary::kCublas, KernelCategory::kGemm, precision_of_types(p.idents)};
  if (contains(lb, "dot") || contains(lb, "nrm2") || contains(lb, "asum") || contains(lb, "amax")) {
    k.category = KernelCategory::kReduction;
  }
  return k;
}

// MIOpen: "MIOpenBatchNormFwdTrainSpatial", "miopenSp3AsmConv_v21_1_3_gfx9_fp32", "naive_conv_fwd_nchw_
// float_double_float", "igemm_fwd_gtcx_nhwc_fp16_...", "gridwise_convolution_implicit_gemm_...".
std::optional<KernelInfo> miopen_kernel(const ParsedName& p) {
  const std::string lb = lower(p.base);
  static constexpr std::array<std::string_view, 6> kPrefixes = {
      "miopen", "naive_conv", "igemm_", "gridwise_convolution", "gridwise_generic_reduction", "transpose_nchw"};
  if (!starts_with_any(lb, kPrefixes)) return std::nullopt;
  KernelInfo k{KernelLibrary::kMiopen, KernelCategory::kOther, precision_of_types(p.idents)};
  if (contains(lb, "conv") || lb.starts_with("igemm") || contains(lb, "winograd"))
    k.category = KernelCategory::kConvolution;
  else if (contains(lb, "batchnorm") || contains(lb, "pooling") || contains(lb, "softmax") ||
           contains(lb, "reduction") || contains(lb, "layernorm") || contains(lb, "lrn"))
    k.category = KernelCategory::kReduction;
  else if (contains(lb, "tensor") || contains(lb, "transpose") || contains(lb, "activ") || contains(lb, "op")) {
    k.category = KernelCategory::kElementwise;
  }
  if (k.precision == Precision::kUnknown) {
    for (const auto t : underscore_tokens(lb)) {
      if (const Precision tp = token_precision(t); tp != Precision::kUnknown) {
        k.precision = tp;
        break;
      }
    }
  }
  return k;
}

}  // namespace gpuscope::catalog_detail
