// The kubelet's pod-resources API (gRPC over a unix socket, official proto v1:
// third_party/kubelet/podresources/v1/api.proto): which containers hold which GPUs.
//
// PodResourcesCache asks it every `refresh_ns` on its own thread, so a scrape never waits on
// the kubelet; current() is the latest good answer. A missing socket (not a Kubernetes node,
// or the socket not mounted) means no labels and is said once, not an error; so is a failed
// call. Labels are dropped, never kept stale, while the kubelet does not answer.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "core/status.h"
#include "k8s/pod_assignments.h"

namespace gpuscope::k8s {

constexpr const char* kDefaultPodResourcesSocket = "/var/lib/kubelet/pod-resources/kubelet.sock";

// One List call with a deadline. Error: the socket is missing (message starts with
// "no kubelet pod-resources socket") or the call failed (gRPC code and message).
StatusOr<PodAssignments> list_pod_resources(const std::string& socket_path, int64_t timeout_ns);

struct PodResourcesOptions {
  std::string socket_path = kDefaultPodResourcesSocket;
  int64_t refresh_ns = 10'000'000'000;
  int64_t timeout_ns = 2'000'000'000;  // Per call; the kubelet is local.
  std::function<void(const std::string&)> log;  // Default: stderr.
};

class PodResourcesCache {
 public:
  explicit PodResourcesCache(PodResourcesOptions options);
  ~PodResourcesCache();  // stop()
  // The first refresh runs here (bounded by timeout_ns), then the refresh thread starts.
  void start();
  void stop();
  // The latest answer; null when there is none (no socket, a failed call, not started).
  std::shared_ptr<const PodAssignments> current() const;

 private:
  void refresh();

  PodResourcesOptions options_;
  mutable std::mutex mu_;
  std::condition_variable wake_;
  bool stopping_ = false;
  std::shared_ptr<const PodAssignments> current_;
  std::string last_state_;  // What was last logged, so each change is said once.
  std::thread thread_;
};

}  // namespace gpuscope::k8s
