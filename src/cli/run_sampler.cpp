#include "cli/run_sampler.h"

#include <chrono>

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
  interval_ms_ = interval_ms;
}

void RunSampler::run_thread() {
  if (!sampler_ || thread_.joinable()) return;
  thread_ = std::thread([this] {
    nvml::LiveSnapshot snap;
    std::vector<DeviceSample> taken;
    std::unique_lock<std::mutex> lock(mutex_);
    while (!stop_) {
      lock.unlock();
      if (sampler_->sample(&snap).ok()) taken.insert(taken.end(), snap.devices.begin(), snap.devices.end());
      lock.lock();
      cv_.wait_for(lock, std::chrono::milliseconds(interval_ms_), [this] { return stop_; });
    }
    samples_ = std::move(taken);  // Read by the owner only after join().
  });
}

void RunSampler::stop() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

}  // namespace gpuscope::cli
