#include "cli/run_libraries.h"

#include <cstring>

#include "core/run_protocol.h"

namespace gpuscope::cli {

std::string find_python_bootstrap() {
  // The marker file keeps an unrelated `python` folder (e.g. /usr/lib/python) from matching.
  const std::string marker = find_library("python/sitecustomize.py");
  return marker.empty() ? std::string() : marker.substr(0, marker.rfind('/'));
}

std::vector<std::pair<std::string, std::string>> python_environment(const std::string& bootstrap,
                                                                    const char* python_env,
                                                                    const char* old_pythonpath) {
  std::vector<std::pair<std::string, std::string>> env;
  env.emplace_back(run_protocol::kEnvRun.name, "1");
  if (bootstrap.empty() || (python_env && std::strcmp(python_env, "0") == 0)) return env;
  std::string path = bootstrap;
  if (old_pythonpath && *old_pythonpath) path += std::string(":") + old_pythonpath;
  env.emplace_back(run_protocol::kEnvPythonPath.name, path);
  return env;
}

}  // namespace gpuscope::cli
