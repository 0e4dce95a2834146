// The analysis front end, shared by `gpuscope analyze` and `gpuscope run` (which analyses
// its capture on exit), and the option blocks that analyze, run, diff and export share.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "core/analysis.h"
#include "core/status.h"
#include "core/trace.h"
#include "input/input_source.h"

namespace gpuscope::cli {

// What the analysis is told beyond the trace: --model or --flops-per-step (one of them),
// --peak-tflops, --step-range. Declared by add_model_options (analyze, run, diff).
struct ModelCliOptions {
  std::optional<ModelSpec> model;        // --model gpt:params=124M,... (checked while parsing)
  std::optional<double> flops_per_step;  // --flops-per-step
  std::optional<double> peak_tflops;     // --peak-tflops
  std::string step_range;                // --step-range NAME (NVTX/annotation step names)

  AnalysisOptions analysis_options() const;
};
void add_model_options(CLI::App& app, ModelCliOptions& options);

// The input limits: --max-inflate over GPUSCOPE_MAX_INFLATE (analyze, export).
struct InputLimitCliOptions {
  std::optional<uint64_t> max_inflate_bytes;
  // The limits from the environment with the options applied; an error names the variable.
  StatusOr<InputLimits> limits() const;
};
void add_input_limit_options(CLI::App& app, InputLimitCliOptions& options);

struct AnalyzeCliOptions {
  bool json = false;
  std::string csv;  // --csv steps|kernels|idle (analyze only): one CSV table
  ModelCliOptions model;
  bool as_job = false;  // --as-job (analyze only): several traces are one job
  std::string html;     // --html FILE: the report also as one self-contained page
  // run --json: with no device to report, still print the JSON report (no devices, "rejected"
  // says why) so that stdout is always one JSON document; analyze prints nothing then.
  bool json_without_devices = false;

  AnalysisOptions analysis_options() const;
};

// Declares --json, --html and the model options (add_model_options) on `app`.
void add_analysis_options(CLI::App& app, AnalyzeCliOptions& options);

// Analyses each trace (one per rank/process), prints the text report (or JSON with
// options.json, or one CSV table with options.csv) to stdout, warnings to stderr; with
// options.html also writes the page there (never over one of the traces). Returns the exit
// code: 0, or 2 for bad input (a --step-range no step matches, an MFU over 100%, or the page
// cannot be written) after printing one line naming the problem.
int report_traces(std::vector<Trace>& traces, const AnalyzeCliOptions& options);

// A report with no devices, `rejected` saying why, as JSON on stdout: for `run --json`, whose
// stdout is one JSON document whatever happened.
void print_json_without_devices(std::vector<std::string> rejected);

// "--step-range NAME matches no annotation in SOURCE; ..." when options.step_range is set and
// no annotation of `trace` is named so (the steps that exist are listed); empty otherwise.
std::string unmatched_step_range(const Trace& trace, const AnalysisOptions& options);

// A line saying which inputs are wrong when a device's MFU or HFU is over 100% (impossible:
// --flops-per-step, --model or --peak-tflops is wrong); empty when every value is possible.
std::string impossible_utilization(std::span<const DeviceReport> devices);

}  // namespace gpuscope::cli
