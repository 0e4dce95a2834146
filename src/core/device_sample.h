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

struct DeviceSample {
  int64_t time_ns = 0;      // End of the interval, host CLOCK_REALTIME nanoseconds.
  int64_t interval_ns = 0;  // Real elapsed time the ratios cover.
  int32_t device = 0;       // NVML index.
  // MIG: the GPU instance id within `device` when this sample covers one instance only.
  std::optional<int32_t> gpu_instance_id;

  // NVML classic.
  std::optional<double> gpu_util_pct;  // "Any kernel running": what nvidia-smi shows.
  std::optional<double> mem_util_pct;
  std::optional<uint64_t> memory_used_bytes;
  std::optional<uint64_t> memory_total_bytes;
  std::optional<double> power_w;
  std::optional<double> energy_j;  // Total since driver load.
  std::optional<double> sm_clock_mhz;
  std::optional<double> mem_clock_mhz;
  std::optional<double> temperature_c;
  std::optional<uint64_t> throttle_reasons;  // NVML clocks-event-reasons bitmask.
  std::optional<double> pcie_tx_bytes_per_s;
  std::optional<double> pcie_rx_bytes_per_s;

  // GPM (Hopper and later).
  std::optional<double> sm_active_pct;
  std::optional<double> sm_occupancy_pct;
  std::optional<double> tensor_active_pct;
  std::optional<double> tensor_hmma_pct;
  std::optional<double> tensor_imma_pct;
  std::optional<double> tensor_dfma_pct;
  std::optional<double> dram_bw_pct;
  std::optional<double> fp64_pct;
  std::optional<double> fp32_pct;
  std::optional<double> fp16_pct;
  std::optional<double> nvlink_rx_bytes_per_s;
  std::optional<double> nvlink_tx_bytes_per_s;
};

// One process using a GPU at the end of a sampling interval, with its identity as the host's
// /proc revealed it. Identity strings are empty when unknown (e.g. the pid lives in another
// PID namespace).
struct ProcessSample {
  int64_t time_ns = 0;  // Host CLOCK_REALTIME nanoseconds.
  int32_t device = 0;   // NVML index.
  uint32_t pid = 0;     // As NVML reports it: a pid in the host's PID namespace.
  std::optional<uint64_t> memory_used_bytes;
  std::optional<double> sm_util_pct;   // NVML per-process "SM util" (any kernel of the pid).
  std::optional<double> mem_util_pct;
  std::string command;       // argv joined by spaces, or comm.
  std::string user;          // Login name, or the numeric uid.
  std::string pod_uid;       // Kubernetes pod UID from the cgroup path.
  std::string slurm_job_id;  // Slurm job id from the cgroup path.
};

}  // namespace gpuscope
