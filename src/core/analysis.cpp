#include "core/analysis.h"

#include <set>

#include <fmt/core.h>

#include "core/device_context.h"
#include "core/findings.h"
#include "core/fusion.h"
#include "core/host_index.h"
#include "core/idle.h"
#include "core/kernel_mix.h"
#include "core/mfu.h"
#include "core/occupancy.h"
#include "core/ranks.h"
#include "core/steps.h"

namespace gpuscope {
namespace {

// One device's report: each analysis in turn, over the device's context. Later analyses read
// what earlier ones put into the report (docs/design.md, "Findings", for what each rule needs).
DeviceReport analyze_device(const Trace& trace, const HostIndex& host, int32_t device_id,
                            const StepDetection& steps, const AnalysisOptions& options) {
  const DeviceContext ctx(trace, host, device_id, steps);
  DeviceReport r;
  r.source = trace.source;
  r.rank = trace.rank;
  r.device = device_id;
  r.name = ctx.device ? ctx.device->name : fmt::format("GPU {}", device_id);
  if (ctx.device) r.num_sms = ctx.device->num_sms;
  r.window_start_ns = ctx.window_start;
  r.window_ns = ctx.window();
  const double window = static_cast<double>(ctx.window());
  r.busy_pct = pct(covered(ctx.kernel_union, ctx.window_start, ctx.window_end), window);
  r.copy_pct = pct(covered(ctx.copy_union, ctx.window_start, ctx.window_end), window);
  r.sm_active_est_pct = sm_active_estimate(ctx);
  add_idle_attribution(ctx, r);
  add_hardware_counters(ctx, r);
  const KernelMix mix = add_kernel_mix(ctx, r);
  r.fusion = fusion_candidates(ctx, mix.categories, steps.steps);
  add_steps_and_mfu(ctx, steps, options, r);
  const CopyStats copies = copy_stats(ctx);
  add_findings({ctx, r, mix.categories, mix.precisions, copies}, r);
  return r;
}

}  // namespace

std::vector<DeviceReport> analyze_trace(const Trace& trace, const AnalysisOptions& options) {
  std::set<int32_t> devices;
  for (const Kernel& k : trace.kernels) devices.insert(k.device);
  for (const Memcpy& m : trace.memcpys) devices.insert(m.device);
  for (const Memset& m : trace.memsets) devices.insert(m.device);
  std::vector<DeviceReport> out;
  if (devices.empty()) return out;
  const HostIndex host(trace);
  StepDetection steps = detect_steps(trace, options.step_range);
  drop_warmup_steps(steps);
  for (int32_t d : devices) {
    DeviceReport r = analyze_device(trace, host, d, steps, options);
    if (r.window_ns > 0) out.push_back(std::move(r));
  }
  return out;
}

Report analyze_traces(const std::vector<Trace>& traces, const AnalysisOptions& options) {
  Report report;
  for (const Trace& t : traces) {
    for (const auto& w : t.warnings) report.warnings.push_back(fmt::format("{}: {}", t.source, w));
    auto devices = analyze_trace(t, options);
    if (devices.empty() && t.truncated) {
      report.rejected.push_back(fmt::format(
          "{}: the file ends before any GPU events (the profiler writes them after the CPU events); "
          "the trace is truncated: export it again",
          t.source));
    } else if (devices.empty()) {
      report.rejected.push_back(fmt::format(
          "{}: no GPU kernels, copies or sets in this trace (a CPU-only rank, or the profiler ran without "
          "ProfilerActivity.CUDA)",
          t.source));
    }
    for (auto& d : devices) report.devices.push_back(std::move(d));
  }
  if (traces.size() > 1 && report.devices.size() > 1) report.ranks = summarize_ranks(report.devices);
  return report;
}

}  // namespace gpuscope
