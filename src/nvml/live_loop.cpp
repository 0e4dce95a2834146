#include "nvml/live_loop.h"

#include <algorithm>
#include <chrono>

namespace gpuscope::nvml {

LiveLoop::LiveLoop(Sampler& sampler, LiveLoopOptions options)
    : sampler_(sampler), options_(std::move(options)), tracker_(options_.thresholds) {}

void LiveLoop::apply_command_policy(std::vector<ProcessSample>& processes) {
  if (options_.command_line == CommandLine::kArguments) return;  // The sampler's reading.
  std::unordered_map<uint32_t, std::string> seen;
  for (ProcessSample& p : processes) {
    auto it = seen.find(p.pid);
    if (it == seen.end()) {
      auto cached = executables_.find(p.pid);
      std::string name = cached != executables_.end()
                             ? std::move(cached->second)
                             : read_process_command(options_.proc_root, p.pid, CommandLine::kExecutable);
      it = seen.emplace(p.pid, std::move(name)).first;
    }
    p.command = it->second;
  }
  executables_ = std::move(seen);  // Pids gone since the last pass are forgotten (reuse).
}

const LiveFrame& LiveLoop::step() {
  frame_.status = sampler_.sample(&snapshot_);
  frame_.warnings = sampler_.take_warnings();
  frame_.index = passes_++;
  signals_.clear();
  if (frame_.status.ok()) {
    apply_command_policy(snapshot_.processes);
    signals_ = tracker_.update(snapshot_.devices, snapshot_.processes);
  }
  frame_.snapshot = frame_.status.ok() ? &snapshot_ : nullptr;
  frame_.signals = &signals_;
  return frame_;
}

bool LiveLoop::wait_until(std::chrono::steady_clock::time_point deadline) {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stopping_) {
    if (options_.should_stop) {
      lock.unlock();
      const bool stop = options_.should_stop();
      lock.lock();
      if (stop) return false;
      if (stopping_) break;
    }
    const auto now = std::chrono::steady_clock::now();
    if (now >= deadline) return true;
    const auto slice =
        options_.should_stop ? std::chrono::steady_clock::duration(std::chrono::milliseconds(50)) : deadline - now;
    cv_.wait_until(lock, std::min(deadline, now + slice));
  }
  return false;
}

void LiveLoop::run(const std::function<bool(const LiveFrame&)>& on_frame) {
  const auto interval = std::chrono::nanoseconds(options_.interval_ns);
  auto next = std::chrono::steady_clock::now() + std::chrono::nanoseconds(options_.first_wait_ns);
  while (wait_until(next)) {
    if (!on_frame(step())) return;
    next += interval;
    const auto now = std::chrono::steady_clock::now();
    if (now > next + interval) next = now;  // Fell behind: restart the schedule, no burst.
  }
}

void LiveLoop::stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
}

bool LiveLoop::stopped() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stopping_;
}

}  // namespace gpuscope::nvml
