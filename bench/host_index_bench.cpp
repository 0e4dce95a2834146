// Cost of building the host index (HostIndex: the per-thread segments of nested ops,
// annotations and API calls) on synthetic traces of one thread. 160k nested ranges
// took over 100 s when every boundary walked the whole stack of open ranges.
#include <benchmark/benchmark.h>

#include <cstdint>

#include <fmt/core.h>

#include "core/host_index.h"
#include "core/test_builder.h"

namespace {

using gpuscope::HostIndex;
using gpuscope::Trace;
using gpuscope::testing::TraceBuilder;

// `depth` annotations nested inside each other (record_function in a deep recursion).
Trace nested_annotations(int64_t depth) {
  TraceBuilder b;
  const double d = static_cast<double>(depth);
  for (int64_t i = 0; i < depth; ++i) {
    b.annotation(static_cast<double>(i), 4 * d - static_cast<double>(i), fmt::format("level {}", i));
  }
  return b.build();
}

// `depth` nested ranges alternating annotation and op with shapes, each level with a launch
// call of its own before the next level opens: every launch sees the whole stack.
Trace nested_mixed(int64_t depth) {
  TraceBuilder b;
  const double d = static_cast<double>(depth);
  for (int64_t i = 0; i < depth; ++i) {
    const double start = 4.0 * static_cast<double>(i);
    const double end = 16 * d - start;
    if (i % 2 == 0) {
      b.annotation(start, end, "level");
    } else {
      b.op(start, end, "aten::linear", {{8, 8}}, "float");
    }
    b.api(start + 1, start + 2, "cudaLaunchKernel");
  }
  return b.build();
}

// The common shape: `n` consecutive ops, each with one launch call, under one step marker.
Trace flat_ops(int64_t n) {
  TraceBuilder b;
  const double len = static_cast<double>(n) * 10;
  b.annotation(0, len + 10, "ProfilerStep#1");
  for (int64_t i = 0; i < n; ++i) {
    const double t = 1.0 + static_cast<double>(i) * 10;
    b.op(t, t + 8, "aten::mm", {{64, 64}, {64, 64}}, "float");
    b.api(t + 2, t + 5, "cudaLaunchKernel");
  }
  return b.build();
}

template <Trace (*Make)(int64_t)>
void BM_HostIndex(benchmark::State& state) {
  const Trace trace = Make(state.range(0));
  size_t segments = 0;
  for (auto _ : state) {
    const HostIndex index(trace);
    segments = index.threads().front().segments.size();
    benchmark::DoNotOptimize(segments);
  }
  state.counters["host_items"] = static_cast<double>(trace.host_events.size() + trace.api_calls.size());
  state.counters["segments"] = static_cast<double>(segments);
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(trace.host_events.size() + trace.api_calls.size()));
}

BENCHMARK_TEMPLATE(BM_HostIndex, nested_annotations)
    ->Arg(10'000)
    ->Arg(20'000)
    ->Arg(40'000)
    ->Arg(80'000)
    ->Arg(160'000)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_TEMPLATE(BM_HostIndex, nested_mixed)
    ->Arg(10'000)
    ->Arg(20'000)
    ->Arg(40'000)
    ->Arg(80'000)
    ->Arg(160'000)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_TEMPLATE(BM_HostIndex, flat_ops)->Arg(1'000'000)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
