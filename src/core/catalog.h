// What the core knows about names: kernel categories, GEMM data types, and the device
// catalogue of dense peak FLOP/s. Pure functions of strings; no NVIDIA headers.
#pragma once

#include <optional>
#include <string_view>

namespace gpuscope {

enum class KernelCategory : uint8_t {
  kGemm,
  kAttention,
  kElementwise,
  kReduction,  // Reductions and normalisations (softmax, layer norm, cross entropy).
  kOptimizer,
  kCopySet,  // Memcpy / memset activities (not kernels), and copy kernels.
  kCommunication,
  kOther,
};
inline constexpr int kNumKernelCategories = 8;
std::string_view category_name(KernelCategory c);

// Classifies a kernel by its (demangled) name.
KernelCategory classify_kernel(std::string_view name);

// True for a plain softmax kernel (forward or backward) as manual attention launches over its
// score matrix, as opposed to log-softmax / cross-entropy kernels of a classifier's loss.
bool is_plain_softmax(std::string_view kernel_name);

// True for categories limited by memory bandwidth rather than math: what fusion can save.
bool is_memory_bound(KernelCategory c);

enum class Precision : uint8_t { kUnknown, kFp64, kFp32, kTf32, kBf16, kFp16, kFp8, kInt8 };
inline constexpr int kNumPrecisions = 8;
std::string_view precision_name(Precision p);

// The math precision of a GEMM or attention kernel as its name reveals it (cuBLAS, CUTLASS,
// nvjet, Triton), or kUnknown.
Precision precision_from_kernel_name(std::string_view name);
// The precision of a framework dtype string ("float", "c10::BFloat16", "c10::Half").
Precision precision_from_dtype(std::string_view dtype);

// Dense (never sparse) peak tensor/vector throughput in TFLOP/s, by device name, from the
// vendors' datasheets. nullopt when the device or precision is not in the table.
struct PeakTable {
  std::string_view match;  // Substring of the device name, e.g. "H100".
  std::string_view variant;  // Human-readable model name for the report.
  double fp64;
  double fp32;  // Non-tensor FP32.
  double tf32;
  double bf16;  // = fp16 dense with fp32 accumulation.
  double fp8;   // 0 where unsupported.
  std::string_view source;
};
const PeakTable* find_peak_table(std::string_view device_name);
std::optional<double> peak_tflops(std::string_view device_name, Precision p);

}  // namespace gpuscope
