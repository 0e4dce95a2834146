#include "render/perfetto_writer.h"

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <map>
#include <set>
#include <sstream>

#include <gtest/gtest.h>
#include <simdjson.h>
#include <zlib.h>

#include "core/analysis.h"
#include "input/test_temp.h"
#include "input/trace_input.h"

namespace gpuscope {
namespace {

Trace small_trace() {
  Trace t;
  Device d;
  d.id = 0;
  d.name = "NVIDIA H200";
  t.devices.push_back(d);
  ApiCall a;
  a.start_ns = 1'700'000'000'000'000'123;
  a.end_ns = a.start_ns + 5'000;
  a.pid = 42;
  a.tid = 43;
  a.name = t.strings.intern("cudaLaunchKernel");
  a.api_class = ApiClass::kLaunch;
  a.correlation = 9;
  t.api_calls.push_back(a);
  Kernel k;
  k.start_ns = a.start_ns + 10'000;
  k.end_ns = k.start_ns + 1'000'001;
  k.stream = 7;
  k.name = t.strings.intern("kernel \"quoted\"\n");
  k.grid = {2, 1, 1};
  k.block = {128, 1, 1};
  k.correlation = 9;
  t.kernels.push_back(k);
  DeviceSample s;
  s.time_ns = k.end_ns;
  s.sm_active_pct = 50.5;
  t.device_samples.push_back(s);
  return t;
}

TEST(PerfettoWriter, WritesValidJsonWithExactTimestampsFlowsAndCounters) {
  std::vector<Trace> traces;
  traces.push_back(small_trace());
  std::ostringstream out;
  write_perfetto_json(traces, out);
  std::string json = out.str();
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  ASSERT_EQ(parser.parse(json).get(doc), simdjson::SUCCESS) << json;
  simdjson::dom::array events;
  ASSERT_EQ(doc["traceEvents"].get(events), simdjson::SUCCESS);
  int kernels = 0, flows = 0, counters = 0;
  for (auto e : events) {
    std::string_view ph = e["ph"].get_string().value();
    if (ph == "X" && e["cat"].get_string().value() == "kernel") {
      ++kernels;
      EXPECT_EQ(e["name"].get_string().value(), "kernel \"quoted\"\n");
      EXPECT_EQ(e["tid"].get_int64().value(), 7);
    }
    if (ph == "s" || ph == "f") ++flows;
    if (ph == "C") ++counters;
  }
  EXPECT_EQ(kernels, 1);
  EXPECT_EQ(flows, 2);
  EXPECT_EQ(counters, 1);
  // Nanosecond-exact microseconds.
  EXPECT_NE(json.find("\"ts\":1700000000000000.123"), std::string::npos);
  EXPECT_NE(json.find("\"dur\":1000.001"), std::string::npos);
}

TEST(PerfettoWriter, NonFiniteCounterValuesAreNullWithAWarning) {
  // A device sample holding NaN or infinity (a capture can carry any f64) made
  // `export --perfetto` write invalid JSON with exit 0.
  std::vector<Trace> traces;
  traces.push_back(small_trace());
  DeviceSample s = traces[0].device_samples[0];
  s.time_ns += 1000;
  s.sm_active_pct = std::numeric_limits<double>::quiet_NaN();
  s.power_w = std::numeric_limits<double>::infinity();
  traces[0].device_samples.push_back(s);
  std::ostringstream out;
  std::vector<std::string> warnings;
  write_perfetto_json(traces, out, &warnings);
  const std::string json = out.str();
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  ASSERT_EQ(parser.parse(json).get(doc), simdjson::SUCCESS) << json;
  EXPECT_EQ(json.find("nan"), std::string::npos);
  EXPECT_EQ(json.find("inf"), std::string::npos);
  EXPECT_NE(json.find("\"value\":null"), std::string::npos);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("2 counter values were NaN or infinite"), std::string::npos) << warnings[0];
}

std::string source_dir() {
  if (const char* env = std::getenv("GPUSCOPE_SOURCE_DIR")) return env;
  return GPUSCOPE_SOURCE_DIR;
}

// Microseconds with three decimals (as written) back to integer nanoseconds.
int64_t ns_of(double us) { return std::llround(us * 1000.0); }

struct Exported {
  std::vector<Trace> traces;
  std::vector<DeviceReport> reports;
  PerfettoOptions options;
};

Exported bundled_pytorch_trace() {
  Exported e;
  auto trace = read_trace_file(source_dir() + "/testdata/pytorch/bf16_sync.json.gz");
  EXPECT_TRUE(trace.ok()) << trace.status().message();
  e.traces.push_back(std::move(trace).value());
  e.reports = analyze_trace(e.traces[0], {});
  e.options.reports.push_back(e.reports);
  return e;
}

TEST(PerfettoWriter, PyTorchTraceGetsIdleCauseAndStepTracksThatSumToTheAnalysis) {
  Exported e = bundled_pytorch_trace();
  ASSERT_EQ(e.reports.size(), 1u);
  const DeviceReport& r = e.reports[0];
  ASSERT_GT(r.steps.size(), 0u);
  ASSERT_GT(r.idle_intervals.size(), 0u);
  std::ostringstream out;
  write_perfetto_json(e.traces, out, nullptr, e.options);
  const std::string json = out.str();
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  ASSERT_EQ(parser.parse(json).get(doc), simdjson::SUCCESS);
  std::map<std::string, int64_t> idle_ns, idle_slices;
  int64_t step_ns = 0, steps = 0, kernels = 0;
  std::set<std::string> thread_names;
  for (auto ev : doc["traceEvents"].get_array()) {
    const std::string_view ph = ev["ph"].get_string().value();
    if (ph == "M" && ev["name"].get_string().value() == "thread_name") {
      thread_names.insert(std::string(ev["args"]["name"].get_string().value()));
    }
    if (ph != "X") continue;
    const std::string_view cat = ev["cat"].get_string().value();
    const int64_t dur = ns_of(ev["dur"].get_double().value());
    if (cat == "idle") {
      const std::string name(ev["name"].get_string().value());
      EXPECT_TRUE(idle_cause_from_name(name).has_value()) << name;
      idle_ns[name] += dur;
      ++idle_slices[name];
    } else if (cat == "step") {
      step_ns += dur;
      ++steps;
      EXPECT_TRUE(ev["name"].get_string().value().starts_with("step ")) << ev;
    } else if (cat == "kernel") {
      ++kernels;
    }
  }
  EXPECT_TRUE(thread_names.count("idle causes"));
  EXPECT_TRUE(thread_names.count("steps"));
  EXPECT_EQ(kernels, static_cast<int64_t>(e.traces[0].kernels.size()));
  // One slice per analysed step, and they cover the window.
  EXPECT_EQ(steps, static_cast<int64_t>(r.steps.size()));
  int64_t want_step_ns = 0;
  for (const StepReport& s : r.steps) want_step_ns += s.duration_ns;
  EXPECT_EQ(step_ns, want_step_ns);
  // Per cause, the slices add up to the report's idle time for that cause, to the nanosecond;
  // and all idle plus busy time is the window.
  int64_t total_idle = 0;
  for (const IdleCause& c : r.idle_causes) {
    const std::string name(idle_cause_name(c.cause));
    EXPECT_EQ(idle_ns[name], c.ns) << name;
    total_idle += c.ns;
  }
  EXPECT_GE(idle_ns.size(), 2u);  // The bundled trace idles for more than one reason.
  EXPECT_NEAR(100.0 * static_cast<double>(total_idle) / static_cast<double>(r.window_ns), r.idle_pct, 0.01);
}

TEST(PerfettoWriter, WindowKeepsOnlyOverlappingEvents) {
  Exported e = bundled_pytorch_trace();
  const DeviceReport& r = e.reports.at(0);
  ASSERT_GE(r.steps.size(), 2u);
  const StepReport& s = r.steps[1];
  e.options.from_ns = s.start_ns;
  e.options.to_ns = s.start_ns + s.duration_ns;
  std::ostringstream out;
  write_perfetto_json(e.traces, out, nullptr, e.options);
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  ASSERT_EQ(parser.parse(out.str()).get(doc), simdjson::SUCCESS);
  int64_t steps = 0, kernels = 0;
  for (auto ev : doc["traceEvents"].get_array()) {
    if (ev["ph"].get_string().value() != "X") continue;
    const std::string_view cat = ev["cat"].get_string().value();
    const int64_t start = ns_of(ev["ts"].get_double().value()), end = start + ns_of(ev["dur"].get_double().value());
    // Timestamps near 1.7e15 us lose nanoseconds in a double: allow a microsecond.
    EXPECT_GT(end, *e.options.from_ns - 1000) << ev;
    EXPECT_LT(start, *e.options.to_ns + 1000) << ev;
    if (cat == "step") ++steps;
    if (cat == "kernel") ++kernels;
  }
  EXPECT_EQ(steps, 1);
  EXPECT_GT(kernels, 0);
  EXPECT_LT(kernels, static_cast<int64_t>(e.traces[0].kernels.size()));
}

TEST(PerfettoWriter, GzipOutputRoundTrips) {
  Exported e = bundled_pytorch_trace();
  std::ostringstream plain;
  write_perfetto_json(e.traces, plain, nullptr, e.options);
  testing_support::TempDir dir;
  const std::string path = dir.file("out.json.gz");
  ASSERT_TRUE(write_perfetto_file(e.traces, path, {}, nullptr, e.options).ok());
  gzFile f = gzopen(path.c_str(), "rb");
  ASSERT_NE(f, nullptr);
  std::string back;
  char buf[1 << 16];
  for (int n; (n = gzread(f, buf, sizeof(buf))) > 0;) back.append(buf, static_cast<size_t>(n));
  gzclose(f);
  EXPECT_EQ(back, plain.str());
  // Really compressed, not plain text with a .gz name.
  std::ifstream raw(path, std::ios::binary);
  char magic[2] = {};
  raw.read(magic, 2);
  EXPECT_EQ(static_cast<unsigned char>(magic[0]), 0x1f);
  EXPECT_EQ(static_cast<unsigned char>(magic[1]), 0x8b);
}

TEST(PerfettoWriter, InvalidUtf8IsReplacedAsInTheJsonReport) {
  std::vector<Trace> traces;
  traces.push_back(small_trace());
  traces[0].kernels[0].name = traces[0].strings.intern("bad\xff\xfename");
  std::ostringstream out;
  write_perfetto_json(traces, out);
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  ASSERT_EQ(parser.parse(out.str()).get(doc), simdjson::SUCCESS) << out.str();
  bool found = false;
  for (auto ev : doc["traceEvents"].get_array()) {
    if (ev["ph"].get_string().value() == "X" && ev["cat"].get_string().value() == "kernel") {
      EXPECT_EQ(ev["name"].get_string().value(), "bad\xEF\xBF\xBD\xEF\xBF\xBDname");
      found = true;
    }
  }
  EXPECT_TRUE(found);
}

// Processes are named by their executable (from the capture's command line), never by the
// arguments; without a command line (PyTorch traces record none) by pid.
TEST(PerfettoWriter, ProcessesAreNamedByTheirExecutable) {
  auto process_name = [](const Trace& t) {
    std::ostringstream out;
    write_perfetto_json({t}, out);
    simdjson::dom::parser parser;
    simdjson::dom::element doc;
    EXPECT_EQ(parser.parse(out.str()).get(doc), simdjson::SUCCESS);
    for (auto ev : doc["traceEvents"].get_array()) {
      if (ev["ph"].get_string().value() == "M" && ev["name"].get_string().value() == "process_name" &&
          ev["pid"].get_int64().value() == 42) {
        return std::string(ev["args"]["name"].get_string().value());
      }
    }
    return std::string("(none)");
  };
  Trace t = small_trace();
  EXPECT_EQ(process_name(t), "process 42");
  t.command_line = "/usr/bin/python3 train.py --password=hunter2";
  EXPECT_EQ(process_name(t), "python3 (pid 42)");

  // A capture recorded on the GPU machine carries its command line through the reader.
  auto capture = read_trace_file(std::string(GPUSCOPE_SOURCE_DIR) + "/testdata/pyzoo/dataloader.gpuscope");
  ASSERT_TRUE(capture.ok()) << capture.status().message();
  EXPECT_EQ(capture->command_line.rfind("python3 ", 0), 0u) << capture->command_line;
}

}  // namespace
}  // namespace gpuscope
