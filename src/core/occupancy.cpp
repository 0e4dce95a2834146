#include "core/occupancy.h"

#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

namespace gpuscope {

std::optional<double> sm_active_estimate(const DeviceContext& ctx) {
  const double sms = ctx.device && ctx.device->num_sms ? *ctx.device->num_sms : 0.0;
  if (sms <= 0) return std::nullopt;
  std::vector<std::pair<int64_t, double>> edges;
  edges.reserve(ctx.device_kernels.size() * 2);
  for (const Kernel* k : ctx.device_kernels) {
    const int64_t s = std::max(k->start_ns, ctx.window_start), e = std::min(k->end_ns, ctx.window_end);
    if (e <= s) continue;
    // Without its grid, a kernel is assumed to fill the GPU (an upper bound).
    const double w = k->has_grid() ? std::min(1.0, static_cast<double>(k->grid.volume()) / sms) : 1.0;
    edges.emplace_back(s, w);
    edges.emplace_back(e, -w);
  }
  std::sort(edges.begin(), edges.end());
  double level = 0, area = 0;
  int64_t last = ctx.window_start;
  for (const auto& [t, w] : edges) {
    area += std::min(1.0, std::max(0.0, level)) * static_cast<double>(t - last);
    level += w;
    last = t;
  }
  return pct(area, static_cast<double>(ctx.window()));
}

void add_hardware_counters(const DeviceContext& ctx, DeviceReport& r) {
  double util = 0, sm = 0, tensor = 0;
  int n_util = 0, n_sm = 0, n_tensor = 0;
  for (const DeviceSample& s : ctx.trace.device_samples) {
    if (s.device != ctx.device_id || !ctx.in_window(s.time_ns)) continue;
    if (s.gpu_util_pct) util += *s.gpu_util_pct, ++n_util;
    if (s.sm_active_pct) sm += *s.sm_active_pct, ++n_sm;
    if (s.tensor_active_pct) tensor += *s.tensor_active_pct, ++n_tensor;
  }
  if (n_util) r.hw_gpu_util_pct = util / n_util;
  if (n_sm) r.hw_sm_active_pct = sm / n_sm;
  if (n_tensor) r.hw_tensor_active_pct = tensor / n_tensor;
}

std::optional<Occupancy> theoretical_occupancy(const Device& dev, const Kernel& k) {
  const uint64_t threads = k.block.volume();
  if (threads == 0 || !dev.max_threads_per_sm || *dev.max_threads_per_sm <= 0) return std::nullopt;
  const double max_warps = *dev.max_threads_per_sm / 32.0;
  const double warps_per_block = std::ceil(static_cast<double>(threads) / 32.0);
  constexpr double kMaxBlocksPerSm = 32;
  double blocks = std::floor(static_cast<double>(*dev.max_threads_per_sm) / static_cast<double>(threads));
  OccupancyLimiter limiter = OccupancyLimiter::kThreads;
  if (kMaxBlocksPerSm < blocks) blocks = kMaxBlocksPerSm, limiter = OccupancyLimiter::kBlocks;
  if (k.registers_per_thread && *k.registers_per_thread > 0 && dev.regs_per_sm) {
    const double by_regs = std::floor(static_cast<double>(*dev.regs_per_sm) /
                                      (static_cast<double>(*k.registers_per_thread) * warps_per_block * 32.0));
    if (by_regs < blocks) blocks = by_regs, limiter = OccupancyLimiter::kRegisters;
  }
  if (k.shared_memory_bytes && *k.shared_memory_bytes > 0 && dev.shared_mem_per_sm_bytes) {
    const double by_smem = std::floor(static_cast<double>(*dev.shared_mem_per_sm_bytes) / *k.shared_memory_bytes);
    if (by_smem < blocks) blocks = by_smem, limiter = OccupancyLimiter::kSharedMemory;
  }
  return Occupancy{std::min(1.0, blocks * warps_per_block / max_warps), limiter};
}

}  // namespace gpuscope
