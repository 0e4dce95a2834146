#include "render/csv_report.h"

#include <gtest/gtest.h>

namespace gpuscope {
namespace {

Report one_device() {
  Report report;
  DeviceReport d;
  d.source = "t.json";
  d.window_start_ns = 1'000'000'000;
  d.window_ns = 20'000'000;
  d.step_count = 2;
  d.steps.push_back(
      {.number = 3, .start_ns = 1'000'000'000, .duration_ns = 10'000'000, .busy_pct = 50.126, .matmul_flops = 2e12});
  d.steps.push_back({.number = 4, .start_ns = 1'010'000'000, .duration_ns = 10'000'000, .busy_pct = 40});
  d.top_kernels.push_back(
      {.name = "gemm<float, \"x\">, tile", .category = "gemm", .count = 7, .ns = 1'500'000, .pct = 75});
  IdleCause c;
  c.cause = IdleCauseId::kSync;
  c.ns = 4'000'000;
  c.pct = 20;
  c.top_host.push_back({"cudaDeviceSynchronize", 3'000'000});
  d.idle_causes.push_back(c);
  d.idle_causes.push_back({.cause = IdleCauseId::kOther});
  report.devices.push_back(d);
  return report;
}

TEST(CsvReport, StepsWithUnmeasuredFlopsAsEmptyCells) {
  EXPECT_EQ(report_to_csv(one_device(), CsvTable::kSteps),
            "number,start_ms,duration_ms,busy_pct,matmul_flops\r\n"
            "3,0.000,10.000,50.13,2000000000000\r\n"
            "4,10.000,10.000,40.00,\r\n");
}

TEST(CsvReport, KernelNamesAreQuotedPerRfc4180) {
  EXPECT_EQ(report_to_csv(one_device(), CsvTable::kKernels),
            "name,category,count,ms,pct\r\n"
            "\"gemm<float, \"\"x\"\">, tile\",gemm,7,1.500,75.00\r\n");
}

TEST(CsvReport, IdleCausesPerStepAndTopHost) {
  EXPECT_EQ(report_to_csv(one_device(), CsvTable::kIdle),
            "cause,ms,pct,ms_per_step,top_host\r\n"
            "sync,4.000,20.00,2.000,cudaDeviceSynchronize\r\n"
            "other,0.000,0.00,0.000,\r\n");
}

TEST(CsvReport, SeveralDevicesNameTheirRows) {
  Report r = one_device();
  r.devices.push_back(r.devices[0]);
  r.devices[1].device = 1;
  const std::string csv = report_to_csv(r, CsvTable::kKernels);
  EXPECT_EQ(csv.substr(0, csv.find("\r\n")), "source,device,name,category,count,ms,pct");
  EXPECT_NE(csv.find("t.json,1,\"gemm"), std::string::npos) << csv;
}

TEST(CsvReport, TableNames) {
  EXPECT_EQ(csv_table_from_name("idle"), CsvTable::kIdle);
  EXPECT_FALSE(csv_table_from_name("Idle").has_value());
  EXPECT_EQ(csv_field("plain"), "plain");
  EXPECT_EQ(csv_field("a,\"b\""), "\"a,\"\"b\"\"\"");
}

TEST(CsvReport, ControlCharactersCannotReachTheTerminal) {
  // `analyze --csv` printed a kernel name's escape sequences as they were; a line feed inside
  // a name is shown escaped too, never a broken row.
  EXPECT_EQ(csv_field("evil\x1b]0;pwned\x07k"), "evil\\x1b]0;pwned\\x07k");
  EXPECT_EQ(csv_field("a\nb"), "a\\x0ab");
  EXPECT_EQ(csv_field("bad\xff"), "bad\xef\xbf\xbd");
}

}  // namespace
}  // namespace gpuscope
