// Throughput and memory of `gpuscope analyze` on a large synthetic Kineto trace.
//
// The trace imitates what PyTorch writes (same categories, args and layout): per iteration a
// cpu_op with shapes, a launch call, a kernel with its args, an ac2g flow pair. The file is
// written once to $TMPDIR (GPUSCOPE_BENCH_EVENTS events, default 5.2M) and read per iteration.
// Counters: events/s (all JSON events, flows included) and peak RSS after the run, against
// the uncompressed size.
#include <benchmark/benchmark.h>
#include <sys/resource.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include <fmt/core.h>

#include "core/analysis.h"
#include "input/kineto_reader.h"

namespace {

namespace fs = std::filesystem;

struct BenchTrace {
  std::string path;
  int64_t events = 0;
  uint64_t bytes = 0;
};

const BenchTrace& bench_trace() {
  static const BenchTrace trace = [] {
    BenchTrace t;
    const char* env = std::getenv("GPUSCOPE_BENCH_EVENTS");
    const int64_t target = env ? std::atoll(env) : 5'200'000;
    t.path = (fs::temp_directory_path() / fmt::format("gpuscope_bench_{}.json", target)).string();
    const int64_t groups = target / 5;
    t.events = groups * 5 + 1;
    if (!fs::exists(t.path)) {
      std::FILE* f = std::fopen(t.path.c_str(), "w");
      fmt::print(f,
                 "{{\n  \"schemaVersion\": 1,\n  \"deviceProperties\": [\n    {{\"id\": 0, \"name\": \"NVIDIA H200\", "
                 "\"totalGlobalMem\": 150754820096, \"computeMajor\": 9, \"computeMinor\": 0, \"numSms\": 132}}\n  ],\n"
                 "  \"traceEvents\": [\n");
      fmt::print(
          f,
          "  {{\"ph\": \"X\", \"cat\": \"user_annotation\", \"name\": \"ProfilerStep#1\", \"pid\": 7, \"tid\": 7, "
          "\"ts\": 5000000000000.000, \"dur\": {}}}",
          groups * 10 + 100);
      const char* kernels[] = {
          "nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_NNT",
          "void at::native::vectorized_elementwise_kernel<4, at::native::GeluCUDAKernelImpl(at::TensorIteratorBase&, "
          "at::native::GeluType)::{lambda()#2}::operator()() const::{lambda()#2}::operator()() const::{lambda(c10::"
          "BFloat16)#1}, std::array<char*, 2ul> >(int, at::native::GeluCUDAKernelImpl, std::array<char*, 2ul>)",
          "void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<float, float, false>(int, float, "
          "float const*, float const*, float const*, float*, float*, float*)"};
      for (int64_t i = 0; i < groups; ++i) {
        const double ts = 5000000000001.0 + static_cast<double>(i) * 10.0;
        const int64_t corr = 1000 + i;
        fmt::print(
            f,
            ",\n  {{\n    \"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"aten::mm\", \"pid\": 7, \"tid\": 7,\n"
            "    \"ts\": {:.3f}, \"dur\": 6.125,\n    \"args\": {{\n      \"External id\": {}, \"Sequence number\": "
            "{}, \"Fwd thread id\": 0, \"Record function id\": 0, \"Input Dims\": [[16384, 768], [768, 3072]], "
            "\"Input type\": [\"c10::BFloat16\", \"c10::BFloat16\"], \"Input Strides\": [[768, 1], [1, 768]], "
            "\"Ev Idx\": {}\n    }}\n  }}",
            ts, i, i, i);
        fmt::print(
            f,
            ",\n  {{\n    \"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"cudaLaunchKernel\", \"pid\": 7, "
            "\"tid\": 7,\n    \"ts\": {:.3f}, \"dur\": 4.5,\n    \"args\": {{\n      \"External id\": {}, \"cbid\": "
            "211, \"correlation\": {}\n    }}\n  }}",
            ts + 1, i, corr);
        fmt::print(
            f,
            ",\n  {{\n    \"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"{}\", \"pid\": 0, \"tid\": 7,\n    "
            "\"ts\": {:.3f}, \"dur\": 7.25,\n    \"args\": {{\n      \"External id\": {}, \"queued\": 0, \"device\": "
            "0, \"context\": 1, \"stream\": 7, \"correlation\": {}, \"registers per thread\": 168, \"shared "
            "memory\": 214016, \"blocks per SM\": 0.969697, \"warps per SM\": 3.878788, \"grid\": [128, 1, 1], "
            "\"block\": [384, 1, 1], \"est. achieved occupancy %\": 6\n    }}\n  }}",
            kernels[i % 3], ts + 2, i, corr);
        fmt::print(f,
                   ",\n  {{\n    \"ph\": \"s\", \"id\": {}, \"pid\": 7, \"tid\": 7, \"ts\": {:.3f},\n    \"cat\": "
                   "\"ac2g\", \"name\": \"ac2g\"\n  }}",
                   corr, ts + 1);
        fmt::print(f,
                   ",\n  {{\n    \"ph\": \"f\", \"id\": {}, \"pid\": 0, \"tid\": 7, \"ts\": {:.3f},\n    \"cat\": "
                   "\"ac2g\", \"name\": \"ac2g\", \"bp\": \"e\"\n  }}",
                   corr, ts + 2);
      }
      fmt::print(f, "\n  ],\n  \"traceName\": \"bench\"\n}}\n");
      std::fclose(f);
    }
    t.bytes = fs::file_size(t.path);
    return t;
  }();
  return trace;
}

double peak_rss_bytes() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_maxrss) * 1024.0;
}

void BM_ReadKineto(benchmark::State& state) {
  const BenchTrace& t = bench_trace();
  for (auto _ : state) {
    auto trace = gpuscope::read_kineto_file(t.path);
    if (!trace.ok()) state.SkipWithError(trace.status().message().c_str());
    benchmark::DoNotOptimize(trace);
  }
  state.counters["events_per_s"] =
      benchmark::Counter(static_cast<double>(t.events), benchmark::Counter::kIsIterationInvariantRate);
  state.counters["MB_per_s"] =
      benchmark::Counter(static_cast<double>(t.bytes) / 1e6, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["json_MB"] = static_cast<double>(t.bytes) / 1e6;
  state.counters["peak_rss_MB"] = peak_rss_bytes() / 1e6;
  state.counters["peak_rss_vs_json"] = peak_rss_bytes() / static_cast<double>(t.bytes);
}
BENCHMARK(BM_ReadKineto)->Unit(benchmark::kMillisecond)->Iterations(1)->Repetitions(3)->ReportAggregatesOnly(false);

void BM_ReadAndAnalyze(benchmark::State& state) {
  const BenchTrace& t = bench_trace();
  for (auto _ : state) {
    auto trace = gpuscope::read_kineto_file(t.path);
    if (!trace.ok()) state.SkipWithError(trace.status().message().c_str());
    auto reports = gpuscope::analyze_trace(trace.value(), {});
    benchmark::DoNotOptimize(reports);
  }
  state.counters["events_per_s"] =
      benchmark::Counter(static_cast<double>(t.events), benchmark::Counter::kIsIterationInvariantRate);
  state.counters["peak_rss_MB"] = peak_rss_bytes() / 1e6;
  state.counters["peak_rss_vs_json"] = peak_rss_bytes() / static_cast<double>(t.bytes);
}
BENCHMARK(BM_ReadAndAnalyze)->Unit(benchmark::kMillisecond)->Iterations(1)->Repetitions(2);

}  // namespace

BENCHMARK_MAIN();
