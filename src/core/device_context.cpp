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

  if (!steps.steps.empty()) {
    window_start = steps.steps.front().start_ns;
    window_end = steps.steps.back().end_ns;
    const int64_t last_step_end = steps.steps.back().end_ns;
    auto extend = [&](int64_t end_ns, std::optional<uint64_t> corr) {
      const int64_t api = host.api_for_correlation(corr);
      if (api >= 0 && trace.api_calls[api].start_ns >= window_start && trace.api_calls[api].start_ns < last_step_end) {
        window_end = std::max(window_end, end_ns);
      }
    };
    for (const Kernel* k : device_kernels) extend(k->end_ns, k->correlation);
    for (const Memcpy& m : trace.memcpys) if (m.device == device_id) extend(m.end_ns, m.correlation);
    for (const Memset& m : trace.memsets) if (m.device == device_id) extend(m.end_ns, m.correlation);
  } else {
    window_start = first;
    window_end = last;
  }
  for (const Kernel* k : device_kernels) if (in_window(k->start_ns)) kernels.push_back(k);
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
    if (m.host_memory == HostMemory::kPageable) {
      ++copies.pageable_count;
      copies.pageable_bytes += m.bytes.value_or(0);
    } else if (m.host_memory == HostMemory::kPinned && m.bytes && *m.bytes >= (1u << 20) && m.end_ns > m.start_ns &&
               (m.kind == CopyKind::kHtoD || m.kind == CopyKind::kDtoH)) {
      const double bw = static_cast<double>(*m.bytes) / (static_cast<double>(m.end_ns - m.start_ns) / 1e9);
      copies.pinned_bytes_per_s = std::max(copies.pinned_bytes_per_s.value_or(0.0), bw);
    }
  }
  return copies;
}

}  // namespace gpuscope
