#include "core/ranks.h"

#include <algorithm>

#include <fmt/core.h>

#include "core/findings.h"

namespace gpuscope {
namespace {

// Ranks whose steps were detected (a whole-window "step" says nothing about step time).
bool has_steps(const DeviceReport& d) { return d.step_mean_ms && d.step_source != "whole_window"; }

// Trigger: the slowest rank's step is at least 10% longer than the median of the others
// (`others_ms`, sorted, the slowest left out). Estimate: ranks meet at every collective, so
// each waits for the slowest: bringing it to the median would make every rank's step that much
// shorter.
void add_straggler(RankSummary& s, const std::vector<double>& others_ms) {
  s.step_median_ms = others_ms[(others_ms.size() - 1) / 2];  // The lower middle for even counts.
  const double speedup = *s.step_max_ms / *s.step_median_ms;
  if (speedup < 1.1) return;
  s.findings.push_back(
      {"straggler", severity_for(speedup), "One rank is slower than the others",
       fmt::format("{} takes {:.2f} ms per step against a median of {:.2f} ms over the other {} rank{}", s.slowest,
                   *s.step_max_ms, *s.step_median_ms, others_ms.size(), others_ms.size() == 1 ? "" : "s"),
       speedup,
       "Look at that rank's own idle causes above (input pipeline, host syncs); balance the data shards "
       "and sequence lengths across ranks (bucket or pad); check for CPU contention on its host (other "
       "processes, CPU affinity, fewer DataLoader workers than the others)."});
}

}  // namespace

RankSummary summarize_ranks(const std::vector<DeviceReport>& devices) {
  RankSummary s;
  s.ranks = static_cast<int64_t>(devices.size());
  s.busy_min_pct = 100;
  std::vector<double> step_ms;
  for (const auto& d : devices) {
    s.busy_min_pct = std::min(s.busy_min_pct, d.busy_pct);
    s.busy_max_pct = std::max(s.busy_max_pct, d.busy_pct);
    if (!has_steps(d)) continue;
    if (!s.step_max_ms || *d.step_mean_ms > *s.step_max_ms) {
      s.step_max_ms = d.step_mean_ms;
      s.slowest = d.source;
    }
    if (!s.step_min_ms || *d.step_mean_ms < *s.step_min_ms) s.step_min_ms = d.step_mean_ms;
    step_ms.push_back(*d.step_mean_ms);
  }
  if (step_ms.size() >= 2) {
    std::sort(step_ms.begin(), step_ms.end());
    step_ms.pop_back();
    add_straggler(s, step_ms);
  }
  return s;
}

}  // namespace gpuscope
