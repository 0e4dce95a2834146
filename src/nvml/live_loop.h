// The one live sampling loop of `top`, `monitor`, `serve` and `run`: at a fixed
// pace, sample every GPU, collect the sampler's new warnings, apply the command-line policy to
// the processes, update the waste signals, and hand the frame to the caller.
//
// Pacing: ticks at start + first_wait, then every interval on CLOCK_MONOTONIC (no drift).
// A pass that falls more than one interval behind (suspended host, slow NVML) restarts the
// schedule from now instead of sampling in a burst. The first wait gives GPM its minimum
// window (100 ms) after Sampler::open took the first GPM samples.
//
// Threads: run() and step() on one thread (the sampler is not thread-safe); stop() from any
// thread. A signal handler cannot call stop() (it locks): pass a check of its flag as
// `should_stop`, which the wait polls every 50 ms (`top` also reads its 'q' key there).
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/signals.h"
#include "core/status.h"
#include "nvml/process_identity.h"
#include "nvml/sampler.h"

namespace gpuscope::nvml {

struct LiveLoopOptions {
  int64_t interval_ns = 1'000'000'000;
  int64_t first_wait_ns = 150'000'000;
  SignalThresholds thresholds;
  // What ProcessSample::command holds in each frame (see CommandLine). The sampler's own
  // reading is the redacted argument list; kExecutable re-reads argv[0] from proc_root, once
  // per pid.
  CommandLine command_line = CommandLine::kExecutable;
  std::string proc_root = "/proc";
  // Polled every 50 ms while waiting, on the loop's thread; true ends run() as stop() does.
  std::function<bool()> should_stop;
};

// One pass. References stay valid until the next pass.
struct LiveFrame {
  Status status;  // Not ok: the sampler lost every device (no snapshot).
  const LiveSnapshot* snapshot = nullptr;
  const std::vector<Signal>* signals = nullptr;
  std::vector<std::string> warnings;  // Sampler failures first seen in this pass.
  int64_t index = 0;                  // 0 for the first pass.
};

class LiveLoop {
 public:
  LiveLoop(Sampler& sampler, LiveLoopOptions options);

  // Waits for each tick, then calls on_frame with the pass; returns when on_frame returns
  // false, stop() is called or should_stop() says so. Sample errors are frames too (status).
  void run(const std::function<bool(const LiveFrame&)>& on_frame);
  // One pass now, without waiting (tests, and callers with their own pacing).
  const LiveFrame& step();
  // Ends run() at its next wait, or before its next pass; idempotent, any thread.
  void stop();
  bool stopped() const;

  Sampler& sampler() { return sampler_; }
  const LiveLoopOptions& options() const { return options_; }

 private:
  // Sleeps until `deadline`; false if stopped meanwhile.
  bool wait_until(std::chrono::steady_clock::time_point deadline);
  void apply_command_policy(std::vector<ProcessSample>& processes);

  Sampler& sampler_;
  LiveLoopOptions options_;
  SignalTracker tracker_;
  LiveSnapshot snapshot_;
  std::vector<Signal> signals_;
  LiveFrame frame_;
  int64_t passes_ = 0;
  std::unordered_map<uint32_t, std::string> executables_;  // pid -> name, for kExecutable.
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;
};

}  // namespace gpuscope::nvml
