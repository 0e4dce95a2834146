// gpuscope analyze TRACE... : read PyTorch profiler traces (or gpuscope captures) and report
// how much real work the GPU did, where the rest of the time went, and what to change.
#include <unistd.h>
#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <mutex>
#include <span>
#include <thread>

#include <fmt/core.h>

#include "cli/analyze_command.h"
#include "cli/command.h"
#include "core/analysis.h"
#include "core/run_protocol.h"
#include "core/steps.h"
#include "input/input_source.h"
#include "input/job_reader.h"
#include "input/kineto_reader.h"
#include "input/trace_input.h"
#include "render/csv_report.h"
#include "render/html_report.h"
#include "render/output_file.h"
#include "render/report_json.h"
#include "render/report_text.h"
#include "render/text_layout.h"

namespace gpuscope::cli {

AnalysisOptions ModelCliOptions::analysis_options() const {
  AnalysisOptions options;
  options.model = model;
  options.flops_per_step = flops_per_step;
  options.peak_tflops = peak_tflops;
  options.step_range = step_range;
  return options;
}

AnalysisOptions AnalyzeCliOptions::analysis_options() const {
  AnalysisOptions options = model.analysis_options();
  options.as_job = as_job;
  return options;
}

void add_model_options(CLI::App& app, ModelCliOptions& o) {
  CLI::Option* model = app.add_option_function<std::string>(
                              "--model", [&o](const std::string& text) { o.model = parse_model_spec(text).value(); },
                              "Model for MFU, e.g. gpt:params=124M,layers=12,heads=12,dmodel=768,seq=1024,batch=16\n"
                              "(training FLOPs per token = 6N + 12*L*H*Q*T, PaLM appendix B)")
                           ->type_name("SPEC")
                           ->check(CLI::Validator(
                               [](std::string& text) -> std::string {
                                 auto spec = parse_model_spec(text);
                                 return spec.ok() ? "" : terminal_safe(spec.status().message());
                               },
                               ""));
  CLI::Option* flops = app.add_option("--flops-per-step", o.flops_per_step,
                                      "Model FLOPs per training step, for MFU (instead of --model)")
                           ->check(flops_per_step_check());
  model->excludes(flops);
  flops->excludes(model);
  app.add_option("--peak-tflops", o.peak_tflops,
                 "Dense peak TFLOP/s to divide by (default: from the device name; bf16 dense, e.g. 989.4 "
                 "for H100/H200 SXM)")
      ->check(peak_tflops_check());
  app.add_option("--step-range", o.step_range,
                 "Name of the annotation/NVTX range that marks one step (default: ProfilerStep#N, then "
                 "'step'/'train_step', then optimizer steps); one that names no annotation is an error")
      ->type_name("NAME");
}

StatusOr<InputLimits> InputLimitCliOptions::limits() const {
  auto limits = InputLimits::from_environment();
  if (!limits.ok()) return limits;
  if (max_inflate_bytes) limits->max_inflate_bytes = max_inflate_bytes;
  return limits;
}

void add_input_limit_options(CLI::App& app, InputLimitCliOptions& o) {
  app.add_option_function<std::string>(
         "--max-inflate", [&o](const std::string& text) { o.max_inflate_bytes = parse_byte_size(text); },
         fmt::format("Most bytes a compressed input may expand to, e.g. 16G (default: 100x the compressed size for "
                     "JSON, 32x for captures, at least 256M, bounded by memory; env {})",
                     run_protocol::kEnvMaxInflate.name))
      ->type_name("SIZE")
      ->check(size_check("--max-inflate", "16G"));
}

void add_analysis_options(CLI::App& app, AnalyzeCliOptions& o) {
  app.add_flag("--json", o.json, "Print the report as JSON (schema gpuscope.report/1) instead of text");
  app.add_option("--html", o.html,
                 "Also write the report as one self-contained HTML page (timeline, charts, findings; no network "
                 "needed to view it) to FILE")
      ->type_name("FILE")
      ->check(output_name_check());
  add_model_options(app, o.model);
}

std::string unmatched_step_range(const Trace& trace, const AnalysisOptions& options) {
  if (options.step_range.empty() || count_step_range_matches(trace, options.step_range) > 0) return "";
  std::string have;
  for (const StepNameCount& n : step_like_annotations(trace)) {
    have += fmt::format("{}{} ({}x)", have.empty() ? "" : ", ", terminal_safe(n.name), n.count);
  }
  const std::string source = trace.source == "-" ? "<stdin>" : trace.source;
  return fmt::format("--step-range {}: no annotation of {} has that name; {}", terminal_safe(options.step_range),
                     terminal_safe(source),
                     have.empty() ? "it has no recurring annotations: leave --step-range out (steps are then found "
                                    "from optimizer steps, the step loop or the kernel pattern)"
                                  : "its recurring annotations are " + have + ": name one of them (without #N)");
}

std::string impossible_utilization(std::span<const DeviceReport> devices) {
  for (const DeviceReport& d : devices) {
    auto over = [](const std::optional<double>& v) { return v && *v > 100.0; };
    if (!over(d.mfu_pct) && !over(d.hfu_pct)) continue;
    const bool mfu = over(d.mfu_pct);
    const double pct = mfu ? *d.mfu_pct : *d.hfu_pct;
    const std::string flops =
        mfu ? fmt::format("model FLOPs per step {} ({})", flops_text(d.model_flops_per_step.value_or(0)),
                          d.model_flops_formula.starts_with("given") ? "--flops-per-step" : "--model")
            : fmt::format("matmul FLOPs per step {} (from op shapes)", flops_text(d.matmul_flops_per_step.value_or(0)));
    return fmt::format(
        "{} would be {:.3g}%, which is impossible: {} in {} per step at a peak of {:.1f} TFLOP/s ({}); "
        "check {}--peak-tflops",
        mfu ? "MFU" : "HFU", pct, flops, duration_text(d.step_mean_ms.value_or(0) * 1e6), d.peak_tflops.value_or(0),
        d.peak_basis, mfu ? "--flops-per-step or --model, and " : "");
  }
  return "";
}

namespace {

// Prints the report of traces analysed one by one (analyze_one_trace), in their order.
// `traces`: the traces (at least their source and device samples) for --html.
int report_analyses(std::vector<TraceAnalysis> parts, const AnalyzeCliOptions& o, const AnalysisOptions& options,
                    std::span<const Trace> traces) {
  const std::optional<CsvTable> csv = o.csv.empty() ? std::nullopt : csv_table_from_name(o.csv);
  const Report report = combine_analyses(std::move(parts), options);
  for (const auto& w : report.warnings) fmt::print(stderr, "gpuscope: warning: {}\n", terminal_safe(w));
  if (report.devices.empty() && !report.rejected.empty()) {
    for (const auto& r : report.rejected) fmt::print(stderr, "gpuscope: {}\n", terminal_safe(r));
    if (o.json && o.json_without_devices) print_json_without_devices(report.rejected);
    return 2;
  }
  // An MFU over 100% is no measurement: the inputs that made it are wrong. Refused, never shown.
  if (const std::string impossible = impossible_utilization(report.devices); !impossible.empty()) {
    fmt::print(stderr, "gpuscope: {}\n", terminal_safe(impossible));
    if (o.json && o.json_without_devices) print_json_without_devices({impossible});
    return 2;
  }
  for (const auto& r : report.rejected) fmt::print(stderr, "gpuscope: skipped {}\n", terminal_safe(r));
  // A valid trace without GPU work is described (exit 0), not refused as bad input.
  const std::string text = csv      ? report_to_csv(report, *csv)
                           : o.json ? report_to_json(report)
                                    : render_report(report, style_for(stdout));
  std::fwrite(text.data(), 1, text.size(), stdout);
  std::fflush(stdout);
  if (!o.html.empty()) {
    std::vector<std::string> inputs;
    for (const Trace& t : traces) inputs.push_back(t.source);
    const Status written = write_output_file("--html", o.html, inputs, report_to_html(report, traces, page_origin()));
    if (!written.ok()) {
      fmt::print(stderr, "gpuscope: {}\n", terminal_safe(written.message()));
      return 2;
    }
    fmt::print(stderr, "gpuscope: wrote {}\n", terminal_safe(o.html));
  }
  return 0;
}

}  // namespace

void print_json_without_devices(std::vector<std::string> rejected) {
  Report report;
  report.rejected = std::move(rejected);
  const std::string text = report_to_json(report);
  std::fwrite(text.data(), 1, text.size(), stdout);
  std::fflush(stdout);
}

int report_traces(std::vector<Trace>& traces, const AnalyzeCliOptions& o) {
  if (!o.html.empty()) {
    std::vector<std::string> inputs;
    for (const Trace& t : traces) inputs.push_back(t.source);
    if (Status usable = check_output_path("--html", o.html, inputs); !usable.ok()) {
      fmt::print(stderr, "gpuscope: {}\n", terminal_safe(usable.message()));
      return 2;
    }
  }
  const AnalysisOptions options = o.analysis_options();
  for (const Trace& t : traces) {
    if (const std::string unmatched = unmatched_step_range(t, options); !unmatched.empty()) {
      fmt::print(stderr, "gpuscope: {}\n", unmatched);
      if (o.json && o.json_without_devices) print_json_without_devices({unmatched});
      return 2;
    }
  }
  std::vector<TraceAnalysis> parts;
  parts.reserve(traces.size());
  for (const Trace& t : traces) parts.push_back(analyze_one_trace(t, options));
  return report_analyses(std::move(parts), o, options, traces);
}

namespace {

// `gpuscope analyze`, as parsed (every value checked by the parser).
struct AnalyzeArgs {
  std::vector<std::string> paths;
  InputLimitCliOptions limits;
  std::optional<uint64_t> max_memory_bytes;  // --max-memory SIZE
  unsigned threads = 0;                      // --threads N (0: GPUSCOPE_THREADS, else every core)
  AnalyzeCliOptions options;
};

// A progress line on stderr while traces are read and analysed: files, bytes, events. Only
// when stderr is a terminal, and only once the work has taken a second; erased at the end.
class ProgressLine {
 public:
  ProgressLine(const JobProgress& progress, std::vector<uint64_t> file_bytes)
      : progress_(progress), file_bytes_(std::move(file_bytes)) {
    if (!isatty(fileno(stderr))) return;
    for (uint64_t b : file_bytes_) total_bytes_ += b;
    thread_ = std::thread([this] { run(); });
  }
  ~ProgressLine() {
    if (!thread_.joinable()) return;
    {
      std::lock_guard lock(mutex_);
      done_ = true;
    }
    wake_.notify_all();
    thread_.join();
    if (shown_) fmt::print(stderr, "\r\033[K");
  }

