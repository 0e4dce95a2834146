#include "core/steps.h"

#include <algorithm>
#include <charconv>

namespace gpuscope {

std::string_view step_source_name(StepSource s) {
  switch (s) {
    case StepSource::kProfilerStep: return "profiler_step";
    case StepSource::kNvtxRange: return "nvtx_range";
    case StepSource::kOptimizerStep: return "optimizer_step";
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
  }
  return d;
}

}  // namespace gpuscope
