#include "nvml/process_identity.h"

#include <pwd.h>
#include <unistd.h>

#include <cctype>
#include <fstream>
#include <iterator>
#include <sstream>

namespace gpuscope::nvml {

namespace {

std::string read_file(const std::string& path, size_t limit = 64 * 1024) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return {};
  std::string text;
  text.resize(limit);
  in.read(text.data(), static_cast<std::streamsize>(limit));
  text.resize(static_cast<size_t>(in.gcount()));
  return text;
}

bool is_hex(char c) { return std::isxdigit(static_cast<unsigned char>(c)) != 0; }

// A pod UID is 8-4-4-4-12 hex digits; the systemd cgroup driver writes '_' for '-'.
bool uuid_at(std::string_view s, size_t pos, std::string* out) {
  static constexpr size_t kGroups[] = {8, 4, 4, 4, 12};
  std::string uid;
  size_t i = pos;
  for (size_t g = 0; g < 5; ++g) {
    if (g > 0) {
      if (i >= s.size() || (s[i] != '-' && s[i] != '_')) return false;
      uid.push_back('-');
      ++i;
    }
    for (size_t k = 0; k < kGroups[g]; ++k, ++i) {
      if (i >= s.size() || !is_hex(s[i])) return false;
      uid.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(s[i]))));
    }
  }
  *out = std::move(uid);
  return true;
}

}  // namespace

std::string pod_uid_from_cgroup(std::string_view text) {
  if (text.find("kubepods") == std::string_view::npos) return {};
  for (size_t pos = text.find("pod"); pos != std::string_view::npos;
       pos = text.find("pod", pos + 3)) {
    std::string uid;
    if (uuid_at(text, pos + 3, &uid)) return uid;
  }
  return {};
}

std::string slurm_job_from_cgroup(std::string_view text) {
  for (size_t pos = text.find("/job_"); pos != std::string_view::npos;
       pos = text.find("/job_", pos + 5)) {
    size_t begin = pos + 5, end = begin;
    while (end < text.size() && std::isdigit(static_cast<unsigned char>(text[end]))) ++end;
    bool terminated = end == text.size() || text[end] == '/' || text[end] == '\n';
    if (end > begin && terminated) return std::string(text.substr(begin, end - begin));
  }
  return {};
}

ProcessIdentity read_process_identity(const std::string& proc_root, uint32_t pid) {
  ProcessIdentity id;
  const std::string dir = proc_root + "/" + std::to_string(pid) + "/";

  std::string cmdline = read_file(dir + "cmdline", 4096);
  while (!cmdline.empty() && cmdline.back() == '\0') cmdline.pop_back();
  for (char& c : cmdline) {
    if (c == '\0') c = ' ';
  }
  if (cmdline.size() > 200) cmdline.resize(200);
  if (cmdline.empty()) {
    cmdline = read_file(dir + "comm", 256);
    while (!cmdline.empty() && cmdline.back() == '\n') cmdline.pop_back();
  }
  id.command = std::move(cmdline);

  std::istringstream status(read_file(dir + "status"));
  for (std::string line; std::getline(status, line);) {
    if (line.rfind("Uid:", 0) != 0) continue;
    std::istringstream fields(line.substr(4));
    long uid = -1;
    if (fields >> uid && uid >= 0) {
      struct passwd pw;
      struct passwd* found = nullptr;
      char buf[1024];
      if (getpwuid_r(static_cast<uid_t>(uid), &pw, buf, sizeof buf, &found) == 0 && found) {
        id.user = found->pw_name;
      } else {
        id.user = std::to_string(uid);
      }
    }
    break;
  }

  std::string cgroup = read_file(dir + "cgroup");
  id.pod_uid = pod_uid_from_cgroup(cgroup);
  id.slurm_job_id = slurm_job_from_cgroup(cgroup);
  return id;
}

const ProcessIdentity& ProcessIdentityCache::get(uint32_t pid) {
  auto it = entries_.find(pid);
  if (it == entries_.end()) {
    it = entries_.emplace(pid, Entry{read_process_identity(proc_root_, pid), true}).first;
  }
  it->second.seen = true;
  return it->second.identity;
}

void ProcessIdentityCache::sweep() {
  for (auto it = entries_.begin(); it != entries_.end();) {
    if (!it->second.seen) {
      it = entries_.erase(it);
    } else {
      it->second.seen = false;
      ++it;
    }
  }
}

}  // namespace gpuscope::nvml
