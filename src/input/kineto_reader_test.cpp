#include "input/kineto_reader.h"

#include <gtest/gtest.h>
#include <zlib.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <fmt/core.h>

#include "core/analysis.h"
#include "input/test_temp.h"
#include "input/trace_input.h"
#include "render/report_json.h"

namespace gpuscope {
namespace {

namespace fs = std::filesystem;

std::string source_dir() {
  const char* env = std::getenv("GPUSCOPE_SOURCE_DIR");
  return env ? env : GPUSCOPE_SOURCE_DIR;
}

// In a folder unique to this test program (mkdtemp), removed at exit.
std::string temp_file(const std::string& name, const std::string& bytes) {
  static testing_support::TempDir dir;
  return dir.write(name, bytes);
}

std::string gzip(const std::string& data) {
  std::string out(compressBound(data.size()) + 64, '\0');
  z_stream z{};
  deflateInit2(&z, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY);
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  z.avail_in = static_cast<uInt>(data.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  deflate(&z, Z_FINISH);
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

const char* kSmallTrace = R"json({
  "schemaVersion": 1,
  "deviceProperties": [{"id": 0, "name": "NVIDIA H100 80GB HBM3", "numSms": 132, "computeMajor": 9,
                        "computeMinor": 0, "totalGlobalMem": 85000000000}],
  "distributedInfo": {"rank": 3, "world_size": 8},
  "traceEvents": [
    {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#5", "pid": 10, "tid": 10,
     "ts": 1000000000000.000, "dur": 100},
    {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 10, "tid": 10, "ts": 1000000000001.5,
     "dur": 20, "args": {"Input Dims": [[64, 32], [32, 16]], "Input type": ["c10::BFloat16", "c10::BFloat16"]}},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 10, "tid": 10,
     "ts": 1000000000002.0005, "dur": 5, "args": {"correlation": 77}},
    {"ph": "X", "cat": "kernel", "name": "nvjet_sm90_gemm", "pid": 0, "tid": 7, "ts": 1000000000010,
     "dur": 40.25, "args": {"device": 0, "stream": 7, "correlation": 77, "grid": [66, 1, 1],
     "block": [128, 1, 1], "registers per thread": 168, "shared memory": 1024}},
    {"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy HtoD (Pageable -> Device)", "pid": 0, "tid": 7,
     "ts": 1000000000060, "dur": 10, "args": {"device": 0, "stream": 7, "bytes": 4096}},
    {"ph": "s", "id": 77, "pid": 10, "tid": 10, "ts": 1000000000002, "cat": "ac2g", "name": "ac2g"},
    {"ph": "M", "name": "process_name", "pid": 10, "args": {"name": "python"}}
  ],
  "traceName": "x", "displayTimeUnit": "ms"
})json";

TEST(KinetoReader, KeepsTheCollectiveOfAnNcclKernel) {
  const char* json = R"json({"traceEvents": [
    {"ph": "X", "cat": "kernel", "name": "ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
     "pid": 0, "tid": 7, "ts": 100, "dur": 50, "args": {"device": 1, "stream": 7, "Collective name": "_allgather_base",
     "In msg nelems": 1024, "Out msg nelems": 8192, "Group size": 8, "dtype": "BFloat16"}},
    {"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "tid": 7, "ts": 200, "dur": 5,
     "args": {"device": 1, "Collective name": 7, "In msg nelems": "x"}}]})json";
  auto t = read_kineto_buffer(json, "nccl");
  ASSERT_TRUE(t.ok()) << t.status().message();
  ASSERT_EQ(t->kernels.size(), 2u);
  ASSERT_EQ(t->collectives.size(), 1u);  // A non-string collective name is no collective.
  const CollectiveArgs& c = t->collectives[0];
  EXPECT_EQ(t->strings.view(c.name), "_allgather_base");
  EXPECT_EQ(t->strings.view(c.dtype), "BFloat16");
  EXPECT_EQ(c.device, 1);
  EXPECT_EQ(c.start_ns, 100'000);
  EXPECT_EQ(c.end_ns, 150'000);
  EXPECT_EQ(c.in_nelems, 1024);
  EXPECT_EQ(c.out_nelems, 8192);
  EXPECT_EQ(c.group_size, 8);
}

TEST(KinetoReader, ReadsEventsDevicesAndRank) {
  auto t = read_kineto_buffer(kSmallTrace, "small");
  ASSERT_TRUE(t.ok()) << t.status().message();
  EXPECT_EQ(t->rank, 3);
  EXPECT_EQ(t->world_size, 8);
  ASSERT_EQ(t->devices.size(), 1u);
  EXPECT_EQ(t->devices[0].num_sms, 132);
  ASSERT_EQ(t->kernels.size(), 1u);
  const Kernel& k = t->kernels[0];
  EXPECT_EQ(k.start_ns, 1000000000010000);
  EXPECT_EQ(k.end_ns - k.start_ns, 40250);  // Fractional microseconds kept exactly.
  EXPECT_EQ(k.grid.x, 66u);
  EXPECT_EQ(k.registers_per_thread, 168);
  EXPECT_EQ(k.correlation, 77u);
  ASSERT_EQ(t->api_calls.size(), 1u);
  EXPECT_EQ(t->api_calls[0].start_ns, 1000000000002001);  // .0005 us rounds to 1 ns.
  EXPECT_EQ(t->api_calls[0].api_class, ApiClass::kLaunch);
  ASSERT_EQ(t->memcpys.size(), 1u);
  EXPECT_EQ(t->memcpys[0].kind, CopyKind::kHtoD);
  EXPECT_EQ(t->memcpys[0].host_memory, HostMemory::kPageable);
  EXPECT_EQ(t->memcpys[0].bytes, 4096u);
  ASSERT_EQ(t->host_events.size(), 2u);
  const HostEvent& mm = t->host_events[1];
  ASSERT_EQ(mm.num_args, 2);
  EXPECT_EQ(t->op_args[mm.first_arg].rank, 2);
  EXPECT_EQ(t->dims[t->op_args[mm.first_arg].first_dim], 64);
  EXPECT_EQ(t->strings.view(t->op_args[mm.first_arg].dtype), "c10::BFloat16");
  EXPECT_TRUE(t->warnings.empty());
}

TEST(KinetoReader, SmallBufferRefillsAcrossEventBoundaries) {
  // The same trace gzipped through the file path (4 MiB buffer, one refill) and a trace large
  // enough to need several refills must read identically.
  std::string big = R"json({"traceEvents": [)json";
  for (int i = 0; i < 60000; ++i) {
    big += (i ? "," : "");
    big += R"json({"ph": "X", "cat": "kernel", "name": "k\"quoted\\", "pid": 0, "tid": 7, "ts": )json" +
           std::to_string(i * 10) + R"json(, "dur": 5, "args": {"device": 0, "stream": 7}})json";
  }
  big += "]}";
  const std::string path = temp_file("big.json.gz", gzip(big));
  auto t = read_kineto_file(path);
  ASSERT_TRUE(t.ok()) << t.status().message();
  EXPECT_EQ(t->kernels.size(), 60000u);
  EXPECT_EQ(t->strings.view(t->kernels[0].name), "k\"quoted\\");
  EXPECT_EQ(t->kernels.back().start_ns, 599990000);
}

