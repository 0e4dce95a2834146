#include "core/host_index.h"

#include "core/name_cache.h"
#include "core/run_protocol.h"

#include <algorithm>
#include <array>
#include <climits>
#include <string>
#include <utility>

namespace gpuscope {

struct HostItem {
  int64_t start_ns;
  int64_t end_ns;
  StringId name;
  uint16_t flags;
  bool is_api;
  bool is_op;
  bool has_shapes;  // An op with recorded shapes: it owns the API calls inside it.
  uint32_t index;   // Into api_calls or host_events.
};

namespace {

uint64_t thread_key(int32_t pid, int32_t tid) {
  return (static_cast<uint64_t>(static_cast<uint32_t>(pid)) << 32) | static_cast<uint32_t>(tid);
}

bool contains_ci(std::string_view s, std::string_view needle) {
  if (needle.size() > s.size()) return false;
  for (size_t i = 0; i + needle.size() <= s.size(); ++i) {
    size_t j = 0;
    while (j < needle.size() && std::tolower(static_cast<unsigned char>(s[i + j])) == needle[j]) ++j;
    if (j == needle.size()) return true;
  }
  return false;
}

// The items open at one moment, outermost first in build_thread's sort order, each level
// carrying what it and all levels below it add up to, so that the questions asked at every
// boundary (flags of everything open, innermost op, ...) cost O(1) however deep the nesting.
// Items that nest properly leave from the top; an item that ends while one opened after it is
// still open (overlapping, not nested) is found through min_end_ns and the levels from it up
// are rebuilt, O(depth) each time, which real traces rarely need.
//
// Pass 1 sets kHostLaunch on every open op when a launch or copy call starts. Rather than
// walk the stack, it records that every level below launched_depth_ has seen a launch; the
// bit reaches an item's flags when the item leaves (or the stack is rebuilt or flushed), and
// flags() adds it meanwhile. Once pass 1 has flushed, every item's flags are final.
class OpenRanges {
 public:
  struct Level {
    HostItem* item;
    int64_t min_end_ns;      // The earliest end at this level or below.
    int32_t owner_level;     // The innermost op with recorded shapes at or below, or -1.
    int32_t first_op_level;  // The outermost op at or below, or -1.
    int32_t named_level;     // The innermost op or API call at or below, or -1.
    uint16_t flags;          // OR of the flags of this level and all below.
  };

  bool empty() const { return levels_.empty(); }
  const Level& top() const { return levels_.back(); }
  const HostItem& at(int32_t level) const { return *levels_[static_cast<size_t>(level)].item; }

  void push(HostItem* item) {
    const int32_t level = static_cast<int32_t>(levels_.size());
    Level l = levels_.empty() ? Level{nullptr, INT64_MAX, -1, -1, -1, 0} : levels_.back();
    l.item = item;
    l.flags |= item->flags;
    l.min_end_ns = std::min(l.min_end_ns, item->end_ns);
    if (item->has_shapes) l.owner_level = level;
    if (item->is_op && l.first_op_level < 0) l.first_op_level = level;
    if (item->is_op || item->is_api) l.named_level = level;
    levels_.push_back(l);
  }

  // Removes the items that end at or before t.
  void remove_ended(int64_t t) {
    while (!levels_.empty() && levels_.back().item->end_ns <= t) {
      settle_launch(levels_.size() - 1);
      levels_.pop_back();
      launched_depth_ = std::min(launched_depth_, levels_.size());
    }
    if (levels_.empty() || levels_.back().min_end_ns > t) return;
    // An item ended under one still open. min_end_ns does not increase upwards: the first
    // level whose min_end_ns <= t is the lowest ended one; rebuild from there.
    const auto first =
        std::partition_point(levels_.begin(), levels_.end(), [t](const Level& l) { return l.min_end_ns > t; });
    const size_t from = static_cast<size_t>(first - levels_.begin());
    for (size_t i = from; i < levels_.size(); ++i) settle_launch(i);
    launched_depth_ = std::min(launched_depth_, from);
    rebuild_.clear();
    for (size_t i = from; i < levels_.size(); ++i) {
      if (levels_[i].item->end_ns > t) rebuild_.push_back(levels_[i].item);
    }
    levels_.resize(from);
    for (HostItem* item : rebuild_) push(item);
  }

