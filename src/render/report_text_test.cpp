// The text renderers at every width (report_text.h, diff_text.h): no line wider than the
// style's width at 60, 80 and 140 columns for a report full of long names, notes and paths;
// paths keep their file name; units scale (text_layout.h).
#include "render/report_text.h"

#include <sstream>
#include <string>

#include <gtest/gtest.h>

#include "core/diff.h"
#include "render/diff_text.h"
#include "render/text_layout.h"

namespace gpuscope {
namespace {

// A device report with every section the renderer has, and text longer than any screen in
// each place text comes from a trace.
DeviceReport long_report() {
  DeviceReport d;
  d.source = "/data/experiments/" + std::string(80, 'd') + "/ranks/rank_0003.pt.trace.json.gz";
  d.rank = 3;
  d.name = "NVIDIA H200";
  d.num_sms = 132;
  d.window_ns = 165'150'000;
  d.busy_pct = 50.4;
  d.sm_active_est_pct = 47.7;
  d.mfu_pct = 17.2;
  d.hfu_unavailable = "convolution FLOPs are not counted from shapes, so HFU would understate the work done";
  d.peak_tflops = 989.4;
  d.peak_basis = "H200 SXM bf16 dense (NVIDIA H200 datasheet, the dense figure, not the sparse one)";
  d.model_flops_per_step = 1.4e13;
  d.model_flops_formula = "training FLOPs per token = 6N + 12*L*H*Q*T (PaLM appendix B) with N=1.237e+08, L=12";
  d.matmul_flops_per_step = 1.413e13;
  d.idle_pct = 49.6;
  d.idle_causes.push_back({IdleCauseId::kInput,
                           38'020'000,
                           46.0,
                           {{std::string(200, 'h'), 1}, {"enumerate(DataLoader)#_SingleProcessDataLoaderIter", 1}}});
  d.timeline = std::string(48, 'K') + std::string(48, 'i');
  d.kernel_count = 1234;
  d.categories.push_back({"reduction_norm_long_name", 60'000'000, 60.0, 5000});
  d.top_kernels.push_back({"void cutlass::Kernel<" + std::string(700, 'x') + ">", "gemm", 10, 1000, 80});
  d.launch.under_10us_count_pct = 61;
  d.launch.under_10us_time_pct = 3.5;
  d.launch.shorter_than_launch_pct = 40;
  d.launch.launch_delay_median_us = 15685;
  d.launch.launch_delay_p90_us = 30000;
  d.precision.push_back({"bf16", 90'000'000, 90.0});
  d.fusion.push_back({{"elementwise_kernel_with_a_long_name", "vectorized_elementwise_kernel", "reduce_kernel"},
                      120,
                      5'400'000,
                      4.5,
                      1'000'000});
  d.step_source = "profiler_step";
  d.step_count = 2;
  d.step_mean_ms = 82.58;
  for (int i = 0; i < 20; ++i) d.steps.push_back({i, i * 1'000'000, 82'580'000, 50, std::nullopt});
  d.findings.push_back({"input-bound", Severity::kHigh,
                        "The GPU waits for the host to prepare input, and this title is long enough to wrap twice "
                        "on a narrow screen",
                        std::string(300, 'e'), 1.85, "Prepare batches off the training loop: " + std::string(50, 'r')});
  return d;
}

void expect_within(const std::string& text, int width) {
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    EXPECT_LE(display_width(line), static_cast<size_t>(width)) << "at " << width << ": " << line;
  }
}

TEST(ReportText, EveryLineFitsTheWidth) {
  Report report;
  report.devices.push_back(long_report());
  report.without_gpu_work.push_back(std::string(150, 'w') + " holds CPU events only, no GPU kernels");
  for (int width : {kMinTextWidth, 80, 100, kMaxTextWidth}) {
    const std::string text = render_report(report, TextStyle{false, width});
    expect_within(text, width);
    EXPECT_NE(text.find("rank_0003.pt.trace.json.gz"), std::string::npos) << width;  // the file name survives
    EXPECT_NE(text.find("The GPU waits"), std::string::npos);
    EXPECT_NE(text.find("twice"), std::string::npos) << "the finding's title is wrapped, not cut";
  }
  // The headline bars keep 30 cells at 100 columns and narrow to 10 at 80.
  auto bar = [](int full, int empty) {
    std::string s = "50.4%  ";
    for (int i = 0; i < full; ++i) s += "█";
    for (int i = 0; i < empty; ++i) s += "░";
    return s + "  ";
  };
  EXPECT_NE(render_report(report, TextStyle{false, 100}).find(bar(15, 15)), std::string::npos);
  EXPECT_NE(render_report(report, TextStyle{false, 80}).find(bar(5, 5)), std::string::npos);
}

TEST(ReportText, ReadableUnits) {
  Report report;
  report.devices.push_back(long_report());
  const std::string text = render_report(report, TextStyle{false, 80});
  EXPECT_NE(text.find("median 15.7 ms, p90 30.0 ms"), std::string::npos) << text;
  EXPECT_NE(text.find("matmul FLOPs per step (from op shapes): 14.1 TFLOP"), std::string::npos) << text;
  EXPECT_NE(text.find("model FLOPs per step: 14.0 TFLOP"), std::string::npos) << text;
  EXPECT_EQ(text.find("15685"), std::string::npos);
}

TEST(DiffText, EveryLineFitsTheWidthAndPathsKeepTheirNames) {
  ReportDiff diff;
  DeviceDiff d;
  d.base_source = "/very/long/path/" + std::string(120, 'p') + "/before_the_change.json.gz";
  d.new_source = "/very/long/path/" + std::string(120, 'p') + "/after_the_change.json.gz";
  d.base_device = d.new_device = "NVIDIA H200";
  d.base_steps = d.new_steps = 3;
  d.base_step_source = d.new_step_source = "profiler_step";
  d.step_ms = {100.0, 80.0};
  d.step_time_ratio = 0.8;
  d.warnings.push_back("the runs differ in " + std::string(100, 'w'));
  d.kernels.push_back({std::string(300, 'k'), "gemm", 5.0, 2.0});
  d.kernels.push_back({"jittery_kernel", "gemm", 5.0, 5.01});
  d.findings.push_back({"input-bound", FindingStatus::kResolved, std::string(200, 't'), Severity::kHigh, std::nullopt,
                        1.5, std::nullopt});
  diff.devices.push_back(d);
  for (int width : {kMinTextWidth, 80, kMaxTextWidth}) {
    const std::string text = render_diff(diff, TextStyle{false, width});
    expect_within(text, width);
    // The file name is kept (its start cut only where the screen is too narrow for all of it).
    EXPECT_NE(text.find(width >= 80 ? "/before_the_change.json.gz" : "_change.json.gz"), std::string::npos) << text;
    EXPECT_NE(text.find(width >= 80 ? "/after_the_change.json.gz" : "_change.json.gz"), std::string::npos) << text;
    EXPECT_EQ(text.find("jittery_kernel"), std::string::npos) << "a 0.01 ms change is under the noise floor";
    EXPECT_NE(text.find("changes under 0.20 ms per step"), std::string::npos);
  }
}

TEST(TextLayout, ElidePathKeepsTheFileName) {
  EXPECT_EQ(elide_path("/a/b/c.json", 20), "/a/b/c.json");
  EXPECT_EQ(elide_path("/data/runs/2026/december/rank0.json.gz", 30), "/data/runs/20.../rank0.json.gz");
  EXPECT_EQ(elide_path("/x/" + std::string(40, 'n') + ".json", 20), "..." + std::string(12, 'n') + ".json");
  EXPECT_EQ(elide_path("/äääääää/f", 8), "/ä.../f");  // never inside a character: 5 bytes, not 4
  EXPECT_LE(elide_path("/" + std::string(50, 'd') + "/file", 12).size(), 12u);
}

TEST(TextLayout, Units) {
  EXPECT_EQ(duration_text(15'685'000), "15.7 ms");
  EXPECT_EQ(duration_text(850'000), "850 us");
  EXPECT_EQ(duration_text(3.2e9), "3.20 s");
  EXPECT_EQ(duration_text(40), "40 ns");
  EXPECT_EQ(flops_text(1.413e13), "14.1 TFLOP");
  EXPECT_EQ(flops_text(5.2e11), "520 GFLOP");
  EXPECT_EQ(flops_text(3.2e15), "3.20 PFLOP");
  EXPECT_EQ(flops_text(12), "12 FLOP");
}

}  // namespace
}  // namespace gpuscope
