#include "core/catalog.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <string>
#include <vector>

namespace gpuscope {
namespace {

bool contains(std::string_view haystack, std::string_view needle) {
  return haystack.find(needle) != std::string_view::npos;
}

template <size_t N>
bool contains_any(std::string_view s, const std::array<std::string_view, N>& parts) {
  return std::any_of(parts.begin(), parts.end(), [&](std::string_view p) { return contains(s, p); });
}

// The words of a kernel's function name, lowercased: "void ns::AddC(float*)" -> {"add", "c"},
// "bias_add_kernel<4>" -> {"bias", "add", "kernel"}.
std::vector<std::string> name_words(std::string_view name) {
  if (name.starts_with("void ")) name.remove_prefix(5);
  std::string cleaned(name);
  for (size_t at; (at = cleaned.find("(anonymous namespace)::")) != std::string::npos;) cleaned.erase(at, 23);
  name = cleaned;
  name = name.substr(0, name.find_first_of("<("));
  if (const size_t colon = name.rfind("::"); colon != std::string_view::npos) name = name.substr(colon + 2);
  std::vector<std::string> words;
  std::string current;
  for (size_t i = 0; i < name.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(name[i]);
    const bool upper = std::isupper(c) != 0;
    const bool prev_lower = i > 0 && std::islower(static_cast<unsigned char>(name[i - 1])) != 0;
    if (!std::isalnum(c) || (upper && prev_lower)) {
      if (!current.empty()) words.push_back(current);
      current.clear();
      if (!std::isalnum(c)) continue;
    }
    current += static_cast<char>(std::tolower(c));
  }
  if (!current.empty()) words.push_back(current);
  return words;
}

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return std::tolower(c); });
  return out;
}

}  // namespace

std::string_view category_name(KernelCategory c) {
  switch (c) {
    case KernelCategory::kGemm: return "gemm";
    case KernelCategory::kAttention: return "attention";
    case KernelCategory::kElementwise: return "elementwise";
    case KernelCategory::kReduction: return "reduction_norm";
    case KernelCategory::kOptimizer: return "optimizer";
    case KernelCategory::kCopySet: return "copy_set";
    case KernelCategory::kCommunication: return "communication";
    case KernelCategory::kOther: return "other";
  }
  return "other";
}

bool is_memory_bound(KernelCategory c) {
  return c == KernelCategory::kElementwise || c == KernelCategory::kReduction;
}

bool is_plain_softmax(std::string_view raw) {
  const std::string name = lower(raw);
  if (name.find("softmax") == std::string::npos) return false;
  static constexpr std::array<std::string_view, 6> kLoss = {"log_softmax", "logsoftmax", "nll", "cross_entropy",
                                                            "crossentropy", "triton_"};
  return !contains_any(name, kLoss) && classify_kernel(raw) != KernelCategory::kAttention;
}

