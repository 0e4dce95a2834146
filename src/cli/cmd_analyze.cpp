// gpuscope analyze TRACE... : read PyTorch profiler traces (or gpuscope captures) and report
// how much real work the GPU did, where the rest of the time went, and what to change.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <memory>

#include <fmt/core.h>

#include "cli/text_layout.h"
#include "cli/analyze_command.h"
#include "cli/command.h"
#include "cli/report_text.h"
#include "core/analysis.h"
#include "formats/csv_report.h"
#include "formats/html_file.h"
#include "formats/html_report.h"
#include "formats/input_source.h"
#include "formats/report_json.h"
#include "formats/trace_input.h"

namespace gpuscope::cli {

void add_analysis_options(CLI::App& app, AnalyzeCliOptions& o) {
  app.add_flag("--json", o.json, "Print the report as JSON (schema gpuscope.report/1) instead of text");
  app.add_option("--html", o.html,
                 "Also write the report as one self-contained HTML page (timeline, charts, findings; no network "
                 "needed to view it) to FILE")
      ->type_name("FILE");
  app.add_option("--model", o.model_spec,
                 "Model for MFU, e.g. gpt:params=124M,layers=12,heads=12,dmodel=768,seq=1024,batch=16\n"
                 "(training FLOPs per token = 6N + 12*L*H*Q*T, PaLM appendix B)");
  app.add_option("--flops-per-step", o.flops_per_step, "Model FLOPs per training step, for MFU (instead of --model)")
      ->check(CLI::PositiveNumber);
  app.add_option("--peak-tflops", o.peak_tflops,
                 "Dense peak TFLOP/s to divide by (default: from the device name; bf16 dense, e.g. 989.4 "
                 "for H100/H200 SXM)")
      ->check(CLI::PositiveNumber);
  app.add_option("--step-range", o.step_range,
                 "Name of the annotation/NVTX range that marks one step (default: ProfilerStep#N, then "
                 "'step'/'train_step', then optimizer steps)");
}

int report_traces(std::vector<Trace>& traces, const AnalyzeCliOptions& o) {
  std::optional<CsvTable> csv;
  if (!o.csv.empty()) {
    csv = csv_table_from_name(o.csv);
    if (!csv) {
      fmt::print(stderr, "gpuscope: --csv {}: expected steps, kernels or idle\n", terminal_safe(o.csv));
      return 2;
    }
  }
  std::vector<std::string> inputs;
  for (const Trace& t : traces) inputs.push_back(t.source);
  if (!o.html.empty()) {
    if (Status usable = check_html_path(o.html, inputs); !usable.ok()) {
      fmt::print(stderr, "gpuscope: {}\n", terminal_safe(usable.message()));
      return 2;
    }
  }
  AnalysisOptions options;
  if (!o.model_spec.empty()) {
    auto spec = parse_model_spec(o.model_spec);
    if (!spec.ok()) {
      fmt::print(stderr, "gpuscope: {}\n", spec.status().message());
      return 2;
    }
    options.model = spec.value();
  }
  options.flops_per_step = o.flops_per_step;
  options.peak_tflops = o.peak_tflops;
  options.step_range = o.step_range;
  options.as_job = o.as_job;
  const Report report = analyze_traces(traces, options);
  for (const auto& w : report.warnings) fmt::print(stderr, "gpuscope: warning: {}\n", terminal_safe(w));
  if (report.devices.empty()) {
    for (const auto& r : report.rejected) fmt::print(stderr, "gpuscope: {}\n", terminal_safe(r));
    return 2;
  }
  for (const auto& r : report.rejected) fmt::print(stderr, "gpuscope: skipped {}\n", terminal_safe(r));
  const std::string text = csv    ? report_to_csv(report, *csv)
                           : o.json ? report_to_json(report)
                                    : render_report(report, style_for(stdout));
  std::fwrite(text.data(), 1, text.size(), stdout);
  std::fflush(stdout);
  if (!o.html.empty()) {
    const Status written = write_html_file(o.html, report_to_html(report, traces), inputs);
    if (!written.ok()) {
      fmt::print(stderr, "gpuscope: {}\n", terminal_safe(written.message()));
      return 2;
    }
    fmt::print(stderr, "gpuscope: wrote {}\n", terminal_safe(o.html));
  }
  return 0;
}

namespace {

struct AnalyzeArgs {
  std::vector<std::string> paths;
  std::string max_inflate;  // --max-inflate SIZE
  AnalyzeCliOptions options;
};

// A progress line on stderr while large files are read, only when stderr is a terminal.
class Progress {
 public:
  explicit Progress(std::string name) : name_(std::move(name)), on_(isatty(fileno(stderr))) {}
  ~Progress() {
    if (shown_) fmt::print(stderr, "\r\033[K");
  }
  void update(uint64_t done, uint64_t total) {
    if (!on_ || total < (64u << 20)) return;  // Small files read in well under a second.
    const int pct = static_cast<int>(100.0 * static_cast<double>(done) / static_cast<double>(total));
    if (pct == last_pct_) return;
    last_pct_ = pct;
    shown_ = true;
    fmt::print(stderr, "\rreading {}: {}% of {:.0f} MB", name_, pct, static_cast<double>(total) / 1e6);
  }

