// Shared by the live front ends (top, monitor, serve): option parsing for intervals and
// signal thresholds, opening the sampler with the one-line "no GPU/driver" error, and text
// for signals. Implemented in cmd_live.cpp.
#pragma once

#include "cli/option_parse.h"
#include "render/text_layout.h"

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include <CLI/CLI.hpp>

#include "core/signals.h"
#include "core/status.h"
#include "nvml/live_loop.h"
#include "nvml/sampler.h"

namespace gpuscope::cli {

struct LiveCliOptions {
  std::string interval = "1s";
  std::string idle_after = "60s";    // SignalThresholds::idle_after_ns, as the option's text
  std::string signal_after = "10s";  // SignalThresholds::signal_after_ns, as the option's text
  double idle_memory_gib = SignalThresholds{}.idle_memory_bytes / (1024.0 * 1024 * 1024);
  SignalThresholds thresholds;  // the percentage options write their fields directly
  bool process_args = false;    // --process-args: full (redacted) command lines
};

// Declares --interval, --process-args and the signal threshold options.
void add_live_options(CLI::App& app, LiveCliOptions& options);

// The interval and thresholds as numbers. Every value was checked while the command line was
// parsed (durations: option_parse.h, a bare number is seconds); nullopt only if one was not.
struct LiveSettings {
  int64_t interval_ns = 0;
  SignalThresholds thresholds;
  nvml::LiveLoopOptions loop;  // interval, thresholds, command-line policy, proc root
};
std::optional<LiveSettings> live_settings(const LiveCliOptions& options);

// $GPUSCOPE_PROC_ROOT (the host's /proc mounted elsewhere, or a fake one in tests), else /proc.
std::string proc_root();

// Opens NVML and the sampler; on failure prints "gpuscope: <why>" and returns null (exit 2).
std::unique_ptr<nvml::Sampler> open_sampler_or_report();

// "GPU 0: busy_not_working: utilization 100.0% but SM active 0.8%; pid 12 (alice) python3 x.py, pod U"
std::string describe_signal(const Signal& s);

// terminal_safe (core/text.h) makes other users' text safe to print.

// "pod <uid>", "slurm job <id>" or "".
std::string job_of(const ProcessSample& p);

// Set by SIGINT/SIGTERM once install_interrupt_handlers() ran.
extern std::atomic<bool> g_interrupted;
void install_interrupt_handlers();

}  // namespace gpuscope::cli