KernelCategory classify_kernel(std::string_view raw) {
  const std::string name = lower(raw);
  static constexpr std::array<std::string_view, 6> kComm = {
      "nccl", "allreduce", "all_reduce", "allgather", "reducescatter", "rccl"};
  if (contains_any(name, kComm)) return KernelCategory::kCommunication;
  static constexpr std::array<std::string_view, 7> kAttention = {
      "flash", "fmha", "attention", "attn", "sdpa", "mha_", "flash_fwd"};
  if (contains_any(name, kAttention)) return KernelCategory::kAttention;
  // Optimizer before GEMM/elementwise: the fused and foreach optimizers run multi-tensor
  // kernels whose functor names mention Adam; foreach binary ops also use them.
  // Careful: demangled names are full of "lambda", so no "lamb" here.
  static constexpr std::array<std::string_view, 5> kOptimizer = {
      "adam", "multi_tensor_apply", "sgd_", "fused_optimizer", "fusedoptimizer"};
  if (contains_any(name, kOptimizer)) return KernelCategory::kOptimizer;
  static constexpr std::array<std::string_view, 14> kGemm = {
      "gemm", "nvjet", "cutlass", "cublas", "xmma", "wgmma", "matmul", "_mm_", "triton_tem",
      "splitk", "s16816", "s1688", "h16816", "gemv"};
  if (contains_any(name, kGemm)) return KernelCategory::kGemm;
  // Copy kernels (casts, direct_copy) are memory-bound elementwise work, not copy engines.
  static constexpr std::array<std::string_view, 2> kCopy = {"memcpy", "memset"};
  if (contains_any(name, kCopy)) return KernelCategory::kCopySet;
  static constexpr std::array<std::string_view, 14> kReduction = {
      "reduce", "norm", "softmax", "cross_entropy", "nll_loss", "triton_red", "triton_per",
      "cunn_", "welford", "argmax", "sum_kernel", "mean_kernel", "layer_norm", "gammabeta"};
  if (contains_any(name, kReduction)) return KernelCategory::kReduction;
  static constexpr std::array<std::string_view, 14> kElementwise = {
      "elementwise", "triton_poi", "gelu", "relu", "silu", "dropout", "fill", "index",
      "embedding", "gather", "scatter", "where", "cast", "copy"};
  if (contains_any(name, kElementwise)) return KernelCategory::kElementwise;
  // Custom kernels ("Scale", "AddC", "bias_add_kernel"): look at the words of the function's
  // own name (camelCase and snake_case split), where substrings of long names would mislead.
  static constexpr std::array<std::string_view, 24> kElementwiseWords = {
      "scale", "add", "mul", "sub", "div", "square", "sqrt", "exp", "log", "neg", "abs", "axpy", "bias",
      "residual", "clamp", "tanh", "sigmoid", "saxpy", "sin", "cos", "pow", "max", "min", "silu"};
  static constexpr std::array<std::string_view, 4> kReductionWords = {"sum", "mean", "argmax", "norm"};
  const std::vector<std::string> words = name_words(raw);
  for (const auto& w : words) {
    if (std::find(kReductionWords.begin(), kReductionWords.end(), w) != kReductionWords.end()) {
      return KernelCategory::kReduction;
    }
  }
  for (const auto& w : words) {
    if (std::find(kElementwiseWords.begin(), kElementwiseWords.end(), w) != kElementwiseWords.end()) {
      return KernelCategory::kElementwise;
    }
  }
  return KernelCategory::kOther;
}

std::string_view precision_name(Precision p) {
  switch (p) {
    case Precision::kUnknown: return "unknown";
    case Precision::kFp64: return "fp64";
    case Precision::kFp32: return "fp32";
    case Precision::kTf32: return "tf32";
    case Precision::kBf16: return "bf16";
    case Precision::kFp16: return "fp16";
    case Precision::kFp8: return "fp8";
    case Precision::kInt8: return "int8";
  }
  return "unknown";
}

Precision precision_from_kernel_name(std::string_view raw) {
  const std::string name = lower(raw);
  if (contains(name, "e4m3") || contains(name, "e5m2") || contains(name, "fp8")) return Precision::kFp8;
  if (contains(name, "tf32")) return Precision::kTf32;
  if (contains(name, "bf16") || contains(name, "bfloat16")) return Precision::kBf16;
  // A bare "f16" (cuDNN's "wgmma_f16") means either 16-bit type, so it is not evidence.
  if (contains(name, "fp16") || contains(name, "hgemm") ||
      contains(name, "half") || contains(name, "h1688") || contains(name, "h16816") ||
      contains(name, "s16816") || contains(name, "s1688") || contains(name, "884gemm")) {
    return Precision::kFp16;
  }
  if (contains(name, "dgemm") || contains(name, "f64") || contains(name, "double")) return Precision::kFp64;
  if (contains(name, "i8") || contains(name, "int8") || contains(name, "imma")) return Precision::kInt8;
  if (contains(name, "sgemm") || contains(name, "f32f32") || contains(name, "gemm_f32") ||
      contains(name, "float")) {
    return Precision::kFp32;
  }
  // cuBLAS 12+ nvjet kernels encode operand types in their suffix: nvjet_tst_..._h_... for
  // half-family and _s_/sss for single; too unstable to rely on. Leave unknown.
  return Precision::kUnknown;
}

