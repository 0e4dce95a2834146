#include "k8s/pod_resources.h"

#include <sys/stat.h>

#include <chrono>
#include <cstdio>

#include <fmt/core.h>

#include "core/run_protocol.h"

namespace gpuscope::k8s {

namespace {
bool is_socket(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 && S_ISSOCK(st.st_mode);
}
}  // namespace

PodResourcesCache::PodResourcesCache(PodResourcesOptions options) : options_(std::move(options)) {
  if (!options_.log) {
    options_.log = [](const std::string& line) { std::fprintf(stderr, "gpuscope: %s\n", line.c_str()); };
  }
}

PodResourcesCache::~PodResourcesCache() { stop(); }

std::string PodResourcesCache::ensure_client() {
  if (!client_ && client_error_.empty()) {
    auto loaded = load_pod_resources_client(options_.module_path);
    if (loaded.ok()) {
      client_ = std::move(*loaded);
    } else {
      client_error_ = fmt::format(
          "warning: kubelet pod-resources client: {}; serving without pod, namespace and container "
          "labels (it is installed with gpuscope in lib/gpuscope, beside the injection libraries: reinstall, "
          "or set {} to its folder; --pod-resources-socket none stops asking)",
          loaded.status().message(), run_protocol::kEnvLibDir.name);
    }
  }
  return client_error_;
}

void PodResourcesCache::refresh() {
  std::shared_ptr<const PodAssignments> next;
  std::string state;
  if (!is_socket(options_.socket_path)) {
    state = fmt::format(
        "no kubelet pod-resources socket at {}: no pod, namespace or container labels (normal "
        "outside Kubernetes; mount the socket or set --pod-resources-socket)",
        options_.socket_path);
  } else if (state = ensure_client(); state.empty()) {
    auto answer = client_->list(options_.socket_path, options_.timeout_ns);
    if (answer.ok()) {
      next = std::make_shared<const PodAssignments>(std::move(*answer));
      state = fmt::format("pod, namespace and container labels from the kubelet's pod-resources API at {}",
                          options_.socket_path);
    } else {
      state = answer.status().message() + ": pod, namespace and container labels dropped until it answers";
    }
  }
  bool changed;
  {
    std::lock_guard<std::mutex> lock(mu_);
    current_ = std::move(next);
    changed = state != last_state_;
    if (changed) last_state_ = state;
  }
  if (changed) options_.log(state);
}

void PodResourcesCache::start() {
  if (thread_.joinable()) return;
  refresh();
  thread_ = std::thread([this] {
    std::unique_lock<std::mutex> lock(mu_);
    while (!stopping_) {
      wake_.wait_for(lock, std::chrono::nanoseconds(options_.refresh_ns), [this] { return stopping_; });
      if (stopping_) break;
      lock.unlock();
      refresh();
      lock.lock();
    }
  });
}

void PodResourcesCache::stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

std::shared_ptr<const PodAssignments> PodResourcesCache::current() const {
  std::lock_guard<std::mutex> lock(mu_);
  return current_;
}

}  // namespace gpuscope::k8s
