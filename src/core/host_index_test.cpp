// HostIndex (host_index.cpp) against a reference: the straightforward algorithm it replaced,
// which walks the whole stack of open items at every item and every boundary (O(n x depth)).
// Random traces of nested and overlapping annotations, ops and API calls of every class on
// several threads must give identical segments, flags, names, owners and context flags.
#include "core/host_index.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <random>
#include <string>
#include <vector>

#include "core/run_protocol.h"
#include "core/test_builder.h"

namespace gpuscope {
namespace {

using testing::TraceBuilder;

struct RefItem {
  int64_t start_ns;
  int64_t end_ns;
  StringId name;
  uint16_t flags;
  bool is_api;
  bool is_op;
  uint32_t index;
};

struct RefThread {
  int32_t pid = 0;
  int32_t tid = 0;
  int64_t first_ns = 0;
  int64_t last_ns = 0;
  int64_t launches = 0;
  std::vector<HostSegment> segments;
};

struct RefIndex {
  std::vector<RefThread> threads;
  std::vector<int64_t> owner_op;
  std::vector<uint16_t> context_flags;
};

std::pair<uint16_t, StringId> ref_segment_label(const Trace& trace, const std::vector<RefItem*>& stack,
                                                int64_t duration_ns) {
  uint16_t flags = 0;
  StringId name = 0;
  int depth_ops = 0;
  for (const RefItem* s : stack) {
    flags |= s->flags;
    if (s->is_op || s->is_api) {
      ++depth_ops;
      name = s->name;
    }
  }
  if (depth_ops == 0) {
    for (const RefItem* s : stack) name = s->name;
    if (trace.strings.view(name).starts_with("ProfilerStep#")) name = 0;
    flags &= static_cast<uint16_t>(~kHostLaunch);
    flags |= kHostAnnotationOnly;
    if (duration_ns <= kDispatchGapNs || (flags & kHostIssuing)) flags |= kHostLaunch;
  }
  return {flags, name};
}

void ref_build_thread(const Trace& trace, RefIndex& index, RefThread& timeline, std::vector<RefItem>& items) {
  // The same sort as HostIndex::build_thread on the same input order, so items that tie
  // (same start and end) come out in the same order.
  std::sort(items.begin(), items.end(), [](const RefItem& a, const RefItem& b) {
    return a.start_ns != b.start_ns ? a.start_ns < b.start_ns : a.end_ns > b.end_ns;
  });
  if (items.empty()) return;
  timeline.first_ns = items.front().start_ns;
  timeline.last_ns = 0;
  for (const auto& it : items) timeline.last_ns = std::max(timeline.last_ns, it.end_ns);

  std::vector<RefItem*> stack;
  for (RefItem& item : items) {
    std::erase_if(stack, [&](const RefItem* s) { return s->end_ns <= item.start_ns; });
    if (item.is_api) {
      const ApiClass cls = trace.api_calls[item.index].api_class;
      uint16_t context = 0;
      for (RefItem* s : stack) context |= s->flags;
      index.context_flags[item.index] = context;
      for (auto it = stack.rbegin(); it != stack.rend(); ++it) {
        if ((*it)->is_op && trace.host_events[(*it)->index].num_args > 0) {
          index.owner_op[item.index] = (*it)->index;
          break;
        }
      }
      if (cls == ApiClass::kLaunch || cls == ApiClass::kMemcpy) {
        ++timeline.launches;
        for (RefItem* s : stack) {
          if (s->is_op) s->flags |= kHostLaunch;
        }
      }
    }
    stack.push_back(&item);
  }

  std::vector<int64_t> bounds;
  for (const auto& it : items) {
    bounds.push_back(it.start_ns);
    bounds.push_back(it.end_ns);
  }
  std::sort(bounds.begin(), bounds.end());
  bounds.erase(std::unique(bounds.begin(), bounds.end()), bounds.end());
  stack.clear();
  size_t next = 0;
  for (size_t k = 0; k + 1 < bounds.size(); ++k) {
    const int64_t t0 = bounds[k], t1 = bounds[k + 1];
    std::erase_if(stack, [&](const RefItem* s) { return s->end_ns <= t0; });
    while (next < items.size() && items[next].start_ns <= t0) {
      if (items[next].end_ns > t0) stack.push_back(&items[next]);
      ++next;
    }
    if (stack.empty()) continue;
    const auto [flags, name] = ref_segment_label(trace, stack, t1 - t0);
    if (!timeline.segments.empty() && timeline.segments.back().end_ns == t0 &&
        timeline.segments.back().flags == flags && timeline.segments.back().name == name) {
      timeline.segments.back().end_ns = t1;
    } else {
      timeline.segments.push_back({t0, t1, flags, name});
    }
  }
}

RefIndex reference_index(const Trace& trace) {
  RefIndex index;
  index.owner_op.assign(trace.api_calls.size(), -1);
  index.context_flags.assign(trace.api_calls.size(), 0);
  std::vector<std::vector<RefItem>> items_by_thread;
  auto items_for = [&](int32_t pid, int32_t tid) -> std::vector<RefItem>& {
    for (size_t i = 0; i < index.threads.size(); ++i) {
      if (index.threads[i].pid == pid && index.threads[i].tid == tid) return items_by_thread[i];
    }
    index.threads.push_back(RefThread{pid, tid});
    return items_by_thread.emplace_back();
  };
  for (uint32_t i = 0; i < trace.host_events.size(); ++i) {
    const HostEvent& e = trace.host_events[i];
    const std::string_view name = trace.strings.view(e.name);
    if (e.kind == HostEventKind::kAnnotation && e.end_ns == e.start_ns &&
        name.starts_with(run_protocol::kPySampleMark.prefix)) {
      continue;
    }
    uint16_t flags = host_event_flags(name);
    // An optimizer step during which another thread of the process launches a kernel holds a
    // backward (a closure): not optimizer arithmetic.
    for (const ApiCall& c : trace.api_calls) {
      if (c.api_class == ApiClass::kLaunch && c.pid == e.pid && c.tid != e.tid && c.start_ns >= e.start_ns &&
          c.start_ns < e.end_ns)
        flags &= static_cast<uint16_t>(~kHostOptimizer);
    }
    items_for(e.pid, e.tid).push_back({e.start_ns, e.end_ns, e.name, flags, false, e.kind == HostEventKind::kOp, i});
  }
  for (uint32_t i = 0; i < trace.api_calls.size(); ++i) {
    const ApiCall& c = trace.api_calls[i];
    items_for(c.pid, c.tid)
        .push_back(
            {c.start_ns, c.end_ns, c.name, api_call_flags(c.api_class, trace.strings.view(c.name)), true, false, i});
  }
  for (size_t t = 0; t < index.threads.size(); ++t)
    ref_build_thread(trace, index, index.threads[t], items_by_thread[t]);
  return index;
}

// Compares everything HostIndex computes; returns the number of differences (all reported).
int compare(const Trace& trace, const HostIndex& got, const RefIndex& want) {
  int diffs = 0;
  auto check = [&](bool same, const std::string& what) {
    if (!same) {
      ++diffs;
      ADD_FAILURE() << what;
    }
  };
  check(got.threads().size() == want.threads.size(), "thread count");
  for (size_t t = 0; t < std::min(got.threads().size(), want.threads.size()); ++t) {
    const ThreadTimeline& g = got.threads()[t];
    const RefThread& w = want.threads[t];
    const std::string at = "thread " + std::to_string(w.tid) + ": ";
    check(g.pid == w.pid && g.tid == w.tid, at + "pid/tid");
    check(g.first_ns == w.first_ns && g.last_ns == w.last_ns, at + "first/last");
    check(g.launches == w.launches, at + "launches");
    check(g.segments.size() == w.segments.size(),
          at + "segment count " + std::to_string(g.segments.size()) + " vs " + std::to_string(w.segments.size()));
    for (size_t i = 0; i < std::min(g.segments.size(), w.segments.size()); ++i) {
      const HostSegment& a = g.segments[i];
      const HostSegment& b = w.segments[i];
      check(a.start_ns == b.start_ns && a.end_ns == b.end_ns && a.flags == b.flags && a.name == b.name,
            at + "segment " + std::to_string(i) + " [" + std::to_string(a.start_ns) + ", " + std::to_string(a.end_ns) +
                ") flags " + std::to_string(a.flags) + " name '" + std::string(trace.strings.view(a.name)) + "' vs [" +
                std::to_string(b.start_ns) + ", " + std::to_string(b.end_ns) + ") flags " + std::to_string(b.flags) +
                " name '" + std::string(trace.strings.view(b.name)) + "'");
    }
  }
  for (size_t i = 0; i < trace.api_calls.size(); ++i) {
    check(got.owner_op(i) == want.owner_op[i], "owner of API call " + std::to_string(i));
    check(got.context_flags(i) == want.context_flags[i], "context flags of API call " + std::to_string(i));
  }
  return diffs;
}

constexpr std::array<std::string_view, 9> kAnnotations = {"ProfilerStep#3",
                                                          "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__",
                                                          "nccl:all_reduce",
                                                          "Optimizer.step#AdamW.step",
                                                          "gpuscope.forward#Block",
                                                          "gpuscope.backward",
                                                          "my_range",
                                                          "train_step",
                                                          "ProfilerStep#4"};
constexpr std::array<std::string_view, 6> kOps = {"aten::mm",     "aten::item",
                                                  "aten::linear", "c10d::allreduce_",
                                                  "aten::copy_",  "autograd::engine::evaluate_function: MmBackward0"};
// Every ApiClass: launch, sync, copy (blocking and async), alloc, other.
constexpr std::array<std::string_view, 11> kApis = {"cudaLaunchKernel",
                                                    "cuLaunchKernel",
                                                    "cudaGraphLaunch",
                                                    "cudaStreamSynchronize",
                                                    "cudaDeviceSynchronize",
                                                    "cudaMemcpy",
                                                    "cudaMemcpyAsync",
                                                    "cudaMemsetAsync",
                                                    "cudaMalloc",
                                                    "cudaFree",
                                                    "cudaGetDevice"};

// A random trace: per thread, a properly nested tree of ranges (sharing boundaries, some
// identical) plus ranges placed at random, which overlap without nesting; some of zero length.
Trace random_trace(std::mt19937& rng) {
  TraceBuilder b;
  auto uniform = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  auto add = [&](int start, int end, int tid) {
    const int kind = uniform(0, 9);
    if (kind < 3) {
      b.annotation(start, end, kAnnotations[static_cast<size_t>(uniform(0, static_cast<int>(kAnnotations.size()) - 1))],
                   tid);
    } else if (kind < 6) {
      const auto name = kOps[static_cast<size_t>(uniform(0, static_cast<int>(kOps.size()) - 1))];
      if (uniform(0, 1)) {
        b.op(start, end, name, {{4, 4}}, "float", tid);
      } else {
        b.op(start, end, name, {}, "", tid);
      }
    } else {
      b.api(start, end, kApis[static_cast<size_t>(uniform(0, static_cast<int>(kApis.size()) - 1))], tid);
    }
  };
  const int threads = uniform(1, 3);
  for (int tid = 1; tid <= threads; ++tid) {
    const int span = uniform(20, 400);  // Microseconds: segments on both sides of kDispatchGapNs.
    // Nested: split [lo, hi) into children recursively.
    std::vector<std::pair<int, int>> todo = {{0, span}};
    int budget = uniform(5, 120);
    while (!todo.empty() && budget > 0) {
      const auto [lo, hi] = todo.back();
      todo.pop_back();
      add(lo, hi, tid);
      --budget;
      int at = lo;
      while (at < hi && budget > 0 && uniform(0, 3) > 0) {
        const int start = uniform(at, hi);
        const int end = uniform(start, hi);
        todo.emplace_back(start, end);
        at = end;
      }
    }
    const int loose = uniform(0, 15);
    for (int i = 0; i < loose; ++i) {
      const int start = uniform(0, span);
      add(start, start + uniform(0, span / 2), tid);
    }
    if (uniform(0, 3) == 0) {  // A Python stack sample: not a range.
      const int at = uniform(0, span);
      b.annotation(at, at, "gpuscope.py#data;a.py:3 f", tid);
    }
  }
  return b.build();
}

// Data loading by name: PyTorch's and common loader names anywhere in a name, a program's own
// input range by its whole name only.
TEST(HostIndex, InputRangesByName) {
  for (std::string_view n : {"enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", "input", "Input", "data",
                             "load_batch", "get_batch"}) {
    EXPECT_TRUE(host_event_flags(n) & kHostInput) << n;
  }
  for (std::string_view n : {"input_layernorm", "aten::embedding", "inputs_embeds", "metadata", "step"}) {
    EXPECT_FALSE(host_event_flags(n) & kHostInput) << n;
  }
}

TEST(HostIndex, MatchesTheReferenceOnRandomTraces) {
  std::mt19937 rng(20261201);
  int nonempty = 0;
  for (int trial = 0; trial < 1500; ++trial) {
    const Trace trace = random_trace(rng);
    const HostIndex got(trace);
    const RefIndex want = reference_index(trace);
    ASSERT_EQ(compare(trace, got, want), 0) << "trial " << trial;
    for (const auto& t : want.threads) nonempty += t.segments.empty() ? 0 : 1;
  }
  EXPECT_GT(nonempty, 1000);
}

// The random traces do reach the cases that matter: ranges that overlap without nesting, ops
// marked launching by a call inside them, API calls with an owner op.
TEST(HostIndex, RandomTracesCoverOverlapsLaunchesAndOwners) {
  std::mt19937 rng(20261201);
  int crossing = 0, launching_ops = 0, owned = 0;
  for (int trial = 0; trial < 200; ++trial) {
    const Trace trace = random_trace(rng);
    const HostIndex index(trace);
    for (size_t i = 0; i < trace.api_calls.size(); ++i) owned += index.owner_op(i) >= 0;
    for (const auto& t : index.threads()) {
      for (const auto& s : t.segments) {
        const bool op = std::find(kOps.begin(), kOps.end(), trace.strings.view(s.name)) != kOps.end();
        launching_ops += op && (s.flags & kHostLaunch);
      }
    }
    for (const auto& a : trace.host_events) {
      for (const auto& n : trace.host_events) {
        crossing += a.tid == n.tid && n.start_ns > a.start_ns && n.start_ns < a.end_ns && n.end_ns > a.end_ns;
      }
    }
  }
  EXPECT_GT(crossing, 50);
  EXPECT_GT(launching_ops, 500);
  EXPECT_GT(owned, 200);
}

// 160k nested annotations once took over 100 s (bench/host_index_bench.cpp
// measures it). Annotation i spans [i, 4d - i) us: d - 1 one-microsecond segments going in,
// the innermost one's long middle, d - 1 coming out.
TEST(HostIndex, DeepNesting) {
  constexpr int kDepth = 160'000;
  TraceBuilder b;
  for (int i = 0; i < kDepth; ++i) b.annotation(i, 4 * kDepth - i, "level " + std::to_string(i));
  const Trace trace = b.build();
  const HostIndex index(trace);
  ASSERT_EQ(index.threads().size(), 1u);
  const auto& segments = index.threads().front().segments;
  ASSERT_EQ(segments.size(), 2u * kDepth - 1);
  const HostSegment& middle = segments[kDepth - 1];
  EXPECT_EQ(middle.start_ns, TraceBuilder::ns(kDepth - 1));
  EXPECT_EQ(middle.end_ns, TraceBuilder::ns(3 * kDepth + 1));
  EXPECT_EQ(trace.strings.view(middle.name), "level " + std::to_string(kDepth - 1));
  EXPECT_EQ(middle.flags, kHostAnnotationOnly);  // Long: not dispatch.
  EXPECT_EQ(trace.strings.view(segments.back().name), "level 0");
  EXPECT_EQ(segments.back().flags, kHostAnnotationOnly | kHostLaunch);  // 1 us: dispatch.
}

// A deep stack of ops with shapes, a launch call at the innermost: every op is marked
// launching and the call is owned by the innermost op. (Small enough for the reference.)
TEST(HostIndex, DeepOpsAllLearnTheLaunch) {
  constexpr int kDepth = 3'000;
  TraceBuilder b;
  for (int i = 0; i < kDepth; ++i) b.op(i, 4 * kDepth - i, "aten::linear", {{2, 2}}, "float");
  b.api(2 * kDepth, 2 * kDepth + 1, "cudaLaunchKernel");
  const Trace trace = b.build();
  const HostIndex index(trace);
  EXPECT_EQ(index.owner_op(0), kDepth - 1);
  for (const auto& s : index.threads().front().segments) EXPECT_TRUE(s.flags & kHostLaunch);
  const RefIndex want = reference_index(trace);
  EXPECT_EQ(compare(trace, index, want), 0);
}

}  // namespace
}  // namespace gpuscope
