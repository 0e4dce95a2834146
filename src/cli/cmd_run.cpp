// `gpuscope run [--output FILE] [--sample-interval 100ms] [analysis options] -- CMD ARGS...`
//
// Starts CMD with the CUPTI injection library (CUDA_INJECTION64_PATH, NVTX_INJECTION64_PATH)
// and the cuBLAS shape interposer (LD_PRELOAD) in its environment; every process of CMD that
// initialises CUDA writes its own capture (run_captures.h: a staging folder of this run, then
// `FILE` or `<stem>.<pid>.gpuscope`, never replacing a file). Python programs get the bootstrap
// folder on PYTHONPATH (run_libraries.h). Meanwhile gpuscope samples
// NVML/GPM. When CMD exits, the samples are appended to each capture, the captures are analysed
// together (one trace per process), and gpuscope exits with CMD's exit code (128+N if CMD died
// of signal N) unless CMD succeeded and the analysis failed.
#include <algorithm>
#include <chrono>
#include <climits>
#include <csignal>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <unistd.h>

#include <fmt/core.h>
#include <CLI/CLI.hpp>

#include "cli/analyze_command.h"
#include "cli/command.h"
#include "cli/run_calibration.h"
#include "cli/run_captures.h"
#include "cli/run_libraries.h"
#include "cli/run_process.h"
#include "cli/run_sampler.h"
#include "cli/run_try.h"
#include "core/host_marks.h"
#include "core/run_protocol.h"
#include "core/text.h"
#include "input/input_source.h"
#include "input/job_reader.h"