  // Every op open now has issued GPU work (kHostLaunch).
  void mark_launch() { launched_depth_ = levels_.size(); }

  // The flags of everything open, with the launches marked so far.
  uint16_t flags() const {
    if (levels_.empty()) return 0;
    const Level& t = levels_.back();
    const bool launched_op = t.first_op_level >= 0 && static_cast<size_t>(t.first_op_level) < launched_depth_;
    return launched_op ? static_cast<uint16_t>(t.flags | kHostLaunch) : t.flags;
  }

  // Writes the launches marked so far into the open items' flags.
  void flush_launches() {
    for (size_t i = 0; i < launched_depth_; ++i) settle_launch(i);
    launched_depth_ = 0;
  }

 private:
  void settle_launch(size_t level) {
    HostItem* item = levels_[level].item;
    if (level < launched_depth_ && item->is_op) item->flags |= kHostLaunch;
  }

  std::vector<Level> levels_;
  size_t launched_depth_ = 0;  // Levels below this have seen a launch not yet in their flags.
  std::vector<HostItem*> rebuild_;
};

// The flags and name of a segment of `duration_ns` covered by `open` (not empty): the
// innermost op or API call names it.
std::pair<uint16_t, StringId> segment_label(const Trace& trace, const OpenRanges& open, int64_t duration_ns) {
  uint16_t flags = open.flags();
  const int32_t named = open.top().named_level;
  // A copy that waits for the GPU is named by its call site, the outermost op (aten::item).
  if (named >= 0 && (open.at(named).flags & kHostCopyWait) && open.top().first_op_level >= 0) {
    return {flags, open.at(open.top().first_op_level).name};
  }
  // Launch calls inside an op mark only their own time; the op's flags carry the rest.
  if (named >= 0) return {flags, open.at(named).name};
  // Only annotations cover the moment: name the innermost, unless it is just the step
  // marker, the profiler's or gpuscope's step loop (then the host runs code outside any
  // profiled op).
  StringId name = open.top().item->name;
  if (const std::string_view v = trace.strings.view(name);
      v.starts_with("ProfilerStep#") || v.starts_with(run_protocol::kStepLoopRange.prefix))
    name = 0;
  flags &= static_cast<uint16_t>(~kHostLaunch);
  flags |= kHostAnnotationOnly;
  if (duration_ns <= kDispatchGapNs || (flags & kHostIssuing)) flags |= kHostLaunch;
  return {flags, name};
}

// An optimizer step that runs the step's forward and backward inside it (a closure passed to
// `step()`: PyTorch Lightning's automatic optimisation, LBFGS, SAM) is not optimizer arithmetic:
// its range loses kHostOptimizer (it still issues GPU work). The sign is the backward: another
// thread of the process (autograd's) launches a tenth or more of the kernels launched while the
// range is open; a plain optimizer step launches from its own thread, beside at most a few
// launches of a helper thread (a prefetcher's).
void not_optimizer_arithmetic(const Trace& trace, const std::vector<ThreadTimeline>& threads,
                              std::vector<std::vector<HostItem>>& items_by_thread) {
  const bool any = std::any_of(items_by_thread.begin(), items_by_thread.end(), [](const auto& items) {
    return std::any_of(items.begin(), items.end(),
                       [](const HostItem& i) { return !i.is_api && (i.flags & kHostOptimizer); });
  });
  if (!any) return;  // No optimizer step: the launches need no index.
  std::unordered_map<int32_t, std::vector<std::pair<int64_t, int32_t>>> launches;  // pid: (start, tid)
  for (const ApiCall& c : trace.api_calls) {
    if (c.api_class == ApiClass::kLaunch) launches[c.pid].emplace_back(c.start_ns, c.tid);
  }
  for (auto& [pid, v] : launches) std::sort(v.begin(), v.end());
  for (size_t t = 0; t < threads.size(); ++t) {
    const auto found = launches.find(threads[t].pid);
    if (found == launches.end()) continue;
    const auto& v = found->second;
    for (HostItem& item : items_by_thread[t]) {
      if (item.is_api || !(item.flags & kHostOptimizer)) continue;
      int64_t all = 0, elsewhere = 0;
      auto it = std::lower_bound(v.begin(), v.end(), std::pair<int64_t, int32_t>{item.start_ns, INT32_MIN});
      for (; it != v.end() && it->first < item.end_ns; ++it) {
        ++all;
        if (it->second != threads[t].tid) ++elsewhere;
      }
      if (elsewhere > 0 && elsewhere * 10 >= all) item.flags &= static_cast<uint16_t>(~kHostOptimizer);
    }
  }
}

}  // namespace

uint16_t host_event_flags(std::string_view name) {
  uint16_t f = 0;
  static constexpr std::array<std::string_view, 5> kInput = {"dataloader", "data_loader", "dataset", "next_batch",
                                                             "load_batch"};
  for (auto p : kInput) {
    if (contains_ci(name, p)) f |= kHostInput;
  }
  // A range the program itself names for its input, as a whole name: "input" inside a name is
  // too common in model code (input_layernorm, inputs_embeds) to count.
  static constexpr std::array<std::string_view, 6> kInputNames = {"input",     "data",           "get_batch",
                                                                  "load_data", "input_pipeline", "data_loading"};
  for (auto p : kInputNames) {
    if (name.size() == p.size() && contains_ci(name, p)) f |= kHostInput;
  }
  static constexpr std::array<std::string_view, 8> kCollective = {
      "nccl", "c10d::", "allreduce", "all_reduce", "allgather", "all_gather", "reduce_scatter", "record_param_comms"};
  for (auto p : kCollective) {
    if (contains_ci(name, p)) f |= kHostCollective;
  }
  if (name == "aten::item" || name == "aten::_local_scalar_dense" || name == "cudaDeviceSynchronize" ||
      contains_ci(name, "synchronize")) {
    f |= kHostBlocking;
  }
  if (name.starts_with(run_protocol::kOptimizerStepRange.prefix)) f |= kHostOptimizer | kHostIssuing;
  // Captures of older gpuscope versions, whose bootstrap hooked forward and backward.
  if (name.starts_with(run_protocol::kForwardRange.prefix) || name == run_protocol::kBackwardRange.prefix)
    f |= kHostIssuing;
  return f;
}

uint16_t api_call_flags(ApiClass api_class, std::string_view name) {
  switch (api_class) {
    case ApiClass::kLaunch:
      return kHostLaunch;
    case ApiClass::kAlloc:
      return kHostAlloc;
    case ApiClass::kSync:
      return kHostBlocking;
    case ApiClass::kMemcpy:
      // A copy without "Async" blocks the host until it is done.
      return name.find("Async") == std::string_view::npos ? kHostMemcpy | kHostBlocking : kHostMemcpy;
    case ApiClass::kOther:
      return 0;
  }
  return 0;
}

std::vector<bool> one_off_api_calls(const Trace& trace) {
  std::vector<bool> out(trace.api_calls.size(), false);
  std::unordered_map<StringId, std::vector<int64_t>> by_name;
  std::unordered_map<int, std::vector<int64_t>> by_class;
  const auto candidate = [](const ApiCall& c) {
    return c.api_class == ApiClass::kLaunch || c.api_class == ApiClass::kAlloc;
  };
  for (const ApiCall& c : trace.api_calls) {
    if (!candidate(c)) continue;
    by_name[c.name].push_back(c.end_ns - c.start_ns);
    by_class[static_cast<int>(c.api_class)].push_back(c.end_ns - c.start_ns);
  }
  const auto median = [](std::vector<int64_t>& v) {
    std::nth_element(v.begin(), v.begin() + static_cast<ptrdiff_t>(v.size() / 2), v.end());
    return v[v.size() / 2];
  };
  std::unordered_map<StringId, int64_t> reference;
  for (auto& [name, durations] : by_name) {
    if (durations.size() >= 3) reference[name] = median(durations);
  }
  std::unordered_map<int, int64_t> class_reference;
  for (auto& [cls, durations] : by_class) {
    if (durations.size() >= 3) class_reference[cls] = median(durations);
  }
  for (size_t i = 0; i < trace.api_calls.size(); ++i) {
    const ApiCall& c = trace.api_calls[i];
    const int64_t d = c.end_ns - c.start_ns;
    if (!candidate(c) || d <= kOneOffMinNs) continue;
    std::optional<int64_t> ref;
    if (const auto it = reference.find(c.name); it != reference.end()) {
      ref = it->second;
    } else if (const auto jt = class_reference.find(static_cast<int>(c.api_class)); jt != class_reference.end()) {
      ref = jt->second;
    }
    out[i] = ref && static_cast<double>(d) > kOneOffFactor * static_cast<double>(std::max<int64_t>(1, *ref));
  }
  return out;
}

const HostSegment* ThreadTimeline::at(int64_t t) const {
  auto it = std::upper_bound(segments.begin(), segments.end(), t,
                             [](int64_t v, const HostSegment& s) { return v < s.start_ns; });
  if (it == segments.begin()) return nullptr;
  --it;
  return t < it->end_ns ? &*it : nullptr;
}

HostIndex::HostIndex(const Trace& trace)
    : api_owner_op_(trace.api_calls.size(), -1),
      api_context_flags_(trace.api_calls.size(), 0),
      marks_(parse_host_marks(trace)) {
  std::vector<std::vector<HostItem>> items_by_thread;
  auto items_for = [&](int32_t pid, int32_t tid) -> std::vector<HostItem>& {
    auto [it, inserted] = thread_by_key_.try_emplace(thread_key(pid, tid), threads_.size());
    if (inserted) {
      threads_.push_back(ThreadTimeline{pid, tid});
      items_by_thread.emplace_back();
    }
    return items_by_thread[it->second];
  };
  NameCache<uint16_t, uint16_t (*)(std::string_view)> flags_of(trace.strings, &host_event_flags);
  NameCache<bool, bool (*)(std::string_view)> is_py_sample(
      trace.strings, [](std::string_view n) { return n.starts_with(run_protocol::kPySampleMark.prefix); });
  for (uint32_t i = 0; i < trace.host_events.size(); ++i) {
    const HostEvent& e = trace.host_events[i];
    if (e.kind == HostEventKind::kAnnotation && e.end_ns == e.start_ns && is_py_sample(e.name)) {
      py_samples_.push_back({e.start_ns, e.name, py_sample_in_data_loading(trace.strings.view(e.name))});
      continue;
    }
    const bool is_op = e.kind == HostEventKind::kOp;
    items_for(e.pid, e.tid)
        .push_back({e.start_ns, e.end_ns, e.name, flags_of(e.name), false, is_op,
                    is_op && (e.num_args > 0 || e.num_matmuls > 0), i});
  }
  std::sort(py_samples_.begin(), py_samples_.end(),
            [](const PySample& a, const PySample& b) { return a.time_ns < b.time_ns; });
  const std::vector<bool> one_off = one_off_api_calls(trace);
  // The device copies by correlation: a copy call that moves little, or between device buffers.
  std::unordered_map<uint64_t, const Memcpy*> copy_by_correlation;
  for (const Memcpy& m : trace.memcpys) {
    if (m.correlation) copy_by_correlation.emplace(*m.correlation, &m);
  }
  const auto copy_of = [&](const ApiCall& c) -> const Memcpy* {
    if (c.api_class != ApiClass::kMemcpy || !c.correlation) return nullptr;
    const auto it = copy_by_correlation.find(*c.correlation);
    return it == copy_by_correlation.end() ? nullptr : it->second;
  };
  // Flags a copy call gets from its device copy: kHostCopyWait where it moves little or stays on
  // the device; kHostBlocking where it goes from the device into pageable host memory, which
  // returns only once it is done, "Async" or not (the CUDA runtime's documented behaviour): the
  // host waits there for everything queued before it, as a synchronisation does (`.tolist()` of
  // a scalar, `.cpu()`).
  const auto copy_flags = [](const Memcpy& m) {
    uint16_t f = 0;
    if (m.kind == CopyKind::kDtoD || (m.bytes && *m.bytes < kSmallCopyBytes)) f |= kHostCopyWait;
    if (m.kind == CopyKind::kDtoH && m.host_memory == HostMemory::kPageable) f |= kHostBlocking;
    return f;
  };
  // Per thread, the open cudaStreamBeginCapture (index), while a capture is open.
  std::unordered_map<uint64_t, uint32_t> capture_begin;
  for (uint32_t i = 0; i < trace.api_calls.size(); ++i) {
    const ApiCall& c = trace.api_calls[i];
    const std::string_view name = trace.strings.view(c.name);
    uint16_t flags = api_call_flags(c.api_class, name);
    if (one_off[i] || name.find("GraphInstantiate") != std::string_view::npos) flags |= kHostOneOff;
    if (const Memcpy* m = copy_of(c)) flags |= copy_flags(*m);
    items_for(c.pid, c.tid).push_back({c.start_ns, c.end_ns, c.name, flags, true, false, false, i});
    if (c.correlation) api_by_correlation_.emplace(*c.correlation, i);
    if (name.find("BeginCapture") != std::string_view::npos) capture_begin[thread_key(c.pid, c.tid)] = i;
    if (name.find("EndCapture") != std::string_view::npos) {
      const auto open = capture_begin.find(thread_key(c.pid, c.tid));
      if (open == capture_begin.end()) continue;
      // The whole capture, as a range enclosing what the thread did meanwhile.
      const ApiCall& begin = trace.api_calls[open->second];
      items_for(c.pid, c.tid).push_back({begin.start_ns, c.end_ns, begin.name, kHostOneOff, false, false, false, 0});
      capture_begin.erase(open);
    }
  }
  not_optimizer_arithmetic(trace, threads_, items_by_thread);
  for (size_t t = 0; t < threads_.size(); ++t) build_thread(trace, threads_[t], items_by_thread[t]);
  build_collectives(trace);
}

void HostIndex::build_collectives(const Trace& trace) {
  // ProcessGroupGloo with CUDA tensors (traced on the H200, examples/ddp/train_ddp.py --backend
  // gloo): a worker thread copies the gradient bucket to the host, synchronises on the copy,
  // all-reduces it over TCP on the CPU (30-85 ms there, no CUDA call), then copies it back.
  const bool gloo = marks_.dist_gloo;
  for (const ThreadTimeline& th : threads_) {
    std::vector<Interval>& out = collectives_[th.pid];
    for (size_t i = 0; i < th.segments.size(); ++i) {
      const HostSegment& s = th.segments[i];
      if (s.flags & kHostCollective) out.push_back({s.start_ns, s.end_ns});
      if (gloo && th.kernel_launches == 0 && (s.flags & kHostBlocking) && i + 1 < th.segments.size() &&
          (th.segments[i + 1].flags & kHostMemcpy)) {
        out.push_back({s.end_ns, th.segments[i + 1].start_ns});
      }
    }
  }
  for (auto& [pid, v] : collectives_) v = merge(std::move(v));
}

const std::vector<Interval>& HostIndex::collectives(int32_t pid) const {
  static const std::vector<Interval> kNone;
  const auto found = collectives_.find(pid);
  return found == collectives_.end() ? kNone : found->second;
}

void HostIndex::build_thread(const Trace& trace, ThreadTimeline& timeline, std::vector<HostItem>& items) {
  std::sort(items.begin(), items.end(), [](const HostItem& a, const HostItem& b) {
    return a.start_ns != b.start_ns ? a.start_ns < b.start_ns : a.end_ns > b.end_ns;
  });
  if (items.empty()) return;
  timeline.first_ns = items.front().start_ns;
  timeline.last_ns = 0;
  for (const auto& it : items) timeline.last_ns = std::max(timeline.last_ns, it.end_ns);

  // Pass 1: ops that issue GPU work become launching; API calls learn their enclosing op
  // and context. The open items at an item are those sorted before it that end after it starts.
  OpenRanges open;
  for (HostItem& item : items) {
    open.remove_ended(item.start_ns);
    if (item.is_api) {
      const ApiClass cls = trace.api_calls[item.index].api_class;
      api_context_flags_[item.index] = open.flags();
      if (!open.empty() && open.top().owner_level >= 0) {
        api_owner_op_[item.index] = open.at(open.top().owner_level).index;
      }
      if (cls == ApiClass::kLaunch || cls == ApiClass::kMemcpy) {
        ++timeline.launches;
        if (cls == ApiClass::kLaunch) ++timeline.kernel_launches;
        open.mark_launch();
      }
    }
    open.push(&item);
  }
  open.flush_launches();

  // Pass 2: flatten into segments between consecutive boundaries, with the final flags.
  std::vector<int64_t> bounds;
  bounds.reserve(items.size() * 2);
  for (const auto& it : items) {
    bounds.push_back(it.start_ns);
    bounds.push_back(it.end_ns);
  }
  std::sort(bounds.begin(), bounds.end());
  bounds.erase(std::unique(bounds.begin(), bounds.end()), bounds.end());
  OpenRanges covering;
  size_t next = 0;
  for (size_t k = 0; k + 1 < bounds.size(); ++k) {
    const int64_t t0 = bounds[k], t1 = bounds[k + 1];
    covering.remove_ended(t0);
    while (next < items.size() && items[next].start_ns <= t0) {
      if (items[next].end_ns > t0) covering.push(&items[next]);
      ++next;
    }
    if (covering.empty()) continue;  // No host information: a real gap in the trace.
    const auto [flags, name] = segment_label(trace, covering, t1 - t0);
    if (!timeline.segments.empty() && timeline.segments.back().end_ns == t0 &&
        timeline.segments.back().flags == flags && timeline.segments.back().name == name) {
      timeline.segments.back().end_ns = t1;
    } else {
      timeline.segments.push_back({t0, t1, flags, name});
    }
  }
}

int64_t HostIndex::api_for_correlation(std::optional<uint64_t> correlation) const {
  if (!correlation) return -1;
  auto it = api_by_correlation_.find(*correlation);
  return it == api_by_correlation_.end() ? -1 : static_cast<int64_t>(it->second);
}

const ThreadTimeline* HostIndex::thread(int32_t pid, int32_t tid) const {
  auto it = thread_by_key_.find(thread_key(pid, tid));
  return it == thread_by_key_.end() ? nullptr : &threads_[it->second];
}

const ThreadTimeline* HostIndex::main_thread() const {
  const ThreadTimeline* best = nullptr;
  for (const auto& t : threads_) {
    if (!best || t.launches > best->launches) best = &t;
  }
  return best;
}

const PySample* HostIndex::py_sample_at(int64_t t) const {
  auto it = std::upper_bound(py_samples_.begin(), py_samples_.end(), t,
                             [](int64_t v, const PySample& p) { return v < p.time_ns; });
  if (it == py_samples_.begin()) return nullptr;
  --it;
  return t - it->time_ns <= kPySampleMaxAgeNs ? &*it : nullptr;
}

int64_t HostIndex::next_py_sample_after(int64_t t) const {
  auto it = std::upper_bound(py_samples_.begin(), py_samples_.end(), t,
                             [](int64_t v, const PySample& p) { return v < p.time_ns; });
  return it == py_samples_.end() ? INT64_MAX : it->time_ns;
}

}  // namespace gpuscope
