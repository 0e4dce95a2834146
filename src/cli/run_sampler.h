// NVML/GPM sampling on a helper thread while `gpuscope run`'s program runs. Absent NVML is not an
// error: the report then shows trace-derived numbers only.
//
// The interface is what run needs of any live sampling loop (start, run on a thread once the
// child exists, stop, the samples): the shared loop of top/monitor/serve can take its place.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "core/device_sample.h"

namespace gpuscope::nvml {
class Sampler;
}

namespace gpuscope::cli {

class RunSampler {
 public:
  RunSampler();
  ~RunSampler();
  RunSampler(const RunSampler&) = delete;
  RunSampler& operator=(const RunSampler&) = delete;

  // Opens NVML; interval_ms <= 0 turns sampling off. On failure note() says why.
  void start(int64_t interval_ms);
  // Starts the thread. Called once the child runs (from run_child's on_started, with the
  // forwarded signals blocked, so the thread inherits the block).
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
  int64_t interval_ms_ = 100;
  std::thread thread_;
  std::mutex mutex_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::vector<DeviceSample> samples_;
  std::string note_;
};

}  // namespace gpuscope::cli