namespace gpuscope::cli {
namespace {

struct RunOptions {
  std::string output;
  std::string sample_interval = "100ms";
  bool no_report = false;
  bool no_calibrate = false;
  int steps = 0;          // Bounded tracing: steps traced (0: the whole run).
  int skip_steps = 5;     // Warm-up steps before the window opens.
  std::string after;      // Bounded tracing by time: open the window after this long...
  std::string for_;       // ...and close it after this long.
  bool whole = false;     // Trace the whole run: no default cap.
  std::string try_fixes;  // --try: measure these fixes (run_try.h) instead of one traced run.
  int try_steps = 30;
  int try_warmup = 10;
  int try_rounds = 1;
  AnalyzeCliOptions analysis;
  std::vector<std::string> command;
};

// --sample-interval: 0 (off), or from 100 ms (NVML's GPM needs that much between samples) to an
// hour, with its unit: a bare "0.5" would be read as 0.5 ms and turn sampling off silently.
DurationRule sample_interval_rule() {
  DurationRule rule{"--sample-interval"};
  rule.min_ns = 100'000'000;
  rule.max_ns = 3'600'000'000'000;
  rule.why_min = "the shortest period NVML GPM measures";
  rule.examples = "100ms, 1s or 0 (off)";
  return rule;
}

// --after and --for: up to a day, with the unit.
DurationRule window_rule(const std::string& option) {
  DurationRule rule{option};
  rule.max_ns = 86'400'000'000'000;
  rule.examples = "500ms, 30s or 2m";
  return rule;
}

int64_t to_ms(const std::string& text) {
  return text.empty() ? 0 : parse_duration_ns(text, std::nullopt).value_or(0) / 1'000'000;
}

// A plain run (no --steps, --after, --for or --whole) traces from the start and stops after
// this many steps (the Python bootstrap counts them) or this long after CUDA started, whichever
// comes first: a job of hours pays for its first minutes only. The time is long enough for
// torch.compile's compilation and autotuning to pass before the steps it is there to see.
constexpr int kDefaultMaxSteps = 300;
constexpr int64_t kDefaultTraceMs = 300'000;

// The environment that bounds the trace window, or an error message.
std::string window_environment(const RunOptions& options, bool python,
                               std::vector<std::pair<std::string, std::string>>* env) {
  const int64_t after_ms = to_ms(options.after);
  const int64_t for_ms = to_ms(options.for_);
  if (options.steps < 0 || options.skip_steps < 0) return "--steps and --skip-steps take counts (0 or more)";
  if (options.steps > 0 && after_ms > 0)
    return "--steps opens the window after --skip-steps steps and --after after a time; use one of them";
  if (options.whole && (options.steps > 0 || after_ms > 0 || for_ms > 0))
    return "--whole traces the whole run; --steps, --after and --for bound it: use one or the other";
  if (options.steps > 0) {
    env->emplace_back(run_protocol::kEnvTraceDeferred.name, "1");
    env->emplace_back(run_protocol::kEnvSteps.name, std::to_string(options.steps));
    env->emplace_back(run_protocol::kEnvSkipSteps.name, std::to_string(options.skip_steps));
    if (!python)
      fmt::print(stderr,
                 "gpuscope run: --steps counts the steps of a PyTorch program (optimizer steps, else "
                 "iterations of its step loop, else CUDA-graph replays) through the Python bootstrap; for other "
                 "programs use --after/--for\n");
  }
  if (after_ms > 0) env->emplace_back(run_protocol::kEnvTraceAfterMs.name, std::to_string(after_ms));
  if (for_ms > 0) env->emplace_back(run_protocol::kEnvTraceForMs.name, std::to_string(for_ms));
  return "";
}

// The default cap of a plain run (see kDefaultMaxSteps); none with --whole or a bounded window.
std::vector<std::pair<std::string, std::string>> default_cap_environment(const RunOptions& options, bool bounded) {
  if (options.whole || bounded) return {};
  return {{run_protocol::kEnvMaxSteps.name, std::to_string(kDefaultMaxSteps)},
          {run_protocol::kEnvTraceForMs.name, std::to_string(kDefaultTraceMs)}};
}

bool looks_like_python(const std::string& program) {
  const std::string base = program.substr(program.rfind('/') + 1);
  return base.rfind("python", 0) == 0 || base == "torchrun" || base == "accelerate";
}

// With --json, stdout carries one JSON document whatever happens: the program's own stdout goes
// to stderr, and a run with nothing to report still prints a report, with no devices and the
// reason under "rejected".
bool json_on_stdout(const RunOptions& options) { return options.analysis.json && !options.no_report; }

// --try: trials of the program (run_try.h), each a bounded `gpuscope run` of this executable.
int try_command(const RunOptions& options, std::vector<std::string> command) {
  // --steps, --skip-steps, --after, --for, --whole and --no-report: refused by CLI11 (excludes).
  if (!looks_like_python(command[0])) {
    fmt::print(stderr,
               "gpuscope run: --try applies its fixes through the Python bootstrap: run a Python program "
               "(python, torchrun)\n");
    return 2;
  }
  TryRequest request;
  request.fixes = options.try_fixes;
  request.command = std::move(command);
  request.steps = options.try_steps;
  request.warmup = options.try_warmup;
  request.rounds = options.try_rounds;
  request.output_dir = !options.output.empty() ? options.output : fmt::format("gpuscope-try-{}", ::getpid());
  request.runner = exe_dir() + "/gpuscope";
  request.json = options.analysis.json;
  request.html = options.analysis.html;
  return run_try(request);
}

int run_command(RunOptions& options, std::vector<std::string> command) {
  if (!command.empty() && command.front() == "--") command.erase(command.begin());
  if (command.empty()) {
    fmt::print(stderr, "gpuscope run: no command given; usage: gpuscope run [OPTIONS] -- CMD ARGS...\n");
    return 2;
  }
  if (!options.try_fixes.empty()) return try_command(options, std::move(command));
  const int64_t interval_ms = to_ms(options.sample_interval);
  std::vector<std::pair<std::string, std::string>> window_env;
  if (std::string error = window_environment(options, looks_like_python(command[0]), &window_env); !error.empty()) {
    fmt::print(stderr, "gpuscope run: {}\n", terminal_safe(error));
    return 2;
  }
  const std::string inject = find_library("libgpuscope_inject.so");
  const std::string blas = find_library("libgpuscope_blas.so");
  if (inject.empty()) {
    fmt::print(stderr, "gpuscope run: libgpuscope_inject.so not found beside {} (set {} to its folder)\n", exe_dir(),
               run_protocol::kEnvLibDir.name);
    return 2;
  }
  // Each traced process writes into this run's own staging folder; the captures get their final
  // names (FILE for one, FILE-stem.<pid>.gpuscope each for several) once the program has exited.
  RunCaptures captures;
  if (std::string error; !captures.begin(options.output.empty() ? "" : absolute(options.output), &error)) {
    fmt::print(stderr, "gpuscope run: {}\n", terminal_safe(error));
    return 2;
  }

  // The tracer's own cost per launch call on this host, measured just before the program runs
  // and again after it (the host's launch rate drifts over seconds); the two are averaged.
  Calibration calibration;
  const std::string calibrator = options.no_calibrate ? "" : find_library("gpuscope-calibrate");
  if (!options.no_calibrate) {
    if (calibrator.empty()) {
      calibration.note = "tracing cost not measured: gpuscope-calibrate not found beside " + exe_dir();
    } else {
      calibration = calibrate_tracing(calibrator, inject);
    }
    if (!calibration.cost) fmt::print(stderr, "gpuscope run: {}\n", terminal_safe(calibration.note));
  }

  ChildSpec spec;
  spec.argv = command;
  spec.stdout_to_stderr = json_on_stdout(options);
  options.analysis.json_without_devices = true;
  spec.env.emplace_back(run_protocol::kEnvCudaInjection.name, inject);
  spec.env.emplace_back(run_protocol::kEnvNvtxInjection.name, inject);
  spec.env.emplace_back(run_protocol::kEnvCapturePrefix.name, captures.prefix());
  if (!blas.empty()) {
    std::string preload = blas;
    if (const char* old = std::getenv(run_protocol::kEnvLdPreload.name); old && *old) preload += std::string(":") + old;
    spec.env.emplace_back(run_protocol::kEnvLdPreload.name, preload);
  }
  const bool bounded = !window_env.empty();
  const auto cap_env = default_cap_environment(options, bounded);
  const bool capped = !cap_env.empty();
  for (auto& kv : window_env) spec.env.push_back(std::move(kv));
  for (const auto& kv : cap_env) spec.env.push_back(kv);
  const std::string bootstrap = find_python_bootstrap();
  for (auto& kv : python_environment(bootstrap, std::getenv(run_protocol::kEnvPython.name),
                                     std::getenv(run_protocol::kEnvPythonPath.name)))
    spec.env.push_back(std::move(kv));
  if (bootstrap.empty() && looks_like_python(command[0]))
    fmt::print(stderr,
               "gpuscope run: the Python bootstrap (python/ beside {}) is missing; Python is traced "
               "without step and data-loading hooks\n",
               inject.substr(0, inject.rfind('/')));
  if (const char* existing = std::getenv(run_protocol::kEnvCudaInjection.name); existing && *existing)
    fmt::print(stderr, "gpuscope run: replacing {}={} for the traced program\n", run_protocol::kEnvCudaInjection.name,
               existing);

  RunSampler sampling;
  sampling.start(interval_ms);
  const auto child_started = std::chrono::steady_clock::now();
  ChildResult child = run_child(spec, RunSampler::run_thread_of, &sampling);
  const double child_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - child_started).count();
  sampling.stop();
  if (!child.error.empty()) {
    captures.discard();
    fmt::print(stderr, "gpuscope run: {}\n", terminal_safe(child.error));
    if (json_on_stdout(options)) print_json_without_devices({child.error});
    return child.exit_code;
  }

