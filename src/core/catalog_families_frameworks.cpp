// Kernels that frameworks and users write: Triton, PyTorch (ATen, CUB, FBGEMM), custom kernels.
#include "core/catalog_families.h"

namespace gpuscope::catalog_detail {

// Triton. Inductor names its kernels by kind: triton_poi_ (pointwise), triton_red_ (reduction),
// triton_per_ (persistent reduction), triton_tem_ (a template: GEMM, convolution or flex
// attention). Older Inductor names ("triton__0d1d2d") and user kernels do not say.
std::optional<KernelInfo> triton_kernel(const ParsedName& p) {
  if (!p.base.starts_with("triton_")) return std::nullopt;
  KernelInfo k{KernelLibrary::kTriton, KernelCategory::kOther, Precision::kUnknown};
  const std::string_view b = p.base;
  if (b.starts_with("triton_poi_")) {
    k.category = KernelCategory::kElementwise;
  } else if (b.starts_with("triton_red_") || b.starts_with("triton_per_")) {
    k.category = KernelCategory::kReduction;
  } else if (b.starts_with("triton_tem_")) {
    k.category = contains(b, "convolution")                                    ? KernelCategory::kConvolution
                 : (contains(b, "flex_attention") || contains(b, "attention")) ? KernelCategory::kAttention
                                                                               : KernelCategory::kGemm;
  }
  return k;
}

namespace {

// Category of a PyTorch (ATen) kernel, FBGEMM's and CUB's, by the function's own name: the
// template arguments (functors like ReduceAdd inside an index_add kernel) do not change what
// the kernel is.
KernelCategory aten_category(const ParsedName& p) {
  const std::string lb = lower(p.base);
  if (lb == "multi_tensor_apply_kernel") {
    static constexpr std::array<std::string_view, 8> kOptimizers = {
        "adam", "sgd", "adagrad", "lamb", "lion", "fusedoptimizer", "momentum", "rmsprop"};
    const std::string args = lower(p.args);
    if (contains_any(args, kOptimizers)) return KernelCategory::kOptimizer;
    if (contains(args, "normfunctor")) return KernelCategory::kReduction;  // _foreach_norm
    return KernelCategory::kElementwise;                                   // _foreach_* arithmetic
  }
  // FBGEMM's table-batched embeddings fuse the optimizer into the backward.
  if (lb.starts_with("split_embedding_backward_codegen_") && !contains(lb, "find_long_segments")) {
    static constexpr std::array<std::string_view, 5> kOptimizers = {"adagrad", "adam", "sgd", "lamb", "lars"};
    if (contains_any(lb, kOptimizers)) return KernelCategory::kOptimizer;
    return KernelCategory::kReduction;
  }
  static constexpr std::array<std::string_view, 12> kOther = {"sort",    "scan",      "search",  "unique",
                                                              "segment", "histogram", "spin",    "bounds_check",
                                                              "nonzero", "select_if", "compact", "topk"};
  if (contains_any(lb, kOther)) return KernelCategory::kOther;
  if (p.qualified.starts_with("cub::") || p.qualified.starts_with("at_cuda_detail::cub::")) {
    return contains(lb, "reduce") ? KernelCategory::kReduction : KernelCategory::kOther;
  }
  static constexpr std::array<std::string_view, 20> kReduction = {
      "reduce",        "softmax",   "layer_norm", "layernorm",
      "batch_norm",    "batchnorm", "group_norm", "groupnorm",
      "rms_norm",      "gammabeta", "moments",    "nll_loss",
      "cross_entropy", "_pool",     "welford",    "embedding_backward",
      "grad_weight",   "sum",       "lpnorm",     "grad_indice_weights"};
  if (contains_any(lb, kReduction) && !contains(lb, "normal")) return KernelCategory::kReduction;
  if (contains(lb, "qparam")) return KernelCategory::kReduction;  // Row-wise max for quantisation.
  return KernelCategory::kElementwise;
}

}  // namespace

std::optional<KernelInfo> aten_kernel(const ParsedName& p) {
  const std::string_view q = p.qualified;
  KernelLibrary lib = KernelLibrary::kUnknown;
  if (q.starts_with("at::") || q.starts_with("c10::"))
    lib = KernelLibrary::kAten;
  else if (q.starts_with("at_cuda_detail::cub::") || q.starts_with("cub::") || q.starts_with("hipcub::"))
    lib = KernelLibrary::kCub;
  else if (q.starts_with("fbgemm_gpu::"))
    lib = KernelLibrary::kFbgemm;
  else {
    // ATen kernels outside at:: (anonymous-namespace softmax) and FBGEMM's free functions.
    static constexpr std::array<std::string_view, 4> kAtenFree = {
        "softmax_warp_forward", "softmax_warp_backward", "elementwise_kernel_with_index", "compute_cuda_kernel"};
    static constexpr std::array<std::string_view, 6> kFbgemmFree = {"split_embedding", "bounds_check_indices",
                                                                    "linearize_index", "permute_pooled_embs",
                                                                    "recat_copy",      "dense_embedding"};
    if (starts_with_any(p.base, kAtenFree))
      lib = KernelLibrary::kAten;
    else if (starts_with_any(p.base, kFbgemmFree))
      lib = KernelLibrary::kFbgemm;
    else if (p.base == "multi_tensor_apply_kernel")
      lib = KernelLibrary::kUnknown;  // Apex, DeepSpeed.
    else
      return std::nullopt;
  }
  return KernelInfo{lib, aten_category(p), precision_of_types(p.idents)};
}

// Custom kernels: the words of the function's own name (camelCase and snake_case split), where
// substrings of long names would mislead ("Additive" is not "add").
KernelInfo custom_kernel(const ParsedName& p) {
  KernelInfo k{KernelLibrary::kUnknown, KernelCategory::kOther, precision_of_types(p.idents)};
  const std::vector<std::string> words = words_of(p.base);
  const auto has = [&](std::initializer_list<std::string_view> set) {
    return std::any_of(words.begin(), words.end(),
                       [&](const std::string& w) { return std::find(set.begin(), set.end(), w) != set.end(); });
  };
  if (has({"allreduce", "allgather", "reducescatter", "alltoall", "broadcast", "sendrecv"})) {
    k.category = KernelCategory::kCommunication;
  } else if (has({"attention", "attn", "flash", "fmha", "sdpa", "mha"})) {
    k.category = KernelCategory::kAttention;
  } else if (has({"gemm", "matmul", "mm", "bmm", "gemv", "sgemm", "hgemm", "dgemm", "wgmma", "mma"})) {
    k.category = KernelCategory::kGemm;
  } else if (has({"conv", "convolution", "conv2d", "conv3d"})) {
    k.category = KernelCategory::kConvolution;
  } else if (has({"adam", "adamw", "sgd", "adagrad", "optimizer"})) {
    k.category = KernelCategory::kOptimizer;
  } else if (has({"sum", "mean", "argmax", "argmin", "norm", "layernorm", "rmsnorm", "softmax", "reduce",
                  "reduction"})) {
    k.category = KernelCategory::kReduction;
  } else if (has({"scale", "add",  "mul",  "sub",     "div",       "square", "sqrt",   "exp",     "log",
                  "neg",   "abs",  "axpy", "bias",    "residual",  "clamp",  "tanh",   "sigmoid", "saxpy",
                  "sin",   "cos",  "pow",  "max",     "min",       "silu",   "gelu",   "relu",    "elementwise",
                  "copy",  "fill", "cast", "dropout", "embedding", "gather", "scatter"})) {
    k.category = KernelCategory::kElementwise;
  }
  return k;
}

}  // namespace gpuscope::catalog_detail