struct BadInput {
  const char* name;
  std::string bytes;
  const char* expect;  // Substring of the one-line error.
};

TEST(KinetoReader, BadInputsGiveOneLineErrors) {
  const std::string valid_gz = gzip(kSmallTrace);
  const std::vector<BadInput> cases = {
      {"empty.json", "", "empty"},
      {"spaces.json", "   \n", "whitespace"},
      {"text.json", "hello", "not JSON"},
      {"not_trace.json", R"json({"a": 1, "b": [1, 2]})json", "no \"traceEvents\""},
      {"events_not_array.json", R"json({"traceEvents": 5})json", "not an array"},
      {"bad_key.json", R"json({"traceEvents": [], 5: 1})json", "byte 20"},
      {"truncated.json.gz", valid_gz.substr(0, 30), "cannot read"},
      {"bad_devices.json", R"json({"deviceProperties": {"x": 1}, "traceEvents": []})json", "not an array"},
  };
  for (const auto& c : cases) {
    auto t = read_kineto_file(temp_file(c.name, c.bytes));
    ASSERT_FALSE(t.ok()) << c.name;
    const std::string& msg = t.status().message();
    EXPECT_NE(msg.find(c.expect), std::string::npos) << c.name << ": " << msg;
    EXPECT_EQ(msg.find('\n'), std::string::npos) << c.name;
  }
  auto missing = read_trace_file("/nonexistent/trace.json");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("No such file"), std::string::npos);
}