Precision precision_from_dtype(std::string_view dtype) {
  if (dtype == "float" || dtype == "c10::complex<float>") return Precision::kFp32;
  if (dtype == "c10::BFloat16") return Precision::kBf16;
  if (dtype == "c10::Half") return Precision::kFp16;
  if (dtype == "double") return Precision::kFp64;
  if (contains(dtype, "Float8")) return Precision::kFp8;
  if (dtype == "signed char" || dtype == "unsigned char") return Precision::kInt8;
  return Precision::kUnknown;
}

namespace {
// Dense peak TFLOP/s from NVIDIA datasheets (sparse figures halved where the sheet gives
// "with sparsity"). bf16 is the dense tensor-core rate with FP32 accumulation.
constexpr std::array<PeakTable, 13> kPeaks = {{
    {"H200", "H200 SXM", 67, 67, 494.7, 989.4, 1978.9, "NVIDIA H200 datasheet (SXM)"},
    {"H100 PCIe", "H100 PCIe", 51, 51, 378, 756, 1513, "NVIDIA H100 datasheet (PCIe)"},
    {"H100 NVL", "H100 NVL", 60, 60, 417.5, 835, 1670.5, "NVIDIA H100 datasheet (NVL)"},
    {"H100", "H100 SXM", 67, 67, 494.7, 989.4, 1978.9, "NVIDIA H100 datasheet (SXM)"},
    {"H800", "H800 SXM", 1, 67, 494.7, 989.4, 1978.9, "NVIDIA H800 (H100 SXM compute)"},
    {"GH200", "GH200", 67, 67, 494.7, 989.4, 1978.9, "NVIDIA GH200 datasheet"},
    {"B200", "B200", 40, 80, 1100, 2250, 4500, "NVIDIA HGX B200 datasheet (per GPU, dense)"},
    {"A100", "A100", 19.5, 19.5, 156, 312, 0, "NVIDIA A100 datasheet"},
    {"A800", "A800", 19.5, 19.5, 156, 312, 0, "NVIDIA A800 (A100 compute)"},
    {"L40S", "L40S", 1.4, 91.6, 183, 362, 733, "NVIDIA L40S datasheet"},
    {"L4", "L4", 0.5, 30.3, 60, 121, 242.5, "NVIDIA L4 datasheet"},
    {"A10", "A10", 0.98, 31.2, 62.5, 125, 0, "NVIDIA A10 datasheet"},
    {"V100", "V100", 7.8, 15.7, 0, 125, 0, "NVIDIA V100 datasheet (SXM2, fp16)"},
}};
}  // namespace

const PeakTable* find_peak_table(std::string_view device_name) {
  // A match must end at a word boundary so "A10" does not match "A100" or "A10G", nor "L4"
  // match "L40". More specific rows come first in the table.
  for (const auto& row : kPeaks) {
    for (size_t pos = device_name.find(row.match); pos != std::string_view::npos;
         pos = device_name.find(row.match, pos + 1)) {
      const size_t end = pos + row.match.size();
      if (end == device_name.size() || !std::isalnum(static_cast<unsigned char>(device_name[end]))) {
        return &row;
      }
    }
  }
  return nullptr;
}

std::optional<double> peak_tflops(std::string_view device_name, Precision p) {
  const PeakTable* row = find_peak_table(device_name);
  if (!row) return std::nullopt;
  double v = 0;
  switch (p) {
    case Precision::kFp64: v = row->fp64; break;
    case Precision::kFp32: v = row->fp32; break;
    case Precision::kTf32: v = row->tf32; break;
    case Precision::kBf16:
    case Precision::kFp16: v = row->bf16; break;
    case Precision::kFp8: v = row->fp8; break;
    case Precision::kInt8: v = row->fp8; break;  // Dense INT8 TOPS equal FP8 on Hopper/Ada.
    case Precision::kUnknown: return std::nullopt;
  }
  if (v <= 0) return std::nullopt;
  return v;
}

}  // namespace gpuscope
