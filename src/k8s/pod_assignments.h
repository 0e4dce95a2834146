// Which Kubernetes container holds each GPU, as the kubelet's pod-resources API reports it,
// and the pod/namespace/container labels that follow for GPUs and the processes on them.
// Plain data: no gRPC here (the client is pod_resources.h), so the exporter and its tests
// handle it like any other input.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace gpuscope::k8s {

struct ContainerRef {
  std::string pod_namespace;
  std::string pod;
  std::string container;  // Empty when only the pod is known (see PodIndex).
  bool operator==(const ContainerRef&) const = default;
};

// Device id -> the containers the kubelet assigned it to. Ids are what the NVIDIA device
// plugin advertises: GPU UUIDs ("GPU-..."), MIG UUIDs ("MIG-..."); a time-slicing replica's
// suffix ("GPU-...::3") is removed, so a shared GPU lists every container that holds a slice.
// Only resources named nvidia.com/* count.
struct PodAssignments {
  std::map<std::string, std::vector<ContainerRef>, std::less<>> by_device;
  size_t pods = 0;  // Pods in the kubelet's answer (with or without GPUs); for the log.
};

// "GPU-x::2" -> "GPU-x"; other ids unchanged.
std::string_view device_id_without_replica(std::string_view id);
// Whether a pod-resources resource name is an NVIDIA GPU or MIG resource.
bool is_gpu_resource(std::string_view resource_name);
// Adds one container's devices (a pod-resources ContainerDevices) to `out`.
void add_container_devices(PodAssignments& out, const ContainerRef& who, std::string_view resource_name,
                           const std::vector<std::string>& device_ids);

// One process as the exporter sees it: the UUID of the GPU it runs on and the pod UID from
// its cgroup (empty when not in a pod or unreadable).
struct ProcessRef {
  std::string gpu_uuid;
  std::string pod_uid;
};

// Resolves labels for one exposition. The pod-resources API names pods but not their UIDs,
// and cgroups give UIDs but not names, so UIDs are learned from the processes themselves:
// when a GPU has exactly one owner and every process on it that has a pod UID has the same
// one, that UID is the owner's pod.
// - A GPU's labels: its owner, when exactly one container holds it (a time-sliced GPU that
//   several containers share has none: its series are not one pod's).
// - A process's labels: its GPU's owner when the process has no pod UID or the owner's pod
//   has that UID; otherwise the pod its UID was learned for (container left empty: the
//   API cannot say which of the pod's containers it is); otherwise none. So a process from
//   another pod on an assigned GPU (a debugging pod that sees every GPU) is never given
//   the assigned pod's name.
class PodIndex {
 public:
  PodIndex(const PodAssignments& assignments, const std::vector<ProcessRef>& processes);
  const ContainerRef* for_device(std::string_view uuid) const;
  // Null when unknown. The reference lives as long as this index.
  const ContainerRef* for_process(const ProcessRef& p) const;

 private:
  const PodAssignments& assignments_;
  std::map<std::string, std::string, std::less<>> uid_of_pod_;   // "ns/pod" -> UID.
  std::map<std::string, ContainerRef, std::less<>> pod_of_uid_;  // UID -> pod (no container).
};

}  // namespace gpuscope::k8s
