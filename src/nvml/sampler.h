// The live sampler: reads every GPU (and MIG instance) through NVML and GPM and produces
// DeviceSamples, per-process readings with their /proc identity, and cumulative
// "active seconds" counters.
//
// Clocks: sample times are host CLOCK_REALTIME; intervals are measured on CLOCK_MONOTONIC, so
// a GPM ratio is over the real elapsed time between two GPM samples (>= 100 ms, as NVML
// requires; a pass up to 15 ms early waits for it, one earlier than that leaves the GPM fields
// of that sample absent).
// NVML's own utilization rates cover the driver's sample period, not ours (NVML docs:
// "between 1 second and 1/6 second depending on the product"), and are reported as read.
//
// Not thread-safe: one thread calls sample().
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <unordered_set>
#include <vector>

#include "core/device_health.h"
#include "core/device_sample.h"
#include "core/status.h"
#include "nvml/health.h"
#include "nvml/nvml_api.h"
#include "nvml/process_identity.h"

namespace gpuscope::nvml {

struct DeviceInfo {
  int32_t index = 0;                       // NVML index of the GPU (the parent, for a MIG instance).
  std::optional<int32_t> gpu_instance_id;  // Set for a MIG instance.
  std::string name;
  std::string uuid;
  // NVML's busId, "00000000:3B:00.0" (the parent's, for a MIG instance); empty if unknown.
  std::string pci_bus_id;
  bool gpm_supported = false;
  bool xid_events = false;  // Registered for NVML XID events (nvml/health.h).
};

// Seconds a unit was active since the sampler started: the sum over samples of
// ratio x interval. A rate over any window of these is exact, whatever the scrape interval.
// Absent while the underlying ratio has never been measured.
struct ActiveCounters {
  std::optional<double> gpu_busy_s;       // nvml utilization.gpu
  std::optional<double> sm_active_s;      // GPM SM_UTIL
  std::optional<double> tensor_active_s;  // GPM ANY_TENSOR_UTIL
  std::optional<double> dram_active_s;    // GPM DRAM_BW_UTIL
};

struct LiveSnapshot {
  int64_t time_ns = 0;                   // CLOCK_REALTIME at the end of the sample.
  std::vector<DeviceSample> devices;     // Parallel to Sampler::devices().
  std::vector<ActiveCounters> counters;  // Parallel to Sampler::devices().
  std::vector<ProcessSample> processes;
  std::vector<DeviceHealth> health;  // Parallel to Sampler::devices() (nvml/health.h).
};

struct SamplerOptions {
  std::string proc_root = "/proc";
  bool processes = true;  // Read per-process memory, utilization and identity.
  // Health counters other than XIDs are read at most this often (nvml/health.h); XID events
  // are taken every pass.
  int64_t health_interval_ns = 10'000'000'000;
};

class Sampler {
 public:
  // Loads NVML (NvmlApi::load), enumerates GPUs and MIG instances and takes the first GPM
  // samples. Errors: no NVML, no driver, or no GPU ("no NVIDIA GPU found").
  static StatusOr<std::unique_ptr<Sampler>> open(const SamplerOptions& options = {});
  static StatusOr<std::unique_ptr<Sampler>> open(std::unique_ptr<NvmlApi> api, const SamplerOptions& options);
  ~Sampler();

  const std::vector<DeviceInfo>& devices() const { return devices_; }
  const std::string& driver_version() const { return driver_version_; }
  const NvmlApi& api() const { return *api_; }

  // Reads every device into `out` (replacing its contents). Individual metric failures make
  // that metric absent and are reported once through take_warnings(); only the loss of all
  // devices is an error.
  Status sample(LiveSnapshot* out);

  // Lines describing failures first seen since the last call (e.g. "nvmlDeviceGetPowerUsage
  // failed: insufficient permissions (NVML code 4) on GPU 0"). NOT_SUPPORTED and missing entry
  // points are not warnings: they mean "absent".
  std::vector<std::string> take_warnings();

 private:
  struct DeviceState;
  Sampler() = default;
  void read_classic(DeviceState& d, DeviceSample& s);
  void read_gpm(DeviceState& d, DeviceSample& s, int64_t now_mono_ns);
  void read_processes(DeviceState& d, int64_t time_ns, std::vector<ProcessSample>* out);
  // Returns true on success; on a real failure records a warning once.
  bool ok(nvmlReturn_t rc, const char* function, const DeviceState& d);
  bool ok(nvmlReturn_t rc, const char* function, const std::string& label);

  std::unique_ptr<NvmlApi> api_;
  SamplerOptions options_;
  std::vector<DeviceInfo> devices_;
  std::vector<std::unique_ptr<DeviceState>> states_;
  std::vector<ActiveCounters> counters_;
  std::unique_ptr<nvmlGpmMetricsGet_t> gpm_request_;
  std::unique_ptr<HealthCollector> health_;
  ProcessIdentityCache identities_;
  std::string driver_version_;
  std::vector<std::string> warnings_;
  std::unordered_set<std::string> warned_;
  int64_t last_mono_ns_ = 0;
  int64_t last_realtime_ns_ = 0;
};

}  // namespace gpuscope::nvml
