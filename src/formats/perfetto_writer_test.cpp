#include "formats/perfetto_writer.h"

#include <limits>
#include <sstream>

#include <gtest/gtest.h>
#include <simdjson.h>

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
  // Issue 14: a device sample holding NaN or infinity (a capture can carry any f64) made
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

}  // namespace
}  // namespace gpuscope
