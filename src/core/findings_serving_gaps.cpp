// The serving finding on the host between iterations (docs/design.md, "Serving" and "Findings"):
// GPU idle between forward iterations while the host schedules (scheduling-gap); and the serving
// metrics of the report (iterations per second, tokens per iteration, GPU time per iteration).
#include <algorithm>
#include <cmath>
#include <map>
#include <span>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include <fmt/core.h>

#include "core/findings.h"
#include "core/findings_serving_detail.h"
#include "core/intervals.h"
#include "core/steps.h"

namespace gpuscope {
using serving_detail::is_inference;
using serving_detail::weight_gemm;

namespace {

// The host idle before each iteration's first GPU work while the host runs code that issues
// none (not launching, copying, allocating, loading input, in a collective or blocked on the
// GPU): per iteration, in the order of the steps.
std::vector<double> iteration_gaps(const FindingContext& f) {
  const DeviceContext& d = f.device;
  std::vector<double> out;
  if (d.steps.size() < 2) return out;
  constexpr uint16_t kGpuWork =
      kHostMemcpy | kHostAlloc | kHostInput | kHostCollective | kHostLaunch | kHostBlocking | kHostIssuing;
  for (const Step& s : d.steps) {
    const std::vector<Interval> idle = gaps(d.kernel_union, s.start_ns, s.end_ns);
    double host_ns = 0;
    if (!idle.empty() && idle.back().end_ns == s.end_ns) {
      const Interval gap = idle.back();
      auto next = std::lower_bound(d.device_kernels.begin(), d.device_kernels.end(), gap.end_ns,
                                   [](const Kernel* k, int64_t t) { return k->start_ns < t; });
      const ThreadTimeline* thread = next != d.device_kernels.end() ? launching_thread(d, *next) : nullptr;
      if (!thread) thread = d.host.main_thread();
      for (int64_t t = std::max(gap.start_ns, thread ? thread->first_ns : gap.end_ns);
           thread && t < std::min(gap.end_ns, thread->last_ns);) {
        const HostSegment* seg = thread->at(t);
        int64_t end = std::min(gap.end_ns, thread->last_ns);
        if (seg) {
          end = std::min(end, seg->end_ns);
        } else {
          auto nxt = std::upper_bound(thread->segments.begin(), thread->segments.end(), t,
                                      [](int64_t v, const HostSegment& x) { return v < x.start_ns; });
          if (nxt != thread->segments.end()) end = std::min(end, nxt->start_ns);
        }
        end = std::max(end, t + 1);
        const PySample* sample = d.host.py_sample_at(t);
        if ((!seg || (seg->flags & kGpuWork) == 0) && !(sample && sample->data)) {
          host_ns += static_cast<double>(end - t - covered(d.copy_union, t, end));
        }
        t = end;
      }
    }
    out.push_back(host_ns);
  }
  return out;
}
}  // namespace

int64_t scheduling_gap_ns(const FindingContext& f) {
  if (!is_inference(f)) return 0;
  double total = 0;
  for (double g : iteration_gaps(f)) total += g;
  return pct(total, f.window_ns()) < 2.0 ? 0 : static_cast<int64_t>(total);
}

// Trigger: inference, two or more iterations, and the host idle before the iterations' first
// GPU work (host code that issues no GPU work: the scheduler, tokenizer, sampling on the CPU)
// over 2% of the window. Estimate: that host work runs while the GPU computes the previous
// iteration (asynchronous scheduling), so the gaps go, but an iteration cannot be shorter than
// the host's part: the window becomes max(window - gaps, gaps).
std::optional<Finding> scheduling_gap(const FindingContext& f) {
  if (scheduling_gap_ns(f) == 0) return std::nullopt;
  std::vector<double> gaps_ns = iteration_gaps(f);
  double total = 0;
  for (double g : gaps_ns) total += g;
  const double mean = total / static_cast<double>(gaps_ns.size());
  const double p90 = percentile(gaps_ns, 0.9);
  const double base = f.base_ns();
  const double fixed = std::max(base - total, total);
  const IdleCause& host = f.idle(IdleCauseId::kHost);
  std::string ev = fmt::format(
      "the GPU idles {} per iteration on average (p90 {}) between forward iterations while the host runs "
      "code that issues no GPU work: {:.1f}% of the wall time over {} iterations",
      fmt_ms(static_cast<int64_t>(mean)), fmt_ms(static_cast<int64_t>(p90)), pct(total, f.window_ns()), gaps_ns.size());
  if (!host.top_host.empty()) ev += fmt::format("; host idle overall was in {}", host.top_host.front().name);
  return proposal("The GPU waits between iterations while the host schedules", std::move(ev),
                  f.speedup_removing(base - fixed),
                  "Overlap the scheduler with the GPU: prepare the next batch (admission, tokenization, "
                  "sampling bookkeeping) while the current iteration runs, sample on the GPU, and do not wait "
                  "for a batch to fill: admit requests every iteration (continuous batching). Estimate "
                  "(iterations per second) assumes the host work overlaps the previous iteration's GPU work; "
                  "time spent waiting for requests to arrive is load, not waste: there the gain is latency.");
}

void add_serving_metrics(const DeviceContext& ctx, DeviceReport& r) {
  if ((r.step_source != step_source_name(StepSource::kForwardPass) &&
       r.step_source != step_source_name(StepSource::kPythonLoop)) ||
      r.window_ns <= 0)
    return;
  const double steps = static_cast<double>(std::max<int64_t>(1, r.step_count));
  ServingStats s;
  s.iterations_per_s = steps / (static_cast<double>(r.window_ns) / 1e9);
  s.gpu_ms_per_iteration =
      static_cast<double>(covered(ctx.kernel_union, ctx.window_start, ctx.window_end)) / steps / 1e6;
  double tokens = 0;
  int64_t with_tokens = 0;
  for (const Step& st : ctx.analysed_host_steps) {
    int64_t m = 0;
    auto it = std::lower_bound(ctx.trace.host_events.begin(), ctx.trace.host_events.end(), st.start_ns,
                               [](const HostEvent& e, int64_t t) { return e.start_ns < t; });
    for (; it != ctx.trace.host_events.end() && it->start_ns < st.end_ns; ++it) {
      if (const auto g = weight_gemm(ctx.trace, *it)) m = std::max(m, g->m);
    }
    if (m > 0) {
      tokens += static_cast<double>(m);
      ++with_tokens;
    }
  }
  if (with_tokens > 0) s.tokens_per_iteration_mean = tokens / static_cast<double>(with_tokens);
  r.serving = s;
}

}  // namespace gpuscope
