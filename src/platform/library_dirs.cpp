#include "platform/library_dirs.h"

#include <limits.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>

#include "core/run_protocol.h"

namespace gpuscope::platform {
namespace {

bool is_file(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

std::string real_path(const std::string& path) {
  char real[PATH_MAX];
  return realpath(path.c_str(), real) ? std::string(real) : path;
}

}  // namespace

std::string exe_dir() {
  char buf[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  if (n <= 0) return ".";
  std::string path(buf, static_cast<size_t>(n));
  return path.substr(0, path.rfind('/'));
}

std::vector<std::string> library_dirs() {
  std::vector<std::string> dirs;
  if (const char* d = std::getenv(run_protocol::kEnvLibDir.name); d && *d) dirs.push_back(d);
  const std::string exe = exe_dir();
  dirs.push_back(exe);
  dirs.push_back(exe + "/../lib");
  dirs.push_back(exe + "/../lib/gpuscope");  // `cmake --install`'s layout (CMakeLists.txt).
  dirs.push_back(exe + "/../cupti");
  dirs.push_back(exe + "/../k8s");
  return dirs;
}

std::string find_library(const std::string& name) {
  for (const auto& d : library_dirs()) {
    const std::string path = d + "/" + name;
    if (is_file(path)) return real_path(path);
  }
  return {};
}

}  // namespace gpuscope::platform
