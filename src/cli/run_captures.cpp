#include "cli/run_captures.h"

#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <ctime>

#include <fmt/core.h>

#include "capture/capture_writer.h"

namespace gpuscope::cli {
namespace {

constexpr char kSuffix[] = ".gpuscope";
constexpr size_t kSuffixLen = sizeof(kSuffix) - 1;
constexpr char kStagedPrefix[] = "capture.";

bool ends_with(const std::string& s, const char* suffix, size_t n) {
  return s.size() >= n && s.compare(s.size() - n, n, suffix) == 0;
}

// "<pid>" or "<pid>-<n>" as written by CaptureWriter::open_new_for_process.
bool is_process_tag(const std::string& tag) {
  const size_t dash = tag.find('-');
  const std::string pid = tag.substr(0, dash);
  if (pid.empty() || pid.find_first_not_of("0123456789") != std::string::npos) return false;
  if (dash == std::string::npos) return true;
  const std::string n = tag.substr(dash + 1);
  return !n.empty() && n.find_first_not_of("0123456789") == std::string::npos;
}

}  // namespace

std::string temp_dir() {
  const char* t = std::getenv("TMPDIR");
  return t && *t ? t : "/tmp";
}

std::string make_private_dir(const std::string& prefix, std::string* error) {
  std::string templ = prefix + "-XXXXXX";
  if (!mkdtemp(templ.data())) {
    if (error) *error = fmt::format("cannot create a folder {}: {}", templ, std::strerror(errno));
    return {};
  }
  return templ;
}

bool remove_private_dir(const std::string& dir) {
  if (DIR* d = opendir(dir.c_str())) {
    const int dfd = dirfd(d);
    while (dirent* e = readdir(d)) {
      struct stat st;
      if (fstatat(dfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
      if (S_ISREG(st.st_mode) || S_ISLNK(st.st_mode)) unlinkat(dfd, e->d_name, 0);
    }
    closedir(d);
  }
  return rmdir(dir.c_str()) == 0;
}

std::string default_stem() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  localtime_r(&now, &tm);
  char date[32];
  std::strftime(date, sizeof(date), "%Y%m%d-%H%M%S", &tm);
  uint16_t random = 0;
  if (getrandom(&random, sizeof(random), GRND_NONBLOCK) != sizeof(random))
    random = static_cast<uint16_t>(std::clock() ^ (getpid() << 3));
  return fmt::format("gpuscope-run-{}-{}-{:04x}", date, static_cast<long>(getpid()), random);
}

std::string absolute(const std::string& path) {
  if (!path.empty() && path[0] == '/') return path;
  char cwd[PATH_MAX];
  if (!getcwd(cwd, sizeof(cwd))) return path;
  return std::string(cwd) + "/" + path;
}

int rename_no_replace(const std::string& from, const std::string& to) {
  if (renameat2(AT_FDCWD, from.c_str(), AT_FDCWD, to.c_str(), RENAME_NOREPLACE) == 0) return 0;
  if (errno != EINVAL && errno != ENOSYS) return errno;
  // Filesystems without RENAME_NOREPLACE: link() fails with EEXIST as well, never replacing.
  if (link(from.c_str(), to.c_str()) != 0) return errno;
  unlink(from.c_str());
  return 0;
}

bool RunCaptures::begin(const std::string& output, std::string* error) {
  output_ = output.empty() ? absolute(default_stem() + kSuffix) : output;
  stem_ = output_;
  if (ends_with(stem_, kSuffix, kSuffixLen)) stem_.resize(stem_.size() - kSuffixLen);
  std::string why;
  staging_ = make_private_dir(stem_ + ".partial", &why);
  if (staging_.empty()) {
    if (error) *error = why + " (the captures are written beside the output file)";
    return false;
  }
  return true;
}

std::vector<std::string> RunCaptures::staged() const {
  std::vector<std::string> out;
  DIR* d = opendir(staging_.c_str());
  if (!d) return out;
  const int dfd = dirfd(d);
  const size_t prefix_len = sizeof(kStagedPrefix) - 1;
  while (dirent* e = readdir(d)) {
    const std::string name = e->d_name;
    if (name.size() <= prefix_len + kSuffixLen || name.compare(0, prefix_len, kStagedPrefix) != 0 ||
        !ends_with(name, kSuffix, kSuffixLen))
      continue;
    if (!is_process_tag(name.substr(prefix_len, name.size() - prefix_len - kSuffixLen))) continue;
    struct stat st;
    if (fstatat(dfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid())
      continue;
    out.push_back(staging_ + "/" + name);
  }
  closedir(d);
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<std::string> RunCaptures::append(const std::vector<DeviceSample>& samples,
                                             const std::optional<TracingCost>& cost) const {
  std::vector<std::string> errors;
  if (samples.empty() && !cost) return errors;
  for (const auto& path : staged()) {
    capture::CaptureWriter w;
    std::string error;
    if (!w.open_append(path, {}, &error)) {
      errors.push_back(error);
      continue;
    }
    for (const auto& s : samples) w.add(s);
    if (cost) w.add(*cost);
    w.close();
    if (w.failed()) errors.push_back(path + ": " + w.error());
  }
  return errors;
}

std::vector<std::string> RunCaptures::publish(std::vector<std::string>* notes) {
  std::vector<std::string> out;
  const std::vector<std::string> files = staged();
  const size_t prefix_len = staging_.size() + 1 + sizeof(kStagedPrefix) - 1;
  for (const auto& from : files) {
    const std::string tag = from.substr(prefix_len, from.size() - prefix_len - kSuffixLen);
    const std::string per_process = stem_ + "." + tag;
    std::vector<std::string> names;
    if (files.size() == 1) names.push_back(output_);
    names.push_back(per_process + kSuffix);
    std::string to;
    int err = EEXIST;
    for (int k = 1; err == EEXIST && k < 1000; ++k) {
      to = k <= static_cast<int>(names.size()) ? names[k - 1] : fmt::format("{}.{}{}", per_process, k, kSuffix);
      err = rename_no_replace(from, to);
    }
    if (err != 0) {
      if (notes)
        notes->push_back(fmt::format("cannot move {} to {}: {}; left where it is", from, to, std::strerror(err)));
      out.push_back(from);
      continue;
    }
    if (to != names.front() && notes)
      notes->push_back(fmt::format("{} exists and was not replaced; the capture is {}", names.front(), to));
    out.push_back(to);
  }
  if (rmdir(staging_.c_str()) != 0 && errno != ENOENT && notes)
    notes->push_back(fmt::format("{} is not empty and was left in place", staging_));
  return out;
}

void RunCaptures::discard() { rmdir(staging_.c_str()); }

}  // namespace gpuscope::cli
