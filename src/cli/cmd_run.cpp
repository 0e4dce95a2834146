// `gpuscope run [--output FILE] [--sample-interval 100ms] [analysis options] -- CMD ARGS...`
//
// Starts CMD with the CUPTI injection library (CUDA_INJECTION64_PATH, NVTX_INJECTION64_PATH)
// and the cuBLAS shape interposer (LD_PRELOAD) in its environment; every process of CMD that
// initialises CUDA writes its own capture, `<stem>.<pid>.gpuscope`. Meanwhile gpuscope samples
// NVML/GPM. When CMD exits, the samples are appended to each capture, the captures are analysed
// together (one trace per process), and gpuscope exits with CMD's exit code (128+N if CMD died
// of signal N) unless CMD succeeded and the analysis failed.
#include <dirent.h>
#include <limits.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <memory>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/core.h>
#include <nlohmann/json.hpp>

#include "cli/analyze_command.h"
#include "cli/command.h"
#include "cli/run_process.h"
#include "formats/capture.h"
#include "formats/capture_writer.h"

#if __has_include("nvml/sampler.h")
#include "nvml/sampler.h"
#define GPUSCOPE_RUN_HAS_SAMPLER 1
#endif

namespace gpuscope::cli {
namespace {

struct RunOptions {
  std::string output;
  std::string sample_interval = "100ms";
  bool no_report = false;
  bool no_calibrate = false;
  AnalyzeCliOptions analysis;
  std::vector<std::string> command;
};

std::string exe_dir() {
  char buf[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  if (n <= 0) return ".";
  std::string path(buf, static_cast<size_t>(n));
  return path.substr(0, path.rfind('/'));
}

bool exists(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0;
}

// The libraries ship beside the gpuscope binary (install, carried folder) or in the build
// tree's src/cupti; GPUSCOPE_LIB_DIR overrides.
std::string find_library(const std::string& name) {
  std::vector<std::string> dirs;
  if (const char* d = std::getenv("GPUSCOPE_LIB_DIR")) dirs.push_back(d);
  std::string exe = exe_dir();
  dirs.push_back(exe);
  dirs.push_back(exe + "/../lib");
  dirs.push_back(exe + "/../cupti");
  for (const auto& d : dirs) {
    std::string path = d + "/" + name;
    if (exists(path)) {
      char real[PATH_MAX];
      return realpath(path.c_str(), real) ? std::string(real) : path;
    }
  }
  return {};
}

// "100ms", "0.5s", "2s", "250" (ms), "0" (off). Returns milliseconds, or -1 if malformed.
int64_t parse_interval_ms(const std::string& text) {
  char* end = nullptr;
  double v = std::strtod(text.c_str(), &end);
  if (end == text.c_str() || v < 0) return -1;
  std::string unit(end);
  if (unit.empty() || unit == "ms") return static_cast<int64_t>(v);
  if (unit == "s") return static_cast<int64_t>(v * 1000);
  return -1;
}

std::string default_stem() {
  std::time_t now = std::time(nullptr);
  std::tm tm{};
  localtime_r(&now, &tm);
  char buf[64];
  std::strftime(buf, sizeof(buf), "gpuscope-run-%Y%m%d-%H%M%S", &tm);
  return buf;
}

std::string absolute(const std::string& path) {
  if (!path.empty() && path[0] == '/') return path;
  char cwd[PATH_MAX];
  if (!getcwd(cwd, sizeof(cwd))) return path;
  return std::string(cwd) + "/" + path;
}

// Captures written for `stem`: "<stem>.<pid>.gpuscope".
std::vector<std::string> find_captures(const std::string& stem) {
  std::string dir = stem.substr(0, stem.rfind('/'));
  std::string base = stem.substr(stem.rfind('/') + 1) + ".";
  std::vector<std::string> out;
  DIR* d = opendir(dir.c_str());
  if (!d) return out;
  while (dirent* e = readdir(d)) {
    std::string name = e->d_name;
    const std::string suffix = ".gpuscope";
    if (name.size() <= base.size() + suffix.size() || name.compare(0, base.size(), base) != 0 ||
        name.compare(name.size() - suffix.size(), suffix.size(), suffix) != 0)
      continue;
    std::string middle = name.substr(base.size(), name.size() - base.size() - suffix.size());
    if (middle.find_first_not_of("0123456789") != std::string::npos) continue;
    out.push_back(dir + "/" + name);
  }
  closedir(d);
  std::sort(out.begin(), out.end());
  return out;
}

// What tracing adds to one launch call on this host: gpuscope-calibrate run plain, then with the
// same injection library as the program (its capture goes to a scratch folder and is deleted).
// Each run takes well under a second. On failure, `note` says why in one line.
struct Calibration {
  std::optional<TracingCost> cost;
  std::string note;
};

Calibration calibrate_tracing(const std::string& tool, const std::string& inject) {
  Calibration out;
  char dir[] = "/tmp/gpuscope-calibrate-XXXXXX";
  if (!mkdtemp(dir)) {
    out.note = std::string("tracing cost not measured: cannot create a scratch folder in /tmp: ") +
               std::strerror(errno);
    return out;
  }
  const std::string scratch = dir;
  std::vector<std::string> files;
  auto measure = [&](const char* tag, std::vector<std::pair<std::string, std::string>> env) -> std::optional<double> {
    ChildSpec spec;
    spec.argv = {tool};
    spec.env = std::move(env);
    spec.stdout_path = scratch + "/" + tag + ".json";
    spec.stderr_path = scratch + "/" + tag + ".err";
    files.push_back(spec.stdout_path);
    files.push_back(spec.stderr_path);
    ChildResult r = run_child(spec);
    std::ifstream in(spec.stdout_path);
    const nlohmann::json j = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
    if (r.exit_code == 0 && j.is_object() && j.contains("launch_ns") && j["launch_ns"].is_number())
      return j["launch_ns"].get<double>();
    std::string why = r.error;
    if (why.empty()) {
      std::ifstream err(spec.stderr_path);
      std::getline(err, why);
      if (why.rfind("gpuscope-calibrate: ", 0) == 0) why.erase(0, 20);
    }
    if (out.note.empty())
      out.note = fmt::format("tracing cost not measured ({} run of gpuscope-calibrate: {})", tag,
                             why.empty() ? fmt::format("exit code {}", r.exit_code) : why);
    return std::nullopt;
  };
  const std::optional<double> plain = measure("plain", {});
  std::optional<double> traced;
  if (plain) {
    traced = measure("traced", {{"CUDA_INJECTION64_PATH", inject}, {"GPUSCOPE_CAPTURE_PREFIX", scratch + "/cal"}});
  }
  for (const auto& f : find_captures(scratch + "/cal")) files.push_back(f);
  for (const auto& f : files) std::remove(f.c_str());
  rmdir(scratch.c_str());
  if (plain && traced) out.cost = TracingCost{*plain, *traced};
  return out;
}

// NVML/GPM sampling on a helper thread while the program runs. Absent NVML is not an error:
// the report then shows trace-derived numbers only.
class DeviceSampling {
 public:
  void start(int64_t interval_ms) {
#ifdef GPUSCOPE_RUN_HAS_SAMPLER
    if (interval_ms <= 0) return;
    auto sampler = nvml::Sampler::open();
    if (!sampler.ok()) {
      note_ = "device sampling off: " + sampler.status().message();
      return;
    }
    sampler_ = std::move(sampler).value();
    interval_ms_ = interval_ms;
#else
    (void)interval_ms;
    note_ = "device sampling off: this build has no NVML sampler";
#endif
  }
  // Called once the child runs (from run_child, with the forwarded signals blocked).
  void run_thread() {
#ifdef GPUSCOPE_RUN_HAS_SAMPLER
    if (!sampler_) return;
    thread_ = std::thread([this] {
      nvml::LiveSnapshot snap;
      std::unique_lock<std::mutex> lock(mutex_);
      while (!stop_) {
        lock.unlock();
        if (sampler_->sample(&snap).ok()) {
          std::lock_guard<std::mutex> g(samples_mutex_);
          samples_.insert(samples_.end(), snap.devices.begin(), snap.devices.end());
        }
        lock.lock();
        cv_.wait_for(lock, std::chrono::milliseconds(interval_ms_), [this] { return stop_; });
      }
    });
#endif
  }
  void stop() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    cv_.notify_all();
    if (thread_.joinable()) thread_.join();
  }
  const std::vector<DeviceSample>& samples() const { return samples_; }
  const std::string& note() const { return note_; }

 private:
#ifdef GPUSCOPE_RUN_HAS_SAMPLER
  std::unique_ptr<nvml::Sampler> sampler_;
#endif
  int64_t interval_ms_ = 100;
  std::thread thread_;
  std::mutex mutex_, samples_mutex_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::vector<DeviceSample> samples_;
  std::string note_;
};

int run_command(RunOptions& options, std::vector<std::string> command) {
  if (!command.empty() && command.front() == "--") command.erase(command.begin());
  if (command.empty()) {
    fmt::print(stderr, "gpuscope run: no command given; usage: gpuscope run [OPTIONS] -- CMD ARGS...\n");
    return 2;
  }
  const int64_t interval_ms = parse_interval_ms(options.sample_interval);
  if (interval_ms < 0) {
    fmt::print(stderr, "gpuscope run: --sample-interval '{}' is not a duration; use e.g. 100ms, 1s or 0 (off)\n",
               options.sample_interval);
    return 2;
  }
  std::string inject = find_library("libgpuscope_inject.so");
  std::string blas = find_library("libgpuscope_blas.so");
  if (inject.empty()) {
    fmt::print(stderr, "gpuscope run: libgpuscope_inject.so not found beside {} (set GPUSCOPE_LIB_DIR to its folder)\n",
               exe_dir());
    return 2;
  }
  // Output naming: FILE.gpuscope -> stem FILE; each process writes <stem>.<pid>.gpuscope; a
  // single capture is renamed to FILE at the end.
  std::string output = options.output.empty() ? "" : absolute(options.output);
  std::string stem = output.empty() ? absolute(default_stem()) : output;
  if (stem.size() > 9 && stem.compare(stem.size() - 9, 9, ".gpuscope") == 0) stem.resize(stem.size() - 9);
  for (const auto& old : find_captures(stem)) std::remove(old.c_str());  // Stale ones from a pid reuse.

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
    if (!calibration.cost) fmt::print(stderr, "gpuscope run: {}\n", calibration.note);
  }

