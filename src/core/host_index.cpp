#include "core/host_index.h"

#include "core/name_cache.h"

#include <algorithm>
#include <climits>
#include <array>
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
  uint32_t index;  // Into api_calls or host_events.
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

uint16_t host_event_flags(std::string_view name) {
  uint16_t f = 0;
  static constexpr std::array<std::string_view, 5> kInput = {
      "dataloader", "data_loader", "dataset", "next_batch", "load_batch"};
  for (auto p : kInput) {
    if (contains_ci(name, p)) f |= kHostInput;
  }
  static constexpr std::array<std::string_view, 8> kCollective = {
      "nccl", "c10d::", "allreduce", "all_reduce", "allgather", "all_gather", "reduce_scatter",
      "record_param_comms"};
  for (auto p : kCollective) {
    if (contains_ci(name, p)) f |= kHostCollective;
  }
  if (name == "aten::item" || name == "aten::_local_scalar_dense" || name == "cudaDeviceSynchronize" ||
      contains_ci(name, "synchronize")) {
    f |= kHostBlocking;
  }
  if (name.starts_with("Optimizer.step#")) f |= kHostOptimizer | kHostIssuing;
  if (name.starts_with("gpuscope.forward#") || name == "gpuscope.backward") f |= kHostIssuing;
  return f;
}

uint16_t api_flags(const ApiCall& call, std::string_view name) {
  switch (call.api_class) {
    case ApiClass::kLaunch: return kHostLaunch;
    case ApiClass::kAlloc: return kHostAlloc;
    case ApiClass::kSync: return kHostBlocking;
    case ApiClass::kMemcpy:
      // A copy without "Async" blocks the host until it is done.
      return name.find("Async") == std::string_view::npos ? kHostMemcpy | kHostBlocking : kHostMemcpy;
    case ApiClass::kOther: return 0;
  }
  return 0;
}

// The flags and name of a segment of `duration_ns` covered by `stack` (not empty, outermost
// first): the innermost op or API call names it.
std::pair<uint16_t, StringId> segment_label(const Trace& trace, const std::vector<HostItem*>& stack,
                                            int64_t duration_ns) {
  uint16_t flags = 0;
  StringId name = 0;
  int depth_ops = 0;
  for (const HostItem* s : stack) {
    flags |= s->flags;
    if (s->is_op || s->is_api) {
      ++depth_ops;
      name = s->name;
    }
  }
  // Launch calls inside an op mark only their own time; the op's flags carry the rest.
  if (depth_ops == 0) {
    // Only annotations cover the moment: name the innermost, unless it is just the step
    // marker (then the host runs code outside any profiled op).
    for (const HostItem* s : stack) name = s->name;
    if (trace.strings.view(name).starts_with("ProfilerStep#")) name = 0;
    flags &= static_cast<uint16_t>(~kHostLaunch);
    flags |= kHostAnnotationOnly;
    if (duration_ns <= kDispatchGapNs || (flags & kHostIssuing)) flags |= kHostLaunch;
  }
  return {flags, name};
}

}  // namespace

const HostSegment* ThreadTimeline::at(int64_t t) const {
  auto it = std::upper_bound(segments.begin(), segments.end(), t,
                             [](int64_t v, const HostSegment& s) { return v < s.start_ns; });
  if (it == segments.begin()) return nullptr;
  --it;
  return t < it->end_ns ? &*it : nullptr;
}

HostIndex::HostIndex(const Trace& trace)
    : api_owner_op_(trace.api_calls.size(), -1), api_context_flags_(trace.api_calls.size(), 0) {
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
      trace.strings, [](std::string_view n) { return n.starts_with(kPySamplePrefix); });
  for (uint32_t i = 0; i < trace.host_events.size(); ++i) {
    const HostEvent& e = trace.host_events[i];
    if (e.kind == HostEventKind::kAnnotation && e.end_ns == e.start_ns && is_py_sample(e.name)) {
      const std::string_view tag = trace.strings.view(e.name).substr(kPySamplePrefix.size());
      py_samples_.push_back({e.start_ns, e.name, tag.starts_with("data;")});
      continue;
    }
    items_for(e.pid, e.tid).push_back({e.start_ns, e.end_ns, e.name, flags_of(e.name), false,
                                       e.kind == HostEventKind::kOp, i});
  }
  std::sort(py_samples_.begin(), py_samples_.end(),
            [](const PySample& a, const PySample& b) { return a.time_ns < b.time_ns; });
  for (uint32_t i = 0; i < trace.api_calls.size(); ++i) {
    const ApiCall& c = trace.api_calls[i];
    items_for(c.pid, c.tid).push_back(
        {c.start_ns, c.end_ns, c.name, api_flags(c, trace.strings.view(c.name)), true, false, i});
    if (c.correlation) api_by_correlation_.emplace(*c.correlation, i);
  }
  for (size_t t = 0; t < threads_.size(); ++t) build_thread(trace, threads_[t], items_by_thread[t]);
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
  // and context.
  std::vector<HostItem*> stack;
  for (HostItem& item : items) {
    std::erase_if(stack, [&](const HostItem* s) { return s->end_ns <= item.start_ns; });
    if (item.is_api) {
      const ApiClass cls = trace.api_calls[item.index].api_class;
      uint16_t context = 0;
      for (HostItem* s : stack) context |= s->flags;
      api_context_flags_[item.index] = context;
      for (auto it = stack.rbegin(); it != stack.rend(); ++it) {
        if ((*it)->is_op && trace.host_events[(*it)->index].num_args > 0) {
          api_owner_op_[item.index] = (*it)->index;
          break;
        }
      }
      if (cls == ApiClass::kLaunch || cls == ApiClass::kMemcpy) {
        ++timeline.launches;
        for (HostItem* s : stack) {
          if (s->is_op) s->flags |= kHostLaunch;
        }
      }
    }
    stack.push_back(&item);
  }

  // Pass 2: flatten into segments between consecutive boundaries.
  std::vector<int64_t> bounds;
  bounds.reserve(items.size() * 2);
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
    std::erase_if(stack, [&](const HostItem* s) { return s->end_ns <= t0; });
    while (next < items.size() && items[next].start_ns <= t0) {
      if (items[next].end_ns > t0) stack.push_back(&items[next]);
      ++next;
    }
    if (stack.empty()) continue;  // No host information: a real gap in the trace.
    const auto [flags, name] = segment_label(trace, stack, t1 - t0);
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

std::string py_sample_label(std::string_view mark_name) {
  if (mark_name.starts_with(kPySamplePrefix)) mark_name.remove_prefix(kPySamplePrefix.size());
  const size_t semi = mark_name.find(';');
  if (semi == std::string_view::npos) return "";
  std::string_view frames = mark_name.substr(semi + 1);
  frames = frames.substr(0, frames.find('|'));
  if (frames.empty()) return "";
  return std::string(frames) + " (Python)";
}

}  // namespace gpuscope
