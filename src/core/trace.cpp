#include "core/trace.h"

#include <algorithm>
#include <array>
#include <tuple>

namespace gpuscope {

StringTable::StringTable() { intern(""); }

StringId StringTable::intern(std::string_view s) {
  if (auto it = ids_.find(s); it != ids_.end()) return it->second;
  const auto id = static_cast<StringId>(strings_.size());
  strings_.emplace_back(s);
  ids_.emplace(strings_.back(), id);
  return id;
}

const Device* Trace::find_device(int32_t id) const {
  for (const auto& d : devices) {
    if (d.id == id) return &d;
  }
  return nullptr;
}

namespace {
template <typename T>
void sort_by_time(std::vector<T>& v) {
  std::stable_sort(v.begin(), v.end(), [](const T& a, const T& b) {
    return std::tie(a.start_ns, b.end_ns) < std::tie(b.start_ns, a.end_ns);
  });
}
}  // namespace

void Trace::sort_events() {
  // Ties: longer first, so a parent precedes the child that starts with it.
  sort_by_time(kernels);
  sort_by_time(memcpys);
  sort_by_time(memsets);
  sort_by_time(api_calls);
  sort_by_time(host_events);
  sort_by_time(gpu_annotations);
  sort_by_time(collectives);
  std::stable_sort(device_samples.begin(), device_samples.end(),
                   [](const DeviceSample& a, const DeviceSample& b) { return a.time_ns < b.time_ns; });
}

ApiClass classify_api(std::string_view name) {
  auto has = [&](std::string_view part) { return name.find(part) != std::string_view::npos; };
  // Order matters: "cudaMemcpyAsync" is a copy, "cudaMallocAsync" an allocation,
  // "cudaStreamSynchronize" a sync.
  if (has("Launch") || has("GraphLaunch")) return ApiClass::kLaunch;
  // cudaDeviceSynchronize, cudaStreamSynchronize, cudaEventSynchronize, cuCtxSynchronize...
  if (has("Synchronize")) return ApiClass::kSync;
  if (has("Memcpy") || has("Memset") || has("cuMemcpy") || has("cuMemset")) return ApiClass::kMemcpy;
  static constexpr std::array<std::string_view, 16> kAlloc = {
      "cudaMalloc",         "cudaFree",   "cudaHostAlloc", "cudaMallocHost", "cudaFreeHost", "cudaHostRegister",
      "cudaHostUnregister", "cuMemAlloc", "cuMemFree",     "cuMemHostAlloc", "cuMemCreate",  "cuMemRelease",
      "hipMalloc",          "hipFree",    "hipHostMalloc", "hipHostFree"};
  for (auto a : kAlloc) {
    if (name.starts_with(a)) return ApiClass::kAlloc;
  }
  return ApiClass::kOther;
}

}  // namespace gpuscope
