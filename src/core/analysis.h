// The analyses: from a Trace to a Report. Pure computation; no I/O.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/flops.h"
#include "core/ranks.h"
#include "core/report.h"
#include "core/trace.h"

namespace gpuscope {

struct AnalysisOptions {
  std::optional<ModelSpec> model;        // Model FLOPs per step from a model description...
  std::optional<double> flops_per_step;  // ...or given directly (wins over model).
  std::optional<double> peak_tflops;     // Overrides the catalogue.
  std::string step_range;                // Annotation name that marks a step.
  // Treat several traces as the ranks of one job even when they do not agree (ranks.h,
  // job_disagreement): the cross-rank summary and the straggler finding are made anyway.
  bool as_job = false;
};

// One report per device of `trace` that ran GPU work (kernels, copies or sets). The trace's
// event vectors must be sorted (Trace::sort_events). Empty when no device ran anything.
std::vector<DeviceReport> analyze_trace(const Trace& trace, const AnalysisOptions& options);

// Analyses several traces (e.g. one per rank). When two or more of them ran GPU work, they form
// one job only if they agree (ranks.h, job_disagreement) or options.as_job: then a cross-rank
// summary (with the straggler finding) is added; otherwise each stays a separate analysis and
// a line in Report::warnings says why they were not combined. Traces with no GPU work are
// listed with what they hold instead: in Report::without_gpu_work when valid, else in
// Report::rejected.
Report analyze_traces(const std::vector<Trace>& traces, const AnalysisOptions& options);

// analyze_traces in two halves, so that each trace can be analysed as soon as it is read (on
// any thread) and dropped: what one trace contributes, then the report of them all, in order.
// combine_analyses(analyze_one_trace(t) for t in traces) == analyze_traces(traces).
struct TraceAnalysis {
  std::vector<std::string> warnings;  // The reader's, each prefixed with the trace's source.
  std::vector<DeviceReport> devices;  // Empty when the trace ran no GPU work...
  std::string rejected;               // ...and then what it holds instead...
  // ...true where that is a valid trace of work without a GPU (CPU-only, another accelerator,
  // counters only): described, not an error; false where the input is unusable (truncated,
  // no events at all).
  bool valid_without_gpu_work = false;
  RankFacts facts;  // For the job check (ranks.h).
};
TraceAnalysis analyze_one_trace(const Trace& trace, const AnalysisOptions& options);
Report combine_analyses(std::vector<TraceAnalysis> parts, const AnalysisOptions& options);

}  // namespace gpuscope