TEST(KinetoReader, PartlyReadableTracesWarn) {
  // Truncated in the middle of the event list: what came before is kept, with a warning.
  const std::string text = kSmallTrace;
  const size_t cut = text.find("gpu_memcpy");
  auto t = read_kineto_buffer(text.substr(0, cut), "cut");
  ASSERT_TRUE(t.ok()) << t.status().message();
  EXPECT_EQ(t->kernels.size(), 1u);
  ASSERT_EQ(t->warnings.size(), 1u);
  EXPECT_NE(t->warnings[0].find("truncated"), std::string::npos);

  // Unexpected types: "ts" as a string skips that event; an odd arg is ignored.
  auto odd = read_kineto_buffer(
      R"json({"traceEvents": [
        {"ph": "X", "cat": "kernel", "name": "a", "ts": "12", "dur": 1},
        {"ph": "X", "cat": "kernel", "name": "b", "ts": 12, "dur": 1, "args": {"stream": "0x10", "grid": "grid(1,)"}},
        {"ph": "X", "cat": "kernel", "name": 5, "ts": 12, "dur": 1},
        [1, 2]
      ]})json",
      "odd");
  ASSERT_TRUE(odd.ok()) << odd.status().message();
  ASSERT_EQ(odd->kernels.size(), 1u);
  EXPECT_EQ(odd->kernels[0].stream, 16);
  EXPECT_FALSE(odd->kernels[0].has_grid());
  ASSERT_EQ(odd->warnings.size(), 1u);
  EXPECT_NE(odd->warnings[0].find("skipped 3 events"), std::string::npos) << odd->warnings[0];
}

// PyTorch 1.9 and earlier tag the step marker like an op (cat "Operator"): still the steps.
TEST(KinetoReader, OldTracesKeepTheirProfilerSteps) {
  std::string events;
  for (int i = 0; i < 8; ++i) {
    const int ts = 1000 + i * 100;
    events += fmt::format(
        R"json({}{{"ph": "X", "cat": "Operator", "name": "ProfilerStep#{}", "pid": 1, "tid": 1, "ts": {}, "dur": 100}},
      {{"ph": "X", "cat": "Kernel", "name": "k", "pid": 0, "tid": 7, "ts": {}, "dur": 50, "args": {{"device": 0, "stream": 7}}}})json",
        i ? "," : "", i, ts, ts + 10);
  }
  auto t = read_kineto_buffer("{\"traceEvents\": [" + events + "]}", "old");
  ASSERT_TRUE(t.ok()) << t.status().message();
  const std::vector<DeviceReport> r = analyze_trace(*t, {});
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].step_source, "profiler_step");
  EXPECT_GE(r[0].step_count, 2);
}

// Properties for device 0, kernels on device 2 (the physical index): one model, so it is that GPU.
TEST(KinetoReader, PropertiesOfOneModelDescribeTheDeviceThatRanTheKernels) {
  auto t = read_kineto_buffer(R"json({"deviceProperties": [{"id": 0, "name": "NVIDIA A100-SXM4-80GB", "numSms": 108}],
    "traceEvents": [{"ph": "X", "cat": "kernel", "name": "k", "pid": 2, "tid": 7, "ts": 1, "dur": 2,
                     "args": {"device": 2, "stream": 7}}]})json",
                              "moved");
  ASSERT_TRUE(t.ok()) << t.status().message();
  const Device* d = t->find_device(2);
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->num_sms.value_or(0), 108);
  EXPECT_EQ(d->name, "NVIDIA A100-SXM4-80GB");
}

