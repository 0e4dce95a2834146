// What each host thread was doing at every moment, flattened from its nested ops, annotations
// and CUDA API calls into non-overlapping segments with flags; plus the links from GPU work
// back to the API call and op that launched it. Built once per trace, used by the idle
// attribution, precision and FLOP attribution.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/host_marks.h"
#include "core/intervals.h"
#include "core/trace.h"

namespace gpuscope {

enum HostFlag : uint16_t {
  kHostMemcpy = 1 << 0,      // Inside a copy/set API call.
  kHostAlloc = 1 << 1,       // Inside an allocation or free.
  kHostInput = 1 << 2,       // Inside data loading (DataLoader and similar annotations).
  kHostCollective = 1 << 3,  // Inside a collective (NCCL, c10d).
  kHostLaunch = 1 << 4,      // Inside an op or API call that issues GPU work, or dispatching.
  kHostBlocking = 1 << 5,    // Blocked waiting for the GPU (synchronize, .item(), blocking copy).
  kHostOptimizer = 1 << 6,   // Inside an optimizer step.
  // Inside a range known to issue GPU work (forward, backward, optimizer step): host time
  // there that no op or API call covers is dispatch (launch overhead), however long.
  kHostIssuing = 1 << 7,
  kHostAnnotationOnly = 1 << 8,  // Only annotations cover the moment (no op or API call).
  // Inside a call that is not what the program does every step (one_off_api_calls), or inside
  // a CUDA graph capture (cudaStreamBeginCapture .. cudaStreamEndCapture: the captured launches
  // run nothing; the graph's replays do the work): start-up, left out of the estimates.
  kHostOneOff = 1 << 9,
  // Inside a copy call whose device copy moves little (under kSmallCopyBytes) or stays on the
  // device: the host waits there for the GPU (a blocking read of a scalar is a
  // synchronisation), it does not move data that pinned memory would move faster.
  kHostCopyWait = 1 << 10,
};
inline constexpr uint64_t kSmallCopyBytes = 64 * 1024;

// Launch and allocation calls (trace.api_calls, by index) that are one-off outliers: longer
// than kOneOffMinNs and more than kOneOffFactor times the median of their kind (the calls of
// the same name where there are at least 3, else those of the same class). A steady-state loop
// repeats its calls; a call a hundred times longer than its peers is start-up (first-launch
// module loading, context creation) or teardown (a driver's final cudaFree), whatever the
// thresholds' exact values. Other classes are left alone: a synchronisation or a blocking copy
// lasts as long as the GPU work it waits for.
inline constexpr int64_t kOneOffMinNs = 1'000'000;
inline constexpr double kOneOffFactor = 100.0;
std::vector<bool> one_off_api_calls(const Trace& trace);

// The flags a host event (op or annotation) of this name sets by itself, before nesting.
uint16_t host_event_flags(std::string_view name);
// The flags an API call sets by itself, before nesting.
uint16_t api_call_flags(ApiClass api_class, std::string_view name);

// A sample of the Python stack of the thread that issues GPU work (gpuscope's Python
// bootstrap marks them as NVTX marks "gpuscope.py#<tag>;<frames>", run_protocol.h; parsed by
// host_marks.h).
struct PySample {
  int64_t time_ns = 0;
  StringId name = 0;  // The whole mark name.
  bool data = false;  // A data-loading frame (torch.utils.data) was on the stack.
};
// A sample describes the stack from its time until the next sample, for at most this long
// (the bootstrap samples at 100 Hz by default).
inline constexpr int64_t kPySampleMaxAgeNs = 50'000'000;

struct HostSegment {
  int64_t start_ns = 0;
  int64_t end_ns = 0;
  uint16_t flags = 0;
  StringId name = 0;  // Innermost event; 0 when no op or API call covers the moment.
};

struct ThreadTimeline {
  int32_t pid = 0;
  int32_t tid = 0;
  int64_t first_ns = 0;  // Host information covers [first_ns, last_ns).
  int64_t last_ns = 0;
  int64_t launches = 0;               // Kernel launches and copies issued.
  int64_t kernel_launches = 0;        // Of them, kernel launches.
  std::vector<HostSegment> segments;  // Sorted, non-overlapping; gaps have no events at all.
  // The segment covering t, or nullptr.
  const HostSegment* at(int64_t t) const;
};

// Gaps shorter than this between ops, with no op or API call on the thread, are framework
// dispatch between launches (Python and C++ overhead), counted as launch overhead.
inline constexpr int64_t kDispatchGapNs = 50'000;

class HostIndex {
 public:
  explicit HostIndex(const Trace& trace);

  // Index into Trace::api_calls of the call with this correlation id, or -1.
  int64_t api_for_correlation(std::optional<uint64_t> correlation) const;
  // Innermost op with recorded shapes enclosing an API call, or -1.
  int64_t owner_op(size_t api_index) const { return api_owner_op_[api_index]; }
  // Flags of everything enclosing an API call (e.g. kHostOptimizer).
  uint16_t context_flags(size_t api_index) const { return api_context_flags_[api_index]; }
  const ThreadTimeline* thread(int32_t pid, int32_t tid) const;
  // The thread that launched the most GPU work, or nullptr without host events.
  const ThreadTimeline* main_thread() const;
  const std::vector<ThreadTimeline>& threads() const { return threads_; }
  // The Python stack sample describing moment t (the latest at or before t, at most
  // kPySampleMaxAgeNs old), or nullptr.
  const PySample* py_sample_at(int64_t t) const;
  // The time of the first sample after t, or INT64_MAX.
  int64_t next_py_sample_after(int64_t t) const;
  // When some thread of process `pid` is inside a host-side collective (merged, sorted; empty
  // for an unknown pid): a collective range, such as gloo's "gloo:all_reduce" on its worker
  // thread; or, in a process the Python bootstrap marked as running CUDA tensors' collectives on
  // gloo, a thread that launches no kernels between a synchronisation and the copy back that
  // follows it (the all-reduce on the CPU).
  const std::vector<Interval>& collectives(int32_t pid) const;
  // The bootstrap's host marks (data loading, process group, the trace window), parsed once.
  const HostMarks& marks() const { return marks_; }

 private:
  void build_thread(const Trace& trace, ThreadTimeline& timeline, std::vector<struct HostItem>& items);
  void build_collectives(const Trace& trace);
  std::vector<ThreadTimeline> threads_;
  std::unordered_map<uint64_t, size_t> thread_by_key_;
  std::unordered_map<uint64_t, uint32_t> api_by_correlation_;
  std::vector<int64_t> api_owner_op_;
  std::vector<uint16_t> api_context_flags_;
  std::vector<PySample> py_samples_;                                // Sorted by time.
  std::unordered_map<int32_t, std::vector<Interval>> collectives_;  // By pid: merged, sorted.
  HostMarks marks_;
};

}  // namespace gpuscope