  if (captures.staged().empty()) {
    captures.discard();
    const std::string reason = fmt::format("no process of '{}' initialised CUDA; nothing was traced", command[0]);
    fmt::print(stderr, "gpuscope run: {}\n", terminal_safe(reason));
    if (json_on_stdout(options)) print_json_without_devices({reason});
    return child.exit_code;
  }
  if (calibration.cost) {
    const TracingCost before = *calibration.cost;
    const Calibration after = calibrate_tracing(calibrator, inject);
    if (after.cost) {
      calibration.cost = TracingCost{(before.plain_launch_ns + after.cost->plain_launch_ns) / 2,
                                     (before.traced_launch_ns + after.cost->traced_launch_ns) / 2};
    }
    fmt::print(stderr,
               "gpuscope run: tracing adds {:.1f} us per launch call on this host (plain -> traced, before the "
               "program: {:.1f} -> {:.1f} us{})\n",
               calibration.cost->added_ns() / 1e3, before.plain_launch_ns / 1e3, before.traced_launch_ns / 1e3,
               after.cost ? fmt::format(", after: {:.1f} -> {:.1f} us", after.cost->plain_launch_ns / 1e3,
                                        after.cost->traced_launch_ns / 1e3)
                          : std::string(", not measured after"));
  }
  // Device samples and the tracing cost go into every capture (appended chunks), so
  // `gpuscope analyze` sees them too.
  for (const auto& error : captures.append(sampling.samples(), calibration.cost))
    fmt::print(stderr, "gpuscope run: {}\n", terminal_safe(error));
  std::vector<std::string> notes;
  const std::vector<std::string> written = captures.publish(&notes);
  for (const auto& note : notes) fmt::print(stderr, "gpuscope run: {}\n", terminal_safe(note));
  fmt::print(stderr, "gpuscope run: {} capture{} written:", written.size(), written.size() == 1 ? "" : "s");
  for (const auto& c : written) fmt::print(stderr, " {}", terminal_safe(c));
  fmt::print(stderr, "\n");
  if (!sampling.note().empty()) fmt::print(stderr, "gpuscope run: {}\n", terminal_safe(sampling.note()));
  if (child.signal) {
    fmt::print(stderr, "gpuscope run: '{}' was killed by signal {}\n", terminal_safe(command[0]), *child.signal);
    // A crash, not a kill: the tracer may have caused it, and the user must be able to tell.
    if (const int s = *child.signal; s == SIGSEGV || s == SIGABRT || s == SIGBUS || s == SIGILL || s == SIGFPE)
      fmt::print(stderr,
                 "gpuscope run: a crash; if the program runs to its end untraced, gpuscope may have caused it: "
                 "docs/troubleshooting.md says how to tell (PYTHONFAULTHANDLER=1, GPUSCOPE_PYTHON=0)\n");
  }

