// What the core knows about names: kernel categories, libraries and math precisions, and the
// device catalogue of dense peak FLOP/s and supported data types. Pure functions of strings; no
// NVIDIA headers.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "core/precision.h"

namespace gpuscope {

enum class KernelCategory : uint8_t {
  kGemm,         // Matrix multiplies (cuBLAS, CUTLASS, Tensile, Triton templates), with the helper
                 // kernels a GEMM call launches (split-K reduction, cuBLASLt epilogue).
  kConvolution,  // Convolutions (cuDNN, CUTLASS conv, MIOpen), with their transforms (Winograd,
                 // FFT, offset precomputation, split-K reduction). Tensor-core math like kGemm.
  kAttention,
  kElementwise,  // Memory-bound pointwise work: arithmetic, casts and copy kernels, fills, random,
                 // index/gather/scatter/cat, embedding lookups, layout transforms.
  kReduction,    // Reductions and normalisations (softmax, layer/batch norm, loss, pooling).
  kOptimizer,
  kCopySet,  // Memcpy / memset activities (not kernels).
  kCommunication,
  kOther,  // Sort, scan, search, bookkeeping, and anything not recognised.
};
inline constexpr int kNumKernelCategories = 9;
std::string_view category_name(KernelCategory c);

// Where a kernel comes from, as its name's structure shows.
enum class KernelLibrary : uint8_t {
  kUnknown,
  kCublas,          // cuBLAS / cuBLASLt (nvjet, xmma, ampere_sgemm, gemv, split-K reduce).
  kCudnn,           // cuDNN, including its CUTLASS/xmma kernels and SDPA.
  kCutlass,         // CUTLASS outside cuDNN (cutlass::Kernel<...>, cutlass3x_...).
  kFlashAttention,  // Dao-AILab FlashAttention (flash::, flash_fwd_kernel).
  kTriton,          // Triton, including torch.compile/Inductor kernels (triton_poi_ ...).
  kNccl,            // NCCL and RCCL collectives.
  kTensile,         // rocBLAS / hipBLASLt GEMMs (Tensile's Cijk_ names).
  kMiopen,
  kAten,    // PyTorch's own kernels (at::native, at::cuda, memory-efficient attention).
  kCub,     // CUB device-wide primitives (sort, scan), also as ATen's at_cuda_detail::cub.
  kFbgemm,  // FBGEMM GPU (TorchRec embedding tables).
};
inline constexpr int kNumKernelLibraries = 12;
std::string_view library_name(KernelLibrary l);

std::string_view precision_name(Precision p);

// Everything the name of one kernel says.
struct KernelInfo {
  KernelLibrary library = KernelLibrary::kUnknown;
  KernelCategory category = KernelCategory::kOther;
  // The math precision of a GEMM, convolution or attention kernel; for other kernels the
  // narrowest floating-point type among its template and parameter types (c10::BFloat16 over
  // the float it accumulates in). kUnknown where the name does not say (Inductor's names, cuDNN's
  // "f16" that covers both 16-bit types, integer-only kernels).
  Precision precision = Precision::kUnknown;
};

// Classifies a kernel by its name, raw as a profiler records it: demangled ("void
// at::native::reduce_kernel<...>(...)"), Itanium-mangled ("_ZN...", also when truncated), or a
// library's flat name ("nvjet_sm90_tst_...", "Cijk_Ailk_Bljk_HHS_BH_..."). The library family
// is recognised first, then its own naming convention gives the category and precision; words
// of the function's own name are the fallback for custom kernels. Template arguments are read
// only as types, never as substrings (the literal 8 in "ILi8E" is not int8).
KernelInfo describe_kernel(std::string_view name);
KernelCategory classify_kernel(std::string_view name);        // describe_kernel(name).category
Precision precision_from_kernel_name(std::string_view name);  // describe_kernel(name).precision

// The demangled form of an Itanium-mangled name; other names unchanged. A truncated mangled
// name (profilers cut long names) is returned as is.
std::string demangle_kernel_name(std::string_view name);

// True for a plain softmax kernel (forward or backward) as manual attention launches over its
// score matrix, as opposed to log-softmax / cross-entropy kernels of a classifier's loss.
bool is_plain_softmax(std::string_view kernel_name);

// True for cuDNN's layout conversions around a convolution (nchwToNhwc, nhwcToNchw): its
// tensors are NCHW while the kernel runs in NHWC, so each call converts its input and output.
bool is_layout_conversion(std::string_view kernel_name);

// True for categories limited by memory bandwidth rather than math: what fusion can save.
bool is_memory_bound(KernelCategory c);
// True for tensor-core math: GEMM, convolution, attention. These run at low occupancy by
// design, and their precision decides the peak.
bool is_matrix_math(KernelCategory c);

// The precision of a framework dtype string ("float", "c10::BFloat16", "c10::Half").
Precision precision_from_dtype(std::string_view dtype);

// Dense (never sparse) peak tensor/vector throughput in TFLOP/s (TOPS for int8), by device
// name, from the vendors' datasheets; 0 where the device has no such math. A precision with a
// nonzero peak is one the device supports in hardware (device_supports).
struct PeakTable {
  std::string_view match;    // Substring of the device name, e.g. "H100".
  std::string_view variant;  // Human-readable model name for the report.
  std::string_view arch;     // "Volta", "Ampere", "Hopper", "CDNA2" ...
  double fp64;               // Best of vector and matrix FP64.
  double fp32;               // Non-tensor FP32 (AMD: the matrix-core rate where higher).
  double tf32;               // 0 before Ampere / CDNA3.
  double bf16;               // Dense, FP32 accumulation; 0 where no bf16 math (V100).
  double fp16;               // Dense, FP32 accumulation.
  double fp8;                // 0 before Hopper / Ada / CDNA3.
  double int8;               // Dense tensor TOPS; 0 without integer tensor math.
  std::string_view source;
};
const PeakTable* find_peak_table(std::string_view device_name);
std::optional<double> peak_tflops(std::string_view device_name, Precision p);
// Whether the device has hardware math for the precision (V100: fp16 tensor cores, no bf16 or
// TF32; FP8 from Hopper, Ada and CDNA3 on). nullopt for a device not in the table or kUnknown.
std::optional<bool> device_supports(std::string_view device_name, Precision p);
// The 16-bit training precision to advise for the device: bf16 where supported, else fp16 (with
// loss scaling); nullopt for an unknown device.
std::optional<Precision> preferred_half_precision(std::string_view device_name);
// Peak DRAM (HBM / GDDR) bandwidth in TB/s (10^12 bytes/s) by device name, from the vendors'
// datasheets; nullopt for a device not listed. A table of its own, not a PeakTable column: one
// compute row covers models whose memory differs (A100 40GB 1.555 TB/s, 80GB 2.0 TB/s).
std::optional<double> peak_memory_tbps(std::string_view device_name);
// True for AMD Instinct / Radeon devices (ROCm: rocm-smi, HIP graphs).
bool is_amd_device(std::string_view device_name);

}  // namespace gpuscope
