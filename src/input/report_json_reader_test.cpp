#include "input/report_json_reader.h"

#include <fmt/core.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/analysis.h"
#include "input/trace_input.h"
#include "render/diff_json.h"
#include "render/report_json.h"

namespace gpuscope {
namespace {

// A report with every field the JSON holds set to something other than its default.
Report full_report() {
  DeviceReport d;
  d.source = "rank1.json.gz";
  d.rank = 1;
  d.device = 3;
  d.name = "NVIDIA H200";
  d.num_sms = 132;
  d.window_ns = 123'456'789;
  d.busy_pct = 81.25;
  d.copy_pct = 0.5;
  d.sm_active_est_pct = 77.125;
  d.hw_gpu_util_pct = 99.0;
  d.hw_sm_active_pct = 70.5;
  d.hw_tensor_active_pct = 30.25;
  d.idle_pct = 18.75;
  IdleCause input;
  input.cause = IdleCauseId::kInput;
  input.ns = 20'000'001;
  input.pct = 16.2;
  input.top_host = {{"enumerate(DataLoader)", 19'000'000}, {"aten::copy_", 1'000}};
  input.tracing_ns = 12'345;
  IdleCause sync;
  sync.cause = IdleCauseId::kSync;
  sync.ns = 3'000'000;
  sync.pct = 2.55;
  d.idle_causes = {input, sync};
  d.tracing_cost = TracingCost{2500, 9000};
  d.untraced_window_est_ns = 120'000'000;
  d.untraced_step_measured_ns = 4'920'000;
  d.timeline = "KKKiiKsK";
  d.kernel_count = 4242;
  d.categories = {{"gemm", 50'000'000, 60.5, 1000}, {"elementwise", 20'000'000, 24.2, 3000}};
  d.top_kernels = {{"void k<float>(int)", "elementwise", 12, 7'000'123, 8.5}};
  d.launch = {100, 2.5, 0.75, 40, 0.9, 12.5, 30.25};
  d.precision = {{"bf16", 55'000'000, 95.0}, {"fp32", 2'894'737, 5.0}};
  d.fusion = {FusionCandidate{{"add", "mul", "gelu"}, 48, 4'000'000, 3.2, 2'666'667}};
  d.step_source = "profiler_step";
  d.step_count = 2;
  d.steps_skipped_warmup = 1;
  d.steps_dropped_last = 1;
  d.excluded_before_ns = 5'000'000;
  d.excluded_after_ns = 1'500'000;
  d.step_mean_ms = 61.7283945;
  d.steps = {{7, 1'000, 61'000'000, 80.5, 7.0e12}, {8, 61'001'000, 62'456'789, 82.0, std::nullopt}};
  d.matmul_flops_per_step = 7.0e12;
  d.model_flops_per_step = 7.1e12;
  d.model_flops_formula = "6N + 12LHQT";
  d.peak_tflops = 989.4;
  d.peak_basis = "H200 SXM bf16 dense";
  d.mfu_pct = 11.6;
  d.hfu_pct = 11.4;
  Finding f;
  f.id = "input-bound";
  f.severity = Severity::kHigh;
  f.title = "Input pipeline";
  f.evidence = "GPU idle \xff 16%";  // Invalid UTF-8 is replaced on writing; the text stays stable.
  f.est_speedup = 1.3;
  f.recommendation = "Use workers";
  d.findings = {f};

  Report r;
  r.devices = {d, d};
  r.devices[1].rank = 0;
  r.devices[1].mfu_pct.reset();
  r.devices[1].tracing_cost.reset();
  r.devices[1].untraced_window_est_ns.reset();
  r.devices[1].untraced_step_measured_ns.reset();
  CommunicationReport comm;
  comm.kernel_ns = 9'000'001;
  comm.pct = 7.3;
  comm.busy_without_comm_pct = 70.25;
  comm.compute_ns = 80'000'000;
  comm.exposed_ns = 4'000'002;
  comm.exposed_pct = 3.2;
  comm.exposed_per_step_ns = {2'000'001, 2'000'001};
  comm.collectives = {{"allreduce", "BFloat16", 8, 24, 8'000'000, 123'456'789u, 15.4, 27.0},
                      {"barrier", "", std::nullopt, 2, 1'000'001, std::nullopt, std::nullopt, std::nullopt}};
  r.devices[0].communication = comm;
  RankSummary s;
  s.ranks = 2;
  s.busy_min_pct = 80;
  s.busy_max_pct = 81.25;
  s.step_min_ms = 60;
  s.step_max_ms = 61.7;
  s.step_median_ms = 60;
  s.slowest = "rank1.json.gz";
  s.busy_without_comm_min_pct = 70.25;
  s.busy_without_comm_max_pct = 70.25;
  Finding straggler = f;
  straggler.id = "straggler";
  straggler.severity = Severity::kMedium;
  straggler.est_speedup.reset();
  s.findings = {straggler};
  r.ranks = s;
  r.warnings = {"a warning"};
  r.rejected = {"x.json: no GPU kernels"};
  return r;
}

TEST(ReportJsonReader, RoundTripsEveryField) {
  const std::string text = report_to_json(full_report());
  auto back = report_from_json(text);
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(report_to_json(back.value()), text);
  const DeviceReport& d = back->devices[0];
  EXPECT_EQ(d.window_ns, 123'456'789);
  EXPECT_EQ(d.idle_causes[0].cause, IdleCauseId::kInput);
  EXPECT_EQ(d.idle_causes[0].ns, 20'000'001);
  EXPECT_EQ(d.idle_causes[0].tracing_ns, 12'345);
  EXPECT_EQ(d.steps[1].duration_ns, 62'456'789);
  EXPECT_EQ(d.top_kernels[0].ns, 7'000'123);
  EXPECT_FALSE(back->devices[1].mfu_pct.has_value());
  EXPECT_FALSE(back->devices[1].tracing_cost.has_value());
  EXPECT_EQ(d.untraced_step_measured_ns, 4'920'000);
  EXPECT_FALSE(back->devices[1].untraced_step_measured_ns.has_value());
  EXPECT_EQ(d.untraced_window_est_ns, 120'000'000);
  EXPECT_EQ(back->ranks->findings[0].severity, Severity::kMedium);
  ASSERT_TRUE(d.communication);
  EXPECT_EQ(d.communication->exposed_ns, 4'000'002);
  EXPECT_EQ(d.communication->collectives[0].bytes, 123'456'789u);
  EXPECT_FALSE(d.communication->collectives[1].busbw_gbps);
  EXPECT_FALSE(back->devices[1].communication);
  EXPECT_EQ(back->ranks->busy_without_comm_min_pct, 70.25);
}

// report_to_json's output on the recorded traces (testdata/pytorch, with and without a model)
// reads back into the same text.
TEST(ReportJsonReader, RoundTripsTheRecordedTraces) {
  const std::filesystem::path dir = std::filesystem::path(GPUSCOPE_SOURCE_DIR) / "testdata" / "pytorch";
  for (const char* name : {"fp32_sync", "bf16_sync", "bf16_async", "bf16_compile"}) {
    auto trace = read_trace_file((dir / (std::string(name) + ".json.gz")).string());
    ASSERT_TRUE(trace.ok()) << name << ": " << trace.status().message();
    std::vector<Trace> traces;
    traces.push_back(std::move(trace).value());
    for (bool with_model : {false, true}) {
      AnalysisOptions o;
      if (with_model)
        o.model = parse_model_spec("gpt:params=123.69M,layers=12,heads=12,dmodel=768,seq=1024,batch=16").value();
      const std::string text = report_to_json(analyze_traces(traces, o));
      EXPECT_TRUE(looks_like_report_json(text.substr(0, 64))) << name;
      auto back = report_from_json(text);
      ASSERT_TRUE(back.ok()) << name << ": " << back.status().message();
      EXPECT_EQ(report_to_json(back.value()), text) << name;
    }
  }
}

TEST(ReportJsonReader, TellsReportsFromTraces) {
  EXPECT_TRUE(looks_like_report_json("{\n  \"devices\": ["));
  EXPECT_TRUE(looks_like_report_json(" {\"schema\": \"gpuscope.report/1\""));
  EXPECT_FALSE(looks_like_report_json("{\n  \"schemaVersion\": 1, \"traceEvents\": []"));
  EXPECT_FALSE(looks_like_report_json("{\"traceEvents\": []}"));
  EXPECT_FALSE(looks_like_report_json("GPUSCOPE"));
  EXPECT_FALSE(looks_like_report_json(""));
}

TEST(ReportJsonReader, ErrorsAreOneLine) {
  auto bad = report_from_json("{\"devices\": [");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("byte"), std::string::npos) << bad.status().message();
  auto other = report_from_json(R"({"schema": "gpuscope.report/2", "devices": []})");
  ASSERT_FALSE(other.ok());
  EXPECT_NE(other.status().message().find("gpuscope.report/2 is not supported"), std::string::npos);
  auto no_schema = report_from_json(R"({"devices": []})");
  EXPECT_FALSE(no_schema.ok());
  auto wrong_type = report_from_json(R"({"schema": "gpuscope.report/1", "devices": [{"busy_pct": "high"}]})");
  ASSERT_FALSE(wrong_type.ok());
  EXPECT_NE(wrong_type.status().message().find("not a valid gpuscope.report/1 report"), std::string::npos);
  auto cause = report_from_json(
      R"({"schema": "gpuscope.report/1", "devices": [{"idle": {"causes": [{"cause": "gremlins", "us": 1, "pct": 1}]}}]})");
  ASSERT_FALSE(cause.ok());
  EXPECT_NE(cause.status().message().find("unknown idle cause 'gremlins'"), std::string::npos);
  for (const auto* s : {&bad, &other, &no_schema, &wrong_type, &cause}) {
    EXPECT_EQ(s->status().message().find('\n'), std::string::npos) << s->status().message();
  }
}

TEST(ReportJsonReader, NegativeOrAbsurdNumbersAreRefused) {
  // A saved report with a negative percentage or time used to be read and compared ("-nan
  // pts", "inf%"); the writer never writes one.
  for (const char* device : {R"({"busy_pct": -5})", R"({"window_us": -1})", R"({"steps": {"mean_ms": -3}})",
                             R"({"flops": {"matmul": 1e300}})", R"({"steps": {"list": [{"duration_ms": 1e200}]}})",
                             R"({"idle": {"causes": [{"cause": "input", "us": -7, "pct": 1}]}})"}) {
    auto r = report_from_json(fmt::format(R"({{"schema": "gpuscope.report/1", "devices": [{}]}})", device));
    ASSERT_FALSE(r.ok()) << device;
    EXPECT_NE(r.status().message().find("not a valid gpuscope.report/1 report"), std::string::npos);
    EXPECT_NE(r.status().message().find("gpuscope analyze --json"), std::string::npos) << r.status().message();
    EXPECT_EQ(r.status().message().find('\n'), std::string::npos);
  }
  // A step may start before the trace's zero.
  auto early = report_from_json(
      R"({"schema": "gpuscope.report/1", "devices": [{"steps": {"list": [{"start_us": -10, "duration_ms": 1}]}}]})");
  EXPECT_TRUE(early.ok()) << early.status().message();
}

// The diff of a report with itself read back: schema, nothing changed, no headline.
TEST(DiffJson, SchemaAndKeys) {
  const Report r = full_report();
  const std::string text = diff_to_json(diff_reports(r, r));
  EXPECT_NE(text.find("\"schema\": \"gpuscope.diff/1\""), std::string::npos);
  EXPECT_NE(text.find("\"headline\": null"), std::string::npos);
  EXPECT_NE(text.find("\"step_time_ratio\": 1.0"), std::string::npos);
  EXPECT_NE(text.find("\"status\": \"unchanged\""), std::string::npos);
}

}  // namespace
}  // namespace gpuscope
