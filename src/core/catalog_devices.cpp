// Devices: datasheet peak math and memory bandwidth, and what a device supports.
#include <array>
#include <cctype>
#include <optional>
#include <string_view>

#include "core/catalog.h"
#include "core/catalog_parse.h"

namespace gpuscope {

using catalog_detail::contains;

namespace {
// Dense peak TFLOP/s (TOPS for int8) from the vendors' datasheets; sparse figures halved where
// the sheet gives only "with sparsity". 0: no hardware math of that type. AMD: fp32 and fp64 are
// the matrix-core rates, which exceed the vector rates on CDNA2/CDNA3.
constexpr std::array<PeakTable, 22> kPeaks = {{
    //  match        variant       arch         fp64  fp32   tf32    bf16    fp16    fp8     int8
    {"H200", "H200 SXM", "Hopper", 67, 67, 494.7, 989.4, 989.4, 1978.9, 1978.9, "NVIDIA H200 datasheet (SXM)"},
    {"H100 PCIe", "H100 PCIe", "Hopper", 51, 51, 378, 756, 756, 1513, 1513, "NVIDIA H100 datasheet (PCIe)"},
    {"H100 NVL", "H100 NVL", "Hopper", 60, 60, 417.5, 835, 835, 1670.5, 1670.5, "NVIDIA H100 datasheet (NVL)"},
    {"H100", "H100 SXM", "Hopper", 67, 67, 494.7, 989.4, 989.4, 1978.9, 1978.9, "NVIDIA H100 datasheet (SXM)"},
    {"H800", "H800 SXM", "Hopper", 1, 67, 494.7, 989.4, 989.4, 1978.9, 1978.9, "NVIDIA H800 (H100 SXM compute)"},
    {"GH200", "GH200", "Hopper", 67, 67, 494.7, 989.4, 989.4, 1978.9, 1978.9, "NVIDIA GH200 datasheet"},
    {"B200", "B200", "Blackwell", 40, 80, 1100, 2250, 2250, 4500, 4500, "NVIDIA HGX B200 datasheet (per GPU, dense)"},
    {"A100", "A100", "Ampere", 19.5, 19.5, 156, 312, 312, 0, 624, "NVIDIA A100 datasheet"},
    {"A800", "A800", "Ampere", 19.5, 19.5, 156, 312, 312, 0, 624, "NVIDIA A800 (A100 compute)"},
    {"L40S", "L40S", "Ada", 1.4, 91.6, 183, 362, 362, 733, 733, "NVIDIA L40S datasheet"},
    {"L4", "L4", "Ada", 0.5, 30.3, 60, 121, 121, 242.5, 242.5, "NVIDIA L4 datasheet"},
    {"A10", "A10", "Ampere", 0.98, 31.2, 62.5, 125, 125, 0, 250, "NVIDIA A10 datasheet"},
    // Volta: fp16 tensor cores only; no bf16, no TF32, no integer tensor math (DP4A only).
    {"V100-PCIE", "V100 PCIe", "Volta", 7, 14, 0, 0, 112, 0, 0, "NVIDIA V100 datasheet (PCIe)"},
    {"V100", "V100", "Volta", 7.8, 15.7, 0, 0, 125, 0, 0, "NVIDIA V100 datasheet (SXM2)"},
    {"T4", "T4", "Turing", 0.25, 8.1, 0, 0, 65, 0, 130, "NVIDIA T4 datasheet"},
    // AMD Instinct. CDNA2: matrix cores for fp64/fp32/fp16/bf16/int8, no TF32 or FP8.
    {"MI250X", "MI250X", "CDNA2", 95.7, 95.7, 0, 383, 383, 0, 383, "AMD Instinct MI250X datasheet (OAM)"},
    {"MI250", "MI250", "CDNA2", 90.5, 90.5, 0, 362.1, 362.1, 0, 362.1, "AMD Instinct MI250 datasheet (OAM)"},
    {"MI210", "MI210", "CDNA2", 45.3, 45.3, 0, 181, 181, 0, 181, "AMD Instinct MI210 datasheet"},
    // CDNA3: adds TF32 and FP8 (figures without sparsity).
    {"MI325X", "MI325X", "CDNA3", 163.4, 163.4, 653.7, 1307.4, 1307.4, 2614.9, 2614.9, "AMD Instinct MI325X datasheet"},
    {"MI300X", "MI300X", "CDNA3", 163.4, 163.4, 653.7, 1307.4, 1307.4, 2614.9, 2614.9, "AMD Instinct MI300X datasheet"},
    {"MI300A", "MI300A", "CDNA3", 122.6, 122.6, 490.3, 980.6, 980.6, 1961.2, 1961.2, "AMD Instinct MI300A datasheet"},
    {"MI300", "MI300X", "CDNA3", 163.4, 163.4, 653.7, 1307.4, 1307.4, 2614.9, 2614.9, "AMD Instinct MI300X datasheet"},
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
    case Precision::kFp64:
      v = row->fp64;
      break;
    case Precision::kFp32:
      v = row->fp32;
      break;
    case Precision::kTf32:
      v = row->tf32;
      break;
    case Precision::kBf16:
      v = row->bf16;
      break;
    case Precision::kFp16:
      v = row->fp16;
      break;
    case Precision::kFp8:
      v = row->fp8;
      break;
    case Precision::kInt8:
      v = row->int8;
      break;
    case Precision::kUnknown:
      return std::nullopt;
  }
  if (v <= 0) return std::nullopt;
  return v;
}

namespace {
struct MemoryBandwidth {
  std::string_view match;  // Substring of the device name (ends at a word boundary).
  std::string_view also;   // A second substring the name must contain; "" for none.
  double tbps;
};
// Datasheet peak memory bandwidth; more specific rows first.
constexpr std::array<MemoryBandwidth, 23> kMemoryBandwidth = {{
    {"GH200", "", 4.0},  {"H200", "", 4.8},   {"H100 PCIe", "", 2.0}, {"H100 NVL", "", 3.9}, {"H100", "", 3.35},
    {"H800", "", 3.35},  {"B200", "", 8.0},   {"A100", "80GB", 2.0},  {"A100", "", 1.555},   {"A800", "80GB", 2.0},
    {"A800", "", 1.555}, {"L40S", "", 0.864}, {"L4", "", 0.3},        {"A10", "", 0.6},      {"V100", "", 0.9},
    {"T4", "", 0.32},    {"MI325X", "", 6.0}, {"MI300X", "", 5.3},    {"MI300A", "", 5.3},   {"MI300", "", 5.3},
    {"MI250X", "", 3.2}, {"MI250", "", 3.2},  {"MI210", "", 1.6},
}};

bool name_has_word(std::string_view name, std::string_view word) {
  for (size_t pos = name.find(word); pos != std::string_view::npos; pos = name.find(word, pos + 1)) {
    const size_t end = pos + word.size();
    if (end == name.size() || !std::isalnum(static_cast<unsigned char>(name[end]))) return true;
  }
  return false;
}
}  // namespace

std::optional<double> peak_memory_tbps(std::string_view device_name) {
  for (const auto& row : kMemoryBandwidth) {
    if (name_has_word(device_name, row.match) && (row.also.empty() || contains(device_name, row.also))) {
      return row.tbps;
    }
  }
  return std::nullopt;
}

std::optional<bool> device_supports(std::string_view device_name, Precision p) {
  if (p == Precision::kUnknown || !find_peak_table(device_name)) return std::nullopt;
  return peak_tflops(device_name, p).has_value();
}

std::optional<Precision> preferred_half_precision(std::string_view device_name) {
  if (!find_peak_table(device_name)) return std::nullopt;
  return device_supports(device_name, Precision::kBf16).value_or(false) ? Precision::kBf16 : Precision::kFp16;
}

bool is_amd_device(std::string_view device_name) {
  if (contains(device_name, "AMD") || contains(device_name, "Instinct") || contains(device_name, "Radeon")) return true;
  const PeakTable* row = find_peak_table(device_name);
  return row && row->arch.starts_with("CDNA");
}

}  // namespace gpuscope