// An MTIA trace: CPU ops and the accelerator's own activity types, no CUDA: described as work
// on another accelerator, a valid trace (not bad input, not "CPU-only").
TEST(KinetoReader, AcceleratorWorkGpuscopeDoesNotAnalyseIsDescribed) {
  auto t = read_kineto_buffer(R"json({"traceEvents": [
    {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 1, "dur": 5},
    {"ph": "X", "cat": "mtia_runtime", "name": "mtiaLaunchKernel", "pid": 1, "tid": 1, "ts": 2, "dur": 2},
    {"ph": "X", "cat": "mtia_ccp_events", "name": "gemm", "pid": 2, "tid": 3, "ts": 4, "dur": 9}]})json",
                              "mtia");
  ASSERT_TRUE(t.ok()) << t.status().message();
  std::vector<Trace> traces;
  traces.push_back(std::move(t).value());
  const Report r = analyze_traces(traces, {});
  EXPECT_TRUE(r.rejected.empty());
  ASSERT_EQ(r.without_gpu_work.size(), 1u);
  EXPECT_NE(r.without_gpu_work[0].find("accelerator gpuscope does not analyse (2 mtia_runtime events"),
            std::string::npos)
      << r.without_gpu_work[0];
  EXPECT_EQ(r.without_gpu_work[0].find("CPU-only"), std::string::npos) << r.without_gpu_work[0];
}

TEST(KinetoReader, BareEventArrayIsAccepted) {
  auto t = read_kineto_buffer(R"json([{"ph": "X", "cat": "kernel", "name": "k", "ts": 1, "dur": 2}])json", "array");
  ASSERT_TRUE(t.ok()) << t.status().message();
  EXPECT_EQ(t->kernels.size(), 1u);
}

// Every public trace from other set-ups is analysed or rejected with a reason; none crash.
TEST(PublicTraces, AnalysedOrRejected) {
  const fs::path dir = fs::path(source_dir()) / "testdata" / "hta";
  int analysed = 0, rejected = 0;
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (!entry.path().string().ends_with(".json.gz")) continue;
    auto t = read_trace_file(entry.path().string());
    ASSERT_TRUE(t.ok()) << entry.path() << ": " << t.status().message();
    std::vector<Trace> traces;
    traces.push_back(std::move(t).value());
    const Report r = analyze_traces(traces, {});
    if (r.devices.empty()) {
      // Valid traces without GPU work are described, not rejected as bad input.
      EXPECT_TRUE(r.rejected.empty()) << entry.path();
      ASSERT_EQ(r.without_gpu_work.size(), 1u);
      ++rejected;
      continue;
    }
    ++analysed;
    for (const auto& d : r.devices) {
      EXPECT_GE(d.busy_pct, 0.0);
      EXPECT_LE(d.busy_pct, 100.0 + 1e-9);
      double idle = 0;
      for (const auto& c : d.idle_causes) idle += c.pct;
      EXPECT_NEAR(idle, d.idle_pct, 1e-6) << entry.path();
      if (d.sm_active_est_pct) {
        EXPECT_LE(*d.sm_active_est_pct, d.busy_pct + 1e-9) << entry.path();
      }
    }
  }
  EXPECT_EQ(analysed, 11);
  EXPECT_EQ(rejected, 3);  // The CPU-only rank, the non-GPU rank, the CUPTI-profiler-range trace.
}

// Golden reports on traces recorded on the H200 (testdata/pytorch). Regenerate with
// GPUSCOPE_UPDATE_GOLDENS=1 and review the diff.
class Golden : public ::testing::TestWithParam<const char*> {};

