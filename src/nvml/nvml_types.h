// Our declarations of the few NVML types gpuscope uses. nvml.h is not available on the build
// and CI machines (it ships with the driver / CUDA toolkit), and gpuscope must build without
// either, so these are declared here and nowhere else.
//
// Follows: nvml.h of CUDA 13.0 (driver branch 580, NVML_API_VERSION 12). Every layout below is
// identical back to CUDA 11.8 except where noted. nvml_types_test.cpp pins sizes and
// offsets; validation/run live compares them with the real header on the GPU machine.
//
// Only what the sampler calls is declared. Names keep NVML's spelling so that a reader can
// grep the vendor documentation.
#pragma once

#include <cstdint>

extern "C" {

typedef int nvmlReturn_t;  // enum nvmlReturn_enum; an int-sized enum in the C header.
typedef struct nvmlDevice_st* nvmlDevice_t;
typedef struct nvmlGpmSample_st* nvmlGpmSample_t;
typedef struct nvmlEventSet_st* nvmlEventSet_t;

enum : nvmlReturn_t {
  NVML_SUCCESS = 0,
  NVML_ERROR_UNINITIALIZED = 1,
  NVML_ERROR_INVALID_ARGUMENT = 2,
  NVML_ERROR_NOT_SUPPORTED = 3,
  NVML_ERROR_NO_PERMISSION = 4,
  NVML_ERROR_NOT_FOUND = 6,
  NVML_ERROR_INSUFFICIENT_SIZE = 7,
  NVML_ERROR_DRIVER_NOT_LOADED = 9,
  NVML_ERROR_TIMEOUT = 10,  // nvmlEventSetWait*: no event within the timeout.
  NVML_ERROR_GPU_IS_LOST = 15,
  NVML_ERROR_FUNCTION_NOT_FOUND = 13,
  NVML_ERROR_ARGUMENT_VERSION_MISMATCH = 25,
  NVML_ERROR_UNKNOWN = 999,
};

// nvmlClockType_t, nvmlTemperatureSensors_t, nvmlPcieUtilCounter_t.
enum : unsigned int {
  NVML_CLOCK_GRAPHICS = 0,
  NVML_CLOCK_SM = 1,
  NVML_CLOCK_MEM = 2,
  NVML_TEMPERATURE_GPU = 0,
  NVML_PCIE_UTIL_TX_BYTES = 0,
  NVML_PCIE_UTIL_RX_BYTES = 1,
  NVML_DEVICE_MIG_ENABLE = 1,
};

constexpr unsigned int NVML_DEVICE_NAME_V2_BUFFER_SIZE = 96;
constexpr unsigned int NVML_DEVICE_UUID_V2_BUFFER_SIZE = 96;
constexpr unsigned int NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE = 80;
constexpr unsigned int NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE = 32;
constexpr unsigned int NVML_DEVICE_PCI_BUS_ID_BUFFER_V2_SIZE = 16;

// nvmlDeviceGetPciInfo_v3 (and _v2) fill this; busId is "00000000:3B:00.0" (32-bit domain),
// the form dcgm-exporter's pci_bus_id label shows. The unversioned nvmlDeviceGetPciInfo
// predates busIdLegacy and is not used.
typedef struct nvmlPciInfo_st {
  char busIdLegacy[NVML_DEVICE_PCI_BUS_ID_BUFFER_V2_SIZE];
  unsigned int domain;
  unsigned int bus;
  unsigned int device;
  unsigned int pciDeviceId;
  unsigned int pciSubSystemId;
  char busId[NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE];
} nvmlPciInfo_t;

typedef struct nvmlUtilization_st {
  unsigned int gpu;     // Percent of the driver's sample period with any kernel running.
  unsigned int memory;  // Percent of that period the memory was read or written.
} nvmlUtilization_t;

typedef struct nvmlMemory_st {
  unsigned long long total;
  unsigned long long free;
  unsigned long long used;
} nvmlMemory_t;

// nvmlDeviceGetMemoryInfo_v2 (driver 510+). `version` must be nvmlMemory_v2 below.
typedef struct nvmlMemory_v2_st {
  unsigned int version;
  unsigned long long total;
  unsigned long long reserved;
  unsigned long long free;
  unsigned long long used;
} nvmlMemory_v2_t;

// NVML_STRUCT_VERSION(Memory, 2) = sizeof(nvmlMemory_v2_t) | (2 << 24).
constexpr unsigned int nvmlMemory_v2 = static_cast<unsigned int>(sizeof(nvmlMemory_v2_t)) | (2u << 24);

// nvmlDeviceGetComputeRunningProcesses (no suffix) fills the v1 layout.
typedef struct nvmlProcessInfo_v1_st {
  unsigned int pid;
  unsigned long long usedGpuMemory;  // Bytes; NVML_VALUE_NOT_AVAILABLE when unknown.
} nvmlProcessInfo_v1_t;

// _v2 and _v3 of nvmlDeviceGetComputeRunningProcesses fill this layout (nvmlProcessInfo_t).
typedef struct nvmlProcessInfo_st {
  unsigned int pid;
  unsigned long long usedGpuMemory;
  unsigned int gpuInstanceId;  // 0xFFFFFFFF when not a MIG instance.
  unsigned int computeInstanceId;
} nvmlProcessInfo_t;

constexpr unsigned long long NVML_VALUE_NOT_AVAILABLE_ULL = ~0ull;

typedef struct nvmlProcessUtilizationSample_st {
  unsigned int pid;
  unsigned long long timeStamp;  // CPU timestamp, microseconds (CLOCK_REALTIME).
  unsigned int smUtil;
  unsigned int memUtil;
  unsigned int encUtil;
  unsigned int decUtil;
} nvmlProcessUtilizationSample_t;

// GPM (Hopper and later). Pitfalls (see shared/GPU.md): the version fields are the plain
// number 1, not NVML_STRUCT_VERSION; NVML_GPM_METRIC_MAX grew 98 -> 210 -> 333 across headers
// while the version stayed 1, so the array has room for the largest; each metric carries its
// own return code.
constexpr unsigned int NVML_GPM_METRICS_GET_VERSION = 1;
constexpr unsigned int NVML_GPM_SUPPORT_VERSION = 1;
constexpr unsigned int NVML_GPM_METRIC_MAX = 333;

enum : unsigned int {
  NVML_GPM_METRIC_SM_UTIL = 2,
  NVML_GPM_METRIC_SM_OCCUPANCY = 3,
  NVML_GPM_METRIC_ANY_TENSOR_UTIL = 5,
  NVML_GPM_METRIC_DFMA_TENSOR_UTIL = 6,
  NVML_GPM_METRIC_HMMA_TENSOR_UTIL = 7,
  NVML_GPM_METRIC_IMMA_TENSOR_UTIL = 9,
  NVML_GPM_METRIC_DRAM_BW_UTIL = 10,
  NVML_GPM_METRIC_FP64_UTIL = 11,
  NVML_GPM_METRIC_FP32_UTIL = 12,
  NVML_GPM_METRIC_FP16_UTIL = 13,
  NVML_GPM_METRIC_PCIE_TX_PER_SEC = 20,          // MiB/s
  NVML_GPM_METRIC_PCIE_RX_PER_SEC = 21,          // MiB/s
  NVML_GPM_METRIC_NVLINK_TOTAL_RX_PER_SEC = 60,  // MiB/s
  NVML_GPM_METRIC_NVLINK_TOTAL_TX_PER_SEC = 61,  // MiB/s
};

typedef struct nvmlGpmMetric_st {
  unsigned int metricId;    // In.
  nvmlReturn_t nvmlReturn;  // Out: this metric's own status; value valid only on success.
  double value;             // Out.
  struct {
    char* shortName;
    char* longName;
    char* unit;
  } metricInfo;  // Out; may be null.
} nvmlGpmMetric_t;

typedef struct nvmlGpmMetricsGet_st {
  unsigned int version;     // NVML_GPM_METRICS_GET_VERSION (1).
  unsigned int numMetrics;  // Entries of metrics[] in use.
  nvmlGpmSample_t sample1;
  nvmlGpmSample_t sample2;
  nvmlGpmMetric_t metrics[NVML_GPM_METRIC_MAX];
} nvmlGpmMetricsGet_t;

typedef struct nvmlGpmSupport_st {
  unsigned int version;            // NVML_GPM_SUPPORT_VERSION (1).
  unsigned int isSupportedDevice;  // Out.
} nvmlGpmSupport_t;

// ---- Health (health.cpp) ----

// nvmlMemoryErrorType_t and nvmlEccCounterType_t (nvmlDeviceGetTotalEccErrors). Volatile
// counts reset when the driver reloads; aggregate counts persist in the InfoROM.
enum : unsigned int {
  NVML_MEMORY_ERROR_TYPE_CORRECTED = 0,
  NVML_MEMORY_ERROR_TYPE_UNCORRECTED = 1,
  NVML_VOLATILE_ECC = 0,
  NVML_AGGREGATE_ECC = 1,
};

// nvmlNvLinkErrorCounter_t (nvmlDeviceGetNvLinkErrorCounter), and the most links a device has
// (NVML_NVLINK_MAX_LINKS: 18 since CUDA 12; 12 in CUDA 11 headers). nvmlEnableState_t.
enum : unsigned int {
  NVML_NVLINK_ERROR_DL_REPLAY = 0,
  NVML_NVLINK_ERROR_DL_RECOVERY = 1,
  NVML_NVLINK_ERROR_DL_CRC_FLIT = 2,
  NVML_NVLINK_ERROR_DL_CRC_DATA = 3,
  NVML_NVLINK_MAX_LINKS = 18,
  NVML_FEATURE_DISABLED = 0,
  NVML_FEATURE_ENABLED = 1,
};

// nvmlEventType bits (unsigned long long). Only XIDs are registered.
constexpr unsigned long long nvmlEventTypeXidCriticalError = 0x0000000000000008ull;

// Filled by nvmlEventSetWait_v2 (CUDA 11+: the v1 symbol fills the first three fields only).
typedef struct nvmlEventData_st {
  nvmlDevice_t device;           // The device the event came from.
  unsigned long long eventType;  // One nvmlEventType bit.
  unsigned long long eventData;  // For nvmlEventTypeXidCriticalError: the XID code (999: unknown).
  unsigned int gpuInstanceId;    // MIG: the instance, else 0xFFFFFFFF.
  unsigned int computeInstanceId;
} nvmlEventData_t;

}  // extern "C"