 private:
  std::string name_;
  bool on_;
  bool shown_ = false;
  int last_pct_ = -1;
};

int run_analyze(const AnalyzeArgs& args) {
  if (args.options.json && !args.options.csv.empty()) {
    fmt::print(stderr, "gpuscope: --csv and --json both choose the output format; use one\n");
    return 2;
  }
  if (!args.options.csv.empty() && !csv_table_from_name(args.options.csv)) {
    fmt::print(stderr, "gpuscope: --csv {}: expected steps, kernels or idle\n", terminal_safe(args.options.csv));
    return 2;
  }
  auto limits = InputLimits::from_environment();
  if (!limits.ok()) {
    fmt::print(stderr, "gpuscope: {}\n", limits.status().message());
    return 2;
  }
  if (!args.max_inflate.empty()) {
    auto bytes = parse_byte_size(args.max_inflate);
    if (!bytes || *bytes == 0) {
      fmt::print(stderr, "gpuscope: --max-inflate {}: expected a size such as 16G or 512M\n", args.max_inflate);
      return 2;
    }
    limits->max_inflate_bytes = bytes;
  }
  auto paths = expand_trace_paths(args.paths);
  if (!paths.ok()) {
    fmt::print(stderr, "gpuscope: {}\n", paths.status().message());
    return 2;
  }
  if (!args.options.html.empty()) {  // Before reading: a large trace takes a while.
    std::vector<std::string> inputs = paths.value();
    inputs.insert(inputs.end(), args.paths.begin(), args.paths.end());
    if (Status usable = check_html_path(args.options.html, inputs); !usable.ok()) {
      fmt::print(stderr, "gpuscope: {}\n", terminal_safe(usable.message()));
      return 2;
    }
  }
  if (std::count(args.paths.begin(), args.paths.end(), "-") > 1) {
    fmt::print(stderr, "gpuscope: '-' (stdin) can be read only once\n");
    return 2;
  }
  // A file the user named must be readable (exit 2 otherwise). A file found in a directory
  // that cannot be read is skipped with one line, whatever the reason (garbage, empty, not a
  // trace), like a trace the analysis rejects; a truncated one is read up to its cut, with a
  // warning. The report needs at least one trace.
  std::vector<Trace> traces;
  bool failed = false;
  size_t skipped = 0;
  for (const auto& path : paths.value()) {
    const bool named = std::find(args.paths.begin(), args.paths.end(), path) != args.paths.end();
    Progress progress(path);
    auto trace = read_trace_file(path, limits.value(),
                                 [&](uint64_t done, uint64_t total) { progress.update(done, total); });
    const std::string shown = path == "-" ? "<stdin>" : path;
    if (!trace.ok()) {
      if (named) {
        fmt::print(stderr, "gpuscope: {}: {}\n", shown, trace.status().message());
        failed = true;
      } else {
        fmt::print(stderr, "gpuscope: skipped {}: {}\n", shown, trace.status().message());
        ++skipped;
      }
      continue;
    }
    traces.push_back(std::move(trace).value());
  }
  if (failed) return 2;
  if (traces.empty()) {
    fmt::print(stderr, "gpuscope: none of the {} files could be read\n", skipped);
    return 2;
  }
  return report_traces(traces, args.options);
}

CommandRegistration kAnalyze{CommandSpec{
    "analyze",
    "Analyse PyTorch profiler traces or gpuscope captures: utilization vs SM activity vs MFU, idle causes, "
    "kernels, precision, findings",
    10,
    [](CLI::App& app) -> std::function<int()> {
      auto args = std::make_shared<AnalyzeArgs>();
      app.add_option("TRACE", args->paths,
                     "Trace files (.json, .json.gz from torch.profiler; .gpuscope captures), directories of "
                     "per-rank traces, pipes (<(zcat t.json.gz)) or - for stdin")
          ->required();
      app.add_option("--max-inflate", args->max_inflate,
                     "Most bytes a compressed input may expand to, e.g. 16G (default: 100x the compressed "
                     "size for JSON, 32x for captures, at least 256M, bounded by memory; env GPUSCOPE_MAX_INFLATE)");
      add_analysis_options(app, args->options);
      app.add_option("--csv", args->options.csv,
                     "Print one table as CSV instead of the report: steps, kernels or idle (RFC 4180; "
                     "unmeasured values are empty cells)");
      app.add_flag("--as-job", args->options.as_job,
                   "Treat the traces as the ranks of one job even when their ranks, world size, GPU model or "
                   "time ranges do not agree");
      app.footer(
          "\nExamples:\n"
          "  gpuscope analyze trace.json.gz\n"
          "  gpuscope analyze --model gpt:params=124M,layers=12,heads=12,dmodel=768,seq=1024,batch=16 trace.json.gz\n"
          "  gpuscope analyze --json traces/ > report.json      # one analysis per rank + summary\n"
          "  gpuscope analyze --csv steps trace.json.gz > steps.csv\n"
          "  gpuscope analyze --html report.html trace.json.gz      # one page to open or attach\n\n"
          "Record a trace with record_shapes=True so matmul FLOPs (HFU) and precision can be counted:\n"
          "  with torch.profiler.profile(activities=[CPU, CUDA], record_shapes=True,\n"
          "                              schedule=torch.profiler.schedule(wait=1, warmup=1, active=3)) as p:\n"
          "      for batch in loader: train_step(batch); p.step()\n"
          "  p.export_chrome_trace(\"trace.json.gz\")\n\n"
          "Exit codes: 0 report printed; 2 bad input (one line on stderr says what and where).");
      return [args] { return run_analyze(*args); };
    }}};

}  // namespace
}  // namespace gpuscope::cli
