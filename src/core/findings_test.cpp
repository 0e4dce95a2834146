// The kernel findings (findings_kernels.cpp): occupancy, grid size, attention, fusion.
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>

#include "core/analysis.h"
#include "core/analysis_test_util.h"
#include "core/test_builder.h"

namespace gpuscope {
namespace {

using testing::cause;
using testing::FindingById;
using testing::idle_sum_pct;
using testing::only;
using testing::TraceBuilder;

TEST(Analysis, LowOccupancyFromRegisters) {
  testing::TraceBuilder b;
  Trace t = b.build();
  t.devices[0].max_threads_per_sm = 2048;
  t.devices[0].regs_per_sm = 65536;
  t.devices[0].shared_mem_per_sm_bytes = 233472;
  // 256 threads x 255 registers: one block (8 warps) of 64 per SM = 12.5% occupancy.
  Kernel k;
  k.start_ns = 0;
  k.end_ns = 100'000;
  k.name = t.strings.intern("vectorized_elementwise_kernel<Heavy>");
  k.grid = {1000, 1, 1};
  k.block = {256, 1, 1};
  k.registers_per_thread = 255;
  t.kernels.push_back(k);
  Kernel gemm = k;  // A GEMM at the same occupancy is not flagged.
  gemm.start_ns = 100'000;
  gemm.end_ns = 200'000;
  gemm.name = t.strings.intern("nvjet_sm90_gemm");
  t.kernels.push_back(gemm);
  const auto r = analyze_trace(t, {}).at(0);
  const Finding* f = FindingById(r, "low-occupancy");
  ASSERT_NE(f, nullptr);
  EXPECT_NE(f->evidence.find("registers"), std::string::npos);
  EXPECT_NE(f->evidence.find("50%"), std::string::npos);  // Half of the kernel time.
  // 100 us at 12.5% -> 25 us at 50%: saves 75 of 200 us.
  EXPECT_NEAR(*f->est_speedup, 200.0 / 125.0, 1e-9);
}

TEST(Analysis, SmallGridEstimateFillsEverySmToHalfOccupancy) {
  testing::TraceBuilder b;  // 100 SMs
  Trace t = b.build();
  t.devices[0].max_threads_per_sm = 2048;
  t.devices[0].regs_per_sm = 65536;
  // 10 blocks of 256 threads (8 of 64 warps, 12.5%) for 1 ms, then 1 ms of a full grid.
  Kernel k;
  k.start_ns = 0;
  k.end_ns = 1'000'000;
  k.name = t.strings.intern("compute_kernel");
  k.grid = {10, 1, 1};
  k.block = {256, 1, 1};
  t.kernels.push_back(k);
  Kernel full = k;
  full.start_ns = 1'000'000;
  full.end_ns = 2'000'000;
  full.grid = {1000, 1, 1};
  t.kernels.push_back(full);
  Kernel tiny = k;  // one 1-block kernel of 1.5 us: already at the launch floor, saves nothing
  tiny.start_ns = 2'000'000;
  tiny.end_ns = 2'001'500;
  tiny.grid = {1, 1, 1};
  t.kernels.push_back(tiny);
  const auto r = analyze_trace(t, {}).at(0);
  const Finding* f = FindingById(r, "small-grid");
  ASSERT_NE(f, nullptr);
  // 100 SMs / 10 blocks x (50% / 12.5%) = 40x: 1 ms -> 25 us, saving 975 us of 2001.5.
  EXPECT_NEAR(*f->est_speedup, 2001.5 / (2001.5 - 975.0), 1e-6);
}

// Manual attention: softmax kernels between score GEMMs are flagged; with fused attention
// kernels dominating, or log-softmax (a loss), they are not.
Trace AttentionTrace(const char* softmax_name, const char* other_name, int64_t other_ns) {
  testing::TraceBuilder b;
  Trace t = b.build();
  int64_t at = 0;
  auto add = [&](const char* name, int64_t ns) {
    Kernel k;
    k.start_ns = at;
    k.end_ns = at + ns;
    k.name = t.strings.intern(name);
    t.kernels.push_back(k);
    at += ns;
  };
  add("sm90_xmma_gemm_bf16bf16_bf16f32", 600'000);
  add(softmax_name, 300'000);
  add(other_name, other_ns);
  add("sm90_xmma_gemm_bf16bf16_bf16f32", 100'000);
  return t;
}

// GEMM -> softmax -> GEMM with no recorded shapes: the score GEMM and P·v cannot be told from
// a classifier and its backward, so no attention finding (findings_attention_test.cpp has the
// layer with shapes).
TEST(Analysis, SoftmaxBetweenGemmsWithoutShapesIsNotEnoughEvidenceOfAttention) {
  const Trace t = AttentionTrace("softmax_warp_forward<float>", "nvjet_gemm", 0);
  const auto r = analyze_trace(t, {}).at(0);
  EXPECT_EQ(FindingById(r, "attention-unfused"), nullptr);
}

TEST(Analysis, NoAttentionFindingForLossSoftmaxOrWhenFusedAttentionDominates) {
  const auto loss = analyze_trace(AttentionTrace("cunn_SoftMaxForward<LogSoftMaxForwardEpilogue>", "nvjet", 0), {});
  EXPECT_EQ(FindingById(loss.at(0), "attention-unfused"), nullptr);
  const auto fused = analyze_trace(AttentionTrace("softmax_warp_forward<float>", "flash_fwd_kernel", 400'000), {});
  EXPECT_EQ(FindingById(fused.at(0), "attention-unfused"), nullptr);
}

TEST(Analysis, SmallGridLeavesCommunicationKernelsOut) {
  testing::TraceBuilder b;  // 100 SMs
  Trace t = b.build();
  t.devices[0].max_threads_per_sm = 2048;
  Kernel k;  // NCCL: 8 blocks, one per channel, by design
  k.start_ns = 0;
  k.end_ns = 1'000'000;
  k.name = t.strings.intern("ncclKernel_AllReduce_RING_LL_Sum_float(ncclWorkElem)");
  k.grid = {8, 1, 1};
  k.block = {640, 1, 1};
  t.kernels.push_back(k);
  const auto r = analyze_trace(t, {}).at(0);
  EXPECT_EQ(FindingById(r, "small-grid"), nullptr);
}

TEST(Analysis, ElementwiseOnlyLoopsSplitAtSteps) {
  testing::TraceBuilder b;
  // Four steps of Scale -> AddC -> Relu, nothing else: each step's chain is one candidate.
  for (int s = 0; s < 4; ++s) {
    const double t0 = s * 100.0;
    b.annotation(t0, t0 + 100, "step");
    b.kernel(t0 + 10, t0 + 20, "Scale(float const*, float*)", 1000, 0, 7, t0 + 1, 2);
    b.kernel(t0 + 20, t0 + 30, "AddC(float const*, float*)", 1000, 0, 7, t0 + 3, 2);
    b.kernel(t0 + 30, t0 + 40, "Relu(float const*, float*)", 1000, 0, 7, t0 + 5, 2);
  }
  const auto reports = analyze_trace(b.build(), {});
  ASSERT_EQ(reports.size(), 1u);
  ASSERT_EQ(reports[0].fusion.size(), 1u);
  // The last step's end is unknown (its successor's first kernel), so it is left out.
  EXPECT_EQ(reports[0].fusion[0].occurrences, 3);
  EXPECT_EQ(reports[0].fusion[0].kernels.size(), 3u);
}

}  // namespace
}  // namespace gpuscope
