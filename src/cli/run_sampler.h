// NVML/GPM sampling on a helper thread while `gpuscope run`'s program runs, through the live
// loop that `top`, `monitor` and `serve` use (nvml/live_loop.h). Absent NVML is not an error:
// the report then shows trace-derived numbers only.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "core/device_sample.h"

namespace gpuscope::nvml {
class LiveLoop;
class Sampler;
}  // namespace gpuscope::nvml

namespace gpuscope::cli {

class RunSampler {
 public:
  RunSampler();
  ~RunSampler();
  RunSampler(const RunSampler&) = delete;
  RunSampler& operator=(const RunSampler&) = delete;

  // Opens NVML; interval_ms <= 0 turns sampling off. On failure note() says why.
  void start(int64_t interval_ms);
  // Starts the thread: a sample at once, then one every interval. Called once the child runs
  // (from run_child's on_started, with the forwarded signals blocked, so the thread inherits
  // the block).
  void run_thread();
  // Stops and joins the thread. Safe to call twice.
  void stop();
  // Valid after stop().
  const std::vector<DeviceSample>& samples() const { return samples_; }
  const std::string& note() const { return note_; }

  // For run_child's on_started.
  static void run_thread_of(void* self) { static_cast<RunSampler*>(self)->run_thread(); }

 private:
  std::unique_ptr<nvml::Sampler> sampler_;
  std::unique_ptr<nvml::LiveLoop> loop_;  // Over *sampler_; null when sampling is off.
  std::thread thread_;
  std::vector<DeviceSample> samples_;
  std::string note_;
};

}  // namespace gpuscope::cli