  // A bounded run says whether its window opened, report or not (the captures are small).
  if (options.no_report && !bounded) return child.exit_code;
  // Read as `gpuscope analyze` reads them (the job reader: several at a time, the same limits).
  std::vector<Trace> traces;
  {
    JobReadOptions job;
    if (auto limits = InputLimits::from_environment(); limits.ok()) job.limits = limits.value();
    std::vector<std::optional<Trace>> read(written.size());
    std::vector<std::string> errors(written.size());
    read_traces(written, job, [&](size_t i, StatusOr<Trace> trace) {
      if (trace.ok())
        read[i] = std::move(trace).value();
      else
        errors[i] = trace.status().message();
    });
    for (size_t i = 0; i < written.size(); ++i) {
      if (read[i])
        traces.push_back(std::move(*read[i]));
      else
        fmt::print(stderr, "gpuscope run: {}\n", terminal_safe(errors[i]));
    }
  }
  if (bounded) {
    size_t kernels = 0;
    for (const auto& t : traces) kernels += t.kernels.size();
    if (kernels == 0) {
      fmt::print(stderr, "gpuscope run: the trace window never opened ({}); nothing was traced\n",
                 options.steps > 0
                     ? fmt::format("fewer than {} steps seen: steps are optimizer steps, else iterations of "
                                   "the step loop (Python 3.12+), else CUDA-graph replays; with none of them 20 s "
                                   "after CUDA started the window opens for 10 s; --after and --for bound the "
                                   "window by time instead",
                                   options.skip_steps)
                     : "the program ended first");
      // The captures hold no GPU work because nothing was recorded, not because the program
      // did none: no report, which would call each process a helper without GPU work.
      fmt::print(stderr,
                 "gpuscope run: the program ran {:.1f} s; one that ends this soon is traced whole without "
                 "--steps\n",
                 child_s);
      if (!options.no_report && json_on_stdout(options))
        print_json_without_devices({"the trace window never opened: nothing was traced"});
      return child.exit_code;
    }
    fmt::print(stderr, "gpuscope run: traced a bounded window ({}); nothing was recorded after it\n",
               options.steps > 0 ? fmt::format("{} steps after {} warm-up", options.steps, options.skip_steps)
                                 : fmt::format("{}{}", options.after.empty() ? "" : "after " + options.after,
                                               options.for_.empty() ? "" : " for " + options.for_));
  }
  if (capped) {
    // What a plain run left untraced, and why: the bootstrap marks a stop after its steps; the
    // time cap shows in how long the program ran.
    std::optional<int64_t> steps, fine_us, period_ns;
    for (const auto& t : traces) {
      const WindowMarks window = parse_host_marks(t).window;
      if (auto s = window.capped_after_steps) steps = std::max(steps.value_or(0), *s);
      if (auto s = window.capped_after_us) fine_us = std::max(fine_us.value_or(0), *s);
      if (auto s = window.loop_period_ns) period_ns = std::max(period_ns.value_or(0), *s);
    }
    if (fine_us)
      fmt::print(stderr,
                 "gpuscope run: the step loop turns every {:.1f} us, too fast for each turn to be worth "
                 "tracing: traced {:.1f} s of it, then detached CUPTI; the rest of the run ran untraced "
                 "(--whole traces it all)\n",
                 static_cast<double>(period_ns.value_or(0)) / 1e3, static_cast<double>(*fine_us) / 1e6);
    else if (steps)
      fmt::print(stderr,
                 "gpuscope run: traced the first {} steps, then detached CUPTI: the rest of the run ran "
                 "untraced so that a long job keeps its speed (--whole traces it all)\n",
                 *steps);
    else if (child_s * 1000 > static_cast<double>(kDefaultTraceMs))
      fmt::print(stderr,
                 "gpuscope run: traced the first {} s after CUDA started, then detached CUPTI: the "
                 "remaining {:.0f} s ran untraced so that a long job keeps its speed (--whole traces it all)\n",
                 kDefaultTraceMs / 1000, child_s - static_cast<double>(kDefaultTraceMs) / 1000);
  }
  if (options.no_report) return child.exit_code;
  if (traces.empty()) {
    if (json_on_stdout(options)) print_json_without_devices({"no capture could be read"});
    return child.exit_code != 0 ? child.exit_code : 2;
  }
  // The processes of a launcher (torchrun, mpirun, srun) name their rank: report them in rank
  // order, not pid order; processes without one follow, in the order they were written.
  std::stable_sort(traces.begin(), traces.end(), [](const Trace& a, const Trace& b) {
    return a.rank.value_or(INT32_MAX) < b.rank.value_or(INT32_MAX);
  });
  int report_code = report_traces(traces, options.analysis);
  return child.exit_code != 0 ? child.exit_code : report_code;
}

CommandRegistration kRun({
    "run",
    "Trace any CUDA program with no code change (CUPTI), report when it exits",
    20,
    [](CLI::App& app) -> std::function<int()> {
      auto options = std::make_shared<RunOptions>();
      app.add_option("--output,-o", options->output,
                     "Capture file (default gpuscope-run-DATE-TIME-PID-RANDOM.gpuscope); with several "
                     "CUDA processes, one FILE-stem.<pid>.gpuscope each. An existing file is never "
                     "replaced: the capture then gets a numbered name beside it");
      app.add_option("--sample-interval", options->sample_interval,
                     "NVML/GPM sampling period while the program runs (e.g. 100ms, 1s; 0 = off)")
          ->capture_default_str()
          ->type_name("DURATION")
          ->check(duration_check(sample_interval_rule()));
      app.add_flag("--no-report", options->no_report, "Only write the capture(s)");
      app.add_flag("--no-calibrate", options->no_calibrate,
                   "Do not measure what tracing adds to each kernel launch on this host (gpuscope-calibrate, about "
                   "2s in all, before and after the program); without it, launch-bound speedups are "
                   "ratios to the slower traced step");
      app.add_option("--steps", options->steps,
                     "Trace only N steps, then record nothing more (PyTorch programs: optimizer steps, else "
                     "iterations of the step loop, else CUDA-graph replays; with none of them 20 s after CUDA "
                     "started, a 10 s window)");
      app.add_option("--skip-steps", options->skip_steps, "Warm-up steps run untraced before --steps")
          ->capture_default_str();
      app.add_option("--after", options->after, "Start tracing this long after CUDA starts (e.g. 30s, 2m)")
          ->type_name("DURATION")
          ->check(duration_check(window_rule("--after")));
      app.add_option("--for", options->for_, "Stop tracing this long after it started (e.g. 10s)")
          ->type_name("DURATION")
          ->check(duration_check(window_rule("--for")));
      app.add_flag("--whole", options->whole,
                   "Trace the whole run. Without it, and without --steps/--after/--for, tracing stops after "
                   "the first 300 steps or 5 minutes after CUDA started, whichever comes first, and the rest "
                   "of a long job runs untraced");
      auto* try_option =
          app.add_option("--try", options->try_fixes,
                         "Measure fixes on this program, with no code change: FIX[,FIX...] of " + trial_fix_names() +
                             ", or 'auto' (those the findings advise). Runs the program as it is, once per fix, "
                             "then as it is again, each ended after its timed steps; -o names a new folder for "
                             "their captures and logs")
              ->type_name("FIXES")
              ->check(CLI::Validator(
                  [](std::string& text) {
                    bool automatic = false;
                    std::string error;
                    return parse_trial_fixes(text, &automatic, &error) ? std::string() : error;
                  },
                  "", "fixes"));
      try_option->excludes("--steps")
          ->excludes("--skip-steps")
          ->excludes("--after")
          ->excludes("--for")
          ->excludes("--whole")
          ->excludes("--no-report");
      app.add_option("--try-steps", options->try_steps, "Steps timed per --try run")
          ->capture_default_str()
          ->check(CLI::Range(3, 100000));
      app.add_option("--try-warmup", options->try_warmup, "Steps run before timing, per --try run")
          ->capture_default_str()
          ->check(CLI::Range(1, 100000));
      app.add_option("--try-rounds", options->try_rounds,
                     "Rounds of --try runs (as is, then each fix), pooled per fix; more rounds average out a "
                     "machine whose speed moves from run to run")
          ->capture_default_str()
          ->check(CLI::Range(1, 20));
      add_analysis_options(app, options->analysis);
      // Everything after `--` is the command, options included.
      app.add_option("command", options->command, "The program to trace and its arguments, after --")->take_all();
      app.footer(
          "Examples:\n"
          "  gpuscope run -- python train.py --epochs 1     # the first 300 steps or 5 min\n"
          "  gpuscope run --whole -- python train.py        # every step, however long\n"
          "  gpuscope run --steps 20 -- python serve.py      # 20 steps, after 5 warm-up\n"
          "  gpuscope run --after 60s --for 10s -- ./server  # a 10s window of a long run\n"
          "  gpuscope run --try auto -- python train.py     # measure the advised fixes\n\n"
          "Every process of the program that uses CUDA is traced (CUPTI kernels, copies, API "
          "calls, NVTX ranges, cuBLAS GEMM shapes).\n\n"
          "With --json, stdout holds the JSON report and nothing else: the program's own stdout goes "
          "to stderr, and a run that traced nothing still prints a report (no devices, the reason "
          "under \"rejected\").\n\n"
          "Exit codes: the program's own exit code (128+N when a signal N killed it), whatever the "
          "report; when the program exited 0: 0, or 2 when the report could not be made (bad "
          "input or usage, one line on stderr says what). Options are checked before the program "
          "starts: a bad one is exit 2 and the program never runs.");
      return [options]() { return run_command(*options, options->command); };
    },
});

}  // namespace
}  // namespace gpuscope::cli
