// The parallel reader builds the same trace, and so the same report, as the reader
// on one thread: on every trace in testdata/, on hand-made traces with named lanes, skipped
// events, out-of-range times and a cut, and through the job reader's memory budget.
#include <zlib.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <string>
#include <vector>

#include <fmt/core.h>
#include <gtest/gtest.h>

#include "core/analysis.h"
#include "input/input_source.h"
#include "input/job_reader.h"
#include "input/kineto_reader.h"
#include "input/test_temp.h"
#include "input/trace_input.h"
#include "render/report_json.h"

namespace gpuscope {
namespace {

namespace fs = std::filesystem;
using testing_support::TempDir;

std::string source_dir() {
  const char* env = std::getenv("GPUSCOPE_SOURCE_DIR");
  return env ? env : GPUSCOPE_SOURCE_DIR;
}

std::string report_json(const Trace& t) {
  std::vector<Trace> traces;
  traces.push_back(t);
  return report_to_json(analyze_traces(traces, {}));
}

std::vector<std::string> string_table(const Trace& t) {
  std::vector<std::string> out;
  for (StringId i = 0; i < t.strings.size(); ++i) out.emplace_back(t.strings.view(i));
  return out;
}

// Every field the analyses read, event by event (padding makes memcmp unusable).
void expect_same_trace(const Trace& a, const Trace& b, const std::string& what) {
  SCOPED_TRACE(what);
  EXPECT_EQ(string_table(a), string_table(b));
  EXPECT_EQ(a.warnings, b.warnings);
  EXPECT_EQ(a.truncated, b.truncated);
  EXPECT_EQ(a.dims, b.dims);
  ASSERT_EQ(a.kernels.size(), b.kernels.size());
  for (size_t i = 0; i < a.kernels.size(); ++i) {
    const Kernel &x = a.kernels[i], &y = b.kernels[i];
    ASSERT_TRUE(x.start_ns == y.start_ns && x.end_ns == y.end_ns && x.device == y.device && x.stream == y.stream &&
                x.name == y.name && x.grid.x == y.grid.x && x.block.x == y.block.x &&
                x.registers_per_thread == y.registers_per_thread && x.correlation == y.correlation)
        << "kernel " << i;
  }
  ASSERT_EQ(a.api_calls.size(), b.api_calls.size());
  for (size_t i = 0; i < a.api_calls.size(); ++i) {
    const ApiCall &x = a.api_calls[i], &y = b.api_calls[i];
    ASSERT_TRUE(x.start_ns == y.start_ns && x.pid == y.pid && x.tid == y.tid && x.name == y.name &&
                x.correlation == y.correlation)
        << "api call " << i;
  }
  ASSERT_EQ(a.host_events.size(), b.host_events.size());
  for (size_t i = 0; i < a.host_events.size(); ++i) {
    const HostEvent &x = a.host_events[i], &y = b.host_events[i];
    ASSERT_TRUE(x.start_ns == y.start_ns && x.end_ns == y.end_ns && x.pid == y.pid && x.tid == y.tid &&
                x.name == y.name && x.num_args == y.num_args && (x.num_args == 0 || x.first_arg == y.first_arg))
        << "host event " << i;
  }
  ASSERT_EQ(a.op_args.size(), b.op_args.size());
  for (size_t i = 0; i < a.op_args.size(); ++i) {
    ASSERT_TRUE(a.op_args[i].first_dim == b.op_args[i].first_dim && a.op_args[i].rank == b.op_args[i].rank &&
                a.op_args[i].dtype == b.op_args[i].dtype)
        << "op arg " << i;
  }
  EXPECT_EQ(a.memcpys.size(), b.memcpys.size());
  EXPECT_EQ(a.memsets.size(), b.memsets.size());
  ASSERT_EQ(a.gpu_annotations.size(), b.gpu_annotations.size());
  for (size_t i = 0; i < a.gpu_annotations.size(); ++i) {
    ASSERT_TRUE(a.gpu_annotations[i].device == b.gpu_annotations[i].device &&
                a.gpu_annotations[i].name == b.gpu_annotations[i].name);
  }
}

StatusOr<Trace> read_with(const std::string& path, unsigned threads, size_t batch_bytes = 0) {
  KinetoReadOptions o;
  o.threads = threads;
  o.batch_bytes = batch_bytes;
  return read_kineto_file(path, o);
}

TEST(ParallelReader, SameReportAsOneThreadOnEveryTestdataTrace) {
  std::vector<std::string> files;
  for (const auto& entry : fs::recursive_directory_iterator(source_dir() + "/testdata")) {
    const std::string name = entry.path().string();
    if (entry.is_regular_file() && name.ends_with(".json.gz")) files.push_back(name);
  }
  std::sort(files.begin(), files.end());
  ASSERT_GE(files.size(), 15u);
  for (const auto& f : files) {
    auto one = read_with(f, 1);
    // Small batches: even the small traces are cut into many, parsed by three threads.
    auto many = read_with(f, 4, 16 << 10);
    ASSERT_EQ(one.ok(), many.ok()) << f;
    if (!one.ok()) {
      EXPECT_EQ(one.status().message(), many.status().message()) << f;
      continue;
    }
    expect_same_trace(one.value(), many.value(), f);
    EXPECT_EQ(report_json(one.value()), report_json(many.value())) << f;
    // The default batch size and the plain (mapped) file give the same again.
    auto defaults = read_with(f, 3);
    ASSERT_TRUE(defaults.ok()) << f;
    EXPECT_EQ(report_json(one.value()), report_json(defaults.value())) << f;
  }
}

// A trace with what the merge must renumber or carry: lanes named by strings, numeric
// negative lanes (never renumbered), shapes with dtypes, events skipped for bad fields, events
// dropped for their times.
std::string tricky_trace(int groups) {
  std::string s = R"({"traceEvents": [)";
  for (int i = 0; i < groups; ++i) {
    if (i > 0) s += ",";
    s += fmt::format(
        R"({{"ph": "X", "cat": "cpu_op", "name": "aten::mm{}", "pid": "Proc {}", "tid": -{}, "ts": {}, "dur": 5,
              "args": {{"Input Dims": [[{}, 64], [64, 32], []], "Input type": ["float{}", "c10::BFloat16", ""]}}}},
            {{"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": {}, "tid": "thread {}", "ts": {},
              "dur": 2, "args": {{"correlation": {}}}}},
            {{"ph": "X", "cat": "kernel", "name": "k{}", "pid": "GPU {}", "tid": "stream {}", "ts": {}, "dur": 3,
              "args": {{"correlation": {}, "grid": [{}, 1, 1], "block": [128, 1, 1]}}}},
            {{"ph": "X", "cat": "gpu_user_annotation", "name": "ann{}", "pid": "GPU {}", "tid": 1, "ts": {}, "dur": 1}},
            {{"ph": "X", "cat": "kernel", "name": 7, "pid": 0, "tid": 0, "ts": {}, "dur": 1}},
            {{"ph": "X", "cat": "cpu_op", "name": "far", "pid": 1, "tid": 1, "ts": 5, "dur": 9000000000000}})",
        i % 7, i % 3, i % 5, 1000 + i * 10, i, i % 4, i % 2, i % 6, 1001 + i * 10, i, i % 11, i % 3, i % 2,
        1003 + i * 10, i, i + 1, i % 5, i % 3, 1004 + i * 10, 1005 + i * 10);
  }
  return s + "]}";
}

