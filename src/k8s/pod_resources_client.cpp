#include "k8s/pod_resources_client.h"

#include <dlfcn.h>

#include <filesystem>
#include <vector>

#include <fmt/core.h>
#include <fmt/format.h>

#include "platform/library_dirs.h"

namespace gpuscope::k8s {

StatusOr<std::unique_ptr<PodResourcesClient>> load_pod_resources_client(const std::string& module_path) {
  std::string path = module_path;
  if (path.empty()) {
    path = platform::find_library(kPodResourcesModule);
    if (path.empty()) {
      std::vector<std::string> looked;
      for (const auto& d : platform::library_dirs()) looked.push_back(std::filesystem::path(d).lexically_normal());
      return Status::error(fmt::format("{} not found (looked in {})", kPodResourcesModule, fmt::join(looked, ", ")));
    }
  }
  // RTLD_NOW: a missing symbol fails here, not in the refresh thread later. RTLD_LOCAL: gRPC's
  // symbols stay out of the global namespace. Never dlclosed: the client's code is in it.
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char* why = dlerror();
    return Status::error(fmt::format("cannot load {}: {}", path, why ? why : "unknown dlopen error"));
  }
  auto entry = reinterpret_cast<PodResourcesClientEntry>(dlsym(handle, kPodResourcesClientEntry));
  if (!entry) {
    return Status::error(
        fmt::format("{} has no {} (a module of another gpuscope version?)", path, kPodResourcesClientEntry));
  }
  std::unique_ptr<PodResourcesClient> client(entry(GPUSCOPE_VERSION));
  if (!client) {
    return Status::error(fmt::format("{} is from another gpuscope version than this one ({})", path, GPUSCOPE_VERSION));
  }
  return client;
}

}  // namespace gpuscope::k8s
