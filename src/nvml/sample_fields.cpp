#include "nvml/sample_fields.h"

namespace gpuscope::nvml {

namespace {
template <typename T>
std::optional<double> as_double(const std::optional<T>& v) {
  if (!v) return std::nullopt;
  return static_cast<double>(*v);
}
}  // namespace

const std::vector<SampleField>& device_sample_fields() {
#define GPUSCOPE_FIELD(member, gpm) \
  SampleField{#member, gpm, [](const DeviceSample& s) { return as_double(s.member); }}
  static const std::vector<SampleField> kFields = {
      GPUSCOPE_FIELD(gpu_util_pct, false),
      GPUSCOPE_FIELD(mem_util_pct, false),
      GPUSCOPE_FIELD(memory_used_bytes, false),
      GPUSCOPE_FIELD(memory_total_bytes, false),
      GPUSCOPE_FIELD(power_w, false),
      GPUSCOPE_FIELD(energy_j, false),
      GPUSCOPE_FIELD(sm_clock_mhz, false),
      GPUSCOPE_FIELD(mem_clock_mhz, false),
      GPUSCOPE_FIELD(temperature_c, false),
      GPUSCOPE_FIELD(throttle_reasons, false),
      GPUSCOPE_FIELD(pcie_tx_bytes_per_s, false),
      GPUSCOPE_FIELD(pcie_rx_bytes_per_s, false),
      GPUSCOPE_FIELD(sm_active_pct, true),
      GPUSCOPE_FIELD(sm_occupancy_pct, true),
      GPUSCOPE_FIELD(tensor_active_pct, true),
      GPUSCOPE_FIELD(tensor_hmma_pct, true),
      GPUSCOPE_FIELD(tensor_imma_pct, true),
      GPUSCOPE_FIELD(tensor_dfma_pct, true),
      GPUSCOPE_FIELD(dram_bw_pct, true),
      GPUSCOPE_FIELD(fp64_pct, true),
      GPUSCOPE_FIELD(fp32_pct, true),
      GPUSCOPE_FIELD(fp16_pct, true),
      GPUSCOPE_FIELD(nvlink_rx_bytes_per_s, true),
      GPUSCOPE_FIELD(nvlink_tx_bytes_per_s, true),
  };
#undef GPUSCOPE_FIELD
  return kFields;
}

}  // namespace gpuscope::nvml
