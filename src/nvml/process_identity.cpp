#include "nvml/process_identity.h"

#include <pwd.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <condition_variable>
#include <fstream>
#include <iterator>
#include <memory>
#include <mutex>
#include <sstream>
#include <system_error>
#include <thread>

namespace gpuscope::nvml {

namespace {

std::string read_file_now(const std::string& path, size_t limit) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return {};
  std::string text;
  text.resize(limit);
  in.read(text.data(), static_cast<std::streamsize>(limit));
  text.resize(static_cast<size_t>(in.gcount()));
  return text;
}

// Reading /proc/PID/cmdline takes the target process's memory-map lock, so it blocks for as
// long as that process is stuck (uninterruptible sleep, a hung FUSE or NFS mapping); a file
// under another proc root may even be a FIFO. Each read therefore runs on a helper thread and
// is waited for at most kReadTimeout; one that takes longer is abandoned (the helper owns its
// buffer and ends when the read does) and the file counts as empty. The sampler, and what
// waits on it (the exporter's first sample, a SIGTERM), never hangs on another process.
constexpr auto kReadTimeout = std::chrono::milliseconds(500);

std::string read_file(const std::string& path, size_t limit = 64 * 1024) {
  struct Pending {
    std::mutex mutex;
    std::condition_variable done_cv;
    bool done = false;
    std::string text;
  };
  auto pending = std::make_shared<Pending>();
  try {
    std::thread([pending, path, limit] {
      std::string text = read_file_now(path, limit);
      std::lock_guard lock(pending->mutex);
      pending->text = std::move(text);
      pending->done = true;
      pending->done_cv.notify_all();
    }).detach();
  } catch (const std::system_error&) {
    return read_file_now(path, limit);  // No thread to spare: read here.
  }
  std::unique_lock lock(pending->mutex);
  if (!pending->done_cv.wait_for(lock, kReadTimeout, [&] { return pending->done; })) return {};
  return std::move(pending->text);
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

constexpr std::string_view kRedacted = "***";

// Option names that carry secrets, matched case-insensitively anywhere in the name.
bool secret_option_name(std::string_view name) {
  std::string lower(name);
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  for (std::string_view word : {"password", "passwd", "token", "secret", "key", "credential"}) {
    if (lower.find(word) != std::string::npos) return true;
  }
  return false;
}

// scheme://user:pass@host -> scheme://user:***@host; scheme://token@host -> scheme://***@host.
std::string redact_url_credentials(std::string arg) {
  for (size_t pos = arg.find("://"); pos != std::string::npos; pos = arg.find("://", pos)) {
    const size_t start = pos + 3;
    size_t end = arg.find_first_of("/?# \t", start);
    if (end == std::string::npos) end = arg.size();
    const size_t at = end > start ? arg.rfind('@', end - 1) : std::string::npos;
    if (at == std::string::npos || at < start) {
      pos = start;
      continue;
    }
    const size_t colon = arg.find(':', start);
    const size_t secret_begin = colon != std::string::npos && colon < at ? colon + 1 : start;
    arg.replace(secret_begin, at - secret_begin, kRedacted);
    pos = secret_begin + kRedacted.size() + 1;
  }
  return arg;
}

std::vector<std::string> redact_pass(std::vector<std::string> argv) {
  bool redact_next = false;
  for (std::string& a : argv) {
    if (redact_next) {
      redact_next = false;
      if (!a.empty() && a[0] != '-') {
        a = kRedacted;
        continue;
      }
    }
    if (a.size() > 1 && a[0] == '-') {
      const size_t eq = a.find('=');
      std::string_view name = std::string_view(a).substr(0, eq);
      name.remove_prefix(std::min(name.find_first_not_of('-'), name.size()));
      if (secret_option_name(name)) {
        if (eq != std::string::npos)
          a.replace(eq + 1, std::string::npos, kRedacted);
        else
          redact_next = true;
        continue;
      }
    }
    a = redact_url_credentials(std::move(a));
  }
  return argv;
}

std::vector<std::string> split_words(std::string_view text) {
  std::vector<std::string> words;
  size_t begin = 0;
  for (size_t i = 0; i <= text.size(); ++i) {
    if (i == text.size() || text[i] == ' ') {
      words.emplace_back(text.substr(begin, i - begin));
      begin = i + 1;
    }
  }
  return words;
}

std::string join(const std::vector<std::string>& words) {
  std::string out;
  for (size_t i = 0; i < words.size(); ++i) {
    if (i) out += ' ';
    out += words[i];
  }
  return out;
}

std::string bounded_text(std::string_view bytes) {
  return std::string(truncate_utf8(to_valid_utf8(bytes), kMaxCommandBytes));
}

}  // namespace

std::vector<std::string> split_cmdline(std::string_view raw) {
  std::vector<std::string> argv;
  if (raw.empty()) return argv;
  if (raw.back() == '\0') raw.remove_suffix(1);
  size_t begin = 0;
  for (size_t i = 0; i <= raw.size(); ++i) {
    if (i == raw.size() || raw[i] == '\0') {
      argv.emplace_back(raw.substr(begin, i - begin));
      begin = i + 1;
    }
  }
  return argv;
}

std::vector<std::string> redact_arguments(std::vector<std::string> argv) {
  // Per argument first (`--password "two words"`), then per space-separated word, for
  // programs that rewrite their argv into one string (setproctitle).
  argv = redact_pass(std::move(argv));
  for (std::string& a : argv) {
    if (a.find(' ') != std::string::npos) a = join(redact_pass(split_words(a)));
  }
  return argv;
}

std::string command_text(const std::vector<std::string>& argv, CommandLine policy) {
  if (argv.empty()) return {};
  if (policy == CommandLine::kArguments) return bounded_text(join(redact_arguments(argv)));
  // argv[0] is whatever the process set (`exec -a "runner --password=x" prog`): redacted as
  // arguments are, and cut before the first word that is an option, which no path holds.
  const std::string first = redact_arguments({argv[0]}).front();
  std::string_view exe = first;
  if (argv.size() == 1) exe = exe.substr(0, exe.find(' '));
  exe = exe.substr(0, exe.find(" -"));
  if (size_t slash = exe.rfind('/'); slash != std::string_view::npos && slash + 1 < exe.size()) {
    exe.remove_prefix(slash + 1);
  }
  return bounded_text(exe);
}

std::string read_process_command(const std::string& proc_root, uint32_t pid, CommandLine policy) {
  const std::string dir = proc_root + "/" + std::to_string(pid) + "/";
  std::vector<std::string> argv = split_cmdline(read_file(dir + "cmdline", 4096));
  while (!argv.empty() && argv.back().empty()) argv.pop_back();
  if (!argv.empty()) return command_text(argv, policy);
  std::string comm = read_file(dir + "comm", 256);
  while (!comm.empty() && comm.back() == '\n') comm.pop_back();
  return bounded_text(comm);
}

std::string pod_uid_from_cgroup(std::string_view text) {
  if (text.find("kubepods") == std::string_view::npos) return {};
  for (size_t pos = text.find("pod"); pos != std::string_view::npos; pos = text.find("pod", pos + 3)) {
    std::string uid;
    if (uuid_at(text, pos + 3, &uid)) return uid;
  }
  return {};
}

std::string slurm_job_from_cgroup(std::string_view text) {
  for (size_t pos = text.find("/job_"); pos != std::string_view::npos; pos = text.find("/job_", pos + 5)) {
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

  id.command = read_process_command(proc_root, pid, CommandLine::kArguments);

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
        id.user = bounded_text(found->pw_name);
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
