#include "core/diff.h"

#include <cmath>

#include <gtest/gtest.h>

namespace gpuscope {
namespace {

constexpr int64_t kMs = 1'000'000;

// A run of `steps` steps of `step_ms` each, with the given idle and kernel time per step.
DeviceReport device(int64_t steps, double step_ms) {
  DeviceReport d;
  d.source = "run.json.gz";
  d.name = "NVIDIA H200";
  d.step_source = "profiler_step";
  d.step_count = steps;
  d.step_mean_ms = step_ms;
  d.window_ns = static_cast<int64_t>(step_ms * static_cast<double>(steps * kMs));
  return d;
}

void add_idle(DeviceReport& d, IdleCauseId cause, double ms_per_step) {
  IdleCause c;
  c.cause = cause;
  c.ns = static_cast<int64_t>(ms_per_step * static_cast<double>(d.step_count * kMs));
  d.idle_causes.push_back(c);
}

void add_category(DeviceReport& d, const std::string& name, double ms_per_step) {
  d.categories.push_back(
      CategoryTime{name, static_cast<int64_t>(ms_per_step * static_cast<double>(d.step_count * kMs)), 0, 1});
}

void add_kernel(DeviceReport& d, const std::string& name, const std::string& category, double ms_per_step) {
  d.top_kernels.push_back(
      TopKernel{name, category, 1, static_cast<int64_t>(ms_per_step * static_cast<double>(d.step_count * kMs)), 0});
}

void add_precision(DeviceReport& d, const std::string& dtype, double ms_per_step, double pct) {
  d.precision.push_back(
      PrecisionTime{dtype, static_cast<int64_t>(ms_per_step * static_cast<double>(d.step_count * kMs)), pct});
}

Finding finding(const std::string& id, double speedup) {
  Finding f;
  f.id = id;
  f.title = id + " title";
  f.severity = speedup >= 1.25 ? Severity::kHigh : Severity::kMedium;
  f.est_speedup = speedup;
  return f;
}

// BASE: 100 ms steps, 40 ms of input idle; NEW (the input pipeline fixed, a GEMM a little
// faster, run for twice as many steps): 58 ms steps, 1 ms of input idle.
struct Pair {
  DeviceReport base = device(2, 100.0);
  DeviceReport now = device(4, 58.0);
  Pair() {
    add_idle(base, IdleCauseId::kInput, 40);
    add_idle(base, IdleCauseId::kLaunch, 2);
    add_idle(now, IdleCauseId::kInput, 1);
    add_idle(now, IdleCauseId::kLaunch, 2);
    add_category(base, "gemm", 30);
    add_category(base, "elementwise", 28);
    add_category(now, "gemm", 27);
    add_category(now, "elementwise", 28);
    add_kernel(base, "void at::native::vectorized_elementwise_kernel<4, at::native::AddFunctor<float>>(int, float*)",
               "elementwise", 20);
    add_kernel(base, "nvjet_sm90_tst_256x128", "gemm", 30);
    add_kernel(base, "old_kernel_0x7f3a2b", "other", 1);
    add_kernel(
        now,
        "void at::native::vectorized_elementwise_kernel<8, at::native::AddFunctor<c10::BFloat16>>(int, c10::BFloat16*)",
        "elementwise", 20);
    add_kernel(now, "nvjet_sm90_tst_256x128", "gemm", 27);
    add_precision(base, "bf16", 30, 100);
    add_precision(now, "bf16", 27, 100);
    base.busy_pct = 58;
    now.busy_pct = 94;
    base.matmul_flops_per_step = 1e13;
    now.matmul_flops_per_step = 1e13;
    base.hfu_pct = 10;
    now.hfu_pct = 17.24;
    base.findings = {finding("input-bound", 1.6), finding("launch-bound", 1.03)};
    now.findings = {finding("launch-bound", 1.05), finding("kernel-fusion", 1.3)};
  }
};

TEST(NormalizeKernelName, StripsTemplateArgumentsParametersHexAndReturnType) {
  EXPECT_EQ(normalize_kernel_name("void at::native::vectorized_elementwise_kernel<4, at::native::F<float>>(int, F)"),
            "at::native::vectorized_elementwise_kernel");
  EXPECT_EQ(normalize_kernel_name("void at::native::(anonymous namespace)::GammaBetaBackward<float>(long, float*)"),
            "at::native::(anonymous namespace)::GammaBetaBackward");
  EXPECT_EQ(normalize_kernel_name("kernel_0x7f3a2b at 0xDEADbeef"), "kernel_0x7f3a2b at");
  EXPECT_EQ(normalize_kernel_name("my_kernel 0x7f3a2b"), "my_kernel");
  EXPECT_EQ(normalize_kernel_name("nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_NNT"),
            "nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_NNT");
  EXPECT_EQ(normalize_kernel_name("(weird)"), "(weird)");
}

TEST(DiffDevices, StepTimeThroughputAndHeadline) {
  Pair p;
  const DeviceDiff d = diff_devices(p.base, p.now);
  EXPECT_TRUE(d.comparable);
  EXPECT_TRUE(d.warnings.empty());
  EXPECT_DOUBLE_EQ(d.step_time_ratio, 0.58);
  EXPECT_EQ(d.throughput_basis, "matmul_flops");
  EXPECT_DOUBLE_EQ(d.throughput_ratio, 100.0 / 58.0);
  EXPECT_DOUBLE_EQ(*d.busy_pct.delta(), 36);
  EXPECT_FALSE(d.mfu_pct.delta().has_value());  // Unknown on both sides: no change, not 0.

  // Idle in cause-table order, per step although the runs have different step counts.
  ASSERT_EQ(d.idle.size(), kNumIdleCauses);
  const ComponentChange& input = d.idle[static_cast<size_t>(IdleCauseId::kInput)];
  EXPECT_EQ(input.name, "input");
  EXPECT_NEAR(input.base_ms, 40, 1e-9);
  EXPECT_NEAR(input.new_ms, 1, 1e-9);
  EXPECT_NEAR(*input.ratio(), 1.0 / 40, 1e-9);
  EXPECT_FALSE(d.idle[static_cast<size_t>(IdleCauseId::kAlloc)].ratio().has_value());

  ASSERT_TRUE(d.headline.has_value());
  EXPECT_EQ(d.headline->component.kind, ComponentKind::kIdle);
  EXPECT_EQ(d.headline->component.name, "input");
  EXPECT_DOUBLE_EQ(d.headline->step_time_ratio, 0.58);
  EXPECT_NEAR(*d.headline->share_of_step_change, 39.0 / 42.0, 1e-9);

  // Categories: the largest change first.
  ASSERT_EQ(d.categories.size(), 2u);
  EXPECT_EQ(d.categories[0].name, "gemm");
  EXPECT_NEAR(d.categories[0].delta_ms(), -3, 1e-9);
}

TEST(DiffDevices, RatiosThatOverflowAreEmptyNotInfinite) {
  // 1e300 / 1e-300 is no number: shown as "inf%" and "x-nan" before.
  const ValueChange v{1e-300, 1e300};
  EXPECT_FALSE(v.ratio().has_value());
  const ValueChange w{-1.7e308, 1.7e308};
  EXPECT_FALSE(w.delta().has_value());
  ComponentChange c;
  c.base_ms = 1e-320;
  c.new_ms = 1e300;
  EXPECT_FALSE(c.ratio().has_value());
  DeviceReport base = device(10, 1), now = device(10, 1);
  base.step_mean_ms = 1e-300;
  now.step_mean_ms = 1e300;
  const DeviceDiff d = diff_devices(base, now);
  EXPECT_TRUE(std::isfinite(d.step_time_ratio));
  EXPECT_TRUE(std::isfinite(d.throughput_ratio));
}

TEST(DiffDevices, KernelsMatchedByNormalisedName) {
  Pair p;
  const DeviceDiff d = diff_devices(p.base, p.now);
  ASSERT_EQ(d.kernels.size(), 3u);
  EXPECT_EQ(d.kernels[0].name, "nvjet_sm90_tst_256x128");
  EXPECT_NEAR(d.kernels[0].delta_ms(), -3, 1e-9);
  // The fp32 and bf16 instantiations of one elementwise kernel are one row.
  EXPECT_EQ(d.kernels[2].name, "at::native::vectorized_elementwise_kernel");
  EXPECT_NEAR(d.kernels[2].delta_ms(), 0, 1e-9);
  // Listed in BASE only: unknown in NEW, counted as gone.
  EXPECT_EQ(d.kernels[1].name, "old_kernel_0x7f3a2b");
  EXPECT_FALSE(d.kernels[1].new_ms.has_value());
  EXPECT_NEAR(d.kernels[1].delta_ms(), -1, 1e-9);
}

TEST(DiffDevices, FindingsResolvedNewChanged) {
  Pair p;
  const DeviceDiff d = diff_devices(p.base, p.now);
  ASSERT_EQ(d.findings.size(), 3u);
  EXPECT_EQ(d.findings[0].id, "input-bound");
  EXPECT_EQ(d.findings[0].status, FindingStatus::kResolved);
  EXPECT_DOUBLE_EQ(*d.findings[0].base_est_speedup, 1.6);
  EXPECT_FALSE(d.findings[0].new_est_speedup.has_value());
  EXPECT_EQ(d.findings[1].id, "kernel-fusion");
  EXPECT_EQ(d.findings[1].status, FindingStatus::kNew);
  EXPECT_EQ(d.findings[2].id, "launch-bound");
  EXPECT_EQ(d.findings[2].status, FindingStatus::kChanged);
  EXPECT_DOUBLE_EQ(*d.findings[2].base_est_speedup, 1.03);
  EXPECT_DOUBLE_EQ(*d.findings[2].new_est_speedup, 1.05);
}

TEST(DiffDevices, PrecisionChangeIsTheHeadlineAndDifferentWorkWarns) {
  Pair p;
  // fp32 -> bf16 at twice the batch: the matrix math moves from 150 ms fp32 to 20 ms bf16.
  p.base.precision.clear();
  p.base.categories.clear();
  p.base.idle_causes.clear();
  add_precision(p.base, "fp32", 150, 100);
  add_category(p.base, "gemm", 140);
  add_category(p.base, "attention", 10);
  p.base.step_mean_ms = 200;
  p.now.precision.clear();
  add_precision(p.now, "bf16", 20, 100);
  p.now.matmul_flops_per_step = 2e13;
  const DeviceDiff d = diff_devices(p.base, p.now);
  ASSERT_TRUE(d.headline.has_value());
  EXPECT_EQ(d.headline->component.kind, ComponentKind::kPrecision);
  EXPECT_EQ(d.headline->component.name, "fp32");
  EXPECT_EQ(d.headline->base_dominant_dtype, "fp32");
  EXPECT_EQ(d.headline->new_dominant_dtype, "bf16");
  EXPECT_FALSE(d.comparable);
  ASSERT_EQ(d.warnings.size(), 1u);
  EXPECT_NE(d.warnings[0].find("matmul FLOPs per step differ"), std::string::npos) << d.warnings[0];
  // Twice the work in 0.29 of the time.
  EXPECT_DOUBLE_EQ(d.throughput_ratio, 2.0 * 200.0 / 58.0);
}

TEST(DiffDevices, SamePrecisionMixNeverNamesPrecision) {
  Pair p;
  // bf16 on both sides, its time down 10 ms with the GEMMs: the GEMM category is named.
  p.base.idle_causes.clear();
  p.now.idle_causes.clear();
  p.base.precision = {PrecisionTime{"bf16", 40 * 2 * kMs, 100}};
  p.now.precision = {PrecisionTime{"bf16", 30 * 4 * kMs, 100}};
  p.base.categories = {CategoryTime{"gemm", 40 * 2 * kMs, 0, 1}};
  p.now.categories = {CategoryTime{"gemm", 31 * 4 * kMs, 0, 1}};
  const DeviceDiff d = diff_devices(p.base, p.now);
  ASSERT_TRUE(d.headline.has_value());
  EXPECT_EQ(d.headline->component.kind, ComponentKind::kCategory);
  EXPECT_EQ(d.headline->component.name, "gemm");
}

TEST(DiffDevices, DifferentDeviceAndStepSourceWarn) {
  Pair p;
  p.now.name = "NVIDIA A100-SXM4-80GB";
  p.now.step_source = "optimizer_step";
  const DeviceDiff d = diff_devices(p.base, p.now);
  EXPECT_FALSE(d.comparable);
  ASSERT_EQ(d.warnings.size(), 2u);
  EXPECT_NE(d.warnings[0].find("different devices"), std::string::npos);
  EXPECT_NE(d.warnings[1].find("steps defined differently"), std::string::npos);
}

TEST(DiffDevices, NothingChangedHasNoHeadline) {
  Pair p;
  const DeviceDiff d = diff_devices(p.base, p.base);
  EXPECT_FALSE(d.headline.has_value());
  EXPECT_DOUBLE_EQ(d.step_time_ratio, 1.0);
  for (const auto& f : d.findings) EXPECT_EQ(f.status, FindingStatus::kUnchanged);
}

TEST(DiffReports, PairsRanksAndWarnsAboutTheRest) {
  Pair p;
  Report base, now;
  for (int32_t r : {0, 1}) {
    base.devices.push_back(p.base);
    base.devices.back().rank = r;
  }
  for (int32_t r : {1, 2}) {
    now.devices.push_back(p.now);
    now.devices.back().rank = r;
  }
  const ReportDiff d = diff_reports(base, now);
  ASSERT_EQ(d.devices.size(), 1u);
  EXPECT_EQ(d.devices[0].rank, 1);
  ASSERT_EQ(d.warnings.size(), 2u);
  EXPECT_NE(d.warnings[0].find("rank 0"), std::string::npos);
  EXPECT_NE(d.warnings[1].find("rank 2"), std::string::npos);
}

}  // namespace
}  // namespace gpuscope
