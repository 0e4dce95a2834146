#include "core/idle.h"

#include <algorithm>
#include <array>
#include <limits>
#include <optional>
#include <string_view>
#include <unordered_map>
#include <utility>

#include "core/run_protocol.h"

namespace gpuscope {
namespace {

constexpr int kTimelineBuckets = 96;
constexpr StringId kDeviceCopyName = 0xFFFFFFFFu;

struct CauseAccumulator {
  int64_t ns = 0;
  double tracing_ns = 0;                          // Of ns, what the tracer's measured launch cost explains.
  int64_t optimizer_ns = 0;                       // Of ns, inside an optimizer step.
  int64_t one_off_ns = 0;                         // Of ns, inside a one-off call or a graph capture.
  std::unordered_map<StringId, int64_t> by_name;  // 0 = outside ops; kDeviceCopyName = device copy.
  // Of by_name, the time between GPU calls at most kIssuingStretchNs apart (GpuCalls).
  std::unordered_map<StringId, int64_t> issuing_by_name;
};
using Accumulators = std::array<CauseAccumulator, kNumIdleCauses>;

// Time per state in equal slices of the window, for the timeline picture: index 0 is
// "kernels running", 1 + IdleCauseId the idle causes.
class TimelineBuckets {
 public:
  static constexpr size_t kStates = 1 + kNumIdleCauses;
  TimelineBuckets(int64_t start, int64_t end, int buckets)
      : start_(start),
        width_(std::max<double>(1.0, static_cast<double>(end - start) / buckets)),
        time_(static_cast<size_t>(buckets), std::array<double, kStates>{}) {}
  void add_kernels(int64_t a, int64_t b) { add(0, a, b); }
  void add_idle(IdleCauseId cause, int64_t a, int64_t b) { add(1 + static_cast<size_t>(cause), a, b); }
  // One letter per bucket: the state that filled most of it.
  std::string letters() const {
    std::string out;
    for (const auto& t : time_) {
      const auto state = static_cast<size_t>(std::max_element(t.begin(), t.end()) - t.begin());
      out += state == 0 ? kTimelineKernelLetter : kIdleCauseTable[state - 1].letter;
    }
    return out;
  }