TEST_P(Golden, ReportMatches) {
  const std::string name = GetParam();
  const fs::path root(source_dir());
  auto t = read_trace_file((root / "testdata" / "pytorch" / (name + ".json.gz")).string());
  ASSERT_TRUE(t.ok()) << t.status().message();
  t->source = "testdata/pytorch/" + name + ".json.gz";
  AnalysisOptions o;
  const bool small_batch = name == "fp32_sync";
  o.model = parse_model_spec(std::string("gpt:params=123.69M,layers=12,heads=12,dmodel=768,seq=1024,batch=") +
                             (small_batch ? "8" : "16"))
                .value();
  std::vector<Trace> traces;
  traces.push_back(std::move(t).value());
  const std::string json = report_to_json(analyze_traces(traces, o));
  const fs::path golden = root / "testdata" / "golden" / (name + ".json");
  if (const char* update = std::getenv("GPUSCOPE_UPDATE_GOLDENS"); update && *update == '1') {
    fs::create_directories(golden.parent_path());
    std::ofstream(golden) << json;
    GTEST_SKIP() << "updated " << golden;
  }
  std::ifstream in(golden);
  ASSERT_TRUE(in) << "missing " << golden << " (run with GPUSCOPE_UPDATE_GOLDENS=1)";
  std::stringstream expected;
  expected << in.rdbuf();
  EXPECT_EQ(json, expected.str()) << "report changed; review and regenerate with GPUSCOPE_UPDATE_GOLDENS=1";
}

INSTANTIATE_TEST_SUITE_P(PyTorchH200, Golden,
                         ::testing::Values("fp32_sync", "bf16_sync", "bf16_async", "bf16_compile"));

TEST(KinetoReader, TimesThatOverflowAreDroppedWithTheirOffset) {
  // ts + dur past int64 (undefined behaviour; Release printed busy 100% or
  // "no GPU kernels"), and a double outside int64's range was cast to an integer.
  const std::string text = R"json({"traceEvents": [
    {"ph": "X", "cat": "kernel", "name": "ok", "pid": 0, "tid": 7, "ts": 10, "dur": 5},
    {"ph": "X", "cat": "kernel", "name": "overflow", "pid": 0, "tid": 7, "ts": 9223372036854774, "dur": 9000},
    {"ph": "X", "cat": "kernel", "name": "long", "pid": 0, "tid": 7, "ts": 20, "dur": 9223372036854774},
    {"ph": "X", "cat": "kernel", "name": "huge-arg", "pid": 0, "tid": 7, "ts": 30, "dur": 5,
     "args": {"device": 1e300, "stream": -1e300, "correlation": 3.5e18}}
  ]})json";
  auto t = read_kineto_buffer(text, "times");
  ASSERT_TRUE(t.ok()) << t.status().message();
  ASSERT_EQ(t->kernels.size(), 2u);
  EXPECT_EQ(t->strings.view(t->kernels[1].name), "huge-arg");
  EXPECT_EQ(t->kernels[1].correlation, 3'500'000'000'000'000'000u);
  const size_t second = text.find(R"({"ph": "X", "cat": "kernel", "name": "overflow")");
  bool named = false;
  for (const auto& w : t->warnings) {
    named |= w.find("dropped 2 events whose times are out of range (first at byte " + std::to_string(second)) !=
             std::string::npos;
  }
  EXPECT_TRUE(named) << ::testing::PrintToString(t->warnings);
  // What the core is handed stays summable.
  for (const auto& k : t->kernels) {
    EXPECT_LE(k.end_ns - k.start_ns, 1'000'000'000'000'000);
  }
}

TEST(KinetoReader, RepeatedInputDimsReplaceTheEarlierOnes) {
  // Found by kineto_reader_fuzz: a second "Input Dims" appended ranks but reused the shapes,
  // so the reader read past them (heap overflow under ASan).
  auto t = read_kineto_buffer(R"json({"traceEvents": [
    {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 1, "dur": 2,
     "args": {"Input Dims": [[2, 3], [3, 4]], "Input type": ["float"], "Input Dims": [[5, 6], [6, 7]],
              "Input type": ["float", "float"]}}]})json",
                              "dims");
  ASSERT_TRUE(t.ok()) << t.status().message();
  ASSERT_EQ(t->host_events.size(), 1u);
  ASSERT_EQ(t->host_events[0].num_args, 2);
  ASSERT_EQ(t->op_args.size(), 2u);
  EXPECT_EQ(t->dims[t->op_args[0].first_dim], 5);
  EXPECT_EQ(t->dims[t->op_args[1].first_dim + 1], 7);
  EXPECT_EQ(t->strings.view(t->op_args[1].dtype), "float");
}

}  // namespace
}  // namespace gpuscope
