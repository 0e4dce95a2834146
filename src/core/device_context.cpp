#include "core/device_context.h"

#include <algorithm>
#include <cctype>
#include <climits>

#include <fmt/core.h>

namespace gpuscope {

std::string short_kernel_name(std::string_view name) {
  if (name.starts_with("void ")) name.remove_prefix(5);
  std::string cleaned(name);
  for (std::string_view noise : {std::string_view("(anonymous namespace)::"), std::string_view("{lambda")}) {
    for (size_t at; (at = cleaned.find(noise)) != std::string::npos;) {
      if (noise[0] == '{') {
        cleaned.resize(at);  // Everything after a lambda is noise.
      } else {
        cleaned.erase(at, noise.size());
      }
    }
  }
  name = cleaned;
  const size_t open = name.find_first_of("<(");
  std::string_view base = name.substr(0, open);
  if (const size_t colon = base.rfind("::"); colon != std::string_view::npos) base = base.substr(colon + 2);
  std::string out(base);
  if (open != std::string_view::npos && name[open] == '<') {
    // Look for an identifier ending in Functor/Impl/Op/Kernel/kernel_cuda inside the args.
    const std::string_view args = name.substr(open);
    static constexpr std::string_view kSuffixes[] = {"Functor", "Impl", "_kernel_cuda", "Op<"};
    for (std::string_view suffix : kSuffixes) {
      const size_t pos = args.find(suffix);
      if (pos == std::string_view::npos) continue;
      size_t begin = pos;
      while (begin > 0 && (std::isalnum(static_cast<unsigned char>(args[begin - 1])) || args[begin - 1] == '_')) {
        --begin;
      }
      out += fmt::format("<{}>", args.substr(begin, pos - begin + suffix.size() - (suffix.back() == '<')));
      break;
    }
  }
  if (out.size() > 90) out.resize(90);
  return out;
}

DeviceContext::DeviceContext(const Trace& trace_in, const HostIndex& host_in, int32_t id, const StepDetection& steps)
    : trace(trace_in), host(host_in), device(trace_in.find_device(id)), device_id(id) {
  std::vector<Interval> kernel_iv, copy_iv;
  int64_t first = INT64_MAX, last = INT64_MIN;
  auto span = [&](int64_t start_ns, int64_t end_ns) {
    first = std::min(first, start_ns);
    last = std::max(last, end_ns);
  };
  for (const Kernel& k : trace.kernels) {
    if (k.device != device_id) continue;
    device_kernels.push_back(&k);
    kernel_iv.push_back({k.start_ns, k.end_ns});
    span(k.start_ns, k.end_ns);
  }
  for (const Memcpy& m : trace.memcpys) {
    if (m.device != device_id) continue;
    copy_iv.push_back({m.start_ns, m.end_ns});
    span(m.start_ns, m.end_ns);
  }
  for (const Memset& m : trace.memsets) {
    if (m.device != device_id) continue;
    copy_iv.push_back({m.start_ns, m.end_ns});
    span(m.start_ns, m.end_ns);
  }
  kernel_union = merge(std::move(kernel_iv));
  copy_union = merge(copy_iv);

  if (!steps.steps.empty() && steps.source == StepSource::kKernelPattern) {
    // Already on the device timeline: each step runs from one occurrence of the step's first
    // kernel to the next, a whole period (mapping them through their launches as host ranges
    // would mix the two clocks: a CUDA graph launched ahead gave steps of zero length).
    this->steps = steps.steps;
    analysed_host_steps = steps.steps;
    window_start = this->steps.front().start_ns;
    window_end = this->steps.back().end_ns;
  } else if (!steps.steps.empty()) {
    device_steps_from(steps.steps);
  } else {
    window_start = first;
    window_end = last;
  }
  if (first < last) {
    excluded_before_ns = std::max<int64_t>(0, window_start - first);
    excluded_after_ns = std::max<int64_t>(0, last - window_end);
  }
  for (const Kernel* k : device_kernels)
    if (in_window(k->start_ns)) kernels.push_back(k);
}

// Steps on the device timeline (docs/design.md, "Idle attribution"): a step's GPU span runs
// from the first GPU work launched during it to the first GPU work of the next step; the last
// step ends with the end of the GPU work it launched. Where the host runs ahead of the GPU,
// its step ranges end long before their kernels run, and work queued before the first step
// keeps the GPU busy after it begins: neither is idle time of the steps. A step that launched
// nothing on this device (or a trace without launch correlation) keeps its host boundaries.
void DeviceContext::device_steps_from(const std::vector<Step>& host_steps_in) {
  const std::vector<Step>& host_steps = host_steps_in;
  const size_t n = host_steps.size();
  std::vector<int64_t> first_work(n, INT64_MAX);
  int64_t end = host_steps.back().end_ns;
  auto note = [&](int64_t start_ns, int64_t end_ns, std::optional<uint64_t> corr) {
    const int64_t api = host.api_for_correlation(corr);
    if (api < 0) return;
    const int64_t launched = trace.api_calls[static_cast<size_t>(api)].start_ns;
    auto it = std::upper_bound(host_steps.begin(), host_steps.end(), launched,
                               [](int64_t t, const Step& s) { return t < s.start_ns; });
    if (it == host_steps.begin()) return;
    const size_t i = static_cast<size_t>(std::prev(it) - host_steps.begin());
    if (launched >= host_steps[i].end_ns) return;
    first_work[i] = std::min(first_work[i], start_ns);
    end = std::max(end, end_ns);
  };
  for (const Kernel* k : device_kernels) note(k->start_ns, k->end_ns, k->correlation);
  for (const Memcpy& m : trace.memcpys)
    if (m.device == device_id) note(m.start_ns, m.end_ns, m.correlation);
  for (const Memset& m : trace.memsets)
    if (m.device == device_id) note(m.start_ns, m.end_ns, m.correlation);
  int64_t prev = INT64_MIN;
  for (size_t i = 0; i < n; ++i) {
    int64_t start = first_work[i] != INT64_MAX ? first_work[i] : host_steps[i].start_ns;
    start = std::max(start, prev);
    steps.push_back({start, 0, host_steps[i].number});
    prev = start;
  }
  for (size_t i = 0; i + 1 < n; ++i) steps[i].end_ns = steps[i + 1].start_ns;
  steps.back().end_ns = std::max(end, steps.back().start_ns);
  analysed_host_steps.assign(host_steps_in.begin(), host_steps_in.end());
  // Where the next step's first work is unknown, the last step's span is not: it would end with
  // its own GPU work and leave out the host time before the next step. With two or more steps
  // it is dropped (and counted), so every analysed step is a whole period.
  if (n >= 2) {
    steps.pop_back();
    analysed_host_steps.pop_back();
    steps_dropped_last = 1;
  }
  window_start = steps.front().start_ns;
  window_end = steps.back().end_ns;
}

const ThreadTimeline* launching_thread(const DeviceContext& ctx, const Kernel* k) {
  if (!k) return nullptr;
  const int64_t api = ctx.host.api_for_correlation(k->correlation);
  if (api < 0) return nullptr;
  const ApiCall& call = ctx.trace.api_calls[api];
  return ctx.host.thread(call.pid, call.tid);
}

CopyStats copy_stats(const DeviceContext& ctx) {
  CopyStats copies;
  for (const Memcpy& m : ctx.trace.memcpys) {
    if (m.device != ctx.device_id || !ctx.in_window(m.start_ns)) continue;
    if (m.kind == CopyKind::kHtoD || m.kind == CopyKind::kDtoH) {
      copies.host_copy_ns += m.end_ns - m.start_ns;
      if (m.host_memory == HostMemory::kPinned) ++copies.pinned_count;
      if (m.host_memory != HostMemory::kPinned && m.host_memory != HostMemory::kPageable) ++copies.unknown_memory_count;
    }
    if (m.kind == CopyKind::kDtoD || m.kind == CopyKind::kPtoP) copies.device_copy_ns += m.end_ns - m.start_ns;
    if (m.host_memory == HostMemory::kPageable) {
      ++copies.pageable_count;
      copies.pageable_bytes += m.bytes.value_or(0);
      continue;
    }
    if (m.kind == CopyKind::kHtoD || m.kind == CopyKind::kDtoH) copies.other_copy_ns += m.end_ns - m.start_ns;
    if (m.host_memory == HostMemory::kPinned && m.bytes && *m.bytes >= (1u << 20) && m.end_ns > m.start_ns &&
        (m.kind == CopyKind::kHtoD || m.kind == CopyKind::kDtoH)) {
      const double bw = static_cast<double>(*m.bytes) / (static_cast<double>(m.end_ns - m.start_ns) / 1e9);
      copies.pinned_bytes_per_s = std::max(copies.pinned_bytes_per_s.value_or(0.0), bw);
    }
  }
  return copies;
}

}  // namespace gpuscope
