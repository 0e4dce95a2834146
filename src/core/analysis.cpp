#include "core/analysis.h"

#include <set>

#include <fmt/core.h>
#include <fmt/ranges.h>

#include "core/communication.h"
#include "core/device_context.h"
#include "core/findings.h"
#include "core/fusion.h"
#include "core/host_index.h"
#include "core/idle.h"
#include "core/intervals.h"
#include "core/kernel_mix.h"
#include "core/mfu.h"
#include "core/occupancy.h"
#include "core/ranks.h"
#include "core/steps.h"

namespace gpuscope {
namespace {

// One device's report: each analysis in turn, over the device's context. Later analyses read
// what earlier ones put into the report (docs/findings.md, for what each rule needs).
DeviceReport analyze_device(const Trace& trace, const HostIndex& host, int32_t device_id, const StepDetection& steps,
                            const AnalysisOptions& options) {
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
  add_serving_metrics(ctx, r);
  add_communication(ctx, r);
  const CopyStats copies = copy_stats(ctx);
  add_findings({ctx, r, mix.categories, mix.precisions, copies, gpu_paced_kernels(ctx)}, r);
  return r;
}

// What a trace without GPU work holds instead, and what that means (for Report::rejected).
std::string describe_without_gpu_work(const Trace& t) {
  if (t.truncated) {
    return "the file ends before any GPU events (the profiler writes them after the CPU events); the trace is "
           "truncated: export it again";
  }
  int64_t launches = 0, ops = 0, annotations = 0;
  for (const ApiCall& c : t.api_calls) launches += c.api_class == ApiClass::kLaunch;
  for (const HostEvent& e : t.host_events) (e.kind == HostEventKind::kOp ? ops : annotations) += 1;
  const std::string gpus = t.devices.empty()
                               ? std::string("no GPU")
                               : fmt::format("{} GPU{} ({})", t.devices.size(), t.devices.size() == 1 ? "" : "s",
                                             t.devices.front().name.empty() ? "unnamed" : t.devices.front().name);
  if (!t.device_samples.empty() && !t.command_line.empty() && launches == 0) {
    // A `gpuscope run` capture (only captures record the command line) of a process that loaded
    // CUDA and launched nothing: torchrun's launcher, torch.compile's compile workers.
    return fmt::format(
        "no GPU work in this process of the program (only {} hardware counter samples of the GPU): "
        "a helper such as a launcher or a compiler worker; its GPU work, if any, is in the other "
        "processes' captures",
        t.device_samples.size());
  }
  if (!t.device_samples.empty()) {
    return fmt::format(
        "no GPU kernels, copies or sets, only {} hardware counter samples: counters alone do not "
        "say what ran or when; record GPU activity too (ProfilerActivity.CUDA, or gpuscope run)",
        t.device_samples.size());
  }
  if (launches > 0) {
    // Kineto writes no kernel activity when CUPTI's range profiler collects per-kernel counters
    // instead (its "cuda_profiler_range" events), nor when CUDA activity is off.
    return fmt::format(
        "no GPU kernels, copies or sets, though the host made {} kernel launch calls on {}: a "
        "counter-collection run (CUPTI range profiler, per-kernel metrics instead of "
        "kernel activity) or a profile without ProfilerActivity.CUDA; record one with "
        "ProfilerActivity.CUDA and no counter collection",
        launches, gpus);
  }
  if (!t.api_calls.empty()) {
    return fmt::format("no GPU kernels, copies or sets, and none issued: {} CUDA API calls but no launches",
                       t.api_calls.size());
  }
  if (!t.other_accelerator.empty()) {
    return fmt::format(
        "no GPU kernels, copies or sets: the device work is on an accelerator gpuscope does not "
        "analyse ({}, such as MTIA's), beside {} CPU ops and {} annotations",
        t.other_accelerator, ops, annotations);
  }
  if (ops + annotations == 0)
    return "no GPU kernels, copies or sets, and no CUDA calls or CPU ops either: nothing gpuscope reads";
  return fmt::format(
      "no GPU kernels, copies or sets: CPU events only ({} ops, {} annotations, no CUDA calls) "
      "and the trace lists {}: {}",
      ops, annotations, gpus,
      t.devices.empty() ? "a CPU-only process, a profile without ProfilerActivity.CUDA, or work on "
                          "an accelerator whose activity gpuscope does not read (MTIA)"
                        : "the profiler ran without ProfilerActivity.CUDA");
}

// What the estimates left out as start-up (DeviceReport::one_off_ns), and whether anything
// steady is left: one-off calls that fill half the window or more mean the trace holds no
// steady state.
std::optional<std::string> one_off_warning(const DeviceReport& d) {
  // Said where it shows at the report's precision (idle shares to 0.1% of the window).
  if (pct(static_cast<double>(d.one_off_ns), static_cast<double>(d.window_ns)) < 0.05) return std::nullopt;
  std::vector<std::string> calls;
  for (size_t i = 0; i < d.one_off_calls.size() && i < 3; ++i) {
    calls.push_back(fmt::format("{} {}", d.one_off_calls[i].name, fmt_ms(d.one_off_calls[i].ns)));
  }
  std::string w = fmt::format(
      "GPU {}: {} of GPU idle time is in one-off calls ({}): start-up or warm-up (first-launch "
      "code loading, context set-up, CUDA graph capture, teardown), not the steady state; the "
      "estimates leave it out",
      d.device, fmt_ms(d.one_off_ns), fmt::join(calls, ", "));
  if (2 * d.one_off_ns >= d.window_ns) {
    w += "; it fills most of the window, so the trace holds no steady state: profile whole steps after warm-up "
         "(torch.profiler.schedule with warmup steps)";
  }
  return w;
}

// "184 years", "3.5 days", "2.0 hours": a long stretch of time for a message.
std::string long_duration(int64_t ns) {
  const double hours = static_cast<double>(ns) / 3.6e12;
  if (hours >= 24 * 365) return fmt::format("{:.0f} years", hours / (24 * 365.25));
  if (hours >= 48) return fmt::format("{:.1f} days", hours / 24);
  return fmt::format("{:.1f} hours", hours);
}

// A window stretched by a stray event: one event with a wrong timestamp (2.9e15 us) made a
// window of 184 years, utilization 0% and no word of why. Such a window has one stretch
// without GPU work of more than an hour that is most of it; profiles hold seconds to minutes
// of work, and a long `gpuscope run` capture is active throughout. Only windows over an hour
// are looked at, so ordinary traces cost nothing here.
std::optional<std::string> stretched_window(const Trace& t, const DeviceReport& r) {
  constexpr int64_t kHourNs = 3'600'000'000'000;
  if (r.window_ns <= kHourNs) return std::nullopt;
  std::vector<Interval> busy;
  auto add = [&](const auto& events) {
    for (const auto& e : events) {
      if (e.device == r.device) busy.push_back({e.start_ns, e.end_ns});
    }
  };
  add(t.kernels);
  add(t.memcpys);
  add(t.memsets);
  const int64_t start = r.window_start_ns, end = r.window_start_ns + r.window_ns;
  Interval widest{0, 0};
  for (const Interval& g : gaps(merge(std::move(busy)), start, end)) {
    if (g.end_ns - g.start_ns > widest.end_ns - widest.start_ns) widest = g;
  }
  const int64_t gap = widest.end_ns - widest.start_ns;
  if (gap <= kHourNs || gap < r.window_ns / 10 * 9) return std::nullopt;
  return fmt::format(
      "GPU {}: the analysed window is {} long, and {} of it has no GPU work at all (from {} to {} us on the "
      "trace's clock): most likely an event with a wrong timestamp; utilization and idle shares over this "
      "window mean little: check the events at either end of that stretch",
      r.device, long_duration(r.window_ns), long_duration(gap), widest.start_ns / 1000, widest.end_ns / 1000);
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

TraceAnalysis analyze_one_trace(const Trace& trace, const AnalysisOptions& options) {
  TraceAnalysis a;
  for (const auto& w : trace.warnings) a.warnings.push_back(fmt::format("{}: {}", trace.source, w));
  a.devices = analyze_trace(trace, options);
  for (const DeviceReport& d : a.devices) {
    // No step source at all: what is analysed is every moment of the device's activity, so
    // start-up, compilation and warm-up weigh as much as the steps. Said, never hidden.
    if (d.step_source == step_source_name(StepSource::kWholeWindow))
      a.warnings.push_back(fmt::format(
          "{}: no steady state found on device {} (no step markers, no step loop, no repeating kernel "
          "pattern): its {:.1f} ms of GPU activity are analysed as one window, start-up and warm-up included; "
          "trace more steps (a longer run, or --steps) for findings about the steady state",
          trace.source, d.device, static_cast<double>(d.window_ns) / 1e6));
    if (const std::optional<std::string> w = one_off_warning(d))
      a.warnings.push_back(fmt::format("{}: {}", trace.source, *w));
    if (auto w = stretched_window(trace, d)) a.warnings.push_back(fmt::format("{}: {}", trace.source, *w));
  }
  if (a.devices.empty()) {
    a.rejected = fmt::format("{}: {}", trace.source, describe_without_gpu_work(trace));
    a.valid_without_gpu_work = !trace.truncated && !(trace.api_calls.empty() && trace.host_events.empty() &&
                                                     trace.device_samples.empty() && trace.other_accelerator.empty());
  } else {
    a.facts = rank_facts(trace, a.devices);
  }
  return a;
}

Report analyze_traces(const std::vector<Trace>& traces, const AnalysisOptions& options) {
  std::vector<TraceAnalysis> parts;
  parts.reserve(traces.size());
  for (const Trace& t : traces) parts.push_back(analyze_one_trace(t, options));
  return combine_analyses(std::move(parts), options);
}

Report combine_analyses(std::vector<TraceAnalysis> parts, const AnalysisOptions& options) {
  Report report;
  std::vector<RankFacts> with_gpu_work;
  for (TraceAnalysis& a : parts) {
    for (auto& w : a.warnings) report.warnings.push_back(std::move(w));
    if (a.devices.empty()) {
      (a.valid_without_gpu_work ? report.without_gpu_work : report.rejected).push_back(std::move(a.rejected));
      continue;
    }
    with_gpu_work.push_back(std::move(a.facts));
    for (auto& d : a.devices) report.devices.push_back(std::move(d));
  }
  if (with_gpu_work.size() < 2) return report;
  const std::optional<std::string> disagreement = job_disagreement(with_gpu_work);
  if (!disagreement || options.as_job) report.ranks = summarize_ranks(report.devices);
  if (disagreement) {
    report.warnings.push_back(
        options.as_job
            ? fmt::format("the {} traces are analysed as one job (--as-job) although they do not agree: {}",
                          with_gpu_work.size(), *disagreement)
            : fmt::format("the {} traces are not one job, so each is analysed alone (no cross-rank summary): {}; "
                          "--as-job combines them anyway",
                          with_gpu_work.size(), *disagreement));
  }
  return report;
}

}  // namespace gpuscope
