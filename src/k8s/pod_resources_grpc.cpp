// libgpuscope_k8s_grpc.so: the kubelet pod-resources client over gRPC (pod_resources_client.h
// says why it is a module). Exports only the entry point (pod_resources_grpc.map); gRPC,
// protobuf and abseil are loaded with it, never by the gpuscope binary itself.
#include <chrono>
#include <exception>
#include <new>
#include <string_view>
#include <type_traits>

#include <fmt/core.h>
#include <grpcpp/grpcpp.h>

#include "k8s/pod_resources_client.h"
#include "kubelet/podresources/v1/api.grpc.pb.h"

namespace gpuscope::k8s {
namespace {

// The kubelet caps its own messages at 16 MiB (dcgm-exporter reads with the same limit); a
// node with many pods can exceed gRPC's 4 MiB default.
constexpr int kMaxMessageBytes = 16 * 1024 * 1024;

StatusOr<PodAssignments> list_over_grpc(const std::string& socket_path, int64_t timeout_ns) {
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

class GrpcPodResourcesClient final : public PodResourcesClient {
 public:
  StatusOr<PodAssignments> list(const std::string& socket_path, int64_t timeout_ns) override {
    // No exception crosses the module boundary (STYLE.md); gRPC reports errors as statuses, so
    // only allocation can throw here.
    try {
      return list_over_grpc(socket_path, timeout_ns);
    } catch (const std::exception& e) {
      return Status::error(fmt::format("kubelet pod-resources List at {} failed: {}", socket_path, e.what()));
    }
  }
};

}  // namespace
}  // namespace gpuscope::k8s

// The one exported symbol (kPodResourcesClientEntry).
extern "C" __attribute__((visibility("default"))) gpuscope::k8s::PodResourcesClient* gpuscope_pod_resources_client_v1(
    const char* gpuscope_version) {
  if (!gpuscope_version || std::string_view(gpuscope_version) != GPUSCOPE_VERSION) return nullptr;
  return new (std::nothrow) gpuscope::k8s::GrpcPodResourcesClient();
}
static_assert(std::is_same_v<decltype(&gpuscope_pod_resources_client_v1), gpuscope::k8s::PodResourcesClientEntry>);
