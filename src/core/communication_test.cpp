#include <gtest/gtest.h>

#include <string>

#include "core/analysis.h"
#include "core/analysis_test_util.h"
#include "core/communication.h"
#include "core/ranks.h"
#include "core/test_builder.h"

namespace gpuscope {
namespace {

using testing::FindingById;
using testing::only;
using testing::TraceBuilder;

constexpr std::string_view kNccl = "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)";
constexpr std::string_view kGemm = "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64";

// Four 1000 us training steps (the last is dropped): compute [10, 10 + compute_us), then an all-reduce
// from 10 + comm_start_us to 910 us; idle after it. Each all-reduce moves `nelems` floats.
Trace steps_with_allreduce(double compute_us, double comm_start_us, int64_t nelems = 0, int64_t group = 4) {
  TraceBuilder b(132, "NVIDIA H100 80GB HBM3");
  for (int i = 0; i < 4; ++i) {
    const double t0 = i * 1000.0;
    b.annotation(t0, t0 + 1000, "ProfilerStep#" + std::to_string(i + 1));
    b.kernel(t0 + 10, t0 + 10 + compute_us, kGemm, 1000, 0, 7);
    b.kernel(t0 + 10 + comm_start_us, t0 + 910, kNccl, 8, 0, 20);
    // A training step: the backward runs (while the GPU computes, so no idle changes).
    b.op(t0 + 20, t0 + 21, "autograd::engine::evaluate_function: MmBackward0");
  }
  Trace t = b.build();
  if (nelems > 0) {
    for (int i = 0; i < 4; ++i) {
      CollectiveArgs c;
      c.start_ns = TraceBuilder::ns(i * 1000.0 + 10 + comm_start_us);
      c.end_ns = TraceBuilder::ns(i * 1000.0 + 910);
      c.name = t.strings.intern("allreduce");
      c.dtype = t.strings.intern("Float");
      c.in_nelems = c.out_nelems = nelems;
      c.group_size = group;
      t.collectives.push_back(c);
    }
  }
  return t;
}

TEST(Communication, ExposedIsCommunicationNoComputeOverlaps) {
  // Per step: compute 600 us [10, 610), all-reduce 400 us [510, 910): 100 us overlapped.
  const DeviceReport r = only(steps_with_allreduce(600, 500));
  ASSERT_EQ(r.step_count, 3);
  ASSERT_TRUE(r.communication);
  const CommunicationReport& c = *r.communication;
  EXPECT_EQ(c.kernel_ns, 3 * 400'000);
  EXPECT_NEAR(c.pct, 40.0, 1e-9);
  EXPECT_EQ(c.exposed_ns, 3 * 300'000);
  EXPECT_NEAR(c.exposed_pct, 30.0, 1e-9);
  EXPECT_NEAR(c.busy_without_comm_pct, 60.0, 1e-9);
  EXPECT_NEAR(r.busy_pct, 90.0, 1e-9);  // The existing busy still counts the all-reduce.
  ASSERT_EQ(c.exposed_per_step_ns.size(), 3u);
  for (int64_t e : c.exposed_per_step_ns) EXPECT_EQ(e, 300'000);
}

TEST(Communication, ExposedFindingHidesAsMuchAsComputeAllows) {
  // Enough compute (600 us, 100 us already overlapping): all 300 us exposed can hide.
  const DeviceReport r = only(steps_with_allreduce(600, 500));
  const Finding* f = FindingById(r, "exposed-communication");
  ASSERT_NE(f, nullptr);
  EXPECT_NEAR(*f->est_speedup, 1000.0 / 700.0, 1e-6);
  EXPECT_NE(f->recommendation.find("bucket_cap_mb"), std::string::npos);
  EXPECT_NE(f->recommendation.find("no_sync"), std::string::npos);

  // Little compute (200 us, 100 us of it already overlapping the 800 us all-reduce): only
  // 100 us of the 700 us exposed can hide.
  const DeviceReport small = only(steps_with_allreduce(200, 100));
  const Finding* g = FindingById(small, "exposed-communication");
  ASSERT_NE(g, nullptr);
  EXPECT_EQ(small.communication->exposed_ns, 3 * 700'000);
  EXPECT_NEAR(*g->est_speedup, 1000.0 / 900.0, 1e-6);
}

TEST(Communication, FullyOverlappedCommunicationIsNoFinding) {
  // All-reduce [510, 910) under compute [10, 910).
  const DeviceReport r = only(steps_with_allreduce(900, 500));
  ASSERT_TRUE(r.communication);
  EXPECT_EQ(r.communication->exposed_ns, 0);
  EXPECT_EQ(FindingById(r, "exposed-communication"), nullptr);
}

TEST(Communication, NoCommunicationKernelsNoReport) {
  TraceBuilder b;
  b.kernel(0, 100, std::string(kGemm));
  EXPECT_FALSE(only(b.build()).communication);
}

TEST(Communication, BandwidthAsNcclTestsDefineIt) {
  // 25M floats = 100 MB per all-reduce in 400 us: algbw 250 GB/s; 4 ranks: busbw x 2*3/4.
  const DeviceReport r = only(steps_with_allreduce(600, 500, 25'000'000, 4));
  ASSERT_EQ(r.communication->collectives.size(), 1u);
  const CollectiveStats& s = r.communication->collectives[0];
  EXPECT_EQ(s.op, "allreduce");
  EXPECT_EQ(s.count, 3);  // Only the window's (the dropped last step's call is outside).
  EXPECT_EQ(*s.bytes, 3u * 100'000'000u);
  EXPECT_NEAR(*s.algbw_gbps, 250.0, 1e-9);
  EXPECT_NEAR(*s.busbw_gbps, 375.0, 1e-9);
}

TEST(Communication, BusBandwidthFactors) {
  EXPECT_NEAR(*busbw_factor("allreduce", 8), 2.0 * 7 / 8, 1e-12);
  EXPECT_NEAR(*busbw_factor("all_gather", 8), 7.0 / 8, 1e-12);
  EXPECT_NEAR(*busbw_factor("_reduce_scatter_base", 2), 0.5, 1e-12);
  EXPECT_NEAR(*busbw_factor("broadcast", 8), 1.0, 1e-12);
  EXPECT_FALSE(busbw_factor("barrier", 8));
  EXPECT_EQ(*dtype_bytes("BFloat16"), 2);
  EXPECT_FALSE(dtype_bytes("Mystery"));
}

TEST(Communication, UnknownDtypeLeavesBytesUnmeasured) {
  Trace t = steps_with_allreduce(600, 500, 1000, 2);
  for (CollectiveArgs& c : t.collectives) c.dtype = t.strings.intern("Mystery");
  const DeviceReport r = only(t);
  ASSERT_EQ(r.communication->collectives.size(), 1u);
  EXPECT_FALSE(r.communication->collectives[0].bytes);
  EXPECT_FALSE(r.communication->collectives[0].busbw_gbps);
}

}  // namespace
}  // namespace gpuscope
