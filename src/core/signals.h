// Waste signals: conditions on live device readings that mean a GPU is held but not used
// well. Pure: fed DeviceSamples and ProcessSamples, no I/O, no NVIDIA types; the caller owns
// the clock (sample time_ns).
//
// Signals, each naming the GPU and the process(es) involved:
// - idle_holding_memory: a process holds >= idle_memory_bytes on a GPU whose SM active stays
//   below idle_sm_active_pct (or, without GPM, utilization below it) for idle_after_ns.
// - busy_not_working: utilization >= busy_util_pct while SM active < busy_sm_active_pct (a
//   few tiny kernels keep "utilization" high) for signal_after_ns.
// - tensor_cores_unused: SM active >= tensor_sm_active_pct with tensor active below
//   tensor_active_pct on a GPU that reports tensor activity, and not memory-bandwidth bound
//   (tensor cores would not help there), for signal_after_ns.
// - memory_bandwidth_bound: DRAM bandwidth >= membw_dram_pct while SM active
//   >= membw_sm_active_pct, for signal_after_ns.
// A condition that needs an absent metric never fires (unmeasured is not zero).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "core/device_sample.h"

namespace gpuscope {

enum class SignalKind {
  kIdleHoldingMemory,
  kBusyNotWorking,
  kTensorCoresUnused,
  kMemoryBandwidthBound,
};
inline constexpr SignalKind kAllSignalKinds[] = {SignalKind::kIdleHoldingMemory, SignalKind::kBusyNotWorking,
                                                 SignalKind::kTensorCoresUnused, SignalKind::kMemoryBandwidthBound};

// Stable snake_case name used in JSON, Prometheus labels and the rules in deploy/.
std::string_view signal_name(SignalKind kind);

struct SignalThresholds {
  double idle_memory_bytes = 1024.0 * 1024 * 1024;  // 1 GiB
  double idle_sm_active_pct = 5.0;
  int64_t idle_after_ns = 60'000'000'000;  // 60 s
  double busy_util_pct = 80.0;
  double busy_sm_active_pct = 30.0;
  double tensor_sm_active_pct = 60.0;
  double tensor_active_pct = 1.0;
  double membw_dram_pct = 60.0;
  double membw_sm_active_pct = 30.0;
  int64_t signal_after_ns = 10'000'000'000;  // 10 s, for the non-idle signals.
};

struct Signal {
  SignalKind kind = SignalKind::kIdleHoldingMemory;
  int32_t device = 0;
  std::optional<int32_t> gpu_instance_id;
  int64_t since_ns = 0;  // When the condition started holding (sample time).
  // The process the signal is about: the holder for idle_holding_memory, otherwise the
  // process with the most GPU memory on that GPU. Empty when NVML listed none.
  std::optional<ProcessSample> process;
  std::string evidence;  // One line with the numbers, e.g. "util 100% but SM active 0.8%".
};

// Tracks how long each condition has held. update() is called once per sampling pass with
// every device's sample and every process; it returns the signals active after it.
class SignalTracker {
 public:
  explicit SignalTracker(SignalThresholds thresholds = {}) : t_(thresholds) {}
  std::vector<Signal> update(std::span<const DeviceSample> devices, std::span<const ProcessSample> processes);
  const SignalThresholds& thresholds() const { return t_; }

 private:
  // (kind, device, gpu instance or -1, pid or 0) -> time the condition started.
  using Key = std::tuple<SignalKind, int32_t, int32_t, uint32_t>;
  SignalThresholds t_;
  std::map<Key, int64_t> since_;
};

}  // namespace gpuscope