 private:
  void add(size_t state, int64_t a, int64_t b) {
    while (a < b) {
      const auto k = std::min(time_.size() - 1, static_cast<size_t>(static_cast<double>(a - start_) / width_));
      const auto bucket_end = static_cast<int64_t>(static_cast<double>(start_) + width_ * static_cast<double>(k + 1));
      const int64_t e = k + 1 == time_.size() ? b : std::min(b, std::max(bucket_end, a + 1));
      time_[k][state] += static_cast<double>(e - a);
      a = e;
    }
  }
  int64_t start_;
  double width_;
  std::vector<std::array<double, kStates>> time_;
};

// What the host thread was doing when a gap began: blocked waiting for the GPU, or stalled in
// an allocation (cudaFree synchronises implicitly)? Then that, not what the host does next, is
// why the queue ran dry.
struct GapStart {
  bool in_sync = false;
  bool in_alloc = false;
};

GapStart gap_start(const ThreadTimeline* thread, const Interval& gap) {
  GapStart g;
  if (!thread) return g;
  for (int64_t probe : {gap.start_ns, std::min(gap.end_ns - 1, gap.start_ns + 20'000)}) {
    const HostSegment* s = thread->at(probe);
    if (s && (s->flags & kHostBlocking)) g.in_sync = true;
    if (s && (s->flags & kHostAlloc)) g.in_alloc = true;
  }
  return g;
}

// The rule (docs/design.md, "Idle attribution"): the first that applies wins. `flags` are the
// host segment's at that moment (0 outside segments).
// `sample` is the Python stack sample of the moment, if any: a data-loading frame on it is
// evidence of input; otherwise host code with no evidence of data loading is `host`, never
// `input`.
// `collective` is true while another thread of the process is inside a host-side collective
// (HostIndex::collectives): the thread that launches next waits on it (inside backward, on a
// synchronisation, or with its next kernel queued behind the collective's event), so it explains
// the gap before anything that thread shows of its own but copies, allocations and input.
IdleCauseId idle_cause_at(bool copying, uint16_t flags, const GapStart& start, bool host_known, const PySample* sample,
                          bool collective) {
  // Blocked in a copy call that moves next to nothing (or stays on the device) with no copy
  // running: the host waits for the GPU, a synchronisation. An asynchronous one stays a copy:
  // issuing it is copy overhead, which no launch fix (a CUDA graph replays kernels, not the
  // program's uploads) removes.
  const bool waits = (flags & kHostCopyWait) && (flags & kHostBlocking);
  if (copying || ((flags & kHostMemcpy) && !waits)) return IdleCauseId::kMemcpy;
  if (waits) return IdleCauseId::kSync;
  if (flags & kHostAlloc) return IdleCauseId::kAlloc;
  if (flags & kHostInput) return IdleCauseId::kInput;
  if ((flags & kHostCollective) || collective) return IdleCauseId::kCollective;
  if (start.in_alloc) return IdleCauseId::kAlloc;
  if (start.in_sync) return IdleCauseId::kSync;
  if (flags & kHostLaunch) return IdleCauseId::kLaunch;
  if (sample && sample->data) return IdleCauseId::kInput;
  if (host_known || sample) return IdleCauseId::kHost;
  return IdleCauseId::kOther;
}

// The host thread that issues the next GPU work (or issued the previous) is the one whose
// activity explains the gap; `next` is the first kernel starting at or after its end.
const ThreadTimeline* gap_thread(const DeviceContext& ctx, std::vector<const Kernel*>::const_iterator next,
                                 const ThreadTimeline* fallback) {
  const ThreadTimeline* thread = next != ctx.device_kernels.end() ? launching_thread(ctx, *next) : nullptr;
  if (!thread && next != ctx.device_kernels.begin()) thread = launching_thread(ctx, *std::prev(next));
  if (!thread) thread = fallback;
  return thread;
}

// The GPU waited on the launch call of the kernel that ends the gap if that call was still
// running when the gap began; untraced, the call (and so the gap) is shorter by the tracer's
// measured cost per launch.
// `api` is that call's index in trace.api_calls, -1 where unknown.
double gap_tracing_ns(const DeviceContext& ctx, const Interval& gap, int64_t api) {
  if (!ctx.trace.tracing_cost) return 0;
  if (api >= 0 && ctx.trace.api_calls[static_cast<size_t>(api)].end_ns > gap.start_ns) {
    return std::min(static_cast<double>(gap.end_ns - gap.start_ns), ctx.trace.tracing_cost->added_ns());
  }
  return 0;
}

// Submission latency, with a margin (launch call return to kernel start on an idle GPU is a
// few to ~20 us, more under tracing): a kernel whose launch call returned this long ago could
// have started, so a GPU idle past it with the kernel already submitted waits on something else.
constexpr int64_t kSubmitLatencyNs = 50'000;

// From when the kernel that ends the gap was queued and could have run: its launch call's end
// plus the submission latency. After that the GPU waited on a dependency (an event of another
// stream, a host callback, CPU-side communication such as gloo, another process's kernels on
// the same GPU), not on the host to launch. INT64_MAX where the launch call is unknown.
int64_t queued_since(const DeviceContext& ctx, int64_t api) {
  if (api < 0) return std::numeric_limits<int64_t>::max();
  return ctx.trace.api_calls[static_cast<size_t>(api)].end_ns + kSubmitLatencyNs;
}

// Where the piece starting at t ends: at the next host segment or device copy boundary.
struct Piece {
  int64_t end_ns;
  const HostSegment* segment;
  bool copying;
  const PySample* sample;  // The Python stack sample of the piece, if any.
};

// Pieces end at host segment and device copy boundaries and at Python samples (each piece has
// one sample).
Piece piece_at(const DeviceContext& ctx, const ThreadTimeline* thread, int64_t t, int64_t gap_end) {
  Piece p{std::min(gap_end, ctx.host.next_py_sample_after(t)), thread ? thread->at(t) : nullptr, false,
          ctx.host.py_sample_at(t)};
  if (p.segment) {
    p.end_ns = std::min(p.end_ns, p.segment->end_ns);
  } else if (thread) {
    auto nxt = std::upper_bound(thread->segments.begin(), thread->segments.end(), t,
                                [](int64_t v, const HostSegment& s) { return v < s.start_ns; });
    if (nxt != thread->segments.end()) p.end_ns = std::min(p.end_ns, nxt->start_ns);
  }
  int64_t copy_boundary = 0;
  p.copying = inside(ctx.copy_union, t, &copy_boundary);
  p.end_ns = std::min(p.end_ns, copy_boundary);
  return p;
}

// Host code that issues GPU work runs between GPU calls: an eager model's Python lines take
// microseconds to a few hundred between launches. A stretch without any GPU call of the process
// longer than this is code that issues none (numpy, data preparation, logging), whatever Python
// sample labels it (a sample names the stack until the next one, 10 ms later).
constexpr int64_t kIssuingStretchNs = 1'000'000;

// The GPU calls (launch, copy, allocation, synchronisation: every API call but kOther) of each
// process, as sorted starts and sorted ends. Of the process, not of the thread: PyTorch launches
// the backward from its autograd thread while the Python thread waits in backward().
class GpuCalls {
 public:
  explicit GpuCalls(const Trace& trace) {
    for (const ApiCall& c : trace.api_calls) {
      if (c.api_class == ApiClass::kOther) continue;
      Calls& calls = by_pid_[c.pid];
      calls.starts.push_back(c.start_ns);
      calls.ends.push_back(c.end_ns);
    }
    for (auto& [pid, calls] : by_pid_) {
      std::sort(calls.starts.begin(), calls.starts.end());
      std::sort(calls.ends.begin(), calls.ends.end());
    }
  }
  // Whether [t, end) of process `pid` overlaps a GPU call or lies between two at most
  // kIssuingStretchNs apart.
  bool issuing_stretch(int32_t pid, int64_t t, int64_t end) const {
    const auto it = by_pid_.find(pid);
    if (it == by_pid_.end()) return false;
    const Calls& c = it->second;
    const auto begun = std::lower_bound(c.starts.begin(), c.starts.end(), end);  // Calls starting before end.
    const auto ended = std::upper_bound(c.ends.begin(), c.ends.end(), t);        // Calls ending by t.
    if (begun - c.starts.begin() > ended - c.ends.begin()) return true;          // One is running.
    if (ended == c.ends.begin() || begun == c.starts.end()) return false;
    return *begun - *std::prev(ended) <= kIssuingStretchNs;
  }

 private:
  struct Calls {
    std::vector<int64_t> starts, ends;
  };
  std::unordered_map<int32_t, Calls> by_pid_;
};

// True when a thread other than `thread` is inside a range that issues GPU work at t.
bool issuing_elsewhere(const DeviceContext& ctx, const ThreadTimeline* thread, int64_t t) {
  for (const ThreadTimeline& other : ctx.host.threads()) {
    if (&other == thread) continue;
    const HostSegment* s = other.at(t);
    if (s && (s->flags & kHostIssuing)) return true;
  }
  return false;
}

// Walks one gap in pieces bounded by host segments and device copies, charging each piece to
// its cause. The tracer's part is taken from the end of the gap backwards (it delayed the
// launch that ended it), so no cause is charged more than it has.
// `fallback` is the thread that explains gaps with no launching thread.
// Returns whether the gap ended as a host wait's (it began in one, or a chained wait took it).
bool attribute_gap(const DeviceContext& ctx, const GpuCalls& calls, const Interval& gap, const ThreadTimeline* fallback,
                   bool chained, Accumulators& acc, TimelineBuckets& timeline, std::vector<IdleInterval>& intervals,
                   std::unordered_map<StringId, int64_t>& one_off_by_name) {
  auto next = std::lower_bound(ctx.device_kernels.begin(), ctx.device_kernels.end(), gap.end_ns,
                               [](const Kernel* k, int64_t t) { return k->start_ns < t; });
  const ThreadTimeline* thread = gap_thread(ctx, next, fallback);
  // The launch call of the kernel that ends the gap.
  const int64_t api = next != ctx.device_kernels.end() ? ctx.host.api_for_correlation((*next)->correlation) : -1;
  double tracing_ns = gap_tracing_ns(ctx, gap, api);
  GapStart start = gap_start(thread, gap);
  const int64_t queued_from = queued_since(ctx, api);
  // Host-side collectives of the launching thread's process (HostIndex::collectives).
  const std::vector<Interval>& collectives = ctx.host.collectives(thread ? thread->pid : -1);
  std::vector<std::pair<IdleCauseId, int64_t>> pieces;
  for (int64_t t = gap.start_ns; t < gap.end_ns;) {
    Piece p = piece_at(ctx, thread, t, gap.end_ns);
    if (t < queued_from) p.end_ns = std::min(p.end_ns, queued_from);
    int64_t collective_boundary = 0;
    const bool collective = inside(collectives, t, &collective_boundary);
    p.end_ns = std::min(p.end_ns, collective_boundary);
    const uint16_t flags = p.segment ? p.segment->flags : 0;
    const bool host_known = thread && t >= thread->first_ns && t < thread->last_ns;
    IdleCauseId cause = idle_cause_at(p.copying, flags, start, host_known, p.sample, collective);
    // A host that reads a scalar after every few tiny kernels (.item() in a loop) reaches each
    // read after the GPU is done with them: the gap begins just before the wait, not in it.
    // After a first wait that drained the queue (`chained`: the gap before was the sync's, the
    // GPU busy only briefly since), in a gap shorter than kIssuingStretchNs, once the launching
    // thread waits for the GPU (synchronize, .item(): a blocking call that is not a copy or an
    // allocation), the rest of the gap is that wait's, as a gap that begins in one is: without
    // the waits the host would have stayed ahead. A host that was never ahead (launch-bound,
    // then a synchronize) and a longer gap (host work, a long run of launches) keep their causes.
    if (!start.in_sync && chained && gap.end_ns - gap.start_ns <= kIssuingStretchNs &&
        (cause == IdleCauseId::kSync ||
         ((flags & kHostBlocking) && !(flags & (kHostMemcpy | kHostAlloc)) && !p.copying)))
      start.in_sync = true;
    if (start.in_sync && (cause == IdleCauseId::kLaunch || cause == IdleCauseId::kHost)) cause = IdleCauseId::kSync;
    if (t >= queued_from && cause != IdleCauseId::kMemcpy && cause != IdleCauseId::kCollective) {
      cause = IdleCauseId::kQueued;
    } else if (cause == IdleCauseId::kHost && !(flags & kHostAnnotationOnly) && issuing_elsewhere(ctx, thread, t)) {
      // PyTorch launches the backward from its autograd thread while the Python thread waits
      // inside backward(): host time of a launching thread with nothing of its own to show,
      // while another thread is inside a range that issues GPU work, is dispatch, not other
      // host code.
      cause = IdleCauseId::kLaunch;
    }
    const int64_t len = p.end_ns - t;
    CauseAccumulator& a = acc[static_cast<size_t>(cause)];
    a.ns += len;
    timeline.add_idle(cause, t, p.end_ns);
    if (!intervals.empty() && intervals.back().cause == cause && intervals.back().end_ns == t) {
      intervals.back().end_ns = p.end_ns;
    } else {
      intervals.push_back({t, p.end_ns, cause});
    }
    if (flags & kHostOptimizer) a.optimizer_ns += len;
    if (flags & kHostOneOff) {
      a.one_off_ns += len;
      one_off_by_name[p.segment->name] += len;
    }
    // What the host was doing: the op or API call, else the program's own Python line, else the
    // innermost annotation.
    StringId label = p.segment ? p.segment->name : 0;
    if (p.sample && !p.copying && (label == 0 || (flags & kHostAnnotationOnly))) label = p.sample->name;
    a.by_name[p.copying ? kDeviceCopyName : label] += len;
    if (cause == IdleCauseId::kHost && thread && calls.issuing_stretch(thread->pid, t, p.end_ns))
      a.issuing_by_name[label] += len;
    if (tracing_ns > 0) pieces.emplace_back(cause, len);
    t = p.end_ns;
  }
  for (auto it = pieces.rbegin(); it != pieces.rend() && tracing_ns > 0; ++it) {
    const double part = std::min(tracing_ns, static_cast<double>(it->second));
    acc[static_cast<size_t>(it->first)].tracing_ns += part;
    tracing_ns -= part;
  }
  return start.in_sync;
}

// What filled a cause's idle time, by label (op, API call, or the program's Python line: samples
// of one line merge into one entry), longest first.
std::vector<std::pair<std::string, int64_t>> cause_labels(const DeviceContext& ctx,
                                                          const std::unordered_map<StringId, int64_t>& by_name) {
  std::vector<std::pair<StringId, int64_t>> names(by_name.begin(), by_name.end());
  std::sort(names.begin(), names.end(), [](auto& a, auto& b) { return a.second > b.second; });
  std::vector<std::pair<std::string, int64_t>> labels;
  std::unordered_map<std::string, size_t> label_index;  // Into labels: a trace has thousands of samples.
  for (const auto& [id, ns] : names) {
    std::string label = id == kDeviceCopyName ? "(device copy or set)"
                        : id == 0             ? "(host code outside profiled ops)"
                                              : std::string(ctx.trace.strings.view(id));
    if (label.starts_with(run_protocol::kPySampleMark.prefix)) {
      label = py_sample_label(label);
      if (label.empty()) label = "(Python, outside the program's own files)";
    }
    const auto [it, added] = label_index.try_emplace(label, labels.size());
    if (added) {
      labels.emplace_back(std::move(label), ns);
    } else {
      labels[it->second].second += ns;
    }
  }
  std::stable_sort(labels.begin(), labels.end(), [](auto& a, auto& b) { return a.second > b.second; });
  return labels;
}

IdleCause idle_cause(const DeviceContext& ctx, IdleCauseId id, const CauseAccumulator& acc) {
  IdleCause ic;
  ic.cause = id;
  ic.ns = acc.ns;
  ic.pct = pct(static_cast<double>(acc.ns), static_cast<double>(ctx.window()));
  if (ctx.trace.tracing_cost) ic.tracing_ns = static_cast<int64_t>(acc.tracing_ns);
  ic.optimizer_ns = acc.optimizer_ns;
  ic.one_off_ns = acc.one_off_ns;
  const auto labels = cause_labels(ctx, acc.by_name);
  for (size_t i = 0; i < labels.size() && i < 3; ++i) ic.top_host.push_back({labels[i].first, labels[i].second});
  return ic;
}

// Of the host idle, the time at code that also issues the launches around which the GPU idles:
// between GPU calls close together (GpuCalls::issuing_stretch), under a label of the host cause that is a
// label of the launch cause too (the model's Python lines between launches). Generic labels
// ("(host code outside profiled ops)") say nothing of the code and are not counted.
int64_t host_at_launching_code_ns(const DeviceContext& ctx, const Accumulators& acc) {
  std::unordered_map<std::string, int64_t> launching;
  for (const auto& [label, ns] : cause_labels(ctx, acc[static_cast<size_t>(IdleCauseId::kLaunch)].by_name))
    launching[label] = ns;
  int64_t out = 0;
  for (const auto& [label, ns] : cause_labels(ctx, acc[static_cast<size_t>(IdleCauseId::kHost)].issuing_by_name)) {
    if (!label.starts_with("(") && launching.contains(label)) out += ns;
  }
  return out;
}

// With the untraced step measured, the tracer's share of the idle is what the traced window
// has over that many untraced steps. The tracer slows the host's own work and its GPU calls, so
// that share is in the gaps where the GPU waited on them (launch, host, memcpy, alloc), in
// proportion to them; it replaces the share derived from the calibrated launch cost. Gaps where
// the host waited for input are not among them: a traced main process does not make the
// DataLoader's workers slower, and an untraced step measured while the workers' prefetched
// batches last would otherwise take real input waits for the tracer's.
void apply_measured_untraced_step(const DeviceContext& ctx, int64_t step_ns, DeviceReport& r) {
  r.untraced_step_measured_ns = step_ns;
  const double window = static_cast<double>(r.window_ns);
  const double delta = std::max(0.0, window - static_cast<double>(step_ns) * static_cast<double>(ctx.steps.size()));
  const auto host_late = [](IdleCauseId id) {
    return id == IdleCauseId::kLaunch || id == IdleCauseId::kHost || id == IdleCauseId::kMemcpy ||
           id == IdleCauseId::kAlloc;
  };
  double late = 0;
  for (const IdleCause& c : r.idle_causes) late += host_late(c.cause) ? static_cast<double>(c.ns) : 0.0;
  int64_t tracing = 0;
  for (IdleCause& c : r.idle_causes) {
    const double ns = static_cast<double>(c.ns);
    c.tracing_ns = host_late(c.cause) && late > 0 ? static_cast<int64_t>(std::min(ns, delta * ns / late)) : 0;
    tracing += *c.tracing_ns;
  }
  r.untraced_window_est_ns = r.window_ns - tracing;
}

}  // namespace

void add_idle_attribution(const DeviceContext& ctx, DeviceReport& r) {
  r.idle_pct = 100.0 - r.busy_pct;
  TimelineBuckets timeline(ctx.window_start, ctx.window_end, kTimelineBuckets);
  for (const Interval& k : ctx.kernel_union) {
    const int64_t a = std::max(k.start_ns, ctx.window_start), b = std::min(k.end_ns, ctx.window_end);
    if (a < b) timeline.add_kernels(a, b);
  }
  Accumulators acc;
  const ThreadTimeline* fallback = ctx.host.main_thread();
  std::unordered_map<StringId, int64_t> one_off_by_name;
  const GpuCalls calls(ctx.trace);
  // A run of short gaps after a wait that drained the queue (attribute_gap's `chained`).
  bool after_wait = false;
  int64_t previous_end = std::numeric_limits<int64_t>::min();
  for (const Interval& gap : gaps(ctx.kernel_union, ctx.window_start, ctx.window_end)) {
    const bool chained = after_wait && gap.start_ns - previous_end <= kIssuingStretchNs;
    after_wait = attribute_gap(ctx, calls, gap, fallback, chained, acc, timeline, r.idle_intervals, one_off_by_name);
    previous_end = gap.end_ns;
  }
  for (const IdleCauseInfo& c : kIdleCauseTable) {
    r.idle_causes.push_back(idle_cause(ctx, c.id, acc[static_cast<size_t>(c.id)]));
    r.one_off_ns += r.idle_causes.back().one_off_ns;
    if (c.id == IdleCauseId::kHost) r.idle_causes.back().launching_code_ns = host_at_launching_code_ns(ctx, acc);
  }
  for (const auto& [name, ns] : one_off_by_name)
    r.one_off_calls.push_back({std::string(ctx.trace.strings.view(name)), ns});
  std::sort(r.one_off_calls.begin(), r.one_off_calls.end(),
            [](const HostTime& a, const HostTime& b) { return a.ns != b.ns ? a.ns > b.ns : a.name < b.name; });
  r.timeline = timeline.letters();
  if (ctx.trace.tracing_cost) {
    r.tracing_cost = ctx.trace.tracing_cost;
    int64_t tracing = 0;
    for (const IdleCause& c : r.idle_causes) tracing += c.tracing_ns.value_or(0);
    r.untraced_window_est_ns = r.window_ns - tracing;
  }
  // The Python bootstrap's untraced step, measured before a bounded window opened: the median of
  // the step periods it timed while waiting, on the host and on the GPU's timeline, the longer of
  // the two (WindowMarks::untraced_step_ns).
  if (const auto step = ctx.host.marks().window.untraced_step_ns(); step && !ctx.steps.empty()) {
    apply_measured_untraced_step(ctx, *step, r);
  }
}

std::vector<int8_t> gpu_paced_kernels(const DeviceContext& ctx) {
  const auto& ks = ctx.kernels;
  std::vector<int8_t> paced(ks.size(), -1);
  for (size_t i = 0; i + 1 < ks.size(); ++i) {
    const Kernel& k = *ks[i];
    const Kernel& next = *ks[i + 1];
    if (next.start_ns < k.end_ns) {
      paced[i] = 1;
      continue;
    }
    const int64_t api = ctx.host.api_for_correlation(next.correlation);
    if (api >= 0) paced[i] = ctx.trace.api_calls[static_cast<size_t>(api)].end_ns <= k.end_ns ? 1 : 0;
  }
  return paced;
}

}  // namespace gpuscope
