// gpuscope diff BASE NEW : what changed between two runs. Each side is a trace, a capture, a
// directory of per-rank traces (analysed here, as `analyze` would), or a report saved with
// `analyze --json` (read back). The comparison is the core's (core/diff.h); this file only
// reads the inputs and prints.
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <memory>
#include <sstream>
#include <sys/stat.h>

#include <fmt/core.h>

#include "cli/command.h"
#include "cli/diff_text.h"
#include "cli/text_layout.h"
#include "core/analysis.h"
#include "core/diff.h"
#include "formats/diff_json.h"
#include "formats/html_diff.h"
#include "formats/output_file.h"
#include "formats/report_json_reader.h"
#include "formats/trace_input.h"

namespace gpuscope::cli {
namespace {

struct DiffArgs {
  std::string base, now;
  bool json = false;
  std::string html;  // --html FILE
  std::string model_spec;
  std::optional<double> flops_per_step;
  std::optional<double> peak_tflops;
  std::string step_range;
};

bool is_regular_file(const std::string& path) {
  struct stat st{};
  return path != "-" && ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

// A saved report when the file starts like one; otherwise empty (read it as a trace).
std::optional<StatusOr<Report>> read_saved_report(const std::string& path) {
  if (!is_regular_file(path)) return std::nullopt;
  std::ifstream in(path, std::ios::binary);
  char head[256] = {};
  in.read(head, sizeof head);
  if (!looks_like_report_json(std::string_view(head, static_cast<size_t>(in.gcount())))) return std::nullopt;
  in.clear();
  in.seekg(0);
  std::stringstream text;
  text << in.rdbuf();
  return report_from_json(text.str());
}

// One side of the comparison as a report, or an error line (without "gpuscope: ").
StatusOr<Report> load_side(const std::string& tag, const std::string& path, const AnalysisOptions& options) {
  if (auto saved = read_saved_report(path)) {
    if (!saved->ok()) return Status::error(fmt::format("{} {}: {}", tag, path, saved->status().message()));
    return std::move(*saved);
  }
  auto paths = expand_trace_paths({path});
  if (!paths.ok()) return Status::error(fmt::format("{} {}", tag, paths.status().message()));
  std::vector<Trace> traces;
  for (const auto& p : paths.value()) {
    auto trace = read_trace_file(p);
    const std::string shown = p == "-" ? "<stdin>" : p;
    if (!trace.ok()) {
      if (p == path) return Status::error(fmt::format("{} {}: {}", tag, shown, trace.status().message()));
      fmt::print(stderr, "gpuscope: {}: skipped {}: {}\n", tag, terminal_safe(shown),
                 terminal_safe(trace.status().message()));
      continue;
    }
    traces.push_back(std::move(trace).value());
  }
  if (traces.empty()) return Status::error(fmt::format("{} {}: no trace could be read", tag, path));
  Report report = analyze_traces(traces, options);
  for (const auto& w : report.warnings) fmt::print(stderr, "gpuscope: warning: {}: {}\n", tag, terminal_safe(w));
  if (report.devices.empty()) {
    return Status::error(fmt::format("{} {}: nothing to compare: {}", tag, path,
                                     !report.rejected.empty()           ? report.rejected.front()
                                     : !report.without_gpu_work.empty() ? report.without_gpu_work.front()
                                                                        : "no GPU activity"));
  }
  for (const auto& r : report.rejected) fmt::print(stderr, "gpuscope: {}: skipped {}\n", tag, terminal_safe(r));
  return report;
}

int run_diff(const DiffArgs& args) {
  if (args.base == "-" && args.now == "-") {
    fmt::print(stderr, "gpuscope: '-' (stdin) can be read only once: name a file for BASE or NEW\n");
    return 2;
  }
  if (!args.html.empty()) {
    if (Status usable = check_output_path("--html", args.html, {args.base, args.now}); !usable.ok()) {
      fmt::print(stderr, "gpuscope: {}\n", terminal_safe(usable.message()));
      return 2;
    }
  }
  AnalysisOptions options;
  if (!args.model_spec.empty()) {
    auto spec = parse_model_spec(args.model_spec);
    if (!spec.ok()) {
      fmt::print(stderr, "gpuscope: {}\n", terminal_safe(spec.status().message()));
      return 2;
    }
    options.model = spec.value();
  }
  options.flops_per_step = args.flops_per_step;
  options.peak_tflops = args.peak_tflops;
  options.step_range = args.step_range;

  auto base = load_side("BASE", args.base, options);
  if (!base.ok()) {
    fmt::print(stderr, "gpuscope: {}\n", terminal_safe(base.status().message()));
    return 2;
  }
  auto now = load_side("NEW", args.now, options);
  if (!now.ok()) {
    fmt::print(stderr, "gpuscope: {}\n", terminal_safe(now.status().message()));
    return 2;
  }
  const ReportDiff diff = diff_reports(base.value(), now.value());
  if (diff.devices.empty()) {
    fmt::print(stderr, "gpuscope: no device of BASE pairs with one of NEW (ranks differ)\n");
    return 2;
  }
  std::string text;
  if (args.json) {
    // The warnings are in the JSON; stderr repeats them for whoever reads the terminal.
    for (const auto& d : diff.devices) {
      for (const auto& w : d.warnings) fmt::print(stderr, "gpuscope: warning: {}\n", terminal_safe(w));
    }
    text = diff_to_json(diff);
  } else {
    TextStyle style = style_for(stdout);
    style.width = 80;
    text = render_diff(diff, style);
  }
  std::fwrite(text.data(), 1, text.size(), stdout);
  std::fflush(stdout);
  if (!args.html.empty()) {
    const Status written = write_output_file("--html", args.html, {args.base, args.now}, diff_to_html(diff));
    if (!written.ok()) {
      fmt::print(stderr, "gpuscope: {}\n", terminal_safe(written.message()));
      return 2;
    }
    fmt::print(stderr, "gpuscope: wrote {}\n", terminal_safe(args.html));
  }
  return 0;
}

CommandRegistration kDiff{CommandSpec{
    "diff",
    "Compare two runs (traces, captures, rank directories or saved --json reports): what changed, and the change "
    "that made the difference",
    15,
    [](CLI::App& app) -> std::function<int()> {
      auto args = std::make_shared<DiffArgs>();
      app.add_option("BASE", args->base, "The run before the change: a trace, capture, directory of per-rank traces, "
                                         "or a report saved with `gpuscope analyze --json`")
          ->required();
      app.add_option("NEW", args->now, "The run after the change (same kinds of input)")->required();
      app.add_flag("--json", args->json, "Print the comparison as JSON (schema gpuscope.diff/1, docs/diff.md)");
      app.add_option("--html", args->html,
                     "Also write the comparison as one self-contained HTML page (no network needed to view it) to FILE")
          ->type_name("FILE")
      ->check(output_name_check());
      app.add_option("--model", args->model_spec,
                     "Model for MFU of the traces, e.g. gpt:params=124M,layers=12,heads=12,dmodel=768,seq=1024,batch=16");
      app.add_option("--flops-per-step", args->flops_per_step, "Model FLOPs per step of the traces, for MFU")
          ->check(flops_per_step_check());
      app.add_option("--peak-tflops", args->peak_tflops, "Dense peak TFLOP/s to divide by (default: from the device name)")
          ->check(peak_tflops_check());
      app.add_option("--step-range", args->step_range, "Name of the annotation/NVTX range that marks one step");
      app.footer(
          "\nExamples:\n"
          "  gpuscope diff before.json.gz after.json.gz\n"
          "  # keep a run's report, then compare a new trace with it:\n"
          "  gpuscope analyze --json before.json.gz > before.report.json\n"
          "  gpuscope diff before.report.json after.json.gz\n"
          "  # per rank, paired by rank; then the comparison as a page:\n"
          "  gpuscope diff --json ranks_before/ ranks_after/ > diff.json\n"
          "  gpuscope diff --html diff.html before.json.gz after.json.gz\n\n"
          "Times are per step, ratios NEW / BASE. The comparison names the idle cause, kernel category or\n"
          "precision whose time per step changed most, beside the measured step-time ratio, and warns when\n"
          "the runs are not like for like (other device, other step definition, other FLOPs per step).\n"
          "--model and the other analysis options apply to traces, not to saved reports.\n\n"
          "Exit codes: 0 comparison printed; 2 bad input (one line on stderr says which side and why).");
      return [args] { return run_diff(*args); };
    }}};

}  // namespace
}  // namespace gpuscope::cli
