// The health collector: fills DeviceHealth (core/device_health.h) from NVML for each GPU.
//
// XIDs arrive as NVML events. One event set is created at open and every GPU that supports
// nvmlEventTypeXidCriticalError is registered; each pass drains it with nvmlEventSetWait_v2
// and a timeout of 0, which returns at once (NVML_ERROR_TIMEOUT) when nothing is queued, so
// the sampler never blocks. The other counters change rarely and cost tens of calls per GPU
// (18 NVLinks x 4 counters), so they are read on the first pass and then at most every
// `slow_interval_ns`, and held in between.
//
// MIG instances get an empty DeviceHealth (all absent): the counters are the GPU's, reported
// once on the parent. Not thread-safe: the sampler's thread calls it.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/device_health.h"
#include "nvml/nvml_api.h"

namespace gpuscope::nvml {

class HealthCollector {
 public:
  struct Device {
    int32_t index = 0;
    nvmlDevice_t handle = nullptr;  // Null for a MIG instance: nothing is read.
    std::string label;              // "GPU 0", for warnings.
  };
  // `warn(rc, function, label)` reports a real failure (not NOT_SUPPORTED or a missing entry
  // point) and returns false; it returns true for NVML_SUCCESS.
  using Check = std::function<bool(nvmlReturn_t, const char*, const std::string&)>;

  HealthCollector(NvmlApi& api, std::vector<Device> devices, int64_t slow_interval_ns, Check check);
  ~HealthCollector();  // Frees the event set.
  HealthCollector(const HealthCollector&) = delete;
  HealthCollector& operator=(const HealthCollector&) = delete;

  // Fills `out` (one entry per device, in the constructor's order). `now_mono_ns`: CLOCK_MONOTONIC.
  void sample(int64_t now_mono_ns, std::vector<DeviceHealth>* out);
  // Whether device i was registered for XID events (known from construction on).
  bool xid_supported(size_t i) const { return i < held_.size() && held_[i].xid_supported; }

 private:
  void drain_events();
  void read_slow(const Device& d, DeviceHealth& h);
  void count_xid(size_t device, uint32_t xid);

  NvmlApi& api_;
  std::vector<Device> devices_;
  int64_t slow_interval_ns_;
  Check check_;
  nvmlEventSet_t events_ = nullptr;
  std::vector<DeviceHealth> held_;  // Latest readings, parallel to devices_.
  int64_t last_slow_mono_ns_ = 0;
  bool read_once_ = false;
};

}  // namespace gpuscope::nvml
