// Pins the layout of our NVML declarations (nvml_types.h) to nvml.h of CUDA 13.0 / driver 580
// on x86_64 (LP64). The expected numbers were read off that header; validation/run live
// also compiles the same checks against the real header on the GPU machine.
#include <cstddef>

#include <gtest/gtest.h>

#include "nvml/nvml_types.h"

namespace {

TEST(NvmlTypes, ClassicStructs) {
  EXPECT_EQ(sizeof(nvmlUtilization_t), 8u);
  EXPECT_EQ(offsetof(nvmlUtilization_t, memory), 4u);
  EXPECT_EQ(sizeof(nvmlMemory_t), 24u);
  EXPECT_EQ(offsetof(nvmlMemory_t, used), 16u);
  EXPECT_EQ(sizeof(nvmlMemory_v2_t), 40u);
  EXPECT_EQ(offsetof(nvmlMemory_v2_t, total), 8u);
  EXPECT_EQ(offsetof(nvmlMemory_v2_t, used), 32u);
  // NVML_STRUCT_VERSION(Memory, 2): the driver rejects anything else.
  EXPECT_EQ(nvmlMemory_v2, 0x02000028u);
}

TEST(NvmlTypes, PciInfo) {
  EXPECT_EQ(sizeof(nvmlPciInfo_t), 68u);
  EXPECT_EQ(offsetof(nvmlPciInfo_t, domain), 16u);
  EXPECT_EQ(offsetof(nvmlPciInfo_t, pciSubSystemId), 32u);
  EXPECT_EQ(offsetof(nvmlPciInfo_t, busId), 36u);
}

TEST(NvmlTypes, ProcessStructs) {
  EXPECT_EQ(sizeof(nvmlProcessInfo_v1_t), 16u);
  EXPECT_EQ(offsetof(nvmlProcessInfo_v1_t, usedGpuMemory), 8u);
  EXPECT_EQ(sizeof(nvmlProcessInfo_t), 24u);
  EXPECT_EQ(offsetof(nvmlProcessInfo_t, usedGpuMemory), 8u);
  EXPECT_EQ(offsetof(nvmlProcessInfo_t, gpuInstanceId), 16u);
  EXPECT_EQ(offsetof(nvmlProcessInfo_t, computeInstanceId), 20u);
  EXPECT_EQ(sizeof(nvmlProcessUtilizationSample_t), 32u);
  EXPECT_EQ(offsetof(nvmlProcessUtilizationSample_t, timeStamp), 8u);
  EXPECT_EQ(offsetof(nvmlProcessUtilizationSample_t, smUtil), 16u);
  EXPECT_EQ(offsetof(nvmlProcessUtilizationSample_t, memUtil), 20u);
  EXPECT_EQ(offsetof(nvmlProcessUtilizationSample_t, decUtil), 28u);
}

TEST(NvmlTypes, GpmStructs) {
  EXPECT_EQ(sizeof(nvmlGpmMetric_t), 40u);
  EXPECT_EQ(offsetof(nvmlGpmMetric_t, nvmlReturn), 4u);
  EXPECT_EQ(offsetof(nvmlGpmMetric_t, value), 8u);
  EXPECT_EQ(offsetof(nvmlGpmMetric_t, metricInfo), 16u);
  EXPECT_EQ(offsetof(nvmlGpmMetricsGet_t, numMetrics), 4u);
  EXPECT_EQ(offsetof(nvmlGpmMetricsGet_t, sample1), 8u);
  EXPECT_EQ(offsetof(nvmlGpmMetricsGet_t, sample2), 16u);
  EXPECT_EQ(offsetof(nvmlGpmMetricsGet_t, metrics), 24u);
  // Room for the largest NVML_GPM_METRIC_MAX seen (333): a driver built against a newer
  // header may touch entries up to its own maximum.
  EXPECT_GE(NVML_GPM_METRIC_MAX, 333u);
  EXPECT_EQ(sizeof(nvmlGpmMetricsGet_t), 24u + 40u * NVML_GPM_METRIC_MAX);
  EXPECT_EQ(sizeof(nvmlGpmSupport_t), 8u);
  // Plain 1, not NVML_STRUCT_VERSION (GPU.md pitfalls).
  EXPECT_EQ(NVML_GPM_METRICS_GET_VERSION, 1u);
  EXPECT_EQ(NVML_GPM_SUPPORT_VERSION, 1u);
}

TEST(NvmlTypes, HealthTypes) {
  EXPECT_EQ(sizeof(nvmlEventData_t), 32u);
  EXPECT_EQ(offsetof(nvmlEventData_t, eventType), 8u);
  EXPECT_EQ(offsetof(nvmlEventData_t, eventData), 16u);
  EXPECT_EQ(offsetof(nvmlEventData_t, gpuInstanceId), 24u);
  EXPECT_EQ(offsetof(nvmlEventData_t, computeInstanceId), 28u);
  EXPECT_EQ(nvmlEventTypeXidCriticalError, 8u);
  EXPECT_EQ(NVML_ERROR_TIMEOUT, 10);
  EXPECT_EQ(NVML_MEMORY_ERROR_TYPE_UNCORRECTED, 1u);
  EXPECT_EQ(NVML_AGGREGATE_ECC, 1u);
  EXPECT_EQ(NVML_NVLINK_ERROR_DL_RECOVERY, 1u);
  EXPECT_EQ(NVML_NVLINK_ERROR_DL_CRC_FLIT, 2u);
  EXPECT_EQ(NVML_NVLINK_ERROR_DL_CRC_DATA, 3u);
  EXPECT_EQ(NVML_NVLINK_MAX_LINKS, 18u);
}

TEST(NvmlTypes, MetricIds) {
  EXPECT_EQ(NVML_GPM_METRIC_SM_UTIL, 2u);
  EXPECT_EQ(NVML_GPM_METRIC_SM_OCCUPANCY, 3u);
  EXPECT_EQ(NVML_GPM_METRIC_ANY_TENSOR_UTIL, 5u);
  EXPECT_EQ(NVML_GPM_METRIC_DFMA_TENSOR_UTIL, 6u);
  EXPECT_EQ(NVML_GPM_METRIC_HMMA_TENSOR_UTIL, 7u);
  EXPECT_EQ(NVML_GPM_METRIC_IMMA_TENSOR_UTIL, 9u);
  EXPECT_EQ(NVML_GPM_METRIC_DRAM_BW_UTIL, 10u);
  EXPECT_EQ(NVML_GPM_METRIC_FP64_UTIL, 11u);
  EXPECT_EQ(NVML_GPM_METRIC_FP32_UTIL, 12u);
  EXPECT_EQ(NVML_GPM_METRIC_FP16_UTIL, 13u);
  EXPECT_EQ(NVML_GPM_METRIC_PCIE_TX_PER_SEC, 20u);
  EXPECT_EQ(NVML_GPM_METRIC_PCIE_RX_PER_SEC, 21u);
  EXPECT_EQ(NVML_GPM_METRIC_NVLINK_TOTAL_RX_PER_SEC, 60u);
  EXPECT_EQ(NVML_GPM_METRIC_NVLINK_TOTAL_TX_PER_SEC, 61u);
}

}  // namespace