TEST(ParallelReader, NamedLanesShapesAndSkippedEventsMatchOneThread) {
  TempDir dir;
  const std::string path = dir.file("tricky.json");
  { std::ofstream(path) << tricky_trace(3000); }
  auto one = read_with(path, 1);
  auto many = read_with(path, 3, 4096);
  ASSERT_TRUE(one.ok()) << one.status().message();
  ASSERT_TRUE(many.ok()) << many.status().message();
  ASSERT_EQ(one->warnings.size(), 2u);  // One skipped-events line, one dropped-times line.
  // Named lanes are renumbered, so equal names give equal lanes across batches.
  EXPECT_LT(one->host_events.front().pid, 0);
  expect_same_trace(one.value(), many.value(), "tricky");
  EXPECT_EQ(report_json(one.value()), report_json(many.value()));
}

TEST(ParallelReader, CutTraceGivesTheSameWarningAndEvents) {
  TempDir dir;
  std::string text = tricky_trace(2000);
  text.resize(text.size() * 2 / 3);
  const std::string path = dir.file("cut.json");
  { std::ofstream(path) << text; }
  auto one = read_with(path, 1);
  auto many = read_with(path, 4, 2048);
  ASSERT_TRUE(one.ok() && many.ok());
  EXPECT_TRUE(many->truncated);
  expect_same_trace(one.value(), many.value(), "cut");
}

TEST(ParallelReader, GzipInflatedAheadInAThreadOfItsOwn) {
  TempDir dir;
  const std::string text = tricky_trace(4000);
  std::string gz(compressBound(static_cast<uLong>(text.size())) + 64, '\0');
  z_stream z{};
  deflateInit2(&z, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY);
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(text.data()));
  z.avail_in = static_cast<uInt>(text.size());
  z.next_out = reinterpret_cast<Bytef*>(gz.data());
  z.avail_out = static_cast<uInt>(gz.size());
  deflate(&z, Z_FINISH);
  gz.resize(z.total_out);
  deflateEnd(&z);
  const std::string path = dir.file("t.json.gz");
  { std::ofstream(path, std::ios::binary) << gz; }
  auto one = read_with(path, 1);
  auto many = read_with(path, 2, 8192);
  ASSERT_TRUE(one.ok() && many.ok());
  expect_same_trace(one.value(), many.value(), "gzip");

  // The prefetching stream hands over the same bytes as the stream it reads, in small blocks.
  auto source = ByteSource::memory(gz);
  InflateStream in(*source, InflateProfile::kJson, {});
  PrefetchStream ahead(in, 1000, 3);
  std::string out, error;
  char buf[777];
  while (size_t n = ahead.read(buf, sizeof buf, error)) out.append(buf, n);
  EXPECT_TRUE(error.empty()) << error;
  EXPECT_EQ(out, text);
  EXPECT_FALSE(ahead.limit_exceeded());
}

