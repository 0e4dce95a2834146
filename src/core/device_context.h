// What the per-device analyses share: one device's activity in a trace, its analysis window and
// per-name caches. Built once per device (analyze_device), then read by every analysis.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/catalog.h"
#include "core/host_index.h"
#include "core/intervals.h"
#include "core/name_cache.h"
#include "core/steps.h"
#include "core/trace.h"

namespace gpuscope {

// "void at::native::vectorized_elementwise_kernel<4, at::native::GeluFunctor<float>>(...)" ->
// "vectorized_elementwise_kernel<GeluFunctor>": the function name without namespaces, plus
// the first functor-like template argument, which is what tells elementwise kernels apart.
std::string short_kernel_name(std::string_view name);

struct DeviceContext {
  // Collects the device's kernels, copies and sets and sets the window: the steps on the
  // device timeline (device_steps_from), or the span of the device's activity.
  DeviceContext(const Trace& trace, const HostIndex& host, int32_t device_id, const StepDetection& steps);

  const Trace& trace;
  const HostIndex& host;
  const Device* device;  // Null when the trace does not describe it.
  int32_t device_id;
  std::vector<const Kernel*> device_kernels;  // All of the device's kernels, sorted by start.
  std::vector<const Kernel*> kernels;         // Those that start in the window, sorted by start.
  std::vector<Interval> kernel_union;         // Merged kernel intervals (all of them).
  std::vector<Interval> copy_union;           // Merged copy and set intervals (all of them).
  int64_t window_start = 0, window_end = 0;
  int64_t window() const { return window_end - window_start; }
  // The steps on this device's timeline (empty without detected steps); the window spans them.
  std::vector<Step> steps;
  std::vector<Step> analysed_host_steps;  // The host ranges of `steps`, one each.
  int64_t steps_dropped_last = 0;         // 1 when the last (partial) step was left out.
  // The device's activity left out of the window: start-up and warm-up before it, teardown
  // after it.
  int64_t excluded_before_ns = 0, excluded_after_ns = 0;
  bool in_window(int64_t t) const { return t >= window_start && t < window_end; }

  // Per-name results, computed once per distinct kernel name (memoised, hence mutable).
  mutable NameCache<KernelCategory, KernelCategory (*)(std::string_view)> category_of{trace.strings, &classify_kernel};
  mutable NameCache<Precision, Precision (*)(std::string_view)> precision_of{trace.strings,
                                                                             &precision_from_kernel_name};
  mutable NameCache<std::string, std::string (*)(std::string_view)> short_name_of{trace.strings, &short_kernel_name};

 private:
  void device_steps_from(const std::vector<Step>& host_steps_in);
};

// The host thread whose launch call started `k`, if known.
const ThreadTimeline* launching_thread(const DeviceContext& ctx, const Kernel* k);

// Host<->device copies in the window: pageable ones to re-price, pinned ones for the
// achievable rate.
struct CopyStats {
  int64_t pageable_count = 0;
  uint64_t pageable_bytes = 0;
  int64_t pinned_count = 0;                  // Host<->device copies from or to pinned memory.
  int64_t unknown_memory_count = 0;          // Host<->device copies whose host memory the trace does not say.
  std::optional<double> pinned_bytes_per_s;  // Best host<->device pinned rate seen (>= 1 MiB).
  int64_t other_copy_ns = 0;   // Device time of the window's host<->device copies not from pageable memory.
  int64_t host_copy_ns = 0;    // Device time of the window's host<->device copies (any memory).
  int64_t device_copy_ns = 0;  // Device time of the window's device-to-device and peer copies.
};
CopyStats copy_stats(const DeviceContext& ctx);

}  // namespace gpuscope
