// The kubelet's pod-resources API (gRPC over a unix socket, official proto v1:
// third_party/kubelet/podresources/v1/api.proto): which containers hold which GPUs.
//
// PodResourcesCache asks it every `refresh_ns` on its own thread, so a scrape never waits on
// the kubelet; current() is the latest good answer. A missing socket (not a Kubernetes node,
// or the socket not mounted) means no labels and is said once, not an error; so is a failed
// call. Labels are dropped, never kept stale, while the kubelet does not answer.
//
// The gRPC client is a module (pod_resources_client.h), loaded the first time the socket is
// there: off Kubernetes gRPC is never loaded. A module that is missing or does not load is
// said once, as a warning, and the cache then gives no labels; it never stops the exporter.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "k8s/pod_assignments.h"
#include "k8s/pod_resources_client.h"

namespace gpuscope::k8s {

constexpr const char* kDefaultPodResourcesSocket = "/var/lib/kubelet/pod-resources/kubelet.sock";

struct PodResourcesOptions {
  std::string socket_path = kDefaultPodResourcesSocket;
  int64_t refresh_ns = 10'000'000'000;
  int64_t timeout_ns = 2'000'000'000;  // Per call; the kubelet is local.
  // The gRPC client module; empty: kPodResourcesModule from the library folders.
  std::string module_path;
  std::function<void(const std::string&)> log;  // Default: stderr.
};

class PodResourcesCache {
 public:
  explicit PodResourcesCache(PodResourcesOptions options);
  ~PodResourcesCache();  // stop()
  // The first refresh runs here (bounded by timeout_ns, plus loading the module when the
  // socket is there), then the refresh thread starts.
  void start();
  void stop();
  // The latest answer; null when there is none (no socket, a failed call, no client module,
  // not started).
  std::shared_ptr<const PodAssignments> current() const;

 private:
  void refresh();
  // The state to log, or empty when the client is ready (loaded now if need be).
  std::string ensure_client();

  PodResourcesOptions options_;
  // Touched only by refresh(), which start() and then the refresh thread call, never both.
  std::unique_ptr<PodResourcesClient> client_;
  std::string client_error_;  // Why the module did not load; it is not tried again.
  mutable std::mutex mu_;
  std::condition_variable wake_;
  bool stopping_ = false;
  std::shared_ptr<const PodAssignments> current_;
  std::string last_state_;  // What was last logged, so each change is said once.
  std::thread thread_;
};

}  // namespace gpuscope::k8s
