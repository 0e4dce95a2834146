// The HTML pages (html_report.h, html_diff.h) of the bundled traces: their size, their sections,
// escaping of trace text, and how the page file is written (output_file.h). How the pages look
// in a browser is html_browser_test.py's job.
#include "render/html_report.h"

#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include <fmt/core.h>
#include <gtest/gtest.h>

#include "core/analysis.h"
#include "core/diff.h"
#include "input/test_temp.h"
#include "input/trace_input.h"
#include "render/html_diff.h"
#include "render/html_page.h"
#include "render/output_file.h"

namespace gpuscope {
namespace {

using testing_support::TempDir;

std::string testdata(const std::string& name) { return std::string(GPUSCOPE_SOURCE_DIR) + "/testdata/" + name; }

struct Analysed {
  std::vector<Trace> traces;
  Report report;
};

Analysed analyse(const std::string& path) {
  Analysed a;
  auto t = read_trace_file(path);
  EXPECT_TRUE(t.ok()) << t.status().message();
  if (t.ok()) a.traces.push_back(std::move(t).value());
  a.report = analyze_traces(a.traces, AnalysisOptions{});
  return a;
}

size_t count(const std::string& text, const std::string& needle) {
  size_t n = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

TEST(HtmlReport, GoldenTracesGivePagesUnderOneMegabyteWithEverySection) {
  for (const char* name : {"fp32_sync", "bf16_sync", "bf16_async", "bf16_compile"}) {
    SCOPED_TRACE(name);
    const Analysed a = analyse(testdata(std::string("pytorch/") + name + ".json.gz"));
    ASSERT_EQ(a.report.devices.size(), 1u);
    const std::string page = report_to_html(a.report, a.traces);
    EXPECT_LT(page.size(), 1u << 20);
    for (const char* section : {"Utilization (busy)", "SM active", "Tensor active (hardware)", "MFU", "HFU (matmul)",
                                "Timeline of the window", "Idle causes by step", "by cause", "GPU time by category",
                                "Top kernels", "Precision of matrix math time", "Findings"}) {
      EXPECT_NE(page.find(section), std::string::npos) << section;
    }
    // A PyTorch trace has no hardware counters: their cards say null, and there is no samples chart.
    const DeviceReport& d = a.report.devices[0];
    EXPECT_EQ(count(page, "class=\"prov null\""), 2u + (d.mfu_pct ? 0u : 1u) + (d.hfu_pct ? 0u : 1u));
    EXPECT_EQ(page.find("Device samples over time"), std::string::npos);
    EXPECT_EQ(page.find("<script"), std::string::npos);
    EXPECT_EQ(page.find("http://"), std::string::npos);
    EXPECT_EQ(page.find("https://"), std::string::npos);
    // Every finding of the report is on the page, with its evidence.
    for (const Finding& f : a.report.devices[0].findings) {
      EXPECT_NE(page.find(html::escape(f.evidence)), std::string::npos) << f.id;
    }
    // One legend entry per idle cause, in its colour.
    for (const IdleCauseInfo& c : kIdleCauseTable) {
      EXPECT_NE(page.find(std::string("idle: ") + std::string(c.name)), std::string::npos) << c.name;
    }
  }
}

TEST(HtmlReport, CaptureWithDeviceSamplesDrawsThemAndLabelsHardwareAsMeasured) {
  const Analysed a = analyse(testdata("pyzoo/dataloader.gpuscope"));
  ASSERT_FALSE(a.report.devices.empty());
  ASSERT_FALSE(a.traces[0].device_samples.empty());
  const std::string page = report_to_html(a.report, a.traces);
  EXPECT_LT(page.size(), 1u << 20);
  EXPECT_NE(page.find("Device samples over time"), std::string::npos);
  EXPECT_NE(page.find("SM active (GPM)"), std::string::npos);
  // Without the traces the report alone has no samples to draw.
  EXPECT_EQ(report_to_html(a.report).find("Device samples over time"), std::string::npos);
}

TEST(HtmlReport, TraceTextIsEscapedAndInvalidUtf8Replaced) {
  EXPECT_EQ(html::escape("a<b>&\"'"), "a&lt;b&gt;&amp;&quot;&#39;");
  EXPECT_EQ(html::escape("k\xff\xfe"
                         "x"),
            "k\xEF\xBF\xBD\xEF\xBF\xBD"
            "x");  // U+FFFD per byte, as nlohmann replaces.
  EXPECT_EQ(html::escape("a\x1b[2Jb"), "a\\x1b[2Jb");
  Report report;
  DeviceReport d;
  d.name = "GPU <script>";
  d.source = "trace&.json";
  d.top_kernels.push_back({"void k<float>(\xc3)", "gemm", 1, 10, 100});
  d.findings.push_back({"x", Severity::kHigh, "<b>t</b>", "e<", 1.5, "r>"});
  report.devices.push_back(d);
  const std::string page = report_to_html(report);
  EXPECT_EQ(page.find("<script"), std::string::npos);
  EXPECT_EQ(page.find("<b>t</b>"), std::string::npos);
  EXPECT_NE(page.find("void k&lt;float&gt;(\xEF\xBF\xBD)"), std::string::npos);
  EXPECT_NE(page.find("trace&amp;.json"), std::string::npos);
}

// A report without idle intervals (read back from JSON) has idle time it cannot place: the
// page says so rather than drawing the window as all kernels.
TEST(HtmlReport, IdleWithoutIntervalsIsNotDrawnAsKernels) {
  Report report;
  DeviceReport d;
  d.window_ns = 1'000'000;
  d.idle_pct = 50;
  d.steps.push_back({1, 0, 1'000'000, 50, std::nullopt});
  d.step_count = 1;
  report.devices.push_back(d);
  const std::string page = report_to_html(report);
  EXPECT_NE(page.find("carries no idle intervals"), std::string::npos);
  EXPECT_EQ(page.find("aria-label=\"timeline\""), std::string::npos);
  report.devices[0].idle_intervals.push_back({0, 500'000, IdleCauseId::kInput});
  EXPECT_NE(report_to_html(report).find("aria-label=\"timeline\""), std::string::npos);
}

TEST(HtmlDiff, FindingsResolvedNewChangedAndTheHeadline) {
  const Analysed base = analyse(testdata("pytorch/fp32_sync.json.gz"));
  const Analysed now = analyse(testdata("pytorch/bf16_sync.json.gz"));
  const ReportDiff diff = diff_reports(base.report, now.report);
  ASSERT_EQ(diff.devices.size(), 1u);
  const std::string page = diff_to_html(diff);
  EXPECT_LT(page.size(), 1u << 20);
  for (const char* section : {"The change that made the difference", "Headline numbers", "Idle by cause",
                              "GPU time by kernel category", "Kernels whose time changed most", "Findings"}) {
    EXPECT_NE(page.find(section), std::string::npos) << section;
  }
  for (const FindingChange& f : diff.devices[0].findings) {
    const std::string heading = std::string("<h4 class=") + std::string(finding_status_name(f.status)) + ">";
    EXPECT_NE(page.find(heading), std::string::npos) << f.id;
    EXPECT_NE(page.find(html::escape(f.id)), std::string::npos);
  }
  EXPECT_NE(page.find(fmt::format("{:.4f}", diff.devices[0].step_time_ratio)), std::string::npos);
}

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(HtmlFile, RefusesToReplaceAnInputAndWritesWholeFiles) {
  TempDir dir;
  const std::string input = dir.write("trace.json", "the trace");
  const std::string link = dir.file("link.html");
  ASSERT_EQ(symlink(input.c_str(), link.c_str()), 0);
  for (const std::string& target : {input, link}) {
    const Status s = write_output_file("--html", target, {input}, "<html>");
    EXPECT_FALSE(s.ok()) << target;
    EXPECT_NE(s.message().find("input"), std::string::npos) << s.message();
  }
  EXPECT_EQ(slurp(input), "the trace");
  EXPECT_FALSE(check_output_path("--html", "-", {}).ok());
  EXPECT_FALSE(check_output_path("--html", dir.path(), {}).ok());

  const std::string page = dir.file("page.html");
  ASSERT_TRUE(write_output_file("--html", page, {input}, "first").ok());
  ASSERT_TRUE(write_output_file("--html", page, {input}, "second, longer").ok());
  EXPECT_EQ(slurp(page), "second, longer");
  // No temporary file is left beside it.
  size_t files = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir.path())) files += e.is_regular_file() || e.is_symlink();
  EXPECT_EQ(files, 3u);  // trace.json, link.html, page.html
  struct stat st {};
  ASSERT_EQ(stat(page.c_str(), &st), 0);
  const mode_t mask = umask(0);
  umask(mask);
  EXPECT_EQ(st.st_mode & 0777, 0666 & ~mask) << "a page is written 0666 less the umask, as fopen would, not 0600";

  const Status missing = write_output_file("--html", dir.file("no/such/dir/page.html"), {}, "x");
  EXPECT_FALSE(missing.ok());
  EXPECT_NE(missing.message().find("no/such/dir/page.html"), std::string::npos);
}

// The page says which gpuscope wrote it, when and with what command line.
TEST(HtmlReport, OriginIsOnThePage) {
  Report report;
  report.devices.push_back(DeviceReport{});
  const std::string page = report_to_html(report, {}, {"9.8.7", "2026-12-03 12:00 UTC", "gpuscope analyze <t>.json"});
  EXPECT_NE(page.find("gpuscope 9.8.7 · 2026-12-03 12:00 UTC · <code>gpuscope analyze &lt;t&gt;.json</code>"),
            std::string::npos);
  EXPECT_NE(page.find("Written by gpuscope 9.8.7 on 2026-12-03 12:00 UTC"), std::string::npos);
  EXPECT_EQ(report_to_html(report).find("class=origin"), std::string::npos);  // nothing to say: no line
}

// A 700-character demangled name is shown shortened, whole in its tooltip.
TEST(HtmlReport, LongKernelNamesAreCappedWithTheFullNameInATooltip) {
  const std::string name = "void cutlass::Kernel<" + std::string(700, 'x') + ">(Params)";
  Report report;
  DeviceReport d;
  d.top_kernels.push_back({name, "gemm", 1, 10, 100});
  report.devices.push_back(d);
  const std::string page = report_to_html(report);
  const std::string shown = "void cutlass::Kernel&lt;" + std::string(html::kNameChars - 21, 'x') + "…</span>";
  EXPECT_NE(page.find(shown), std::string::npos);
  EXPECT_NE(page.find("title=\"void cutlass::Kernel&lt;" + std::string(700, 'x') + "&gt;(Params)\""),
            std::string::npos);
  EXPECT_EQ(html::short_name("short"), "short");
  EXPECT_EQ(html::short_name("äöü", 2), "<span title=\"äöü\">äö…</span>");  // whole characters
}

// A change that shows as +0.00 is neutral, not red; kernels that moved by noise are not listed
// as "changed most", and the page states the floor.
TEST(HtmlDiff, ZeroIsNeutralAndNoiseIsNotAChange) {
  ReportDiff diff;
  DeviceDiff d;
  d.step_ms = {100.0, 100.001};
  d.categories.push_back({ComponentKind::kCategory, "gemm", 50.0, 50.001});
  d.kernels.push_back({"noisy_kernel", "gemm", 5.0, 5.01});
  d.kernels.push_back({"slower_kernel", "gemm", 5.0, 6.0});
  diff.devices.push_back(d);
  EXPECT_DOUBLE_EQ(d.kernel_noise_floor_ms(), 0.2);
  const std::string page = diff_to_html(diff);
  EXPECT_EQ(page.find("<span class=new>+0.00"), std::string::npos);
  EXPECT_NE(page.find("<span class=unchanged>0.00</span>"), std::string::npos);
  EXPECT_EQ(page.find("noisy_kernel"), std::string::npos);
  EXPECT_NE(page.find("slower_kernel"), std::string::npos);
  EXPECT_NE(page.find("changes under 0.20 ms per step"), std::string::npos);
}

}  // namespace
}  // namespace gpuscope
