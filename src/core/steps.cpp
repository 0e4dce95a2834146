#include "core/steps.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <unordered_map>

namespace gpuscope {

std::string_view step_source_name(StepSource s) {
  switch (s) {
    case StepSource::kProfilerStep: return "profiler_step";
    case StepSource::kNvtxRange: return "nvtx_range";
    case StepSource::kOptimizerStep: return "optimizer_step";
    case StepSource::kKernelPattern: return "kernel_pattern";
    case StepSource::kWholeWindow: return "whole_window";
  }
  return "whole_window";
}

namespace {

// Keeps the outermost of overlapping ranges (a nested range of the same name is not a step).
std::vector<Step> outermost(std::vector<Step> steps) {
  std::sort(steps.begin(), steps.end(), [](const Step& a, const Step& b) { return a.start_ns < b.start_ns; });
  std::vector<Step> out;
  for (const Step& s : steps) {
    if (!out.empty() && s.start_ns < out.back().end_ns) continue;
    out.push_back(s);
  }
  return out;
}

// Steps from the period of a kernel that runs once per iteration. Kernels of one device (the
// busiest) are used; the candidate with the fewest occurrences among the regular ones wins,
// since a once-per-step kernel recurs least often.
std::vector<Step> kernel_pattern_steps(const Trace& trace) {
  if (trace.kernels.size() < 6) return {};
  std::unordered_map<int32_t, size_t> per_device;
  for (const Kernel& k : trace.kernels) ++per_device[k.device];
  const int32_t device = std::max_element(per_device.begin(), per_device.end(),
                                          [](auto& a, auto& b) { return a.second < b.second; })->first;
  std::unordered_map<StringId, std::vector<int64_t>> starts;
  int64_t first = INT64_MAX, last = INT64_MIN;
  for (const Kernel& k : trace.kernels) {
    if (k.device != device) continue;
    starts[k.name].push_back(k.start_ns);
    first = std::min(first, k.start_ns);
    last = std::max(last, k.end_ns);
  }
  const std::vector<int64_t>* best = nullptr;
  double best_cv = 0;
  for (const auto& [name, times] : starts) {
    if (times.size() < 3) continue;
    const double span = static_cast<double>(times.back() - times.front());
    if (span < 0.5 * static_cast<double>(last - first)) continue;
    const double mean = span / static_cast<double>(times.size() - 1);
    if (mean <= 0) continue;
    double var = 0;
    for (size_t i = 1; i < times.size(); ++i) {
      const double d = static_cast<double>(times[i] - times[i - 1]) - mean;
      var += d * d;
    }
    const double cv = std::sqrt(var / static_cast<double>(times.size() - 1)) / mean;
    if (cv >= 0.25) continue;
    if (!best || times.size() < best->size() || (times.size() == best->size() && cv < best_cv)) {
      best = &times;
      best_cv = cv;
    }
  }
  std::vector<Step> steps;
  if (!best) return steps;
  for (size_t i = 1; i < best->size(); ++i) {
    steps.push_back({(*best)[i - 1], (*best)[i], static_cast<int64_t>(i)});
  }
  return steps;
}

}  // namespace

StepDetection detect_steps(const Trace& trace, std::string_view step_range) {
  StepDetection d;
  if (!trace.steps.empty()) {
    d.source = trace.step_source == StepSource::kWholeWindow ? StepSource::kNvtxRange : trace.step_source;
    d.steps = outermost(trace.steps);
    return d;
  }
  std::vector<Step> profiler, named, optimizer;
  for (const HostEvent& e : trace.host_events) {
    if (e.kind != HostEventKind::kAnnotation) continue;
    const std::string_view name = trace.strings.view(e.name);
    if (name.starts_with("ProfilerStep#")) {
      int64_t n = 0;
      const auto digits = name.substr(13);
      std::from_chars(digits.data(), digits.data() + digits.size(), n);
      profiler.push_back({e.start_ns, e.end_ns, n});
    } else if (step_range.empty() ? (name == "step" || name == "train_step" || name == "training_step")
                                   : name == step_range) {
      named.push_back({e.start_ns, e.end_ns, static_cast<int64_t>(named.size())});
    } else if (name.starts_with("Optimizer.step#")) {
      optimizer.push_back({e.start_ns, e.end_ns, 0});
    }
  }
  if (!profiler.empty()) {
    d.source = StepSource::kProfilerStep;
    d.steps = outermost(std::move(profiler));
  } else if (!named.empty()) {
    d.source = StepSource::kNvtxRange;
    d.steps = outermost(std::move(named));
  } else if (optimizer.size() >= 2) {
    // One step runs from the end of one optimizer step to the end of the next.
    optimizer = outermost(std::move(optimizer));
    d.source = StepSource::kOptimizerStep;
    for (size_t i = 1; i < optimizer.size(); ++i) {
      d.steps.push_back({optimizer[i - 1].end_ns, optimizer[i].end_ns, static_cast<int64_t>(i)});
    }
  } else if (auto pattern = kernel_pattern_steps(trace); !pattern.empty()) {
    d.source = StepSource::kKernelPattern;
    d.steps = std::move(pattern);
  }
  return d;
}

void drop_warmup_steps(StepDetection& d) {
  const size_t n = d.steps.size();
  if (n < 4) return;
  std::vector<int64_t> rest;
  for (size_t i = 1; i < n; ++i) rest.push_back(d.steps[i].end_ns - d.steps[i].start_ns);
  std::nth_element(rest.begin(), rest.begin() + static_cast<ptrdiff_t>(rest.size() / 2), rest.end());
  const int64_t median = rest[rest.size() / 2];
  size_t drop = 0;
  while (drop < n / 2 && d.steps[drop].end_ns - d.steps[drop].start_ns > 2 * median) ++drop;
  d.steps.erase(d.steps.begin(), d.steps.begin() + static_cast<ptrdiff_t>(drop));
  d.skipped_warmup = static_cast<int64_t>(drop);
}

}  // namespace gpuscope
