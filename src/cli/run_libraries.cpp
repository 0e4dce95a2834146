#include "cli/run_libraries.h"

#include <limits.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>

namespace gpuscope::cli {
namespace {

bool is_file(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

bool is_dir(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
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
  if (const char* d = std::getenv("GPUSCOPE_LIB_DIR"); d && *d) dirs.push_back(d);
  const std::string exe = exe_dir();
  dirs.push_back(exe);
  dirs.push_back(exe + "/../lib");
  dirs.push_back(exe + "/../lib/gpuscope");  // `cmake --install`'s layout (CMakeLists.txt).
  dirs.push_back(exe + "/../cupti");
  return dirs;
}

std::string find_library(const std::string& name) {
  for (const auto& d : library_dirs()) {
    const std::string path = d + "/" + name;
    if (is_file(path)) return real_path(path);
  }
  return {};
}

std::string find_python_bootstrap() {
  for (const auto& d : library_dirs()) {
    const std::string path = d + "/python";
    // The marker file keeps an unrelated `python` folder (e.g. /usr/lib/python) from matching.
    if (is_dir(path) && is_file(path + "/sitecustomize.py")) return real_path(path);
  }
  return {};
}

std::vector<std::pair<std::string, std::string>> python_environment(const std::string& bootstrap,
                                                                    const char* python_env,
                                                                    const char* old_pythonpath) {
  std::vector<std::pair<std::string, std::string>> env;
  env.emplace_back("GPUSCOPE_RUN", "1");
  if (bootstrap.empty() || (python_env && std::strcmp(python_env, "0") == 0)) return env;
  std::string path = bootstrap;
  if (old_pythonpath && *old_pythonpath) path += std::string(":") + old_pythonpath;
  env.emplace_back("PYTHONPATH", path);
  return env;
}

}  // namespace gpuscope::cli
