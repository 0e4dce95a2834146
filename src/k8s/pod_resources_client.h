// The kubelet pod-resources client behind an interface that names no gRPC type, so that only
// a process that actually asks a kubelet loads gRPC, protobuf, abseil and OpenSSL.
//
// The gRPC implementation (pod_resources_grpc.cpp and the code generated from the official
// proto, third_party/kubelet/podresources/v1/api.proto) is a shared module,
// libgpuscope_k8s_grpc.so, installed beside the injection libraries (lib/gpuscope). It exports
// one C entry point, kPodResourcesClientEntry; load_pod_resources_client() dlopens the module
// and calls it. Everything else (the cache, the labels) is in the gpuscope binary.
//
// The module and the binary share C++ types (PodAssignments, StatusOr) across the boundary, so
// they must come from the same build: the entry point's name carries the interface version
// (bump it when PodResourcesClient, PodAssignments or Status change) and it refuses a caller
// of another gpuscope version.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "core/status.h"
#include "k8s/pod_assignments.h"

namespace gpuscope::k8s {

class PodResourcesClient {
 public:
  virtual ~PodResourcesClient() = default;
  // One List call to the kubelet at `socket_path` (a unix socket), with a deadline.
  // Error: the call failed ("kubelet pod-resources List at PATH failed: gRPC code N: ...").
  virtual StatusOr<PodAssignments> list(const std::string& socket_path, int64_t timeout_ns) = 0;
};

constexpr const char* kPodResourcesModule = "libgpuscope_k8s_grpc.so";
constexpr const char* kPodResourcesClientEntry = "gpuscope_pod_resources_client_v1";
// The entry point: a new client (the caller owns it), or null when `gpuscope_version` is not
// the version the module was built as.
using PodResourcesClientEntry = PodResourcesClient* (*)(const char* gpuscope_version);

// Loads the module at `module_path`, or, when that is empty, kPodResourcesModule from the
// library folders (platform/library_dirs.h: GPUSCOPE_LIB_DIR, beside the binary, ../lib/gpuscope,
// ...), and returns its client. The module stays loaded for the life of
// the process (the client's code is in it). Error, one line: the module is not found (and
// where it was looked for), cannot be loaded (dlerror), lacks the entry point, or is from
// another gpuscope version.
StatusOr<std::unique_ptr<PodResourcesClient>> load_pod_resources_client(const std::string& module_path);

}  // namespace gpuscope::k8s