 private:
  void run() {
    const auto start = std::chrono::steady_clock::now();
    std::unique_lock lock(mutex_);
    while (!wake_.wait_for(lock, std::chrono::milliseconds(200), [this] { return done_; })) {
      if (std::chrono::steady_clock::now() - start < std::chrono::seconds(1)) continue;
      shown_ = true;
      print();
    }
  }
  void print() const {
    uint64_t bytes = 0;
    int64_t events = 0;
    for (const auto& b : progress_.bytes_read) bytes += b.load(std::memory_order_relaxed);
    for (const auto& e : progress_.events_read) events += e.load(std::memory_order_relaxed);
    const size_t files = file_bytes_.size(), done = progress_.files_done.load();
    const size_t running = progress_.files_started.load() - done;
    std::string line = fmt::format("reading: {} of {} file{} done", done, files, files == 1 ? "" : "s");
    if (running > 0) line += fmt::format(", {} in progress", running);
    if (total_bytes_ > 0) {
      line += fmt::format(", {:.0f}%", std::min(100.0, 100.0 * static_cast<double>(bytes) / total_bytes_));
    }
    if (events > 0) line += fmt::format(", {:.1f}M events", static_cast<double>(events) / 1e6);
    fmt::print(stderr, "\r\033[K{}", line.substr(0, 79));
  }