  ChildSpec spec;
  spec.argv = command;
  spec.env.emplace_back("CUDA_INJECTION64_PATH", inject);
  spec.env.emplace_back("NVTX_INJECTION64_PATH", inject);
  spec.env.emplace_back("GPUSCOPE_CAPTURE_PREFIX", stem);
  if (!blas.empty()) {
    std::string preload = blas;
    if (const char* old = std::getenv("LD_PRELOAD"); old && *old) preload += std::string(":") + old;
    spec.env.emplace_back("LD_PRELOAD", preload);
  }
  if (const char* existing = std::getenv("CUDA_INJECTION64_PATH"); existing && *existing)
    fmt::print(stderr, "gpuscope run: replacing CUDA_INJECTION64_PATH={} for the traced program\n", existing);

  DeviceSampling sampling;
  sampling.start(interval_ms);
  ChildResult child = run_child(
      spec, [](void* s) { static_cast<DeviceSampling*>(s)->run_thread(); }, &sampling);
  sampling.stop();
  if (!child.error.empty()) {
    fmt::print(stderr, "gpuscope run: {}\n", child.error);
    return child.exit_code;
  }

  std::vector<std::string> captures = find_captures(stem);
  if (captures.empty()) {
    fmt::print(stderr, "gpuscope run: no process of '{}' initialised CUDA; nothing was traced\n", command[0]);
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
  if (!sampling.samples().empty() || calibration.cost) {
    for (const auto& path : captures) {
      capture::CaptureWriter w;
      std::string error;
      if (!w.open_append(path, {}, &error)) {
        fmt::print(stderr, "gpuscope run: {}\n", error);
        continue;
      }
      for (const auto& s : sampling.samples()) w.add(s);
      if (calibration.cost) w.add(*calibration.cost);
      w.close();
    }
  }
  if (captures.size() == 1 && !output.empty() && captures[0] != output) {
    if (std::rename(captures[0].c_str(), output.c_str()) == 0) captures[0] = output;
  }
  fmt::print(stderr, "gpuscope run: {} capture{} written:", captures.size(), captures.size() == 1 ? "" : "s");
  for (const auto& c : captures) fmt::print(stderr, " {}", c);
  fmt::print(stderr, "\n");
  if (!sampling.note().empty()) fmt::print(stderr, "gpuscope run: {}\n", sampling.note());
  if (child.signal) fmt::print(stderr, "gpuscope run: '{}' was killed by signal {}\n", command[0], *child.signal);

  if (options.no_report) return child.exit_code;
  std::vector<Trace> traces;
  for (const auto& path : captures) {
    auto trace = read_capture_file(path);
    if (!trace.ok()) {
      fmt::print(stderr, "gpuscope run: {}\n", trace.status().message());
      continue;
    }
    traces.push_back(std::move(trace).value());
  }
  if (traces.empty()) return child.exit_code != 0 ? child.exit_code : 2;
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
                     "Capture file (default gpuscope-run-DATE-TIME.gpuscope); with several "
                     "CUDA processes, one FILE-stem.<pid>.gpuscope each");
      app.add_option("--sample-interval", options->sample_interval,
                     "NVML/GPM sampling period while the program runs (e.g. 100ms, 1s; 0 = off)")
          ->capture_default_str();
      app.add_flag("--no-report", options->no_report, "Only write the capture(s)");
      app.add_flag("--no-calibrate", options->no_calibrate,
                   "Do not measure what tracing adds to each kernel launch on this host (gpuscope-calibrate, about "
                   "2 s in all, before and after the program); without it, launch-bound speedups are "
                   "ratios to the slower traced step");
      add_analysis_options(app, options->analysis);
      // Everything after `--` is the command, options included.
      app.add_option("command", options->command, "The program to trace and its arguments, after --")
          ->take_all();
      app.footer(
          "Example: gpuscope run -- python train.py --epochs 1\n"
          "Every process of the program that uses CUDA is traced (CUPTI kernels, copies, API "
          "calls, NVTX ranges, cuBLAS GEMM shapes). gpuscope exits with the program's exit code.");
      return [options]() { return run_command(*options, options->command); };
    },
});

}  // namespace
}  // namespace gpuscope::cli
