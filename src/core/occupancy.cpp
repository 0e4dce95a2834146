#include "core/occupancy.h"

#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

#include <fmt/core.h>

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

namespace {

double correlation(const std::vector<double>& x, const std::vector<double>& y) {
  const double n = static_cast<double>(x.size());
  double mx = 0, my = 0;
  for (size_t i = 0; i < x.size(); ++i) mx += x[i] / n, my += y[i] / n;
  double sxy = 0, sxx = 0, syy = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    sxy += (x[i] - mx) * (y[i] - my);
    sxx += (x[i] - mx) * (x[i] - mx);
    syy += (y[i] - my) * (y[i] - my);
  }
  return sxx > 0 && syy > 0 ? sxy / std::sqrt(sxx * syy) : 0.0;
}

}  // namespace

std::optional<int64_t> hardware_sample_lag(const DeviceContext& ctx, const std::vector<const DeviceSample*>& samples) {
  if (ctx.kernel_union.empty()) return std::nullopt;
  // Where kernels were recorded, so that no kernel means an idle GPU: a capture of the whole run
  // records from the program's first CUDA call to its last (or to the cap on its steps); a
  // bounded window, only the kernels inside it.
  int64_t first = ctx.kernel_union.front().start_ns, last = ctx.kernel_union.back().end_ns;
  const HostMarks& marks = ctx.host.marks();
  if (!marks.window.untraced_step_us && !marks.window.time_window_us) {
    for (const ApiCall& c : ctx.trace.api_calls) {
      first = std::min(first, c.start_ns);
      last = std::max(last, c.end_ns);
    }
  }
  std::vector<const DeviceSample*> inside;  // every candidate's interval lies where kernels were recorded
  for (const DeviceSample* s : samples) {
    if (s->sm_active_pct && s->interval_ns > 0 && s->time_ns - s->interval_ns - kMaxSampleLagNs >= first &&
        s->time_ns <= last)
      inside.push_back(s);
  }
  if (inside.size() < kMinLagSamples) return std::nullopt;
  std::vector<double> active;
  for (const DeviceSample* s : inside) active.push_back(*s->sm_active_pct);
  double best = -2;
  int64_t best_lag = 0;
  for (int64_t lag = 0; lag <= kMaxSampleLagNs; lag += kSampleLagStepNs) {
    std::vector<double> busy;
    for (const DeviceSample* s : inside)
      busy.push_back(
          static_cast<double>(covered(ctx.kernel_union, s->time_ns - s->interval_ns - lag, s->time_ns - lag)) /
          static_cast<double>(s->interval_ns));
    const double r = correlation(active, busy);
    if (r > best + 1e-9) best = r, best_lag = lag;
  }
  // Readings that follow the kernels closely at some lag. Where the GPU's activity is flat, no lag
  // is told apart (no correlation at any).
  if (best < kMinLagCorrelation) return std::nullopt;
  return best_lag;
}

namespace {

struct WindowMeans {
  std::optional<double> util, sm, tensor;
};

// The samples' means over the window with each sample's interval `shift` earlier: a sample counts
// with the part of its interval inside the window, where that is at least 90% of it; a mean over
// samples that cover under half the window is left empty.
WindowMeans window_means(const DeviceContext& ctx, const std::vector<const DeviceSample*>& samples, int64_t shift) {
  double util = 0, sm = 0, tensor = 0, w_util = 0, w_sm = 0, w_tensor = 0;
  bool timed = true;
  for (const DeviceSample* s : samples) {
    double w = 1;
    if (s->interval_ns > 0) {
      const int64_t a = std::max(s->time_ns - s->interval_ns - shift, ctx.window_start);
      const int64_t b = std::min(s->time_ns - shift, ctx.window_end);
      if (10 * (b - a) < 9 * s->interval_ns) continue;
      w = static_cast<double>(b - a);
    } else {
      timed = false;
      if (!ctx.in_window(s->time_ns)) continue;
    }
    if (s->gpu_util_pct) util += w * *s->gpu_util_pct, w_util += w;
    if (s->sm_active_pct) sm += w * *s->sm_active_pct, w_sm += w;
    if (s->tensor_active_pct) tensor += w * *s->tensor_active_pct, w_tensor += w;
  }
  const auto mean = [&](double sum, double w) -> std::optional<double> {
    if (w <= 0 || (timed && 2 * w < static_cast<double>(ctx.window()))) return std::nullopt;
    return sum / w;
  };
  return {mean(util, w_util), mean(sm, w_sm), mean(tensor, w_tensor)};
}

}  // namespace

void add_hardware_counters(const DeviceContext& ctx, DeviceReport& r) {
  std::vector<const DeviceSample*> samples;
  for (const DeviceSample& s : ctx.trace.device_samples) {
    if (s.device == ctx.device_id && !s.gpu_instance_id) samples.push_back(&s);
  }
  r.hw_gpm_samples =
      std::count_if(samples.begin(), samples.end(), [](const DeviceSample* s) { return s->sm_active_pct.has_value(); });
  if (samples.empty()) return;
  if (const std::optional<int64_t> lag = hardware_sample_lag(ctx, samples)) {
    r.hw_sample_lag_ns = *lag;
    const WindowMeans m = window_means(ctx, samples, *lag);
    r.hw_gpu_util_pct = m.util, r.hw_sm_active_pct = m.sm, r.hw_tensor_active_pct = m.tensor;
    return;
  }
  // The lag not measured: a mean is reported only where every lag it could be gives about the
  // same (within kMaxLagSpreadPct), as the median of those; a short window whose readings turn
  // on the alignment is left unmeasured.
  std::vector<WindowMeans> at;
  for (int64_t lag = 0; lag <= kMaxSampleLagNs; lag += kSampleLagStepNs) at.push_back(window_means(ctx, samples, lag));
  const auto robust = [&](std::optional<double> WindowMeans::*field) -> std::optional<double> {
    std::vector<double> v;
    for (const WindowMeans& m : at) {
      if (!(m.*field)) return std::nullopt;
      v.push_back(*(m.*field));
    }
    std::sort(v.begin(), v.end());
    if (v.back() - v.front() > kMaxLagSpreadPct) return std::nullopt;
    return v[v.size() / 2];
  };
  r.hw_gpu_util_pct = robust(&WindowMeans::util);
  r.hw_sm_active_pct = robust(&WindowMeans::sm);
  r.hw_tensor_active_pct = robust(&WindowMeans::tensor);
}

std::string hardware_source(const DeviceReport& r, const std::optional<double>& value) {
  if (!value) return r.hw_gpm_samples > 0 ? "no GPM reading covers this window" : "no GPM samples in the input";
  if (r.hw_sample_lag_ns && *r.hw_sample_lag_ns > 0)
    return fmt::format("GPM, read {} ms late, aligned", *r.hw_sample_lag_ns / 1'000'000);
  return "GPM, sampled";
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
