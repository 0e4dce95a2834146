// Shared pieces of the live front ends (live_common.h).
#include <signal.h>

#include <charconv>
#include <cmath>
#include <cstdlib>

#include <fmt/core.h>

#include "cli/live_common.h"
#include "core/run_protocol.h"

namespace gpuscope::cli {

std::atomic<bool> g_interrupted{false};

namespace {
void on_interrupt(int) { g_interrupted.store(true); }
}  // namespace

void install_interrupt_handlers() {
  struct sigaction sa {};
  sa.sa_handler = on_interrupt;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
}

namespace {

constexpr int64_t kSecondNs = 1'000'000'000;

// --interval: from 100 ms (the shortest window NVML GPM measures) to a day.
DurationRule interval_rule() {
  DurationRule rule{"--interval", kSecondNs};
  rule.min_ns = 100'000'000;
  rule.max_ns = 86'400 * kSecondNs;
  rule.zero_allowed = false;
  rule.why_min = "the shortest window NVML GPM measures";
  rule.examples = "100ms, 1s or 5s";
  return rule;
}

DurationRule threshold_rule(const std::string& option) { return DurationRule{option, kSecondNs}; }

}  // namespace

void add_live_options(CLI::App& app, LiveCliOptions& o) {
  app.add_option("--interval", o.interval, "Sampling interval, >= 100ms (GPM's minimum); a bare number is seconds")
      ->capture_default_str()
      ->type_name("DURATION")
      ->check(duration_check(interval_rule()));
  app.add_flag("--process-args", o.process_args,
               "Show processes' full command lines (secrets such as --password=... and URL "
               "credentials redacted); default: the executable name only");
  app.add_option("--idle-after", o.idle_after,
                 "Signal idle_holding_memory after a process holds memory on an idle GPU this long")
      ->capture_default_str()
      ->type_name("DURATION")
      ->check(duration_check(threshold_rule("--idle-after")));
  app.add_option("--signal-after", o.signal_after, "Other signals fire after their condition holds this long")
      ->capture_default_str()
      ->type_name("DURATION")
      ->check(duration_check(threshold_rule("--signal-after")));
  app.add_option("--idle-memory-gib", o.idle_memory_gib, "idle_holding_memory: minimum memory a process holds (GiB)")
      ->capture_default_str()
      ->check(finite_between(0, 1e6, "--idle-memory-gib", "a memory size in GiB"));
  app.add_option("--idle-sm-active", o.thresholds.idle_sm_active_pct,
                 "idle_holding_memory: SM active (%) below which the GPU counts as idle")
      ->capture_default_str()
      ->check(finite_between(0, 100, "--idle-sm-active", "a percentage"));
  app.add_option("--busy-util", o.thresholds.busy_util_pct, "busy_not_working: utilization (%) at or above")
      ->capture_default_str()
      ->check(finite_between(0, 100, "--busy-util", "a percentage"));
  app.add_option("--busy-sm-active", o.thresholds.busy_sm_active_pct, "busy_not_working: with SM active (%) below")
      ->capture_default_str()
      ->check(finite_between(0, 100, "--busy-sm-active", "a percentage"));
  app.add_option("--tensor-sm-active", o.thresholds.tensor_sm_active_pct,
                 "tensor_cores_unused: SM active (%) at or above, tensor active ~0")
      ->capture_default_str()
      ->check(finite_between(0, 100, "--tensor-sm-active", "a percentage"));
  app.add_option("--membw-dram", o.thresholds.membw_dram_pct, "memory_bandwidth_bound: DRAM bandwidth (%) at or above")
      ->capture_default_str()
      ->check(finite_between(0, 100, "--membw-dram", "a percentage"));
}

std::optional<LiveSettings> live_settings(const LiveCliOptions& o) {
  LiveSettings s;
  s.thresholds = o.thresholds;
  const auto interval = parse_duration_ns(o.interval, kSecondNs);
  const auto idle_after = parse_duration_ns(o.idle_after, kSecondNs);
  const auto signal_after = parse_duration_ns(o.signal_after, kSecondNs);
  if (!interval || !idle_after || !signal_after) {
    fmt::print(stderr, "gpuscope: --interval {}, --idle-after {}, --signal-after {}: not durations; write e.g. 1s\n",
               terminal_safe(o.interval), terminal_safe(o.idle_after), terminal_safe(o.signal_after));
    return std::nullopt;
  }
  s.interval_ns = *interval;
  s.thresholds.idle_after_ns = *idle_after;
  s.thresholds.signal_after_ns = *signal_after;
  s.thresholds.idle_memory_bytes = o.idle_memory_gib * 1024.0 * 1024 * 1024;
  s.loop.interval_ns = s.interval_ns;
  s.loop.thresholds = s.thresholds;
  s.loop.command_line = o.process_args ? nvml::CommandLine::kArguments : nvml::CommandLine::kExecutable;
  s.loop.proc_root = proc_root();
  return s;
}

std::string proc_root() {
  // The host's /proc where it is mounted elsewhere (a container with the host's /proc at
  // /host/proc), or a fake one in tests.
  const char* root = std::getenv(run_protocol::kEnvProcRoot.name);
  return root && *root ? root : "/proc";
}

std::unique_ptr<nvml::Sampler> open_sampler_or_report() {
  nvml::SamplerOptions options;
  options.proc_root = proc_root();
  auto sampler = nvml::Sampler::open(options);
  if (!sampler.ok()) {
    fmt::print(stderr, "gpuscope: {}\n", terminal_safe(sampler.status().message()));
    return nullptr;
  }
  return std::move(*sampler);
}

std::string job_of(const ProcessSample& p) {
  if (!p.pod_uid.empty()) return "pod " + p.pod_uid;
  if (!p.slurm_job_id.empty()) return "slurm job " + p.slurm_job_id;
  return "";
}

std::string describe_signal(const Signal& s) {
  std::string where =
      s.gpu_instance_id ? fmt::format("GPU {} MIG {}", s.device, *s.gpu_instance_id) : fmt::format("GPU {}", s.device);
  std::string line = fmt::format("{}: {}: {}", where, signal_name(s.kind), s.evidence);
  if (s.process) {
    const ProcessSample& p = *s.process;
    line += fmt::format("; pid {}", p.pid);
    if (!p.user.empty()) line += fmt::format(" ({})", terminal_safe(p.user));
    if (!p.command.empty()) line += " " + terminal_safe(p.command);
    std::string job = job_of(p);
    if (!job.empty()) line += ", " + job;
  }
  return line;
}

}  // namespace gpuscope::cli
