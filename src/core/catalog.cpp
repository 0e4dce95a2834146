#include "core/catalog.h"

#include <cctype>
#include <optional>
#include <string>

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
  std::unique_ptr<char, void (*)(void*)> out(abi::__cxa_demangle(mangled.c_str(), nullptr, nullptr, &status),
                                             std::free);
  if (status != 0 || !out) return mangled;
  return std::string(out.get());
}

namespace {

std::string lowercase(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// PyTorch's symmetric-memory collectives ("c10d::symmetric_memory::multimem_all_reduce_kernel",
// "one_shot_all_reduce_kernel", "two_shot_all_reduce_kernel"): GPUs reading and writing each
// other's memory over NVLink, communication like NCCL's kernels, not a reduction.
bool symmetric_memory_collective(const ParsedName& p) {
  const std::string q = lowercase(p.qualified);
  if (q.find("symmetric_memory") != std::string::npos) return true;
  const std::string b = lowercase(p.base);
  return b.starts_with("multimem_") ||
         ((b.starts_with("one_shot_") || b.starts_with("two_shot_")) &&
          (b.find("all_reduce") != std::string::npos || b.find("allreduce") != std::string::npos));
}

// Block-scaled (microscaling) matrix math, Blackwell's MXFP8/MXFP4/NVFP4: the names carry the
// scale type (ue8m0, ue4m3) or the MX format, and often a bf16 output type, which is not the
// math's. The inputs decide: any fp8 operand (e4m3, e5m2; the mixed f8f6f4 kind runs at the fp8
// rate) is fp8 math; only fp4 operands (e2m1) have no precision in the catalogue: unknown, never
// bf16.
std::optional<Precision> block_scaled_precision(std::string_view raw) {
  const std::string n = lowercase(raw);
  const auto has = [&](std::string_view s) { return n.find(s) != std::string::npos; };
  if (!(has("ue8m0") || has("ue4m3") || has("mxf8") || has("mxf4") || has("mxfp") || has("nvf4") ||
        has("block_scaled") || has("blockscaled"))) {
    return std::nullopt;
  }
  if (has("e4m3") || has("e5m2") || has("mxf8") || has("mxfp8") || has("f8f6f4")) return Precision::kFp8;
  return Precision::kUnknown;
}

KernelInfo describe_parsed(std::string_view raw, const ParsedName& p) {
  if (auto k = nccl_kernel(raw, p)) return *k;
  if (symmetric_memory_collective(p))
    return KernelInfo{KernelLibrary::kAten, KernelCategory::kCommunication, Precision::kUnknown};
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

}  // namespace

KernelInfo describe_kernel(std::string_view raw) {
  // Copy and set activities arrive under the kernel names profilers give them.
  if (raw.starts_with("Memcpy") || raw.starts_with("Memset") || raw.starts_with("memcpy") ||
      raw.starts_with("memset")) {
    return KernelInfo{KernelLibrary::kUnknown, KernelCategory::kCopySet, Precision::kUnknown};
  }
  const ParsedName p = parse_name(raw);
  KernelInfo k = describe_parsed(raw, p);
  if (is_matrix_math(k.category)) {
    if (const std::optional<Precision> scaled = block_scaled_precision(raw)) k.precision = *scaled;
  }
  return k;
}

KernelCategory classify_kernel(std::string_view name) { return describe_kernel(name).category; }

Precision precision_from_kernel_name(std::string_view name) { return describe_kernel(name).precision; }

std::string_view category_name(KernelCategory c) {
  switch (c) {
    case KernelCategory::kGemm:
      return "gemm";
    case KernelCategory::kConvolution:
      return "convolution";
    case KernelCategory::kAttention:
      return "attention";
    case KernelCategory::kElementwise:
      return "elementwise";
    case KernelCategory::kReduction:
      return "reduction_norm";
    case KernelCategory::kOptimizer:
      return "optimizer";
    case KernelCategory::kCopySet:
      return "copy_set";
    case KernelCategory::kCommunication:
      return "communication";
    case KernelCategory::kOther:
      return "other";
  }
  return "other";
}

std::string_view library_name(KernelLibrary l) {
  switch (l) {
    case KernelLibrary::kUnknown:
      return "unknown";
    case KernelLibrary::kCublas:
      return "cublas";
    case KernelLibrary::kCudnn:
      return "cudnn";
    case KernelLibrary::kCutlass:
      return "cutlass";
    case KernelLibrary::kFlashAttention:
      return "flash_attention";
    case KernelLibrary::kTriton:
      return "triton";
    case KernelLibrary::kNccl:
      return "nccl";
    case KernelLibrary::kTensile:
      return "tensile";
    case KernelLibrary::kMiopen:
      return "miopen";
    case KernelLibrary::kAten:
      return "aten";
    case KernelLibrary::kCub:
      return "cub";
    case KernelLibrary::kFbgemm:
      return "fbgemm";
  }
  return "unknown";
}

bool is_memory_bound(KernelCategory c) { return c == KernelCategory::kElementwise || c == KernelCategory::kReduction; }

bool is_matrix_math(KernelCategory c) {
  return c == KernelCategory::kGemm || c == KernelCategory::kConvolution || c == KernelCategory::kAttention;
}

bool is_plain_softmax(std::string_view raw) {
  const std::string name = lower(raw);
  if (name.find("softmax") == std::string::npos) return false;
  static constexpr std::array<std::string_view, 6> kLoss = {"log_softmax",   "logsoftmax",   "nll",
                                                            "cross_entropy", "crossentropy", "triton_"};
  return !contains_any(name, kLoss) && classify_kernel(raw) != KernelCategory::kAttention;
}

bool is_layout_conversion(std::string_view name) {
  return name.find("nchwToNhwc") != std::string_view::npos || name.find("nhwcToNchw") != std::string_view::npos;
}

std::string_view precision_name(Precision p) {
  switch (p) {
    case Precision::kUnknown:
      return "unknown";
    case Precision::kFp64:
      return "fp64";
    case Precision::kFp32:
      return "fp32";
    case Precision::kTf32:
      return "tf32";
    case Precision::kBf16:
      return "bf16";
    case Precision::kFp16:
      return "fp16";
    case Precision::kFp8:
      return "fp8";
    case Precision::kInt8:
      return "int8";
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
