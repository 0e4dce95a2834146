#include "k8s/pod_resources.h"

#include <sys/stat.h>

#include <chrono>
#include <cstdio>

#include <fmt/core.h>
#include <grpcpp/grpcpp.h>

#include "kubelet/podresources/v1/api.grpc.pb.h"

namespace gpuscope::k8s {

namespace {
// The kubelet caps its own messages at 16 MiB (dcgm-exporter reads with the same limit); a
// node with many pods can exceed gRPC's 4 MiB default.
constexpr int kMaxMessageBytes = 16 * 1024 * 1024;

bool is_socket(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 && S_ISSOCK(st.st_mode);
}
}  // namespace

StatusOr<PodAssignments> list_pod_resources(const std::string& socket_path, int64_t timeout_ns) {
  if (!is_socket(socket_path)) {
    return Status::error(fmt::format("no kubelet pod-resources socket at {}", socket_path));
  }
  // A fresh channel per call: a kept one sits in gRPC's reconnect backoff (up to minutes)
  // after a kubelet restart; a unix-socket connection every few seconds costs nothing.
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(kMaxMessageBytes);
  auto channel = grpc::CreateCustomChannel("unix://" + socket_path, grpc::InsecureChannelCredentials(), args);
  auto stub = v1::PodResourcesLister::NewStub(channel);
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::nanoseconds(timeout_ns));
  v1::ListPodResourcesRequest request;
  v1::ListPodResourcesResponse response;
  grpc::Status st = stub->List(&context, request, &response);
  if (!st.ok()) {
    return Status::error(fmt::format("kubelet pod-resources List at {} failed: gRPC code {}: {}", socket_path,
                                     static_cast<int>(st.error_code()), st.error_message()));
  }
  PodAssignments out;
  out.pods = static_cast<size_t>(response.pod_resources_size());
  for (const v1::PodResources& pod : response.pod_resources()) {
    for (const v1::ContainerResources& c : pod.containers()) {
      ContainerRef who{pod.namespace_(), pod.name(), c.name()};
      for (const v1::ContainerDevices& d : c.devices()) {
        add_container_devices(out, who, d.resource_name(),
                              std::vector<std::string>(d.device_ids().begin(), d.device_ids().end()));
      }
    }
  }
  return out;
}

PodResourcesCache::PodResourcesCache(PodResourcesOptions options) : options_(std::move(options)) {
  if (!options_.log) {
    options_.log = [](const std::string& line) { std::fprintf(stderr, "gpuscope: %s\n", line.c_str()); };
  }
}

PodResourcesCache::~PodResourcesCache() { stop(); }

void PodResourcesCache::refresh() {
  auto answer = list_pod_resources(options_.socket_path, options_.timeout_ns);
  std::shared_ptr<const PodAssignments> next;
  std::string state;
  if (answer.ok()) {
    next = std::make_shared<const PodAssignments>(std::move(*answer));
    state = fmt::format("pod, namespace and container labels from the kubelet's pod-resources API at {}",
                        options_.socket_path);
  } else if (answer.status().message().starts_with("no kubelet")) {
    state = answer.status().message() + ": no pod, namespace or container labels (normal outside Kubernetes; "
            "mount the socket or set --pod-resources-socket)";
  } else {
    state = answer.status().message() + ": pod, namespace and container labels dropped until it answers";
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
