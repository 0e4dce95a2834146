// Who owns a GPU process, from the host's /proc: command line, user, and the Kubernetes pod or
// Slurm job it runs in (both read from the cgroup path, which is how the kubelet and
// slurmstepd place their processes).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/text.h"  // to_valid_utf8, truncate_utf8

namespace gpuscope::nvml {

// Command lines are other users' text: they may hold secrets and any bytes. Every command
// string produced here is valid UTF-8 (invalid bytes become U+FFFD), at most
// kMaxCommandBytes long (cut at a character boundary), with secrets redacted.
constexpr size_t kMaxCommandBytes = 200;

// What a live front end shows of a process's command line. kExecutable (the default of
// `top`, `monitor`, `serve`): the executable's base name only. kArguments (--process-args):
// every argument, with redact_arguments applied.
enum class CommandLine { kExecutable, kArguments };

// /proc/PID/cmdline's NUL-separated arguments (a trailing NUL ends the last one).
std::vector<std::string> split_cmdline(std::string_view raw);
// Replaces with "***": the value of an option whose name contains password, passwd, token,
// secret, key or credential (`--password=x`, `-Dapi.key=x`, and the next argument in
// `--password x` unless it starts with '-'), and the password of URL credentials
// (`https://user:pass@host` -> `https://user:***@host`; `https://tok@host` -> `https://***@host`).
std::vector<std::string> redact_arguments(std::vector<std::string> argv);
// The text shown for argv under `policy` (see CommandLine); empty if argv is empty.
// kExecutable: base name of argv[0]; if argv[0] is the only argument and holds spaces (a
// title set with setproctitle, e.g. "postgres: checkpointer"), its first word only; argv[0]
// is cut before any word that starts with '-' and redacted as arguments are, so an argv[0]
// set to "runner --password=x" shows "runner" in every mode.
std::string command_text(const std::vector<std::string>& argv, CommandLine policy);

// PROC_ROOT/PID/cmdline under `policy`, falling back to comm; empty if the process is gone.
std::string read_process_command(const std::string& proc_root, uint32_t pid, CommandLine policy);

struct ProcessIdentity {
  std::string command;       // command_text(argv, kArguments) (redacted, valid UTF-8), or comm.
  std::string user;          // Login name, or the numeric uid when it has none.
  std::string pod_uid;       // Kubernetes pod UID, dashes restored.
  std::string slurm_job_id;  // Slurm job id (digits).
};

// From the text of /proc/PID/cgroup (v1 or v2, cgroupfs or systemd driver). Empty if absent.
// Recognised: ".../kubepods/burstable/pod<uid>/...", ".../kubepods-besteffort-pod<uid with
// underscores>.slice/...", ".../slurm/uid_N/job_<id>/...", ".../slurmstepd.scope/job_<id>/...".
std::string pod_uid_from_cgroup(std::string_view cgroup_text);
std::string slurm_job_from_cgroup(std::string_view cgroup_text);

// Reads PROC_ROOT/PID/{cmdline,comm,status,cgroup}. Every field is valid UTF-8. Missing files leave fields empty: a pid
// in another PID namespace (NVML reports host pids) is normal inside a container.
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
