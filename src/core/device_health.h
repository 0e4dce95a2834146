// A GPU's health counters: XID errors, ECC, remapped rows, PCIe replays, NVLink errors and
// the enforced power limit. Produced by the live sampler's health collector (src/nvml/health.cpp)
// and shown by `monitor` and the exporter.
//
// Contract: like DeviceSample, every reading is optional; empty means "the driver does not
// support it on this GPU or it could not be read", never 0. Counters count since the driver
// loaded (ECC volatile, PCIe replays, NVLink), since the GPU was made (ECC aggregate, remapped
// rows: kept in the InfoROM), or, for XIDs, since the sampler started (events are seen only
// while registered).
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

namespace gpuscope {

// One NVLink's error counters (NVML nvmlNvLinkErrorCounter_t), for a link that is up.
struct NvlinkErrorCounters {
  int32_t link = 0;
  std::optional<uint64_t> replay;    // Data-link retransmissions.
  std::optional<uint64_t> recovery;  // Link retraining (a link that went down and came back).
  std::optional<uint64_t> crc_flit;  // Flow-control CRC errors.
  std::optional<uint64_t> crc_data;  // Data CRC errors.
};

struct XidCount {
  uint32_t xid = 0;
  uint64_t count = 0;
};

struct DeviceHealth {
  int32_t device = 0;  // NVML index.
  // True when this pass read the slow counters again or saw a new XID (monitor prints then).
  bool updated = false;

  // XID events, counted by code since the sampler registered for them; xid_counts is sorted
  // by code and has only codes seen. Absent (xid_supported false) when the GPU cannot report
  // XID events to NVML event sets.
  bool xid_supported = false;
  uint64_t xid_total = 0;
  std::vector<XidCount> xid_counts;
  std::optional<uint32_t> last_xid;  // Code of the latest one; absent until one is seen.

  // nvmlDeviceGetTotalEccErrors. Absent when ECC is unsupported or disabled.
  std::optional<uint64_t> ecc_volatile_corrected;
  std::optional<uint64_t> ecc_volatile_uncorrected;
  std::optional<uint64_t> ecc_aggregate_corrected;
  std::optional<uint64_t> ecc_aggregate_uncorrected;

  // nvmlDeviceGetRemappedRows (Ampere and later; earlier GPUs retire pages instead).
  std::optional<uint64_t> remapped_rows_corrected;    // Rows remapped for correctable errors.
  std::optional<uint64_t> remapped_rows_uncorrected;  // ... for uncorrectable errors.
  std::optional<bool> remap_pending;                  // A remap waits for a GPU reset to take effect.
  std::optional<bool> remap_failure;                  // A remap failed: the GPU needs service.

  std::optional<uint64_t> pcie_replays;     // nvmlDeviceGetPcieReplayCounter.
  std::vector<NvlinkErrorCounters> nvlink;  // Links that are up; empty without NVLink.
  std::optional<double> power_limit_w;      // nvmlDeviceGetEnforcedPowerLimit.
};

// NVML's clocks-event ("throttle") reason bits (nvml.h nvmlClocksEventReason*, the same values
// as the older nvmlClocksThrottleReason* names), with the names gpuscope exports.
struct ClocksEventReason {
  uint64_t bit;
  const char* name;
  bool hardware_slowdown;  // The hardware forced clocks down (not a setting or a cap).
};
inline constexpr ClocksEventReason kClocksEventReasons[] = {
    {0x1, "gpu_idle", false},
    {0x2, "applications_clocks_setting", false},
    {0x4, "sw_power_cap", false},
    {0x8, "hw_slowdown", true},
    {0x10, "sync_boost", false},
    {0x20, "sw_thermal_slowdown", false},
    {0x40, "hw_thermal_slowdown", true},
    {0x80, "hw_power_brake_slowdown", true},
    {0x100, "display_clock_setting", false},
};

// XID codes operators page on (NVIDIA's XID catalogue): 48 double-bit ECC error, 63 row
// remapping / page retirement recorded, 64 row remapping or page retirement failed, 74 NVLink
// error, 79 GPU fallen off the bus, 94 contained ECC error, 95 uncontained ECC error. Their
// counters are exported from 0 wherever XIDs are supported, so that an alert on increase()
// sees the first one.
inline constexpr uint32_t kPagedXids[] = {48, 63, 64, 74, 79, 94, 95};

}  // namespace gpuscope
