// The analysis front end, shared by `gpuscope analyze` and `gpuscope run` (which analyses
// its capture on exit).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "core/trace.h"

namespace gpuscope::cli {

struct AnalyzeCliOptions {
  bool json = false;
  std::string csv;                       // --csv steps|kernels|idle (analyze only): one CSV table
  std::string model_spec;                // --model gpt:params=124M,...
  std::optional<double> flops_per_step;  // --flops-per-step
  std::optional<double> peak_tflops;     // --peak-tflops
  std::string step_range;                // --step-range NAME (NVTX/annotation step names)
  bool as_job = false;                   // --as-job (analyze only): several traces are one job
  std::string html;                      // --html FILE: the report also as one self-contained page
  // run --json: with no device to report, still print the JSON report (no devices, "rejected"
  // says why) so that stdout is always one JSON document; analyze prints nothing then.
  bool json_without_devices = false;
};

// Declares --json, --html, --model, --flops-per-step, --peak-tflops, --step-range on `app`.
void add_analysis_options(CLI::App& app, AnalyzeCliOptions& options);

// Analyses each trace (one per rank/process), prints the text report (or JSON with
// options.json, or one CSV table with options.csv) to stdout, warnings to stderr; with
// options.html also writes the page there (never over one of the traces). Returns the exit
// code: 0, or 2 for bad input (e.g. an invalid --model, or the page cannot be written) after
// printing one line naming the problem.
int report_traces(std::vector<Trace>& traces, const AnalyzeCliOptions& options);

// A report with no devices, `rejected` saying why, as JSON on stdout: for `run --json`, whose
// stdout is one JSON document whatever happened.
void print_json_without_devices(std::vector<std::string> rejected);

}  // namespace gpuscope::cli
