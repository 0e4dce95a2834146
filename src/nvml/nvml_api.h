// NVML loaded at run time with dlopen: gpuscope has no build or link dependency on the driver.
//
// Every entry point is named once, in GPUSCOPE_NVML_ENTRY_POINTS. Each row expands to a
// function-pointer member resolved once at load time; alternatives are tried in order, newest
// symbol version first, and the first one found wins. An entry point that is not found stays
// null: the metrics it provides are then absent (never zero), and calling it through call()
// returns NVML_ERROR_FUNCTION_NOT_FOUND rather than crashing.
//
// Library path: $GPUSCOPE_NVML_LIBRARY if set (tests point it at the fake NVML), else
// libnvidia-ml.so.1. Return codes become Status in one place, check(), which keeps the
// function name and the code in the message.
#pragma once

#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "core/status.h"
#include "nvml/nvml_types.h"

namespace gpuscope::nvml {

// X(member, function type, symbol names newest first...). Rows whose alternatives have
// different struct layouts are separate rows (processes v1 vs v2/v3, memory v1 vs v2).
#define GPUSCOPE_NVML_ENTRY_POINTS(X)                                                                                 \
  X(init, nvmlReturn_t(), "nvmlInit_v2", "nvmlInit")                                                                  \
  X(shutdown, nvmlReturn_t(), "nvmlShutdown")                                                                         \
  X(get_error_string, const char*(nvmlReturn_t), "nvmlErrorString")                                                   \
  X(system_get_driver_version, nvmlReturn_t(char*, unsigned int), "nvmlSystemGetDriverVersion")                       \
  X(device_get_count, nvmlReturn_t(unsigned int*), "nvmlDeviceGetCount_v2", "nvmlDeviceGetCount")                     \
  X(device_get_handle_by_index, nvmlReturn_t(unsigned int, nvmlDevice_t*), "nvmlDeviceGetHandleByIndex_v2",           \
    "nvmlDeviceGetHandleByIndex")                                                                                     \
  X(device_get_name, nvmlReturn_t(nvmlDevice_t, char*, unsigned int), "nvmlDeviceGetName")                            \
  X(device_get_uuid, nvmlReturn_t(nvmlDevice_t, char*, unsigned int), "nvmlDeviceGetUUID")                            \
  X(device_get_pci_info, nvmlReturn_t(nvmlDevice_t, nvmlPciInfo_t*), "nvmlDeviceGetPciInfo_v3",                       \
    "nvmlDeviceGetPciInfo_v2")                                                                                        \
  X(device_get_utilization_rates, nvmlReturn_t(nvmlDevice_t, nvmlUtilization_t*), "nvmlDeviceGetUtilizationRates")    \
  X(device_get_memory_info_v2, nvmlReturn_t(nvmlDevice_t, nvmlMemory_v2_t*), "nvmlDeviceGetMemoryInfo_v2")            \
  X(device_get_memory_info, nvmlReturn_t(nvmlDevice_t, nvmlMemory_t*), "nvmlDeviceGetMemoryInfo")                     \
  X(device_get_power_usage, nvmlReturn_t(nvmlDevice_t, unsigned int*), "nvmlDeviceGetPowerUsage")                     \
  X(device_get_total_energy_consumption, nvmlReturn_t(nvmlDevice_t, unsigned long long*),                             \
    "nvmlDeviceGetTotalEnergyConsumption")                                                                            \
  X(device_get_clock_info, nvmlReturn_t(nvmlDevice_t, unsigned int, unsigned int*), "nvmlDeviceGetClockInfo")         \
  X(device_get_temperature, nvmlReturn_t(nvmlDevice_t, unsigned int, unsigned int*), "nvmlDeviceGetTemperature")      \
  X(device_get_clocks_event_reasons, nvmlReturn_t(nvmlDevice_t, unsigned long long*),                                 \
    "nvmlDeviceGetCurrentClocksEventReasons", "nvmlDeviceGetCurrentClocksThrottleReasons")                            \
  X(device_get_pcie_throughput, nvmlReturn_t(nvmlDevice_t, unsigned int, unsigned int*),                              \
    "nvmlDeviceGetPcieThroughput")                                                                                    \
  X(device_get_compute_running_processes, nvmlReturn_t(nvmlDevice_t, unsigned int*, nvmlProcessInfo_t*),              \
    "nvmlDeviceGetComputeRunningProcesses_v3", "nvmlDeviceGetComputeRunningProcesses_v2")                             \
  X(device_get_compute_running_processes_v1, nvmlReturn_t(nvmlDevice_t, unsigned int*, nvmlProcessInfo_v1_t*),        \
    "nvmlDeviceGetComputeRunningProcesses")                                                                           \
  X(device_get_process_utilization,                                                                                   \
    nvmlReturn_t(nvmlDevice_t, nvmlProcessUtilizationSample_t*, unsigned int*, unsigned long long),                   \
    "nvmlDeviceGetProcessUtilization")                                                                                \
  X(device_get_mig_mode, nvmlReturn_t(nvmlDevice_t, unsigned int*, unsigned int*), "nvmlDeviceGetMigMode")            \
  X(device_get_max_mig_device_count, nvmlReturn_t(nvmlDevice_t, unsigned int*), "nvmlDeviceGetMaxMigDeviceCount")     \
  X(device_get_mig_device_handle_by_index, nvmlReturn_t(nvmlDevice_t, unsigned int, nvmlDevice_t*),                   \
    "nvmlDeviceGetMigDeviceHandleByIndex")                                                                            \
  X(device_get_gpu_instance_id, nvmlReturn_t(nvmlDevice_t, unsigned int*), "nvmlDeviceGetGpuInstanceId")              \
  X(gpm_query_device_support, nvmlReturn_t(nvmlDevice_t, nvmlGpmSupport_t*), "nvmlGpmQueryDeviceSupport")             \
  X(gpm_sample_alloc, nvmlReturn_t(nvmlGpmSample_t*), "nvmlGpmSampleAlloc")                                           \
  X(gpm_sample_free, nvmlReturn_t(nvmlGpmSample_t), "nvmlGpmSampleFree")                                              \
  X(gpm_sample_get, nvmlReturn_t(nvmlDevice_t, nvmlGpmSample_t), "nvmlGpmSampleGet")                                  \
  X(gpm_mig_sample_get, nvmlReturn_t(nvmlDevice_t, unsigned int, nvmlGpmSample_t), "nvmlGpmMigSampleGet")             \
  X(gpm_metrics_get, nvmlReturn_t(nvmlGpmMetricsGet_t*), "nvmlGpmMetricsGet")                                         \
  /* Health (health.cpp). */                                                                                          \
  X(event_set_create, nvmlReturn_t(nvmlEventSet_t*), "nvmlEventSetCreate")                                            \
  X(event_set_free, nvmlReturn_t(nvmlEventSet_t), "nvmlEventSetFree")                                                 \
  X(event_set_wait_v2, nvmlReturn_t(nvmlEventSet_t, nvmlEventData_t*, unsigned int), "nvmlEventSetWait_v2")           \
  X(device_get_supported_event_types, nvmlReturn_t(nvmlDevice_t, unsigned long long*),                                \
    "nvmlDeviceGetSupportedEventTypes")                                                                               \
  X(device_register_events, nvmlReturn_t(nvmlDevice_t, unsigned long long, nvmlEventSet_t),                           \
    "nvmlDeviceRegisterEvents")                                                                                       \
  X(device_get_total_ecc_errors, nvmlReturn_t(nvmlDevice_t, unsigned int, unsigned int, unsigned long long*),         \
    "nvmlDeviceGetTotalEccErrors")                                                                                    \
  X(device_get_remapped_rows, nvmlReturn_t(nvmlDevice_t, unsigned int*, unsigned int*, unsigned int*, unsigned int*), \
    "nvmlDeviceGetRemappedRows")                                                                                      \
  X(device_get_pcie_replay_counter, nvmlReturn_t(nvmlDevice_t, unsigned int*), "nvmlDeviceGetPcieReplayCounter")      \
  X(device_get_nvlink_state, nvmlReturn_t(nvmlDevice_t, unsigned int, unsigned int*), "nvmlDeviceGetNvLinkState")     \
  X(device_get_nvlink_error_counter, nvmlReturn_t(nvmlDevice_t, unsigned int, unsigned int, unsigned long long*),     \
    "nvmlDeviceGetNvLinkErrorCounter")                                                                                \
  X(device_get_enforced_power_limit, nvmlReturn_t(nvmlDevice_t, unsigned int*), "nvmlDeviceGetEnforcedPowerLimit")

// One resolved entry point: which symbol name was found (empty when none).
struct EntryPoint {
  const char* member;
  std::string symbol;
};

class NvmlApi {
 public:
  // dlopens the library (see the file comment), resolves the table and calls nvmlInit.
  // Errors: the library cannot be opened, nvmlInit is missing, or it fails (no driver).
  static StatusOr<std::unique_ptr<NvmlApi>> load();
  static StatusOr<std::unique_ptr<NvmlApi>> load(const std::string& library_path);
  ~NvmlApi();  // nvmlShutdown, then dlclose.
  NvmlApi(const NvmlApi&) = delete;
  NvmlApi& operator=(const NvmlApi&) = delete;

#define GPUSCOPE_NVML_MEMBER(member, type, ...) std::add_pointer_t<type> member = nullptr;
  GPUSCOPE_NVML_ENTRY_POINTS(GPUSCOPE_NVML_MEMBER)
#undef GPUSCOPE_NVML_MEMBER

  // Calls an entry point that may be missing: NVML_ERROR_FUNCTION_NOT_FOUND if so.
  template <typename Fn, typename... Args>
  static nvmlReturn_t call(Fn* fn, Args... args) {
    return fn ? fn(args...) : NVML_ERROR_FUNCTION_NOT_FOUND;
  }

  // The one place NVML return codes become Status: "nvmlFoo failed: <string> (code N)".
  Status check(nvmlReturn_t code, const char* function) const;
  std::string error_string(nvmlReturn_t code) const;

  const std::string& library_path() const { return library_path_; }
  // Every row of the table with the symbol that was resolved for it.
  const std::vector<EntryPoint>& entry_points() const { return entry_points_; }

 private:
  NvmlApi() = default;
  void* handle_ = nullptr;
  bool initialized_ = false;
  std::string library_path_;
  std::vector<EntryPoint> entry_points_;
};

}  // namespace gpuscope::nvml
