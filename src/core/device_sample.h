// One reading of a GPU's hardware counters over an interval, from NVML (and GPM on Hopper and
// later). Produced by the live sampler (src/nvml) and stored in capture files; the analyses
// report it beside trace-derived estimates, never merged with them.
//
// Contract: every metric is optional; empty means "not supported or not read", never 0.
// Ratios (percent) are over [time_ns - interval_ns, time_ns) on the host clock.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace gpuscope {

// The metrics of a DeviceSample, described once:
//   X(member, type, gpm, unit)
// type: double or uint64_t; gpm: read from GPM (absent on GPUs before Hopper); unit: the
// member's unit (SampleUnit), from which front ends derive theirs (a Prometheus ratio from a
// percent). The struct's members, nvml::device_sample_fields() (monitor's columns, the
// exporter's gpuscope_metric_supported rows, the fixture recorder), the capture file's
// device-sample record and the exporter's gauge rows are generated from this table.
// Order matters: the capture file stores the fields of each type in table order (version 1), so
// a new field goes at the end of the table, and none is ever removed or reordered.
#define GPUSCOPE_DEVICE_SAMPLE_FIELDS(X)                                                  \
  /* NVML classic. gpu_util_pct: "any kernel running", what nvidia-smi shows. */          \
  X(gpu_util_pct, double, false, kPercent)                                                \
  X(mem_util_pct, double, false, kPercent)                                                \
  X(memory_used_bytes, uint64_t, false, kBytes)                                           \
  X(memory_total_bytes, uint64_t, false, kBytes)                                          \
  X(power_w, double, false, kWatts)                                                       \
  X(energy_j, double, false, kJoulesTotal) /* Total since driver load. */                 \
  X(sm_clock_mhz, double, false, kMegahertz)                                              \
  X(mem_clock_mhz, double, false, kMegahertz)                                             \
  X(temperature_c, double, false, kCelsius)                                               \
  X(throttle_reasons, uint64_t, false, kBitmask) /* NVML clocks-event-reasons bitmask. */ \
  X(pcie_tx_bytes_per_s, double, false, kBytesPerSecond)                                  \
  X(pcie_rx_bytes_per_s, double, false, kBytesPerSecond)                                  \
  /* GPM (Hopper and later). */                                                           \
  X(sm_active_pct, double, true, kPercent)                                                \
  X(sm_occupancy_pct, double, true, kPercent)                                             \
  X(tensor_active_pct, double, true, kPercent)                                            \
  X(tensor_hmma_pct, double, true, kPercent)                                              \
  X(tensor_imma_pct, double, true, kPercent)                                              \
  X(tensor_dfma_pct, double, true, kPercent)                                              \
  X(dram_bw_pct, double, true, kPercent)                                                  \
  X(fp64_pct, double, true, kPercent)                                                     \
  X(fp32_pct, double, true, kPercent)                                                     \
  X(fp16_pct, double, true, kPercent)                                                     \
  X(nvlink_rx_bytes_per_s, double, true, kBytesPerSecond)                                 \
  X(nvlink_tx_bytes_per_s, double, true, kBytesPerSecond)

enum class SampleUnit : uint8_t {
  kPercent,  // 0-100.
  kBytes,
  kWatts,
  kJoulesTotal,  // A running total (a Prometheus counter).
  kMegahertz,
  kCelsius,
  kBitmask,
  kBytesPerSecond,
};

struct DeviceSample {
  int64_t time_ns = 0;      // End of the interval, host CLOCK_REALTIME nanoseconds.
  int64_t interval_ns = 0;  // Real elapsed time the ratios cover.
  int32_t device = 0;       // NVML index.
  // MIG: the GPU instance id within `device` when this sample covers one instance only.
  std::optional<int32_t> gpu_instance_id;

#define GPUSCOPE_SAMPLE_MEMBER(member, type, gpm, unit) std::optional<type> member;
  GPUSCOPE_DEVICE_SAMPLE_FIELDS(GPUSCOPE_SAMPLE_MEMBER)
#undef GPUSCOPE_SAMPLE_MEMBER
};

// One process using a GPU at the end of a sampling interval, with its identity as the host's
// /proc revealed it. Identity strings are empty when unknown (e.g. the pid lives in another
// PID namespace).
struct ProcessSample {
  int64_t time_ns = 0;  // Host CLOCK_REALTIME nanoseconds.
  int32_t device = 0;   // NVML index.
  uint32_t pid = 0;     // As NVML reports it: a pid in the host's PID namespace.
  std::optional<uint64_t> memory_used_bytes;
  std::optional<double> sm_util_pct;  // NVML per-process "SM util" (any kernel of the pid).
  std::optional<double> mem_util_pct;
  std::string command;       // argv joined by spaces, or comm.
  std::string user;          // Login name, or the numeric uid.
  std::string pod_uid;       // Kubernetes pod UID from the cgroup path.
  std::string slurm_job_id;  // Slurm job id from the cgroup path.
};

}  // namespace gpuscope
