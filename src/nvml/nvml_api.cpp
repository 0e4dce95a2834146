#include "nvml/nvml_api.h"

#include <dlfcn.h>

#include <cstdlib>
#include <initializer_list>

#include <fmt/core.h>

#include "core/run_protocol.h"

namespace gpuscope::nvml {

namespace {

constexpr const char* kDefaultLibrary = "libnvidia-ml.so.1";

// Returns the first of `names` that the library exports, or {nullptr, ""}.
std::pair<void*, std::string> resolve(void* handle, std::initializer_list<const char*> names) {
  for (const char* name : names) {
    if (void* p = dlsym(handle, name)) return {p, name};
  }
  return {nullptr, ""};
}

// Codes NVML documents, for messages when nvmlErrorString itself is missing.
const char* fallback_error_string(nvmlReturn_t code) {
  switch (code) {
    case NVML_SUCCESS:
      return "success";
    case NVML_ERROR_UNINITIALIZED:
      return "not initialized";
    case NVML_ERROR_INVALID_ARGUMENT:
      return "invalid argument";
    case NVML_ERROR_NOT_SUPPORTED:
      return "not supported";
    case NVML_ERROR_NO_PERMISSION:
      return "insufficient permissions";
    case NVML_ERROR_NOT_FOUND:
      return "not found";
    case NVML_ERROR_INSUFFICIENT_SIZE:
      return "insufficient size";
    case NVML_ERROR_DRIVER_NOT_LOADED:
      return "driver not loaded";
    case NVML_ERROR_FUNCTION_NOT_FOUND:
      return "function not found";
    case NVML_ERROR_GPU_IS_LOST:
      return "GPU is lost";
    case NVML_ERROR_ARGUMENT_VERSION_MISMATCH:
      return "argument version mismatch";
    default:
      return "unknown error";
  }
}

}  // namespace

StatusOr<std::unique_ptr<NvmlApi>> NvmlApi::load() {
  const char* env = std::getenv(run_protocol::kEnvNvmlLibrary.name);
  return load(env && *env ? std::string(env) : std::string(kDefaultLibrary));
}

StatusOr<std::unique_ptr<NvmlApi>> NvmlApi::load(const std::string& library_path) {
  // RTLD_LOCAL: NVML's symbols must not satisfy anyone else's references in this process.
  void* handle = dlopen(library_path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char* why = dlerror();
    return Status::error(
        fmt::format("cannot load NVML from {} ({}); is the NVIDIA driver installed? set "
                    "{} to libnvidia-ml.so.1's path",
                    library_path, why ? why : "dlopen failed", run_protocol::kEnvNvmlLibrary.name));
  }
  std::unique_ptr<NvmlApi> api(new NvmlApi());
  api->handle_ = handle;
  api->library_path_ = library_path;
#define GPUSCOPE_NVML_RESOLVE(member, type, ...)                        \
  {                                                                     \
    auto [p, name] = resolve(handle, {__VA_ARGS__});                    \
    api->member = reinterpret_cast<std::add_pointer_t<type>>(p);        \
    api->entry_points_.push_back(EntryPoint{#member, std::move(name)}); \
  }
  GPUSCOPE_NVML_ENTRY_POINTS(GPUSCOPE_NVML_RESOLVE)
#undef GPUSCOPE_NVML_RESOLVE

  if (!api->init) {
    return Status::error(
        fmt::format("{} is not NVML (it exports neither nvmlInit_v2 nor nvmlInit); point "
                    "{} at libnvidia-ml.so.1",
                    library_path, run_protocol::kEnvNvmlLibrary.name));
  }
  nvmlReturn_t rc = api->init();
  if (rc != NVML_SUCCESS) {
    return Status::error(fmt::format("NVML found at {} but {}; is the NVIDIA driver loaded and a GPU present?",
                                     library_path, api->check(rc, "nvmlInit").message()));
  }
  api->initialized_ = true;
  return api;
}

NvmlApi::~NvmlApi() {
  if (initialized_ && shutdown) shutdown();
  if (handle_) dlclose(handle_);
}

std::string NvmlApi::error_string(nvmlReturn_t code) const {
  if (get_error_string) {
    if (const char* s = get_error_string(code)) return s;
  }
  return fallback_error_string(code);
}

Status NvmlApi::check(nvmlReturn_t code, const char* function) const {
  if (code == NVML_SUCCESS) return ok_status();
  return Status::error(fmt::format("{} failed: {} (NVML code {})", function, error_string(code), code));
}

}  // namespace gpuscope::nvml
