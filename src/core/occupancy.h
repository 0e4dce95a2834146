// How much of the chip the kernels fill: the SM-active estimate from grid sizes, hardware
// counters sampled beside it, and theoretical occupancy from launch configurations.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/device_context.h"
#include "core/report.h"

namespace gpuscope {

// SM-time covered, as a share of the window: kernel time weighted by min(1, blocks / SMs),
// capped at one per instant (an estimate; DESIGN.md, "Metrics that are estimates say so").
// Empty when the device's SM count is unknown: every kernel would count as filling the GPU and
// the "estimate" would only repeat utilization.
std::optional<double> sm_active_estimate(const DeviceContext& ctx);

// How far the device's hardware readings lag its kernel timeline. NVML's GPM readings of a
// sample labelled t describe, on NVIDIA's H100 and H200, about [t - interval - 0.1 s, t - 0.1 s]
// of the kernels the trace recorded: measured by the lag, from 0 to kMaxSampleLagNs in
// kSampleLagStepNs, at which the samples' SM active best follows the share of their interval
// that kernels ran (Pearson correlation over at least kMinLagSamples samples whose intervals lie
// where kernels were recorded: the whole run, or a bounded window alone). Empty where that cannot
// be told: too few such samples, or no lag at which they follow the kernels (correlation at
// least kMinLagCorrelation).
inline constexpr int64_t kMaxSampleLagNs = 300'000'000;
inline constexpr int64_t kSampleLagStepNs = 10'000'000;
inline constexpr size_t kMinLagSamples = 6;
inline constexpr double kMinLagCorrelation = 0.8;
std::optional<int64_t> hardware_sample_lag(const DeviceContext& ctx, const std::vector<const DeviceSample*>& samples);

// Sets r.hw_*_pct (captures from `gpuscope run`): the device samples' means over the window,
// each sample shifted by hardware_sample_lag and weighted by the part of its interval inside
// the window (a sample with under 90% of it inside is left out: its reading is of other time);
// empty where the samples left cover under half the window, or none was sampled. Sets
// r.hw_sample_lag_ns where measured. Where the lag is not measured, a mean is reported only if
// every lag from 0 to kMaxSampleLagNs gives it within kMaxLagSpreadPct points (their median): a
// window short beside the samples' alignment is left unmeasured rather than read from the time
// around it.
inline constexpr double kMaxLagSpreadPct = 5.0;
void add_hardware_counters(const DeviceContext& ctx, DeviceReport& r);

// Where a report's hardware readings came from, for the text and HTML reports: "GPM, read N ms
// late, aligned" where a lag was measured, "GPM, sampled" where none was, or why there is no
// reading (`value` empty): none of the samples covers the window, or the input has no GPM samples.
std::string hardware_source(const DeviceReport& r, const std::optional<double>& value);

enum class OccupancyLimiter { kThreads, kRegisters, kSharedMemory, kBlocks };
struct Occupancy {
  double fraction;  // Resident warps / maximum warps per SM.
  OccupancyLimiter limiter;
};

// Theoretical occupancy of a kernel from its launch configuration and the device's per-SM
// limits (the CUDA occupancy calculator's model, without allocation granularity); empty when
// the block size or the device's limits are unknown.
std::optional<Occupancy> theoretical_occupancy(const Device& dev, const Kernel& k);

}  // namespace gpuscope
