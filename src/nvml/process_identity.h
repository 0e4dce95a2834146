// Who owns a GPU process, from the host's /proc: command line, user, and the Kubernetes pod or
// Slurm job it runs in (both read from the cgroup path, which is how the kubelet and
// slurmstepd place their processes).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>

namespace gpuscope::nvml {

struct ProcessIdentity {
  std::string command;       // argv joined by spaces (truncated to 200 chars), or comm.
  std::string user;          // Login name, or the numeric uid when it has none.
  std::string pod_uid;       // Kubernetes pod UID, dashes restored.
  std::string slurm_job_id;  // Slurm job id (digits).
};

// From the text of /proc/PID/cgroup (v1 or v2, cgroupfs or systemd driver). Empty if absent.
// Recognised: ".../kubepods/burstable/pod<uid>/...", ".../kubepods-besteffort-pod<uid with
// underscores>.slice/...", ".../slurm/uid_N/job_<id>/...", ".../slurmstepd.scope/job_<id>/...".
std::string pod_uid_from_cgroup(std::string_view cgroup_text);
std::string slurm_job_from_cgroup(std::string_view cgroup_text);

// Reads PROC_ROOT/PID/{cmdline,comm,status,cgroup}. Missing files leave fields empty: a pid in
// another PID namespace (NVML reports host pids) is normal inside a container.
ProcessIdentity read_process_identity(const std::string& proc_root, uint32_t pid);

// Caches identities by pid; forget() drops pids no longer seen so reuse is noticed.
class ProcessIdentityCache {
 public:
  explicit ProcessIdentityCache(std::string proc_root = "/proc") : proc_root_(std::move(proc_root)) {}
  const ProcessIdentity& get(uint32_t pid);
  // Drops entries whose pid was not requested since the previous call.
  void sweep();

 private:
  struct Entry {
    ProcessIdentity identity;
    bool seen = true;
  };
  std::string proc_root_;
  std::unordered_map<uint32_t, Entry> entries_;
};

}  // namespace gpuscope::nvml
