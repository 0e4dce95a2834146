#include "core/ranks.h"

#include <algorithm>
#include <array>
#include <climits>
#include <map>
#include <set>
#include <string_view>
#include <utility>

#include <fmt/core.h>
#include <fmt/ranges.h>

#include "core/findings.h"

namespace gpuscope {
namespace {

// Ranks whose steps were detected (a whole-window "step" says nothing about step time).
bool has_steps(const DeviceReport& d) { return d.step_mean_ms && d.step_source != "whole_window"; }

// Where a rank's mean step goes, in ms: compute (kernels other than communication),
// communication wait (communication kernels no compute overlaps, plus idle while the host is
// in a collective), input (idle in data loading) and host (the rest of the idle time). They
// sum to the step.
struct StepParts {
  static constexpr std::array<std::string_view, 4> kNames = {"compute", "communication wait", "input",
                                                             "host (launch, sync, Python)"};
  std::array<double, 4> ms{};
};

double idle_pct_of(const DeviceReport& d, IdleCauseId id) {
  for (const IdleCause& c : d.idle_causes) {
    if (c.cause == id) return c.pct;
  }
  return 0;
}

StepParts step_parts(const DeviceReport& d) {
  const double step = *d.step_mean_ms / 100.0;  // ms per percent of the window.
  const double compute = d.communication ? d.communication->busy_without_comm_pct : d.busy_pct;
  const double exposed = d.communication ? d.communication->exposed_pct : 0.0;
  const double collective = idle_pct_of(d, IdleCauseId::kCollective);
  const double input = idle_pct_of(d, IdleCauseId::kInput);
  return {{compute * step, (exposed + collective) * step, input * step,
           std::max(0.0, d.idle_pct - collective - input) * step}};
}

// "; its step is slow in input: 31.0 ms against 2.0 ms on the others": the part of the slowest
// rank's step that exceeds the others' median the most, if any does by 5% of the step.
std::string slow_part(const DeviceReport& slowest, const std::vector<const DeviceReport*>& others) {
  const StepParts slow = step_parts(slowest);
  size_t best = 0;
  double best_excess = 0, best_median = 0;
  for (size_t i = 0; i < StepParts::kNames.size(); ++i) {
    std::vector<double> v;
    for (const DeviceReport* o : others) v.push_back(step_parts(*o).ms[i]);
    std::sort(v.begin(), v.end());
    const double median = v[(v.size() - 1) / 2];
    if (slow.ms[i] - median > best_excess) {
      best = i;
      best_excess = slow.ms[i] - median;
      best_median = median;
    }
  }
  if (best_excess < 0.05 * *slowest.step_mean_ms) return "";
  return fmt::format("; its step is longer in {}: {:.2f} ms against a median of {:.2f} ms on the others",
                     StepParts::kNames[best], slow.ms[best], best_median);
}

// A rank's own time per step: its step less its communication wait. Ranks meet at every
// collective, so a rank that arrives early waits there for the others: a long wait marks a fast
// rank, and the rank that arrives last (the most own time, the least wait) is the one the
// others wait for. Its step is the job's, whatever the window edges make the others' look like.
double own_ms(const DeviceReport& d) {
  const StepParts p = step_parts(d);
  return *d.step_mean_ms - p.ms[1];
}

// Trigger: the rank with the most own time (step less communication wait) has at least 10% of
// its step more than the median of the others' own time. Estimate: every rank waits for it at
// each collective, so bringing its own time to that median shortens the job's step (its step)
// by the difference: step / (step - excess).
void add_straggler(RankSummary& s, const std::vector<const DeviceReport*>& with_steps) {
  const DeviceReport* straggler = with_steps.front();
  for (const DeviceReport* d : with_steps) {
    if (own_ms(*d) > own_ms(*straggler)) straggler = d;
  }
  std::vector<const DeviceReport*> others;
  std::vector<double> others_own;
  for (const DeviceReport* d : with_steps) {
    if (d == straggler) continue;
    others.push_back(d);
    others_own.push_back(own_ms(*d));
  }
  std::sort(others_own.begin(), others_own.end());
  const double median_own = others_own[(others_own.size() - 1) / 2];  // The lower middle for even counts.
  const double step = *straggler->step_mean_ms, own = own_ms(*straggler);
  const double excess = own - median_own;
  const double fixed = step - excess;
  if (excess <= 0 || fixed <= 0) return;
  const double speedup = step / fixed;
  if (speedup < 1.1) return;
  s.findings.push_back(
      {"straggler", severity_for(speedup), "One rank is slower than the others",
       fmt::format("{}{} works {:.2f} ms per step (its step {:.2f} ms less {:.2f} ms waiting in communication, "
                   "the least wait of the job: it arrives last) against a median of {:.2f} ms over the other {} "
                   "rank{}{}; the job's step without the {:.2f} ms difference{}",
                   straggler->rank ? fmt::format("rank {}: ", *straggler->rank) : "", straggler->source, own, step,
                   step - own, median_own, others.size(), others.size() == 1 ? "" : "s", slow_part(*straggler, others),
                   excess, estimate_clause(step * 1e6, fixed * 1e6, "step")),
       speedup,
       "Look at that rank's own idle causes above (input pipeline, host syncs); balance the data shards "
       "and sequence lengths across ranks (bucket or pad); check for CPU contention on its host (other "
       "processes, CPU affinity, fewer DataLoader workers than the others)."});
}

// Findings about one GPU's own work, as opposed to waiting for the others.
bool single_gpu_finding(const Finding& f) {
  return f.id != "exposed-communication" && f.id != "collective-wait" && f.est_speedup;
}

// Trigger: 2+ ranks, and on the median rank the largest single-GPU finding is worth x1.25 or
// more. Estimate: that speedup, which every rank gets at once, with no added GPU (more GPUs
// at best add their share of throughput at the same per-GPU waste, and more communication).
void add_scale_before_healthy(RankSummary& s, const std::vector<DeviceReport>& devices) {
  std::vector<std::pair<double, const DeviceReport*>> top;
  for (const DeviceReport& d : devices) {
    double best = 1.0;
    for (const Finding& f : d.findings) {
      if (single_gpu_finding(f)) best = std::max(best, *f.est_speedup);
    }
    top.emplace_back(best, &d);
  }
  std::sort(top.begin(), top.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  const auto [speedup, median] = top[(top.size() - 1) / 2];
  if (speedup < 1.25) return;
  std::vector<std::string> named;
  for (const Finding& f : median->findings) {
    if (single_gpu_finding(f) && named.size() < 3) named.push_back(fmt::format("{} x{:.2f}", f.id, *f.est_speedup));
  }
  std::string health = fmt::format("busy {:.1f}%", median->busy_pct);
  if (median->communication)
    health = fmt::format("busy without communication {:.1f}%", median->communication->busy_without_comm_pct);
  if (median->mfu_pct) health += fmt::format(", MFU {:.1f}%", *median->mfu_pct);
  s.findings.push_back(
      {"scale-before-healthy", severity_for(speedup), "Fix one GPU before adding GPUs",
       fmt::format("each of the {} ranks wastes its own GPU ({}: {}); its single-GPU findings: {}{}", devices.size(),
                   median->source, health, fmt::join(named, ", "),
                   median->step_mean_ms
                       ? estimate_clause(*median->step_mean_ms * 1e6, *median->step_mean_ms * 1e6 / speedup, "its step")
                       : fmt::format("; estimate: the largest of them, x{:.2f}", speedup)),
       speedup,
       fmt::format("Fix {} first (see that rank's findings): the gain applies to every rank at no extra "
                   "hardware, where more GPUs add at best their share of throughput at the same per-GPU waste "
                   "and more communication. Profile one rank alone (gpuscope run python train.py) while fixing.",
                   fmt::join(named, ", "))});
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
    reasons.push_back(
        fmt::format("{} of {} traces name no rank and world size (distributedInfo)", without_rank, traces.size()));
  }
  for (const auto& [rank, n] : traces_per_rank) {
    if (n > 1) reasons.push_back(fmt::format("rank {} appears in {} traces", rank, n));
  }
  if (world_sizes.size() > 1) {
    reasons.push_back(fmt::format("world sizes differ ({})", fmt::join(world_sizes, ", ")));
  } else if (world_sizes.size() == 1 && !traces_per_rank.empty() &&
             traces_per_rank.rbegin()->first >= *world_sizes.begin()) {
    reasons.push_back(
        fmt::format("rank {} is outside the world size {}", traces_per_rank.rbegin()->first, *world_sizes.begin()));
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
  std::vector<const DeviceReport*> with_steps;
  const DeviceReport* slowest = nullptr;
  for (const auto& d : devices) {
    s.busy_min_pct = std::min(s.busy_min_pct, d.busy_pct);
    s.busy_max_pct = std::max(s.busy_max_pct, d.busy_pct);
    if (d.communication) {
      const double b = d.communication->busy_without_comm_pct;
      s.busy_without_comm_min_pct = std::min(s.busy_without_comm_min_pct.value_or(100.0), b);
      s.busy_without_comm_max_pct = std::max(s.busy_without_comm_max_pct.value_or(0.0), b);
    }
    if (!has_steps(d)) continue;
    if (!s.step_max_ms || *d.step_mean_ms > *s.step_max_ms) {
      s.step_max_ms = d.step_mean_ms;
      s.slowest = d.source;
      slowest = &d;
    }
    if (!s.step_min_ms || *d.step_mean_ms < *s.step_min_ms) s.step_min_ms = d.step_mean_ms;
    with_steps.push_back(&d);
  }
  if (with_steps.size() >= 2) {
    std::vector<double> others_ms;
    for (const DeviceReport* d : with_steps) {
      if (d != slowest) others_ms.push_back(*d->step_mean_ms);
    }
    std::sort(others_ms.begin(), others_ms.end());
    s.step_median_ms = others_ms[(others_ms.size() - 1) / 2];  // The lower middle for even counts.
    add_straggler(s, with_steps);
  }
  if (devices.size() >= 2) add_scale_before_healthy(s, devices);
  std::stable_sort(s.findings.begin(), s.findings.end(), [](const Finding& a, const Finding& b) {
    return a.est_speedup.value_or(1) > b.est_speedup.value_or(1);
  });
  return s;
}

}  // namespace gpuscope
