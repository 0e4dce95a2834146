// `gpuscope export --perfetto OUT FILE...`: any trace gpuscope reads (PyTorch profiler traces,
// gpuscope captures) as a Chrome/Perfetto trace (kernels by stream, API calls and NVTX by thread,
// launch->kernel arrows, device samples as counter tracks) with the analysis on each GPU: the
// analysed steps and the idle intervals by cause. For ui.perfetto.dev; gzip when OUT ends in .gz.
#include <algorithm>
#include <charconv>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <fmt/core.h>
#include <CLI/CLI.hpp>

#include "cli/analyze_command.h"
#include "cli/command.h"
#include "core/analysis.h"
#include "input/input_source.h"
#include "input/trace_input.h"
#include "render/output_file.h"
#include "render/perfetto_writer.h"
#include "render/text_layout.h"

namespace gpuscope::cli {
namespace {

// `gpuscope export`, as parsed (every value checked by the parser).
struct ExportOptions {
  std::string perfetto;
  InputLimitCliOptions limits;
  std::vector<std::string> inputs;
  std::optional<double> from_ms;  // From the traces' first event.
  std::optional<double> to_ms;
  std::string steps;                                     // "A:B" as typed, for messages...
  std::optional<std::pair<int64_t, int64_t>> step_span;  // ...and its step numbers, inclusive.
  std::string step_range;                                // As for analyze.
};

// The earliest event of the traces (host clock, ns); nullopt when they hold none. The event
// vectors are sorted by start (readers call Trace::sort_events).
std::optional<int64_t> first_event_ns(const std::vector<Trace>& traces) {
  std::optional<int64_t> first;
  auto take = [&](const auto& events, auto time) {
    if (!events.empty()) first = std::min(first.value_or(std::numeric_limits<int64_t>::max()), time(events.front()));
  };
  for (const Trace& t : traces) {
    auto start = [](const auto& e) { return e.start_ns; };
    take(t.kernels, start);
    take(t.memcpys, start);
    take(t.memsets, start);
    take(t.api_calls, start);
    take(t.host_events, start);
    take(t.device_samples, [](const DeviceSample& s) { return s.time_ns; });
  }
  return first;
}

std::optional<std::pair<int64_t, int64_t>> parse_step_span(const std::string& text) {
  const auto colon = text.find(':');
  if (colon == std::string::npos) return std::nullopt;
  int64_t a = 0, b = 0;
  const char* begin = text.data();
  const char* end = text.data() + text.size();
  auto ra = std::from_chars(begin, begin + colon, a);
  auto rb = std::from_chars(begin + colon + 1, end, b);
  if (ra.ec != std::errc() || ra.ptr != begin + colon || rb.ec != std::errc() || rb.ptr != end || a > b) {
    return std::nullopt;
  }
  return std::make_pair(a, b);
}

int run_export(const ExportOptions& options) {
  auto limits = options.limits.limits();
  if (!limits.ok()) {
    fmt::print(stderr, "gpuscope: {}\n", terminal_safe(limits.status().message()));
    return 2;
  }
  const std::optional<std::pair<int64_t, int64_t>>& step_span = options.step_span;
  if (options.from_ms && options.to_ms && *options.from_ms >= *options.to_ms) {
    fmt::print(stderr, "gpuscope: --from {} --to {}: the window is empty; --to must be after --from\n",
               *options.from_ms, *options.to_ms);
    return 2;
  }
  if (std::count(options.inputs.begin(), options.inputs.end(), "-") > 1) {
    fmt::print(stderr, "gpuscope: '-' (stdin) can be read only once\n");
    return 2;
  }
  // Before reading (a large trace takes a while): the output must not replace an input, a
  // special file or a read-only one.
  if (options.perfetto != "-") {
    if (Status usable = check_output_path("--perfetto", options.perfetto, options.inputs); !usable.ok()) {
      fmt::print(stderr, "gpuscope: {}\n", terminal_safe(usable.message()));
      return 2;
    }
  }
  std::vector<Trace> traces;
  for (const auto& path : options.inputs) {
    // Opened once (pipes and "-" for stdin work); the reader is chosen by the first bytes.
    auto trace = read_trace_file(path, limits.value());
    if (!trace.ok()) {
      fmt::print(stderr, "gpuscope: {}: {}\n", terminal_safe(path == "-" ? "<stdin>" : path),
                 terminal_safe(trace.status().message()));
      return 2;
    }
    for (const auto& w : trace->warnings) {
      fmt::print(stderr, "gpuscope: warning: {}: {}\n", terminal_safe(trace->source), terminal_safe(w));
    }
    traces.push_back(std::move(trace).value());
  }

  // Valid as for analyze: at least one trace ran GPU work (analyze_one_trace says what the
  // others hold instead); those others are still written, with a warning.
  PerfettoOptions perfetto;
  AnalysisOptions analysis;
  analysis.step_range = options.step_range;
  for (const Trace& t : traces) {
    if (std::string unmatched = unmatched_step_range(t, analysis); !unmatched.empty()) {
      fmt::print(stderr, "gpuscope: {}\n", unmatched);
      return 2;
    }
  }
  std::vector<std::string> rejected;
  for (const Trace& t : traces) {
    TraceAnalysis a = analyze_one_trace(t, analysis);
    if (a.devices.empty()) rejected.push_back(std::move(a.rejected));
    perfetto.reports.push_back(std::move(a.devices));
  }
  if (rejected.size() == traces.size()) {
    for (const auto& r : rejected) fmt::print(stderr, "gpuscope: {}\n", terminal_safe(r));
    return 2;
  }
  for (const auto& r : rejected) fmt::print(stderr, "gpuscope: warning: {}\n", terminal_safe(r));

  if (options.from_ms || options.to_ms) {
    const int64_t origin = first_event_ns(traces).value_or(0);
    auto at = [&](double ms) { return origin + static_cast<int64_t>(ms * 1e6); };
    if (options.from_ms) perfetto.from_ns = at(*options.from_ms);
    if (options.to_ms) perfetto.to_ns = at(*options.to_ms);
  }
  if (step_span) {
    std::optional<int64_t> from, to;
    for (const auto& reports : perfetto.reports) {
      for (const DeviceReport& r : reports) {
        for (const StepReport& s : r.steps) {
          if (s.number == step_span->first) from = std::min(from.value_or(s.start_ns), s.start_ns);
          if (s.number == step_span->second)
            to = std::max(to.value_or(s.start_ns + s.duration_ns), s.start_ns + s.duration_ns);
        }
      }
    }
    if (!from || !to) {
      std::string have;
      for (const auto& reports : perfetto.reports) {
        for (const DeviceReport& r : reports) {
          if (!r.steps.empty()) {
            have = fmt::format("{}:{}", r.steps.front().number, r.steps.back().number);
            break;
          }
        }
        if (!have.empty()) break;
      }
      fmt::print(stderr, "gpuscope: --steps {}: no analysed step {}; {}\n", options.steps,
                 from ? step_span->second : step_span->first,
                 have.empty() ? "the traces have no analysed steps" : "the analysed steps are " + have);
      return 2;
    }
    perfetto.from_ns = from;
    perfetto.to_ns = to;
  }

  std::vector<std::string> warnings;
  Status status = write_perfetto_file(traces, options.perfetto, options.inputs, &warnings, perfetto);
  if (!status.ok()) {
    fmt::print(stderr, "gpuscope: {}\n", terminal_safe(status.message()));
    return 2;
  }
  for (const auto& w : warnings) fmt::print(stderr, "gpuscope: warning: {}\n", terminal_safe(w));
  if (options.perfetto != "-") {
    fmt::print(stderr, "gpuscope: wrote {} (open it in https://ui.perfetto.dev)\n", terminal_safe(options.perfetto));
  }
  return 0;
}

CommandRegistration kExport({
    "export",
    "Write traces or captures as a Chrome/Perfetto trace for ui.perfetto.dev, with steps and idle causes",
    60,
    [](CLI::App& app) -> std::function<int()> {
      auto options = std::make_shared<ExportOptions>();
      app.add_option("--perfetto", options->perfetto, "Output JSON file ('-' for stdout; gzip when it ends in .gz)")
          ->required();
      app.add_option("inputs", options->inputs,
                     "PyTorch profiler traces (.json, .json.gz) or capture files written by gpuscope run ('-' "
                     "for stdin)")
          ->required();
      CLI::Option* from =
          app.add_option("--from", options->from_ms, "Start of the window, ms after the traces' first event")
              ->check(finite_between(0, 1e12, "--from", "a time in ms"));
      CLI::Option* to = app.add_option("--to", options->to_ms, "End of the window, ms after the traces' first event")
                            ->check(finite_between(0, 1e12, "--to", "a time in ms"));
      app.add_option_function<std::string>(
             "--steps",
             [options](const std::string& text) {
               options->steps = text;
               options->step_span = parse_step_span(text);
             },
             "Window of analysed steps A:B (inclusive, numbers as analyze shows)")
          ->type_name("A:B")
          ->check(CLI::Validator(
              [](std::string& text) -> std::string {
                return parse_step_span(text)
                           ? ""
                           : fmt::format("--steps {}: expected A:B, step numbers with A <= B, e.g. 3:5",
                                         terminal_safe(text));
              },
              ""))
          ->excludes(from)
          ->excludes(to);
      app.add_option("--step-range", options->step_range,
                     "Name of the annotation/NVTX range that marks one step (as for analyze)")
          ->type_name("NAME");
      add_input_limit_options(app, options->limits);
      app.footer(
          "Examples:\n"
          "  gpuscope export --perfetto trace.perfetto.json trace.json.gz\n"
          "  gpuscope export --perfetto steps.json.gz --steps 10:12 trace.json.gz\n"
          "  gpuscope export --perfetto run.json.gz --from 2000 --to 2500 run.gpuscope\n\n"
          "Open the output in ui.perfetto.dev. The output is written whole or not at all (a\n"
          "temporary file renamed over it); an input, a device, a FIFO or a read-only file is\n"
          "never replaced, and a symlink is replaced, not written through.\n\n"
          "Exit codes: 0 written; 2 bad input or usage (one line on stderr says what and where),\n"
          "the output then not written.");
      return [options]() { return run_export(*options); };
    },
});

}  // namespace
}  // namespace gpuscope::cli
