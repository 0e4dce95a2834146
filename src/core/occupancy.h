// How much of the chip the kernels fill: the SM-active estimate from grid sizes, hardware
// counters sampled beside it, and theoretical occupancy from launch configurations.
#pragma once

#include <optional>

#include "core/device_context.h"
#include "core/report.h"

namespace gpuscope {

// SM-time covered, as a share of the window: kernel time weighted by min(1, blocks / SMs),
// capped at one per instant (an estimate; DESIGN.md, "Metrics that are estimates say so").
// Empty when the device's SM count is unknown: every kernel would count as filling the GPU and
// the "estimate" would only repeat utilization.
std::optional<double> sm_active_estimate(const DeviceContext& ctx);

// Sets r.hw_*_pct: the means of the device samples in the window (captures from `gpuscope run`),
// left empty where none was sampled.
void add_hardware_counters(const DeviceContext& ctx, DeviceReport& r);

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
