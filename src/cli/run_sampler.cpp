#include "cli/run_sampler.h"

#include "nvml/live_loop.h"
#include "nvml/sampler.h"

namespace gpuscope::cli {

RunSampler::RunSampler() = default;
RunSampler::~RunSampler() { stop(); }

void RunSampler::start(int64_t interval_ms) {
  if (interval_ms <= 0) return;
  auto sampler = nvml::Sampler::open();
  if (!sampler.ok()) {
    note_ = "device sampling off: " + sampler.status().message();
    return;
  }
  sampler_ = std::move(sampler).value();
  nvml::LiveLoopOptions options;
  options.interval_ns = interval_ms * 1'000'000;
  options.first_wait_ns = 0;  // The first sample as the program starts.
  // Only device samples are kept: the sampler's own process reading, no extra /proc reads.
  options.command_line = nvml::CommandLine::kArguments;
  loop_ = std::make_unique<nvml::LiveLoop>(*sampler_, std::move(options));
}

void RunSampler::run_thread() {
  if (!loop_ || thread_.joinable()) return;
  thread_ = std::thread([this] {
    std::vector<DeviceSample> taken;
    loop_->run([&taken](const nvml::LiveFrame& frame) {
      if (frame.snapshot) taken.insert(taken.end(), frame.snapshot->devices.begin(), frame.snapshot->devices.end());
      return true;
    });
    samples_ = std::move(taken);  // Read by the owner only after join().
  });
}

void RunSampler::stop() {
  if (loop_) loop_->stop();
  if (thread_.joinable()) thread_.join();
}

}  // namespace gpuscope::cli
