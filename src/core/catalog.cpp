#include "core/catalog.h"

#include <cxxabi.h>

#include <array>
#include <cstdlib>
#include <memory>
#include <string>

#include "core/catalog_families.h"
#include "core/catalog_parse.h"

namespace gpuscope {

using namespace catalog_detail;

std::string demangle_kernel_name(std::string_view name) {
  if (!name.starts_with("_Z")) return std::string(name);
  int status = 0;
  const std::string mangled(name);
  std::unique_ptr<char, void (*)(void*)> out(abi::__cxa_demangle(mangled.c_str(), nullptr, nullptr, &status), std::free);
  if (status != 0 || !out) return mangled;
  return std::string(out.get());
}

KernelInfo describe_kernel(std::string_view raw) {
  // Copy and set activities arrive under the kernel names profilers give them.
  if (raw.starts_with("Memcpy") || raw.starts_with("Memset") || raw.starts_with("memcpy") || raw.starts_with("memset")) {
    return KernelInfo{KernelLibrary::kUnknown, KernelCategory::kCopySet, Precision::kUnknown};
  }
  const ParsedName p = parse_name(raw);
  if (auto k = nccl_kernel(raw, p)) return *k;
  if (auto k = tensile_kernel(p)) return *k;
  if (auto k = nvjet_kernel(p)) return *k;
  if (auto k = triton_kernel(p)) return *k;
  if (auto k = attention_kernel(p)) return *k;
  if (auto k = cudnn_kernel(p)) return *k;
  if (auto k = cutlass_kernel(p)) return *k;
  if (auto k = nvidia_flat_kernel(p)) return *k;
  if (auto k = cublas_kernel(p)) return *k;
  if (auto k = miopen_kernel(p)) return *k;
  if (auto k = aten_kernel(p)) return *k;
  return custom_kernel(p);
}

KernelCategory classify_kernel(std::string_view name) { return describe_kernel(name).category; }

Precision precision_from_kernel_name(std::string_view name) { return describe_kernel(name).precision; }

std::string_view category_name(KernelCategory c) {
  switch (c) {
    case KernelCategory::kGemm: return "gemm";
    case KernelCategory::kConvolution: return "convolution";
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

std::string_view library_name(KernelLibrary l) {
  switch (l) {
    case KernelLibrary::kUnknown: return "unknown";
    case KernelLibrary::kCublas: return "cublas";
    case KernelLibrary::kCudnn: return "cudnn";
    case KernelLibrary::kCutlass: return "cutlass";
    case KernelLibrary::kFlashAttention: return "flash_attention";
    case KernelLibrary::kTriton: return "triton";
    case KernelLibrary::kNccl: return "nccl";
    case KernelLibrary::kTensile: return "tensile";
    case KernelLibrary::kMiopen: return "miopen";
    case KernelLibrary::kAten: return "aten";
    case KernelLibrary::kCub: return "cub";
    case KernelLibrary::kFbgemm: return "fbgemm";
  }
  return "unknown";
}

bool is_memory_bound(KernelCategory c) {
  return c == KernelCategory::kElementwise || c == KernelCategory::kReduction;
}

bool is_matrix_math(KernelCategory c) {
  return c == KernelCategory::kGemm || c == KernelCategory::kConvolution || c == KernelCategory::kAttention;
}

bool is_plain_softmax(std::string_view raw) {
  const std::string name = lower(raw);
  if (name.find("softmax") == std::string::npos) return false;
  static constexpr std::array<std::string_view, 6> kLoss = {"log_softmax", "logsoftmax", "nll", "cross_entropy",
                                                            "crossentropy", "triton_"};
  return !contains_any(name, kLoss) && classify_kernel(raw) != KernelCategory::kAttention;
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

Precision precision_from_dtype(std::string_view dtype) {
  if (dtype == "float" || dtype == "c10::complex<float>") return Precision::kFp32;
  if (dtype == "c10::BFloat16") return Precision::kBf16;
  if (dtype == "c10::Half") return Precision::kFp16;
  if (dtype == "double") return Precision::kFp64;
  if (contains(dtype, "Float8")) return Precision::kFp8;
  if (dtype == "signed char" || dtype == "unsigned char") return Precision::kInt8;
  return Precision::kUnknown;
}

}  // namespace gpuscope