// The event scanner looks at 16 bytes at a time: quotes, backslashes and brackets inside
// strings, at every position relative to a block boundary, must not end an event early.
TEST(ParallelReader, EscapesAndBracketsInStringsAtEveryBlockOffset) {
  std::string json = R"({"traceEvents": [)";
  std::vector<std::string> expected;
  for (int pad = 0; pad < 40; ++pad) {
    for (const char* tricky : {R"(\")", R"(\\)", "{", "]", R"(\\\")", "[}", R"(\\\\)"}) {
      const std::string raw = std::string(static_cast<size_t>(pad), 'x') + tricky + "}end";
      if (!expected.empty()) json += ",";
      json += R"({"ph": "X", "cat": "cpu_op", "name": ")" + raw + R"(", "pid": 1, "tid": 1, "ts": )" +
              std::to_string(expected.size() + 1) + R"(, "dur": 1, "args": {"k": [")" + raw + R"("]}})";
      std::string unescaped;
      for (size_t i = 0; i < raw.size(); ++i) {
        if (raw[i] == '\\') ++i;
        unescaped += raw[i];
      }
      expected.push_back(unescaped);
    }
  }
  // Keys with escapes are unescaped ("p\u0068" is "ph").
  json += R"(, {"p\u0068": "X", "c\u0061t": "cpu_op", "name": "escaped keys", "pid": 1, "tid": 1, "t\u0073": 9999,
             "dur": 1})";
  expected.push_back("escaped keys");
  json += "]}";
  for (unsigned threads : {1u, 3u}) {
    KinetoReadOptions o;
    o.threads = threads;
    o.batch_bytes = 100;
    auto t = read_kineto_buffer(json, "escapes", o);
    ASSERT_TRUE(t.ok()) << t.status().message();
    EXPECT_TRUE(t->warnings.empty()) << t->warnings.front();
    ASSERT_EQ(t->host_events.size(), expected.size());
    for (size_t i = 0; i < expected.size(); ++i) {
      EXPECT_EQ(t->strings.view(t->host_events[i].name), expected[i]) << i;
    }
  }
}

TEST(JobReader, ReadsEveryTraceOnceWithinTheMemoryBudget) {
  TempDir dir;
  std::vector<std::string> paths;
  for (int r = 0; r < 5; ++r) {
    paths.push_back(dir.file(fmt::format("rank{}.json", r)));
    std::ofstream(paths.back()) << tricky_trace(200 + r);
  }
  paths.push_back(dir.file("bad.json"));
  std::ofstream(paths.back()) << "not json";
  for (uint64_t budget : {uint64_t{1}, uint64_t{1} << 40}) {
    JobReadOptions o;
    o.threads = 3;
    o.max_memory_bytes = budget;
    JobProgress progress(paths.size());
    o.progress = &progress;
    std::atomic<int> running{0}, most{0};
    std::vector<int> calls(paths.size());
    std::vector<size_t> kernels(paths.size());
    std::mutex m;
    read_traces(paths, o, [&](size_t i, StatusOr<Trace> t) {
      const int now = ++running;
      int seen = most.load();
      while (now > seen && !most.compare_exchange_weak(seen, now)) {
      }
      std::lock_guard lock(m);
      ++calls[i];
      kernels[i] = t.ok() ? t->kernels.size() : 0;
      --running;
    });
    for (size_t i = 0; i < paths.size(); ++i) EXPECT_EQ(calls[i], 1) << i;
    for (int r = 0; r < 5; ++r) EXPECT_EQ(kernels[r], static_cast<size_t>(200 + r)) << r;
    EXPECT_EQ(progress.files_done.load(), paths.size());
    // A budget of one byte admits one trace at a time (one always fits).
    if (budget == 1) {
      EXPECT_EQ(most.load(), 1);
    }
  }
}

TEST(JobReader, EstimatesFromTheGzipTrailer) {
  TempDir dir;
  const std::string plain = dir.file("a.json");
  std::ofstream(plain) << std::string(1000000, ' ');
  EXPECT_EQ(estimated_read_bytes(plain), (48ull << 20) + 400000);
  EXPECT_GT(default_memory_budget(), 0u);
}

}  // namespace
}  // namespace gpuscope
