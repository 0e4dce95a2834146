#include "core/ranks.h"

#include <algorithm>
#include <climits>
#include <map>
#include <set>

#include <fmt/core.h>
#include <fmt/ranges.h>

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

RankFacts rank_facts(const Trace& trace, const std::vector<DeviceReport>& devices) {
  RankFacts f;
  f.rank = trace.rank;
  f.world_size = trace.world_size;
  for (const DeviceReport& d : devices) {
    const Device* dev = trace.find_device(d.device);
    if (dev && !dev->name.empty()) f.device_models.push_back(dev->name);
  }
  auto extend = [&f](const auto& events) {
    for (const auto& e : events) {
      f.start_ns = std::min(f.start_ns, e.start_ns);
      f.end_ns = std::max(f.end_ns, e.end_ns);
    }
  };
  extend(trace.kernels);
  extend(trace.memcpys);
  extend(trace.memsets);
  extend(trace.api_calls);
  extend(trace.host_events);
  return f;
}

std::optional<std::string> job_disagreement(const std::vector<RankFacts>& traces) {
  std::vector<std::string> reasons;
  size_t without_rank = 0;
  std::map<int32_t, int> traces_per_rank;
  std::set<int32_t> world_sizes;
  for (const RankFacts& t : traces) {
    if (!t.rank || !t.world_size) {
      ++without_rank;
      continue;
    }
    traces_per_rank[*t.rank] += 1;
    world_sizes.insert(*t.world_size);
  }
  if (without_rank > 0) {
    reasons.push_back(fmt::format("{} of {} traces name no rank and world size (distributedInfo)", without_rank,
                                  traces.size()));
  }
  for (const auto& [rank, n] : traces_per_rank) {
    if (n > 1) reasons.push_back(fmt::format("rank {} appears in {} traces", rank, n));
  }
  if (world_sizes.size() > 1) {
    reasons.push_back(fmt::format("world sizes differ ({})", fmt::join(world_sizes, ", ")));
  } else if (world_sizes.size() == 1 && !traces_per_rank.empty() &&
             traces_per_rank.rbegin()->first >= *world_sizes.begin()) {
    reasons.push_back(fmt::format("rank {} is outside the world size {}", traces_per_rank.rbegin()->first,
                                  *world_sizes.begin()));
  }

  // The models of the devices that ran work, where the trace names them.
  std::set<std::string> models;
  for (const RankFacts& t : traces) models.insert(t.device_models.begin(), t.device_models.end());
  if (models.size() > 1) reasons.push_back(fmt::format("device models differ ({})", fmt::join(models, ", ")));

  // Ranks of one job run at the same time: their time ranges share an instant. Each trace is
  // on its own host clock, so traces of hosts whose clocks differ may fail this too.
  int64_t latest_start = INT64_MIN, earliest_end = INT64_MAX;
  for (const RankFacts& t : traces) {
    latest_start = std::max(latest_start, t.start_ns);
    earliest_end = std::min(earliest_end, t.end_ns);
  }
  if (latest_start >= earliest_end) {
    reasons.push_back("their time ranges do not overlap (recorded at different times, or on different clocks)");
  }
  if (reasons.empty()) return std::nullopt;
  return fmt::format("{}", fmt::join(reasons, "; "));
}

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
