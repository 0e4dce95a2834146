// gpuscope diff BASE NEW : what changed between two runs. Each side is a trace, a capture, a
// directory of per-rank traces (analysed here, as `analyze` would), or a report saved with
// `analyze --json` (read back). The comparison is the core's (core/diff.h); this file only
// reads the inputs and prints.
#include <sys/stat.h>
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <memory>
#include <sstream>

#include <fmt/core.h>

#include "cli/analyze_command.h"
#include "cli/command.h"
#include "core/analysis.h"
#include "core/diff.h"
#include "input/input_source.h"
#include "input/report_json_reader.h"
#include "input/trace_input.h"
#include "render/diff_json.h"
#include "render/diff_text.h"
#include "render/html_diff.h"
#include "render/output_file.h"
#include "render/text_layout.h"

namespace gpuscope::cli {
namespace {

// `gpuscope diff`, as parsed (every value checked by the parser).
struct DiffArgs {
  std::string base, now;
  bool json = false;
  std::string html;  // --html FILE
  ModelCliOptions model;
};

bool is_regular_file(const std::string& path) {
  struct stat st {};
  return path != "-" && ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

// The report of one side's traces, or why there is nothing to compare.
StatusOr<Report> analyzed(const std::string& tag, const std::string& path, const std::vector<Trace>& traces,
                          const AnalysisOptions& options) {
  for (const Trace& t : traces) {
    if (std::string unmatched = unmatched_step_range(t, options); !unmatched.empty()) {
      return Status::error(fmt::format("{}: {}", tag, unmatched));
    }
  }
  Report report = analyze_traces(traces, options);
  for (const auto& w : report.warnings) fmt::print(stderr, "gpuscope: warning: {}: {}\n", tag, terminal_safe(w));
  if (report.devices.empty()) {
    return Status::error(fmt::format("{} {}: nothing to compare: {}", tag, path,
                                     !report.rejected.empty()           ? report.rejected.front()
                                     : !report.without_gpu_work.empty() ? report.without_gpu_work.front()
                                                                        : "no GPU activity"));
  }
  if (std::string impossible = impossible_utilization(report.devices); !impossible.empty()) {
    return Status::error(fmt::format("{} {}: {}", tag, path, impossible));
  }
  for (const auto& r : report.rejected) fmt::print(stderr, "gpuscope: {}: skipped {}\n", tag, terminal_safe(r));
  return report;
}

// A saved report read back, or a trace analysed, and the problem with it (without
// "gpuscope: "). stdin ("-") is read once: its first bytes say which it is.
StatusOr<Report> report_from_stdin(const std::string& tag, const AnalysisOptions& options) {
  auto limits = InputLimits::from_environment();
  if (!limits.ok()) return limits.status();
  auto opened = ByteSource::open("-", limits.value());
  if (!opened.ok()) return Status::error(fmt::format("{} <stdin>: {}", tag, opened.status().message()));
  ByteSource& source = *opened.value();
  if (looks_like_report_json(source.head())) {
    std::string text, error;
    char buffer[1 << 16];
    while (const size_t n = source.read(buffer, sizeof buffer, error)) text.append(buffer, n);
    if (!error.empty()) return Status::error(fmt::format("{} <stdin>: {}", tag, error));
    auto report = report_from_json(text);
    if (!report.ok()) return Status::error(fmt::format("{} <stdin>: {}", tag, report.status().message()));
    return report;
  }
  TraceReadOptions read;
  read.limits = limits.value();
  auto trace = read_trace_source(source, "<stdin>", read);
  if (!trace.ok()) return Status::error(fmt::format("{} <stdin>: {}", tag, trace.status().message()));
  std::vector<Trace> traces;
  traces.push_back(std::move(trace).value());
  return analyzed(tag, "<stdin>", traces, options);
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
  if (path == "-") return report_from_stdin(tag, options);
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
  return analyzed(tag, path, traces, options);
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
  const AnalysisOptions options = args.model.analysis_options();
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
    text = render_diff(diff, style_for(stdout));
  }
  std::fwrite(text.data(), 1, text.size(), stdout);
  std::fflush(stdout);
  if (!args.html.empty()) {
    const Status written =
        write_output_file("--html", args.html, {args.base, args.now}, diff_to_html(diff, page_origin()));
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
    15, [](CLI::App& app) -> std::function<int()> {
      auto args = std::make_shared<DiffArgs>();
      app.add_option("BASE", args->base,
                     "The run before the change: a trace, capture, directory of per-rank traces, "
                     "or a report saved with `gpuscope analyze --json`")
          ->required();
      app.add_option("NEW", args->now, "The run after the change (same kinds of input)")->required();
      app.add_flag("--json", args->json, "Print the comparison as JSON (schema gpuscope.diff/1, docs/diff.md)");
      app.add_option("--html", args->html,
                     "Also write the comparison as one self-contained HTML page (no network needed to view it) to FILE")
          ->type_name("FILE")
          ->check(output_name_check());
      add_model_options(app, args->model);
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
          "BASE or NEW may be - (stdin): a trace or a saved report.\n\n"
          "Exit codes: 0 comparison printed; 2 bad input or usage (one line on stderr says which\n"
          "side and why), as for analyze.");
      return [args] { return run_diff(*args); };
    }}};

}  // namespace
}  // namespace gpuscope::cli