  const JobProgress& progress_;
  std::vector<uint64_t> file_bytes_;
  uint64_t total_bytes_ = 0;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool done_ = false;
  bool shown_ = false;
  std::thread thread_;
};

uint64_t file_bytes(const std::string& path) {
  std::error_code ec;
  const auto size = path == "-" ? 0 : std::filesystem::file_size(path, ec);
  return ec ? 0 : static_cast<uint64_t>(size);
}

int run_analyze(const AnalyzeArgs& args) {
  auto limits = args.limits.limits();
  if (!limits.ok()) {
    fmt::print(stderr, "gpuscope: {}\n", terminal_safe(limits.status().message()));
    return 2;
  }
  JobReadOptions job;
  job.limits = limits.value();
  if (args.max_memory_bytes) job.max_memory_bytes = *args.max_memory_bytes;
  job.threads = args.threads;
  if (job.threads == 0) {
    auto threads = threads_from_environment();
    if (!threads.ok()) {
      fmt::print(stderr, "gpuscope: {}\n", terminal_safe(threads.status().message()));
      return 2;
    }
    job.threads = threads.value();
  }
  const AnalysisOptions analysis = args.options.analysis_options();
  auto paths = expand_trace_paths(args.paths);
  if (!paths.ok()) {
    fmt::print(stderr, "gpuscope: {}\n", terminal_safe(paths.status().message()));
    return 2;
  }
  if (!args.options.html.empty()) {  // Before reading: a large trace takes a while.
    std::vector<std::string> inputs = paths.value();
    inputs.insert(inputs.end(), args.paths.begin(), args.paths.end());
    if (Status usable = check_output_path("--html", args.options.html, inputs); !usable.ok()) {
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
#if defined(__GLIBC__)
  // Traces are read and dropped one after another: memory freed by one is kept for the next
  // (up to 1 GiB) rather than returned to the system and faulted in again, and vectors up to
  // 32 MiB live in the heap. 6-8% less CPU time on the job benchmark, about 60 MB more peak
  // RSS (docs/validation.md, "Performance").
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
#endif
  // Read and analysed several at a time (job_reader.h); the messages and the report come out
  // in the order of the files, as if they were read one after the other.
  const std::vector<std::string>& files = paths.value();
  std::vector<std::optional<TraceAnalysis>> parts(files.size());
  std::vector<std::string> errors(files.size());
  std::vector<std::string> step_range_errors(files.size());  // --step-range names no annotation
  // What --html draws besides the report: each trace's device samples (small), by source.
  std::vector<Trace> samples(files.size());
  {
    JobProgress progress(files.size());
    job.progress = &progress;
    std::vector<uint64_t> sizes;
    for (const auto& f : files) sizes.push_back(file_bytes(f));
    ProgressLine line(progress, std::move(sizes));
    read_traces(files, job, [&](size_t i, StatusOr<Trace> trace) {
      if (!trace.ok()) {
        errors[i] = trace.status().message();
        return;
      }
      if (std::string unmatched = unmatched_step_range(trace.value(), analysis); !unmatched.empty()) {
        step_range_errors[i] = std::move(unmatched);
        return;
      }
      parts[i] = analyze_one_trace(trace.value(), analysis);
      samples[i].source = trace->source;
      samples[i].device_samples = std::move(trace->device_samples);
    });
  }
  // A step range that names nothing would leave every step definition to chance: refused.
  for (const std::string& e : step_range_errors) {
    if (e.empty()) continue;
    fmt::print(stderr, "gpuscope: {}\n", e);
    return 2;
  }
  bool failed = false;
  size_t skipped = 0;
  std::vector<TraceAnalysis> read;
  std::vector<Trace> read_samples;
  for (size_t i = 0; i < files.size(); ++i) {
    const std::string& path = files[i];
    const bool named = std::find(args.paths.begin(), args.paths.end(), path) != args.paths.end();
    const std::string shown = path == "-" ? "<stdin>" : path;
    if (!parts[i]) {
      if (named) {
        fmt::print(stderr, "gpuscope: {}: {}\n", terminal_safe(shown), terminal_safe(errors[i]));
        failed = true;
      } else {
        fmt::print(stderr, "gpuscope: skipped {}: {}\n", terminal_safe(shown), terminal_safe(errors[i]));
        ++skipped;
      }
      continue;
    }
    read.push_back(std::move(*parts[i]));
    read_samples.push_back(std::move(samples[i]));
  }
  if (failed) return 2;
  if (read.empty()) {
    fmt::print(stderr, "gpuscope: none of the {} files could be read\n", skipped);
    return 2;
  }
  return report_analyses(std::move(read), args.options, analysis, read_samples);
}

CommandRegistration kAnalyze{CommandSpec{
    "analyze",
    "Analyse PyTorch profiler traces or gpuscope captures: utilization vs SM activity vs MFU, idle causes, "
    "kernels, precision, findings",
    10, [](CLI::App& app) -> std::function<int()> {
      auto args = std::make_shared<AnalyzeArgs>();
      app.add_option("TRACE", args->paths,
                     "Trace files (.json, .json.gz from torch.profiler; .gpuscope captures), directories of "
                     "per-rank traces, pipes (<(zcat t.json.gz)) or - for stdin")
          ->required();
      add_input_limit_options(app, args->limits);
      add_analysis_options(app, args->options);
      app.add_option("--threads", args->threads,
                     fmt::format("Threads for reading and analysing (default: every\n"
                                 "core, or {}); 1: one thread. The\n"
                                 "report is the same whatever the number",
                                 run_protocol::kEnvThreads.name))
          ->check(count_between(1, 4096, "--threads"));
      app.add_option_function<std::string>(
             "--max-memory", [args](const std::string& text) { args->max_memory_bytes = parse_byte_size(text); },
             "Memory for the traces read at once, e.g. 8G\n"
             "(default: half of the available memory): the\n"
             "ranks of a directory are read a few at a time")
          ->type_name("SIZE")
          ->check(size_check("--max-memory", "8G"));
      CLI::Option* csv =
          app.add_option("--csv", args->options.csv,
                         "Print one table as CSV instead of the report: steps, kernels or idle (RFC 4180; "
                         "unmeasured values are empty cells; kernels: every kernel name)")
              ->type_name("TABLE")
              ->check(one_of({"steps", "kernels", "idle"}, "--csv", "--csv steps TRACE"));
      csv->excludes("--json");
      app.get_option("--json")->excludes(csv);
      app.add_flag("--as-job", args->options.as_job,
                   "Treat the traces as the ranks of one job even when their ranks, world size, GPU model or "
                   "time ranges do not agree");
      app.footer(
          "\nExamples:\n"
          "  gpuscope analyze trace.json.gz\n"
          "  gpuscope analyze trace.json.gz \\\n"
          "      --model gpt:params=124M,layers=12,heads=12,dmodel=768,seq=1024,batch=16\n"
          "  gpuscope analyze --json traces/ > report.json  # one per rank + summary\n"
          "  gpuscope analyze --max-memory 4G job/          # 64 ranks, a few at a time\n"
          "  gpuscope analyze --csv steps trace.json.gz > steps.csv\n"
          "  gpuscope analyze --html report.html trace.json.gz  # one page to share\n\n"
          "Record a trace with record_shapes=True so matmul FLOPs (HFU) and precision can be counted:\n"
          "  schedule = torch.profiler.schedule(wait=1, warmup=1, active=3)\n"
          "  with torch.profiler.profile(activities=[CPU, CUDA], record_shapes=True,\n"
          "                              schedule=schedule) as p:\n"
          "      for batch in loader: train_step(batch); p.step()\n"
          "  p.export_chrome_trace(\"trace.json.gz\")\n\n"
          "Exit codes: 0 report printed; 2 bad input or usage (one line on stderr says what and\n"
          "where): an unreadable trace, a bad option value, a --step-range that names no\n"
          "annotation, an MFU over 100% (--flops-per-step, --model or --peak-tflops is wrong).");
      return [args] { return run_analyze(*args); };
    }}};

}  // namespace
}  // namespace gpuscope::cli
