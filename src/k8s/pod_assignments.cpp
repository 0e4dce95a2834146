#include "k8s/pod_assignments.h"

#include <set>

namespace gpuscope::k8s {

namespace {
std::string pod_key(const ContainerRef& c) { return c.pod_namespace + "/" + c.pod; }
}  // namespace

std::string_view device_id_without_replica(std::string_view id) {
  size_t sep = id.find("::");
  return sep == std::string_view::npos ? id : id.substr(0, sep);
}

bool is_gpu_resource(std::string_view resource_name) {
  // nvidia.com/gpu, nvidia.com/mig-1g.10gb (mixed MIG strategy), nvidia.com/gpu.shared
  // (time-slicing with renamed resources).
  return resource_name.starts_with("nvidia.com/");
}

void add_container_devices(PodAssignments& out, const ContainerRef& who, std::string_view resource_name,
                           const std::vector<std::string>& device_ids) {
  if (!is_gpu_resource(resource_name)) return;
  for (const std::string& id : device_ids) {
    auto& holders = out.by_device[std::string(device_id_without_replica(id))];
    bool seen = false;
    for (const ContainerRef& h : holders) seen |= h == who;
    if (!seen) holders.push_back(who);
  }
}

PodIndex::PodIndex(const PodAssignments& assignments, const std::vector<ProcessRef>& processes)
    : assignments_(assignments) {
  std::map<std::string, std::set<std::string>, std::less<>> uids_on_gpu;
  for (const ProcessRef& p : processes) {
    if (!p.pod_uid.empty()) uids_on_gpu[p.gpu_uuid].insert(p.pod_uid);
  }
  std::set<std::string> ambiguous;  // UIDs seen as the owner of GPUs of different pods.
  for (const auto& [gpu, uids] : uids_on_gpu) {
    const ContainerRef* owner = for_device(gpu);
    if (!owner || uids.size() != 1) continue;
    const std::string& uid = *uids.begin();
    ContainerRef pod{owner->pod_namespace, owner->pod, ""};
    auto [it, inserted] = pod_of_uid_.emplace(uid, pod);
    if (!inserted && !(it->second == pod)) ambiguous.insert(uid);
    uid_of_pod_.emplace(pod_key(*owner), uid);
  }
  for (const std::string& uid : ambiguous) pod_of_uid_.erase(uid);
}

const ContainerRef* PodIndex::for_device(std::string_view uuid) const {
  auto it = assignments_.by_device.find(uuid);
  if (it == assignments_.by_device.end() || it->second.size() != 1) return nullptr;
  return &it->second.front();
}

const ContainerRef* PodIndex::for_process(const ProcessRef& p) const {
  if (const ContainerRef* owner = for_device(p.gpu_uuid)) {
    if (p.pod_uid.empty()) return owner;
    auto uid = uid_of_pod_.find(pod_key(*owner));
    if (uid != uid_of_pod_.end() && uid->second == p.pod_uid) return owner;
  }
  if (p.pod_uid.empty()) return nullptr;
  auto it = pod_of_uid_.find(p.pod_uid);
  return it == pod_of_uid_.end() ? nullptr : &it->second;
}

}  // namespace gpuscope::k8s
