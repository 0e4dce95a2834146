// Communication on the recorded traces in testdata/hta: the collective sizes Kineto writes on
// NCCL kernels, checked against numbers computed from the trace JSON by hand (Python, summing
// the window's kernels), and invariants that hold on every trace.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "core/analysis.h"
#include "input/trace_input.h"

namespace gpuscope {
namespace {

namespace fs = std::filesystem;

std::vector<DeviceReport> analyze_hta(const std::string& name) {
  const char* env = std::getenv("GPUSCOPE_SOURCE_DIR");
  const fs::path path = fs::path(env ? env : GPUSCOPE_SOURCE_DIR) / "testdata" / "hta" / name;
  auto t = read_trace_file(path.string());
  EXPECT_TRUE(t.ok()) << name << ": " << t.status().message();
  if (!t.ok()) return {};
  return analyze_trace(*t, {});
}

TEST(CommunicationTrace, NcclSizesGiveNcclTestsBandwidth) {
  // Two analysed steps (ProfilerStep#4, #5), each with 5 float all-reduces over 2 ranks and 2
  // broadcasts: 2 x (2049000 + 7875584 + 6563840 + 6637568 + 2431040) x 4 bytes in 24211.804 us.
  const auto devices = analyze_hta("nccl_parser_config_nccl_data.json.gz");
  ASSERT_EQ(devices.size(), 1u);
  ASSERT_TRUE(devices[0].communication);
  const CommunicationReport& c = *devices[0].communication;
  ASSERT_GE(c.collectives.size(), 1u);
  const CollectiveStats& ar = c.collectives[0];
  EXPECT_EQ(ar.op, "allreduce");
  EXPECT_EQ(ar.count, 10);
  EXPECT_EQ(ar.group_size, 2);
  EXPECT_EQ(*ar.bytes, 204456256u);
  EXPECT_EQ(ar.ns, 24211804);
  EXPECT_NEAR(*ar.algbw_gbps, 204456256.0 / 24211804.0, 1e-9);
  EXPECT_NEAR(*ar.busbw_gbps, *ar.algbw_gbps, 1e-12);  // 2(n-1)/n = 1 for two ranks.
  EXPECT_EQ(c.exposed_per_step_ns.size(), 2u);
}

TEST(CommunicationTrace, BusyIsComputePlusExposedOnEveryNcclTrace) {
  for (const char* name : {"nccl_parser_config_nccl_data.json.gz", "trace_diff_control_control.json.gz",
                           "trace_diff_test_test.json.gz", "negative_queue_length_values_check_rank0.json.gz"}) {
    for (const DeviceReport& d : analyze_hta(name)) {
      if (!d.communication) continue;
      const CommunicationReport& c = *d.communication;
      SCOPED_TRACE(name);
      EXPECT_GT(c.kernel_ns, 0);
      EXPECT_LE(c.exposed_ns, c.kernel_ns);
      // The union of all kernels is the compute union plus the communication outside it.
      EXPECT_NEAR(c.busy_without_comm_pct + c.exposed_pct, d.busy_pct, 1e-6);
      int64_t per_step = 0;
      for (int64_t e : c.exposed_per_step_ns) per_step += e;
      if (!c.exposed_per_step_ns.empty()) EXPECT_EQ(per_step, c.exposed_ns);
    }
  }
}

TEST(CommunicationTrace, TracesWithoutCommunicationKernelsHaveNoReport) {
  for (const DeviceReport& d : analyze_hta("critical_path_alexnet_benchmark_result_2869224_1695835535_trace.json.gz")) {
    EXPECT_FALSE(d.communication);
  }
}

}  // namespace
}  // namespace gpuscope
