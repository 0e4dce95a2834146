#include "core/analysis.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <numeric>
#include <set>
#include <unordered_map>

#include <fmt/core.h>

#include "core/catalog.h"
#include "core/host_index.h"
#include "core/name_cache.h"
#include "core/steps.h"

namespace gpuscope {
namespace {

constexpr int64_t kSmallKernelNs = 10'000;
constexpr int kTimelineBuckets = 96;
// A chain of memory-bound kernels is a fusion candidate only if it recurs this often.
constexpr int64_t kMinFusionOccurrences = 2;

struct Interval {
  int64_t start_ns;
  int64_t end_ns;
};

// Sorts and merges overlapping intervals.
std::vector<Interval> merge(std::vector<Interval> v) {
  std::sort(v.begin(), v.end(), [](const Interval& a, const Interval& b) { return a.start_ns < b.start_ns; });
  std::vector<Interval> out;
  for (const Interval& i : v) {
    if (i.end_ns <= i.start_ns) continue;
    if (!out.empty() && i.start_ns <= out.back().end_ns) {
      out.back().end_ns = std::max(out.back().end_ns, i.end_ns);
    } else {
      out.push_back(i);
    }
  }
  return out;
}

// Total length of merged intervals within [a, b).
int64_t covered(const std::vector<Interval>& merged, int64_t a, int64_t b) {
  int64_t total = 0;
  auto it = std::lower_bound(merged.begin(), merged.end(), a,
                             [](const Interval& i, int64_t t) { return i.end_ns <= t; });
  for (; it != merged.end() && it->start_ns < b; ++it) {
    total += std::max<int64_t>(0, std::min(b, it->end_ns) - std::max(a, it->start_ns));
  }
  return total;
}

// The parts of [a, b) not covered by `merged`.
std::vector<Interval> gaps(const std::vector<Interval>& merged, int64_t a, int64_t b) {
  std::vector<Interval> out;
  int64_t cursor = a;
  auto it = std::lower_bound(merged.begin(), merged.end(), a,
                             [](const Interval& i, int64_t t) { return i.end_ns <= t; });
  for (; it != merged.end() && it->start_ns < b; ++it) {
    if (it->start_ns > cursor) out.push_back({cursor, it->start_ns});
    cursor = std::max(cursor, it->end_ns);
  }
  if (cursor < b) out.push_back({cursor, b});
  return out;
}

double pct(double part, double whole) { return whole > 0 ? 100.0 * part / whole : 0.0; }

// "void at::native::vectorized_elementwise_kernel<4, at::native::GeluFunctor<float>>(...)" ->
// "vectorized_elementwise_kernel<GeluFunctor>": the function name without namespaces, plus
// the first functor-like template argument, which is what tells elementwise kernels apart.
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

// Everything the per-device analyses share.
struct DeviceContext {
  const Trace& trace;
  const HostIndex& host;
  const Device* device;
  int32_t device_id;
  std::vector<const Kernel*> kernels;  // Sorted by start.
  std::vector<Interval> kernel_union;
  std::vector<Interval> copy_union;
  int64_t window_start = 0, window_end = 0;
  int64_t window() const { return window_end - window_start; }
  // Per-name results, computed once per distinct kernel name.
  NameCache<KernelCategory, KernelCategory (*)(std::string_view)> category_of{trace.strings, &classify_kernel};
  NameCache<Precision, Precision (*)(std::string_view)> precision_of{trace.strings, &precision_from_kernel_name};
  NameCache<std::string, std::string (*)(std::string_view)> short_name_of{trace.strings, &short_kernel_name};
  bool in_window(int64_t t) const { return t >= window_start && t < window_end; }
};

const ThreadTimeline* launching_thread(const DeviceContext& ctx, const Kernel* k) {
  if (!k) return nullptr;
  const int64_t api = ctx.host.api_for_correlation(k->correlation);
  if (api < 0) return nullptr;
  const ApiCall& call = ctx.trace.api_calls[api];
  return ctx.host.thread(call.pid, call.tid);
}

struct CauseAccumulator {
  int64_t ns = 0;
  double tracing_ns = 0;  // Of ns, what the tracer's measured launch cost explains.
  std::unordered_map<StringId, int64_t> by_name;  // 0 = outside ops; kDeviceCopy = device copy.
};
constexpr StringId kDeviceCopyName = 0xFFFFFFFFu;
enum Cause { kMemcpyCause, kAllocCause, kInputCause, kCollectiveCause, kLaunchCause, kSyncCause, kOtherCause };

// Attributes every idle moment of the window to one cause (DESIGN.md, "Idle attribution").
// Time per state in equal slices of the window, for the timeline picture: index 0 is
// "kernels running", 1 + Cause the idle causes.
class TimelineBuckets {
 public:
  TimelineBuckets(int64_t start, int64_t end, int buckets)
      : start_(start), width_(std::max<double>(1.0, static_cast<double>(end - start) / buckets)),
        time_(static_cast<size_t>(buckets), std::array<double, 8>{}) {}
  void add(int state, int64_t a, int64_t b) {
    while (a < b) {
      const auto k = std::min(time_.size() - 1, static_cast<size_t>(static_cast<double>(a - start_) / width_));
      const auto bucket_end = static_cast<int64_t>(static_cast<double>(start_) + width_ * static_cast<double>(k + 1));
      const int64_t e = k + 1 == time_.size() ? b : std::min(b, std::max(bucket_end, a + 1));
      time_[k][static_cast<size_t>(state)] += static_cast<double>(e - a);
      a = e;
    }
  }
  // One letter per bucket: K kernels, m memcpy, a alloc, i input, c collective, l launch,
  // s sync, o other (the state that filled most of the bucket).
  std::string letters() const {
    static constexpr char kLetters[] = {'K', 'm', 'a', 'i', 'c', 'l', 's', 'o'};
    std::string out;
    for (const auto& t : time_) {
      out += kLetters[std::max_element(t.begin(), t.end()) - t.begin()];
    }
    return out;
  }

 private:
  int64_t start_;
  double width_;
  std::vector<std::array<double, 8>> time_;
};

std::vector<IdleCause> attribute_idle(const DeviceContext& ctx, TimelineBuckets& timeline) {
  std::array<CauseAccumulator, 7> acc;
  for (const Interval& k : ctx.kernel_union) {
    const int64_t a = std::max(k.start_ns, ctx.window_start), b = std::min(k.end_ns, ctx.window_end);
    if (a < b) timeline.add(0, a, b);
  }
  const std::vector<Interval> idle = gaps(ctx.kernel_union, ctx.window_start, ctx.window_end);
  const ThreadTimeline* fallback = ctx.host.main_thread();
  std::vector<std::pair<Cause, int64_t>> pieces;
  for (const Interval& gap : idle) {
    // The host thread that issues the next GPU work (or issued the previous) is the one whose
    // activity explains the gap.
    auto next = std::lower_bound(ctx.kernels.begin(), ctx.kernels.end(), gap.end_ns,
                                 [](const Kernel* k, int64_t t) { return k->start_ns < t; });
    const ThreadTimeline* thread = next != ctx.kernels.end() ? launching_thread(ctx, *next) : nullptr;
    if (!thread && next != ctx.kernels.begin()) thread = launching_thread(ctx, *std::prev(next));
    if (!thread) thread = fallback;
    // The GPU waited on the launch call of the kernel that ends the gap if that call was still
    // running when the gap began; untraced, the call (and so the gap) is shorter by the
    // tracer's measured cost per launch.
    double tracing_ns = 0;
    if (ctx.trace.tracing_cost && next != ctx.kernels.end()) {
      const int64_t api = ctx.host.api_for_correlation((*next)->correlation);
      if (api >= 0 && ctx.trace.api_calls[static_cast<size_t>(api)].end_ns > gap.start_ns)
        tracing_ns = std::min(static_cast<double>(gap.end_ns - gap.start_ns), ctx.trace.tracing_cost->added_ns());
    }
    // The gap's pieces, in order: the tracer's part is taken from the end of the gap backwards
    // (it delayed the launch that ended it), so no cause is charged more than it has.
    pieces.clear();

    // Did the gap begin while the host was blocked waiting for the GPU, or stalled in an
    // allocation (cudaFree synchronises implicitly)? Then that, not what the host does next,
    // is why the queue ran dry.
    bool began_in_sync = false, began_in_alloc = false;
    if (thread) {
      for (int64_t probe : {gap.start_ns, std::min(gap.end_ns - 1, gap.start_ns + 20'000)}) {
        const HostSegment* s = thread->at(probe);
        if (s && (s->flags & kHostBlocking)) began_in_sync = true;
        if (s && (s->flags & kHostAlloc)) began_in_alloc = true;
      }
    }

    // Walk the gap in pieces bounded by host segments and device copies.
    int64_t t = gap.start_ns;
    while (t < gap.end_ns) {
      int64_t piece_end = gap.end_ns;
      const HostSegment* seg = thread ? thread->at(t) : nullptr;
      if (seg) {
        piece_end = std::min(piece_end, seg->end_ns);
      } else if (thread) {
        auto nxt = std::upper_bound(thread->segments.begin(), thread->segments.end(), t,
                                    [](int64_t v, const HostSegment& s) { return v < s.start_ns; });
        if (nxt != thread->segments.end()) piece_end = std::min(piece_end, nxt->start_ns);
      }
      // Device copy boundaries.
      bool copying = false;
      auto cit = std::lower_bound(ctx.copy_union.begin(), ctx.copy_union.end(), t,
                                  [](const Interval& i, int64_t v) { return i.end_ns <= v; });
      if (cit != ctx.copy_union.end()) {
        if (cit->start_ns <= t) {
          copying = true;
          piece_end = std::min(piece_end, cit->end_ns);
        } else {
          piece_end = std::min(piece_end, cit->start_ns);
        }
      }
      const uint16_t flags = seg ? seg->flags : 0;
      const bool host_known = thread && t >= thread->first_ns && t < thread->last_ns;
      Cause cause = kOtherCause;
      if (copying || (flags & kHostMemcpy)) cause = kMemcpyCause;
      else if (flags & kHostAlloc) cause = kAllocCause;
      else if (flags & kHostInput) cause = kInputCause;
      else if (flags & kHostCollective) cause = kCollectiveCause;
      else if (began_in_alloc) cause = kAllocCause;
      else if (began_in_sync) cause = kSyncCause;
      else if (flags & kHostLaunch) cause = kLaunchCause;
      else if (host_known) cause = kInputCause;
      const int64_t len = piece_end - t;
      acc[cause].ns += len;
      timeline.add(1 + cause, t, piece_end);
      acc[cause].by_name[copying ? kDeviceCopyName : (seg ? seg->name : 0)] += len;
      if (tracing_ns > 0) pieces.emplace_back(cause, len);
      t = piece_end;
    }
    for (auto it = pieces.rbegin(); it != pieces.rend() && tracing_ns > 0; ++it) {
      const double part = std::min(tracing_ns, static_cast<double>(it->second));
      acc[it->first].tracing_ns += part;
      tracing_ns -= part;
    }
  }

  std::vector<IdleCause> out;
  for (int c = 0; c < 7; ++c) {
    IdleCause ic;
    ic.cause = kIdleCauses[c];
    ic.ns = acc[c].ns;
    ic.pct = pct(static_cast<double>(acc[c].ns), static_cast<double>(ctx.window()));
    if (ctx.trace.tracing_cost) ic.tracing_ns = static_cast<int64_t>(acc[c].tracing_ns);
    std::vector<std::pair<StringId, int64_t>> names(acc[c].by_name.begin(), acc[c].by_name.end());
    std::sort(names.begin(), names.end(), [](auto& a, auto& b) { return a.second > b.second; });
    for (size_t i = 0; i < names.size() && i < 3; ++i) {
      std::string label = names[i].first == kDeviceCopyName ? "(device copy or set)"
                          : names[i].first == 0 ? "(host code outside profiled ops)"
                                                : std::string(ctx.trace.strings.view(names[i].first));
      ic.top_host.push_back({std::move(label), names[i].second});
    }
    out.push_back(std::move(ic));
  }
  return out;
}

// SM-time covered: kernel time weighted by min(1, blocks / SMs), capped at one per instant.
double sm_active_estimate(const DeviceContext& ctx) {
  std::vector<std::pair<int64_t, double>> edges;
  edges.reserve(ctx.kernels.size() * 2);
  const double sms = ctx.device && ctx.device->num_sms ? *ctx.device->num_sms : 0.0;
  for (const Kernel* k : ctx.kernels) {
    const int64_t s = std::max(k->start_ns, ctx.window_start), e = std::min(k->end_ns, ctx.window_end);
    if (e <= s) continue;
    // Without grid or SM count, a kernel is assumed to fill the GPU (an upper bound).
    const double w = (k->has_grid() && sms > 0) ? std::min(1.0, static_cast<double>(k->grid.volume()) / sms) : 1.0;
    edges.emplace_back(s, w);
    edges.emplace_back(e, -w);
  }
  std::sort(edges.begin(), edges.end());
  double level = 0, area = 0;
  int64_t last = ctx.window_start;
  for (const auto& [t, w] : edges) {
    area += std::min(1.0, std::max(0.0, level)) * static_cast<double>(t - last);
    level += w;
    last = t;
  }
  return pct(area, static_cast<double>(ctx.window()));
}

Precision kernel_precision(DeviceContext& ctx, const Kernel& k) {
  const Precision from_name = ctx.precision_of(k.name);
  if (from_name == Precision::kTf32 || from_name == Precision::kFp8) return from_name;
  const int64_t api = ctx.host.api_for_correlation(k.correlation);
  if (api >= 0) {
    const int64_t op = ctx.host.owner_op(static_cast<size_t>(api));
    if (op >= 0) {
      const HostEvent& e = ctx.trace.host_events[op];
      for (uint16_t i = 0; i < e.num_args; ++i) {
        const OpArg& a = ctx.trace.op_args[e.first_arg + i];
        if (a.rank < 2 || a.dtype == 0) continue;  // Matrices only; skips bias and scalars.
        const Precision p = precision_from_dtype(ctx.trace.strings.view(a.dtype));
        if (p != Precision::kUnknown) return p;
      }
    }
  }
  return from_name;
}

KernelCategory kernel_category(DeviceContext& ctx, const Kernel& k) {
  const KernelCategory c = ctx.category_of(k.name);
  if (c == KernelCategory::kGemm || c == KernelCategory::kAttention || c == KernelCategory::kCommunication) return c;
  const int64_t api = ctx.host.api_for_correlation(k.correlation);
  if (api >= 0 && (ctx.host.context_flags(static_cast<size_t>(api)) & kHostOptimizer)) {
    return KernelCategory::kOptimizer;
  }
  return c;
}

struct FusionRun {
  std::vector<std::string> names;
  int64_t ns = 0;
};

std::vector<FusionCandidate> fusion_candidates(DeviceContext& ctx, const std::vector<KernelCategory>& categories,
                                               const std::vector<Step>& steps) {
  // Per stream, runs of >= 2 consecutive memory-bound kernels, broken by anything else and at
  // step boundaries (a loop of only elementwise kernels would otherwise be one endless run).
  // A kernel belongs to the step in which it was launched (or started, without launch data).
  std::vector<size_t> step_of(ctx.kernels.size(), 0);
  if (!steps.empty()) {
    for (size_t i = 0; i < ctx.kernels.size(); ++i) {
      const int64_t api = ctx.host.api_for_correlation(ctx.kernels[i]->correlation);
      const int64_t t = api >= 0 ? ctx.trace.api_calls[api].start_ns : ctx.kernels[i]->start_ns;
      step_of[i] = static_cast<size_t>(
          std::upper_bound(steps.begin(), steps.end(), t, [](int64_t v, const Step& st) { return v < st.start_ns; }) -
          steps.begin());
    }
  }
  std::map<int32_t, std::vector<size_t>> by_stream;
  for (size_t i = 0; i < ctx.kernels.size(); ++i) by_stream[ctx.kernels[i]->stream].push_back(i);
  std::map<std::vector<std::string>, FusionCandidate> groups;
  for (const auto& [stream, idx] : by_stream) {
    size_t i = 0;
    while (i < idx.size()) {
      size_t j = i;
      while (j < idx.size() && is_memory_bound(categories[idx[j]]) && step_of[idx[j]] == step_of[idx[i]]) ++j;
      if (j - i >= 2) {
        std::vector<std::string> names;
        int64_t ns = 0;
        for (size_t k = i; k < j; ++k) {
          names.push_back(ctx.short_name_of(ctx.kernels[idx[k]]->name));
          ns += ctx.kernels[idx[k]]->end_ns - ctx.kernels[idx[k]]->start_ns;
        }
        const size_t n = names.size();
        FusionCandidate& g = groups[names];
        if (g.kernels.empty()) g.kernels = std::move(names);
        g.occurrences += 1;
        g.ns += ns;
        g.est_saving_ns += ns * static_cast<int64_t>(n - 1) / static_cast<int64_t>(n);
      }
      i = std::max(j, i + 1);
    }
  }
  std::vector<FusionCandidate> out;
  for (auto& [key, g] : groups) {
    if (g.occurrences < kMinFusionOccurrences) continue;
    g.pct = pct(static_cast<double>(g.ns), static_cast<double>(ctx.window()));
    out.push_back(std::move(g));
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.est_saving_ns > b.est_saving_ns; });
  return out;
}

double percentile(std::vector<double>& v, double p) {
  const size_t k = static_cast<size_t>(std::clamp(p, 0.0, 1.0) * static_cast<double>(v.size() - 1));
  std::nth_element(v.begin(), v.begin() + static_cast<ptrdiff_t>(k), v.end());
  return v[k];
}

std::string severity_for(double speedup) {
  return speedup >= 1.25 ? "high" : speedup >= 1.05 ? "medium" : "low";
}

std::string fmt_ms(int64_t ns) { return fmt::format("{:.2f} ms", static_cast<double>(ns) / 1e6); }

// Host names that filled a cause's idle time, for evidence lines.
std::string top_names(const IdleCause& c) {
  std::string out;
  for (const auto& h : c.top_host) {
    if (!out.empty()) out += ", ";
    out += fmt::format("{} {}", h.name.size() > 60 ? h.name.substr(0, 57) + "..." : h.name, fmt_ms(h.ns));
  }
  return out;
}

struct CopyStats {
  int64_t pageable_count = 0;
  uint64_t pageable_bytes = 0;
  std::optional<double> pinned_bytes_per_s;  // Best host<->device pinned rate seen (>= 1 MiB).
};

enum class OccupancyLimiter { kThreads, kRegisters, kSharedMemory, kBlocks };
struct Occupancy {
  double fraction;  // Resident warps / maximum warps per SM.
  OccupancyLimiter limiter;
};

// Theoretical occupancy of a kernel from its launch configuration and the device's per-SM
// limits (the CUDA occupancy calculator's model, without allocation granularity).
std::optional<Occupancy> theoretical_occupancy(const Device& dev, const Kernel& k) {
  const uint64_t threads = k.block.volume();
  if (threads == 0 || !dev.max_threads_per_sm || *dev.max_threads_per_sm <= 0) return std::nullopt;
  const double max_warps = *dev.max_threads_per_sm / 32.0;
  const double warps_per_block = std::ceil(static_cast<double>(threads) / 32.0);
  constexpr double kMaxBlocksPerSm = 32;
  double blocks = std::floor(static_cast<double>(*dev.max_threads_per_sm) / static_cast<double>(threads));
  OccupancyLimiter limiter = OccupancyLimiter::kThreads;
  if (kMaxBlocksPerSm < blocks) blocks = kMaxBlocksPerSm, limiter = OccupancyLimiter::kBlocks;
  if (k.registers_per_thread && *k.registers_per_thread > 0 && dev.regs_per_sm) {
    const double by_regs = std::floor(static_cast<double>(*dev.regs_per_sm) /
                                      (static_cast<double>(*k.registers_per_thread) * warps_per_block * 32.0));
    if (by_regs < blocks) blocks = by_regs, limiter = OccupancyLimiter::kRegisters;
  }
  if (k.shared_memory_bytes && *k.shared_memory_bytes > 0 && dev.shared_mem_per_sm_bytes) {
    const double by_smem = std::floor(static_cast<double>(*dev.shared_mem_per_sm_bytes) / *k.shared_memory_bytes);
    if (by_smem < blocks) blocks = by_smem, limiter = OccupancyLimiter::kSharedMemory;
  }
  return Occupancy{std::min(1.0, blocks * warps_per_block / max_warps), limiter};
}

void add_findings(const DeviceContext& ctx, DeviceReport& r, const std::vector<KernelCategory>& categories,
                  const std::vector<Precision>& precisions, const CopyStats& copies) {
  const double window = static_cast<double>(r.window_ns);
  const double steps = std::max<int64_t>(1, r.step_count);
  // Speedups are ratios to the window the program would take untraced, where the tracer's
  // measured launch cost is known (idle it explains is neither in the base nor saved by a fix).
  const double base = static_cast<double>(r.untraced_window_est_ns.value_or(r.window_ns));
  auto speedup_removing = [&](double saved_ns) { return base / std::max(1.0, base - saved_ns); };
  auto add = [&](std::string id, std::string title, std::string evidence, double speedup, std::string rec) {
    if (speedup < 1.01) return;
    r.findings.push_back({std::move(id), severity_for(speedup), std::move(title), std::move(evidence),
                          speedup, std::move(rec)});
  };

  for (const IdleCause& c : r.idle_causes) {
    if (c.pct < 2.0) continue;
    const std::string per_step = fmt_ms(static_cast<int64_t>(static_cast<double>(c.ns) / steps));
    const std::string base_evidence = fmt::format(
        "GPU idle {:.1f}% of the window ({} per step) while the host was in: {}", c.pct, per_step, top_names(c));
    const double s = speedup_removing(static_cast<double>(c.ns - c.tracing_ns.value_or(0)));
    if (c.cause == "input") {
      add("input-bound", "The GPU waits for the host to prepare input", base_evidence, s,
          "Prepare batches off the training loop: DataLoader(num_workers=4 or more, pin_memory=True, "
          "prefetch_factor=2+, persistent_workers=True) and .to(device, non_blocking=True); move CPU "
          "preprocessing into the workers or onto the GPU.");
    } else if (c.cause == "sync") {
      add("host-sync", "Host syncs drain the GPU queue", base_evidence, s,
          "Remove .item(), .cpu(), .tolist(), print(tensor) and torch.cuda.synchronize() from the step; "
          "log metrics every N steps; keep data on the GPU so the host never waits.");
    } else if (c.cause == "memcpy") {
      // Estimate: pageable copies become pinned ones at the best pinned bandwidth seen in this
      // trace, else an assumed rate for the host link (PCIe 5 on Hopper and later: 50 GB/s;
      // PCIe 4: 25 GB/s), and stop blocking; other copy stalls overlap.
      std::string ev = base_evidence;
      double saved = static_cast<double>(c.ns - c.tracing_ns.value_or(0));
      const double assumed_bw = ctx.device && ctx.device->cc_major && *ctx.device->cc_major >= 9 ? 50e9 : 25e9;
      if (copies.pageable_count > 0) {
        const double bw = copies.pinned_bytes_per_s.value_or(assumed_bw);
        saved = std::max(0.0, saved - static_cast<double>(copies.pageable_bytes) / bw * 1e9);
        ev += fmt::format("; {} copies ({:.1f} MB) from pageable host memory", copies.pageable_count,
                          static_cast<double>(copies.pageable_bytes) / 1e6);
      }
      add("memcpy", "Copies stall the GPU", ev, speedup_removing(saved),
          fmt::format("Pin host memory (DataLoader pin_memory=True or tensor.pin_memory()) and copy with "
                      "non_blocking=True so copies overlap compute; keep tensors on the GPU between steps. "
                      "Estimate assumes pinned copies at {:.0f} GB/s{}.",
                      copies.pinned_bytes_per_s.value_or(assumed_bw) / 1e9,
                      copies.pinned_bytes_per_s ? " (the best pinned rate in this trace)"
                                                : " (assumed for the host link; none measured here)"));
    } else if (c.cause == "alloc") {
      add("allocation", "Memory allocation stalls the GPU", base_evidence, s,
          "Let PyTorch's caching allocator reuse memory: do not call torch.cuda.empty_cache() in the loop, "
          "preallocate buffers, try PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True.");
    } else if (c.cause == "launch") {
      std::string ev = base_evidence;
      if (r.launch.shorter_than_launch_pct) {
        ev += fmt::format("; {:.0f}% of kernels run shorter than their launch call, {:.0f}% under 10 us",
                          *r.launch.shorter_than_launch_pct, r.launch.under_10us_count_pct);
      }
      // The estimate's step in absolute terms. A tracer slows every launch call, so the traced
      // step can be much longer than the program's own (on the H200, 6% to 63% on the zoo's
      // launch_bound case); with the tracer's cost measured on this host, the ratio's base is
      // the step without it.
      const auto fixed_step = static_cast<int64_t>((window - static_cast<double>(c.ns)) / steps);
      if (r.tracing_cost && r.untraced_window_est_ns) {
        ev += fmt::format("; tracing adds {:.1f} us to each launch call on this host (measured: {:.1f} -> {:.1f} us), "
                          "so the program would take about {} per step untraced (traced: {}) and about {} "
                          "without the gaps",
                          r.tracing_cost->added_ns() / 1e3, r.tracing_cost->plain_launch_ns / 1e3,
                          r.tracing_cost->traced_launch_ns / 1e3,
                          fmt_ms(static_cast<int64_t>(static_cast<double>(*r.untraced_window_est_ns) / steps)),
                          fmt_ms(static_cast<int64_t>(window / steps)), fmt_ms(fixed_step));
      } else {
        ev += fmt::format("; without the gaps a step would take about {} (the traced step is {}; tracing slows "
                          "launches, so compare with the step time measured without the profiler)",
                          fmt_ms(fixed_step), fmt_ms(static_cast<int64_t>(window / steps)));
      }
      add("launch-bound", "The host cannot issue kernels fast enough", ev, s,
          "Cut per-kernel host overhead: torch.compile(model) fuses small ops (mode=\"reduce-overhead\" also "
          "uses CUDA graphs); capture the step in a CUDA graph; use larger batches or shapes so each kernel "
          "does more work.");
    } else if (c.cause == "collective") {
      add("collective-wait", "Communication stalls the GPU", base_evidence, s,
          "Overlap communication with compute (DDP bucket sizes, FSDP prefetch), and balance work across ranks.");
    }
  }

  // Precision: GEMM time in fp32/tf32 where bf16 tensor cores would serve.
  int64_t gemm_ns = 0, slow_ns = 0, fp32_ns = 0;
  for (size_t i = 0; i < ctx.kernels.size(); ++i) {
    if (categories[i] != KernelCategory::kGemm && categories[i] != KernelCategory::kAttention) continue;
    const int64_t d = ctx.kernels[i]->end_ns - ctx.kernels[i]->start_ns;
    gemm_ns += d;
    if (precisions[i] == Precision::kFp32 || precisions[i] == Precision::kTf32) slow_ns += d;
    if (precisions[i] == Precision::kFp32) fp32_ns += d;
  }
  if (gemm_ns > 0 && slow_ns > 0.1 * gemm_ns) {
    // Estimate: GEMMs speed up by the ratio of the device's dense bf16 peak to its fp32 (or
    // tf32) peak; without a known device, 4x for fp32 and 2x for tf32.
    double fp32_factor = 4, tf32_factor = 2;
    if (const auto bf16 = peak_tflops(r.name, Precision::kBf16)) {
      if (const auto fp32 = peak_tflops(r.name, Precision::kFp32)) fp32_factor = *bf16 / *fp32;
      if (const auto tf32 = peak_tflops(r.name, Precision::kTf32)) tf32_factor = *bf16 / *tf32;
    }
    const double saved = static_cast<double>(fp32_ns) * (1 - 1.0 / fp32_factor) +
                         static_cast<double>(slow_ns - fp32_ns) * (1 - 1.0 / tf32_factor);
    add("precision-fp32", "Matrix math runs in fp32/tf32, not on bf16 tensor cores",
        fmt::format("{} of {} GEMM/attention time per step ({:.0f}%) is fp32 or tf32",
                    fmt_ms(static_cast<int64_t>(static_cast<double>(slow_ns) / steps)),
                    fmt_ms(static_cast<int64_t>(static_cast<double>(gemm_ns) / steps)), pct(slow_ns, gemm_ns)),
        speedup_removing(saved),
        fmt::format("Train in mixed precision: wrap the forward pass in torch.autocast(\"cuda\", "
                    "dtype=torch.bfloat16) (or set torch.backends.cuda.matmul.allow_tf32=True as a first step). "
                    "Estimate assumes fp32 GEMMs become {:.1f}x and tf32 {:.1f}x faster (dense peak ratios); "
                    "elementwise kernels, which also move half the bytes in bf16, are not counted.",
                    fp32_factor, tf32_factor));
  }

  // Optimizer: many per-tensor kernels instead of a few fused multi-tensor ones.
  int64_t opt_kernels = 0, opt_multi = 0, opt_ns = 0;
  for (size_t i = 0; i < ctx.kernels.size(); ++i) {
    if (categories[i] != KernelCategory::kOptimizer) continue;
    ++opt_kernels;
    opt_ns += ctx.kernels[i]->end_ns - ctx.kernels[i]->start_ns;
    if (ctx.trace.strings.view(ctx.kernels[i]->name).find("multi_tensor_apply") != std::string_view::npos) ++opt_multi;
  }
  const double opt_per_step = static_cast<double>(opt_kernels) / steps;
  if (opt_per_step >= 100 && opt_multi * 2 < opt_kernels) {
    // Estimate: a fused optimizer does the same arithmetic in a few bandwidth-bound passes;
    // assume it takes a quarter of the per-tensor kernel time and none of its launch gaps.
    add("optimizer-unfused", "The optimizer runs one small kernel per tensor",
        fmt::format("{:.0f} optimizer kernels per step, {} of kernel time per step, {} multi-tensor",
                    opt_per_step, fmt_ms(static_cast<int64_t>(static_cast<double>(opt_ns) / steps)), opt_multi),
        speedup_removing(0.75 * static_cast<double>(opt_ns)),
        "Use a fused optimizer: torch.optim.AdamW(params, fused=True) (or foreach=True). Estimate assumes the "
        "fused step takes a quarter of the per-tensor kernel time.");
  }

  // Fusion of memory-bound chains.
  int64_t fusion_saving = 0;
  for (const auto& f : r.fusion) fusion_saving += f.est_saving_ns;
  if (!r.fusion.empty() && fusion_saving > 0.02 * window) {
    const auto& top = r.fusion.front();
    std::string chain;
    for (size_t i = 0; i < top.kernels.size() && i < 4; ++i) chain += (i ? " -> " : "") + top.kernels[i];
    if (top.kernels.size() > 4) chain += fmt::format(" -> ... ({} kernels)", top.kernels.size());
    add("kernel-fusion", "Chains of memory-bound kernels could be fused",
        fmt::format("{} recurring chains of elementwise/normalisation kernels; the largest: {} ({} times, "
                    "{:.1f}% of the window)",
                    r.fusion.size(), chain, top.occurrences, top.pct),
        speedup_removing(static_cast<double>(fusion_saving)),
        "Fuse elementwise chains: torch.compile(model), or fused kernels (fused LayerNorm, bias+GELU, "
        "dropout+residual+LayerNorm). Estimate assumes a fused chain of k kernels costs one kernel's time.");
  }

  // Materialised attention: plain softmax kernels (manual q·kᵀ → softmax → ·v) where a fused
  // attention kernel would keep the score matrix on chip. Not flagged when fused attention
  // kernels already dominate (the softmax is then something else).
  {
    double softmax_ns = 0, fused_ns = 0;
    int64_t softmax_count = 0;
    for (size_t i = 0; i < ctx.kernels.size(); ++i) {
      const double d = static_cast<double>(ctx.kernels[i]->end_ns - ctx.kernels[i]->start_ns);
      if (categories[i] == KernelCategory::kAttention) {
        fused_ns += d;
      } else if (is_plain_softmax(ctx.trace.strings.view(ctx.kernels[i]->name))) {
        softmax_ns += d;
        ++softmax_count;
      }
    }
    if (softmax_ns > 0.02 * window && fused_ns < softmax_ns) {
      add("attention-unfused", "Attention materialises its score matrix",
          fmt::format("{:.0f} softmax kernels per step, {:.1f}% of the window: the attention scores make a round "
                      "trip through memory (forward and backward) instead of staying in a fused kernel",
                      static_cast<double>(softmax_count) / steps, pct(softmax_ns, window)),
          speedup_removing(softmax_ns),
          "Use fused attention: torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True) "
          "(FlashAttention / cuDNN backends) instead of q @ k.transpose(-2, -1), softmax and @ v. Estimate: "
          "the softmax passes disappear; the score GEMMs are assumed to cost the same inside the fused "
          "kernel (it also skips masked causal blocks, which is not counted).");
    }
  }

  // Under-filled grids: fewer blocks than SMs. The estimate uses the same throughput model as
  // low-occupancy below: an SM's throughput grows with its resident warps up to 50% occupancy, so
  // a kernel of g blocks (one per SM) speeds up by SMs·min(occ, 0.5) / (g·min(block warps, 0.5)),
  // where occ is the kernel's theoretical occupancy; no kernel gets shorter than kMinKernelNs.
  // Communication kernels (NCCL runs one block per channel by design) are left out.
  if (ctx.device && ctx.device->num_sms) {
    constexpr double kMinKernelNs = 2000;  // assumed: shorter kernels are dominated by launch and tail
    const double sms = *ctx.device->num_sms;
    double lost = 0, busy = 0, saved = 0;
    for (size_t i = 0; i < ctx.kernels.size(); ++i) {
      const Kernel* k = ctx.kernels[i];
      const double d = static_cast<double>(k->end_ns - k->start_ns);
      busy += d;
      if (!k->has_grid() || categories[i] == KernelCategory::kCommunication) continue;
      const double g = static_cast<double>(k->grid.volume());
      if (g >= sms) continue;
      lost += d * (1.0 - g / sms);
      double gain = sms / g;
      const auto occ = theoretical_occupancy(*ctx.device, *k);
      if (occ && ctx.device->max_threads_per_sm) {
        const double block_warps = std::ceil(static_cast<double>(k->block.volume()) / 32.0);
        const double block_frac = std::min(1.0, block_warps * 32.0 / *ctx.device->max_threads_per_sm);
        gain *= std::min(occ->fraction, 0.5) / std::min(block_frac, 0.5);
      }
      gain = std::max(1.0, gain);
      saved += std::max(0.0, d - std::max(d / gain, std::min(d, kMinKernelNs)));
    }
    if (busy > 0 && lost > 0.1 * busy && saved > 0) {
      add("small-grid", "Kernels launch fewer blocks than the GPU has SMs",
          fmt::format("{:.0f}% of kernel time is SM capacity left idle by grids smaller than {} SMs "
                      "(SM-active estimate {:.1f}% vs busy {:.1f}%)",
                      pct(lost, busy), *ctx.device->num_sms, r.sm_active_est_pct, r.busy_pct),
          speedup_removing(saved),
          "Give each kernel more parallel work: a larger batch or sequence, fewer but larger tensors, more "
          "blocks per kernel (split the work), or torch.compile to fuse small ops. Estimate: the same work "
          "spread over every SM, throughput growing with resident warps up to 50% occupancy.");
    }
  }

  // Low occupancy: non-matrix kernels whose registers or shared memory leave few warps per SM
  // (GEMM and attention kernels run at low occupancy by design and are excluded).
  if (ctx.device && ctx.device->max_threads_per_sm && ctx.device->regs_per_sm) {
    double kernel_ns = 0, starved_ns = 0, saved_ns = 0;
    int64_t by_regs = 0, by_smem = 0;
    for (size_t i = 0; i < ctx.kernels.size(); ++i) {
      const Kernel& k = *ctx.kernels[i];
      const double d = static_cast<double>(k.end_ns - k.start_ns);
      kernel_ns += d;
      if (categories[i] == KernelCategory::kGemm || categories[i] == KernelCategory::kAttention) continue;
      const auto occ = theoretical_occupancy(*ctx.device, k);
      if (!occ || occ->fraction >= 0.25 || occ->limiter == OccupancyLimiter::kThreads) continue;
      starved_ns += d;
      // Estimate: a bandwidth-bound kernel's throughput grows with resident warps up to ~50%.
      saved_ns += d * (1.0 - occ->fraction / 0.5);
      (occ->limiter == OccupancyLimiter::kRegisters ? by_regs : by_smem) += 1;
    }
    if (kernel_ns > 0 && starved_ns > 0.1 * kernel_ns) {
      add("low-occupancy", "Kernels keep too few warps resident to hide memory latency",
          fmt::format("{:.0f}% of kernel time runs at under 25% theoretical occupancy, limited by {} ({} "
                      "launches by registers, {} by shared memory)",
                      pct(starved_ns, kernel_ns), by_regs >= by_smem ? "registers" : "shared memory", by_regs,
                      by_smem),
          speedup_removing(saved_ns),
          "Cut registers per thread (__launch_bounds__, -maxrregcount, simpler per-thread state) or shared "
          "memory per block so more blocks fit per SM; in PyTorch this usually means a custom or Triton kernel: "
          "tune num_warps/BLOCK sizes. Estimate assumes throughput grows with occupancy up to 50%.");
    }
  }

  std::stable_sort(r.findings.begin(), r.findings.end(), [](const Finding& a, const Finding& b) {
    return a.est_speedup.value_or(1) > b.est_speedup.value_or(1);
  });
}

DeviceReport analyze_device(const Trace& trace, const HostIndex& host, int32_t device_id,
                            const StepDetection& steps, const AnalysisOptions& options) {
  DeviceContext ctx{trace, host, trace.find_device(device_id), device_id};
  std::vector<Interval> kernel_iv, copy_iv;
  int64_t first = INT64_MAX, last = INT64_MIN;
  for (const Kernel& k : trace.kernels) {
    if (k.device != device_id) continue;
    ctx.kernels.push_back(&k);
    kernel_iv.push_back({k.start_ns, k.end_ns});
    first = std::min(first, k.start_ns);
    last = std::max(last, k.end_ns);
  }
  for (const Memcpy& m : trace.memcpys) {
    if (m.device != device_id) continue;
    copy_iv.push_back({m.start_ns, m.end_ns});
    first = std::min(first, m.start_ns);
    last = std::max(last, m.end_ns);
  }
  for (const Memset& m : trace.memsets) {
    if (m.device != device_id) continue;
    copy_iv.push_back({m.start_ns, m.end_ns});
    first = std::min(first, m.start_ns);
    last = std::max(last, m.end_ns);
  }
  ctx.kernel_union = merge(std::move(kernel_iv));
  ctx.copy_union = merge(copy_iv);

  // The window: the steps (extended to the end of the GPU work the last step launched), or
  // the span of the device's activity.
  if (!steps.steps.empty()) {
    ctx.window_start = steps.steps.front().start_ns;
    ctx.window_end = steps.steps.back().end_ns;
    const int64_t last_step_end = steps.steps.back().end_ns;
    auto extend = [&](int64_t end_ns, std::optional<uint64_t> corr) {
      const int64_t api = host.api_for_correlation(corr);
      if (api >= 0 && trace.api_calls[api].start_ns >= ctx.window_start &&
          trace.api_calls[api].start_ns < last_step_end) {
        ctx.window_end = std::max(ctx.window_end, end_ns);
      }
    };
    for (const Kernel* k : ctx.kernels) extend(k->end_ns, k->correlation);
    for (const Memcpy& m : trace.memcpys) if (m.device == device_id) extend(m.end_ns, m.correlation);
    for (const Memset& m : trace.memsets) if (m.device == device_id) extend(m.end_ns, m.correlation);
  } else {
    ctx.window_start = first;
    ctx.window_end = last;
  }

  // Copies in the window: pageable ones to re-price, pinned ones for the achievable rate.
  CopyStats copies;
  for (const Memcpy& m : trace.memcpys) {
    if (m.device != device_id || !ctx.in_window(m.start_ns)) continue;
    if (m.host_memory == HostMemory::kPageable) {
      ++copies.pageable_count;
      copies.pageable_bytes += m.bytes.value_or(0);
    } else if (m.host_memory == HostMemory::kPinned && m.bytes && *m.bytes >= (1u << 20) && m.end_ns > m.start_ns &&
               (m.kind == CopyKind::kHtoD || m.kind == CopyKind::kDtoH)) {
      const double bw = static_cast<double>(*m.bytes) / (static_cast<double>(m.end_ns - m.start_ns) / 1e9);
      copies.pinned_bytes_per_s = std::max(copies.pinned_bytes_per_s.value_or(0.0), bw);
    }
  }

  DeviceReport r;
  r.source = trace.source;
  r.rank = trace.rank;
  r.device = device_id;
  r.name = ctx.device ? ctx.device->name : fmt::format("GPU {}", device_id);
  if (ctx.device) r.num_sms = ctx.device->num_sms;
  r.window_start_ns = ctx.window_start;
  r.window_ns = ctx.window();
  const double window = static_cast<double>(ctx.window());
  r.busy_pct = pct(covered(ctx.kernel_union, ctx.window_start, ctx.window_end), window);
  r.copy_pct = pct(covered(ctx.copy_union, ctx.window_start, ctx.window_end), window);
  r.sm_active_est_pct = sm_active_estimate(ctx);
  r.idle_pct = 100.0 - r.busy_pct;
  TimelineBuckets timeline(ctx.window_start, ctx.window_end, kTimelineBuckets);
  r.idle_causes = attribute_idle(ctx, timeline);
  r.timeline = timeline.letters();
  if (trace.tracing_cost) {
    r.tracing_cost = trace.tracing_cost;
    int64_t tracing = 0;
    for (const IdleCause& c : r.idle_causes) tracing += c.tracing_ns.value_or(0);
    r.untraced_window_est_ns = r.window_ns - tracing;
  }

  // Hardware counters sampled during the window (captures from `gpuscope run`).
  {
    double util = 0, sm = 0, tensor = 0;
    int n_util = 0, n_sm = 0, n_tensor = 0;
    for (const DeviceSample& s : trace.device_samples) {
      if (s.device != device_id || !ctx.in_window(s.time_ns)) continue;
      if (s.gpu_util_pct) util += *s.gpu_util_pct, ++n_util;
      if (s.sm_active_pct) sm += *s.sm_active_pct, ++n_sm;
      if (s.tensor_active_pct) tensor += *s.tensor_active_pct, ++n_tensor;
    }
    if (n_util) r.hw_gpu_util_pct = util / n_util;
    if (n_sm) r.hw_sm_active_pct = sm / n_sm;
    if (n_tensor) r.hw_tensor_active_pct = tensor / n_tensor;
  }

  // Kernels that start in the window.
  std::vector<const Kernel*> in_window;
  for (const Kernel* k : ctx.kernels) if (ctx.in_window(k->start_ns)) in_window.push_back(k);
  ctx.kernels = std::move(in_window);
  r.kernel_count = static_cast<int64_t>(ctx.kernels.size());
  std::vector<KernelCategory> categories(ctx.kernels.size());
  std::vector<Precision> precisions(ctx.kernels.size(), Precision::kUnknown);
  std::array<CategoryTime, kNumKernelCategories> cat_time{};
  std::array<int64_t, kNumPrecisions> prec_ns{};
  std::unordered_map<StringId, TopKernel> by_name;
  int64_t kernel_ns = 0, small = 0, small_ns = 0, shorter = 0, correlated = 0;
  std::vector<double> delays_us;
  for (size_t i = 0; i < ctx.kernels.size(); ++i) {
    const Kernel& k = *ctx.kernels[i];
    const int64_t d = k.end_ns - k.start_ns;
    categories[i] = kernel_category(ctx, k);
    auto& ct = cat_time[static_cast<size_t>(categories[i])];
    ct.ns += d;
    ct.count += 1;
    kernel_ns += d;
    if (categories[i] == KernelCategory::kGemm || categories[i] == KernelCategory::kAttention) {
      precisions[i] = kernel_precision(ctx, k);
      prec_ns[static_cast<size_t>(precisions[i])] += d;
    }
    auto& tk = by_name[k.name];
    tk.count += 1;
    tk.ns += d;
    if (tk.category.empty()) tk.category = category_name(categories[i]);
    if (d < kSmallKernelNs) ++small, small_ns += d;
    const int64_t api = host.api_for_correlation(k.correlation);
    if (api >= 0) {
      const ApiCall& call = trace.api_calls[api];
      ++correlated;
      if (d < call.end_ns - call.start_ns) ++shorter;
      delays_us.push_back(static_cast<double>(k.start_ns - call.start_ns) / 1e3);
    }
  }
  int64_t copy_count = 0;
  for (const Memcpy& m : trace.memcpys) {
    if (m.device == device_id && ctx.in_window(m.start_ns)) {
      cat_time[static_cast<size_t>(KernelCategory::kCopySet)].ns += m.end_ns - m.start_ns;
      ++copy_count;
    }
  }
  for (const Memset& m : trace.memsets) {
    if (m.device == device_id && ctx.in_window(m.start_ns)) {
      cat_time[static_cast<size_t>(KernelCategory::kCopySet)].ns += m.end_ns - m.start_ns;
      ++copy_count;
    }
  }
  cat_time[static_cast<size_t>(KernelCategory::kCopySet)].count += copy_count;
  int64_t activity_ns = 0;
  for (const auto& c : cat_time) activity_ns += c.ns;
  for (int c = 0; c < kNumKernelCategories; ++c) {
    CategoryTime ct = cat_time[c];
    ct.category = category_name(static_cast<KernelCategory>(c));
    ct.pct = pct(static_cast<double>(ct.ns), static_cast<double>(activity_ns));
    r.categories.push_back(std::move(ct));
  }
  std::sort(r.categories.begin(), r.categories.end(), [](auto& a, auto& b) { return a.ns > b.ns; });
  std::vector<std::pair<StringId, TopKernel>> tops(by_name.begin(), by_name.end());
  std::sort(tops.begin(), tops.end(), [](auto& a, auto& b) { return a.second.ns > b.second.ns; });
  for (size_t i = 0; i < tops.size() && i < 10; ++i) {
    TopKernel t = tops[i].second;
    t.name = std::string(trace.strings.view(tops[i].first));
    t.pct = pct(static_cast<double>(t.ns), static_cast<double>(kernel_ns));
    r.top_kernels.push_back(std::move(t));
  }
  r.launch.kernels_under_10us = small;
  r.launch.under_10us_count_pct = pct(static_cast<double>(small), static_cast<double>(ctx.kernels.size()));
  r.launch.under_10us_time_pct = pct(static_cast<double>(small_ns), static_cast<double>(kernel_ns));
  if (correlated > 0) {
    r.launch.shorter_than_launch = shorter;
    r.launch.shorter_than_launch_pct = pct(static_cast<double>(shorter), static_cast<double>(correlated));
    r.launch.launch_delay_median_us = percentile(delays_us, 0.5);
    r.launch.launch_delay_p90_us = percentile(delays_us, 0.9);
  }
  int64_t gemm_ns = 0;
  for (auto v : prec_ns) gemm_ns += v;
  for (int p = 0; p < kNumPrecisions; ++p) {
    if (prec_ns[p] == 0) continue;
    r.precision.push_back({std::string(precision_name(static_cast<Precision>(p))), prec_ns[p],
                           pct(static_cast<double>(prec_ns[p]), static_cast<double>(gemm_ns))});
  }
  std::sort(r.precision.begin(), r.precision.end(), [](auto& a, auto& b) { return a.ns > b.ns; });
  r.fusion = fusion_candidates(ctx, categories, steps.steps);
  if (r.fusion.size() > 5) r.fusion.resize(5);

  // Steps and FLOPs. Matmul FLOPs are counted on host ops of this trace whose launched work
  // (if known) ran on this device; nested matmul ops count once (the outermost).
  r.step_source = std::string(step_source_name(steps.source));
  r.steps_skipped_warmup = steps.skipped_warmup;
  std::vector<Step> step_list = steps.steps;
  if (step_list.empty()) step_list.push_back({ctx.window_start, ctx.window_end, 0});
  r.step_count = static_cast<int64_t>(step_list.size());
  std::vector<double> step_flops(step_list.size(), 0.0);
  bool any_flops = false;
  {
    // Outermost matmul ops per thread: skip an op nested inside a counted one.
    std::unordered_map<uint64_t, int64_t> counted_until;  // thread -> end of last counted op.
    for (const HostEvent& e : trace.host_events) {
      if (e.kind != HostEventKind::kOp || !is_matmul_op(trace.strings.view(e.name))) continue;
      const uint64_t key = (static_cast<uint64_t>(static_cast<uint32_t>(e.pid)) << 32) | static_cast<uint32_t>(e.tid);
      auto it = counted_until.find(key);
      if (it != counted_until.end() && e.start_ns < it->second) continue;
      const auto f = matmul_flops(trace, e);
      if (!f) continue;
      counted_until[key] = e.end_ns;
      for (size_t s = 0; s < step_list.size(); ++s) {
        if (e.start_ns >= step_list[s].start_ns && e.start_ns < step_list[s].end_ns) {
          step_flops[s] += *f;
          any_flops = true;
          break;
        }
      }
    }
  }
  double step_ns_sum = 0;
  for (size_t s = 0; s < step_list.size(); ++s) {
    const Step& st = step_list[s];
    StepReport sr;
    sr.number = st.number;
    sr.start_ns = st.start_ns;
    sr.duration_ns = st.end_ns - st.start_ns;
    sr.busy_pct = pct(covered(ctx.kernel_union, st.start_ns, st.end_ns), static_cast<double>(sr.duration_ns));
    if (any_flops) sr.matmul_flops = step_flops[s];
    step_ns_sum += static_cast<double>(sr.duration_ns);
    r.steps.push_back(sr);
  }
  // Step time: the mean host step, unless the GPU takes longer. When the host runs ahead
  // (launches queue up), host-side step ranges measure only the launching; the GPU's span from
  // the first kernel of the steps to the end of their work, per step, is then the real step.
  double step_ns = window;
  if (!steps.steps.empty()) {
    step_ns = step_ns_sum / static_cast<double>(step_list.size());
    // The GPU part starts with the first kernel launched inside the steps (work queued before
    // them belongs to earlier steps).
    std::optional<int64_t> first_launched;
    for (const Kernel* k : ctx.kernels) {
      const int64_t api = host.api_for_correlation(k->correlation);
      if (api >= 0 && trace.api_calls[api].start_ns >= ctx.window_start) {
        first_launched = k->start_ns;
        break;
      }
    }
    if (first_launched) {
      const double gpu_span = static_cast<double>(ctx.window_end - *first_launched);
      step_ns = std::max(step_ns, gpu_span / static_cast<double>(step_list.size()));
    }
  }
  r.step_mean_ms = step_ns / 1e6;
  if (any_flops) {
    r.matmul_flops_per_step = std::accumulate(step_flops.begin(), step_flops.end(), 0.0) /
                              static_cast<double>(step_list.size());
  }
  if (options.flops_per_step) {
    r.model_flops_per_step = *options.flops_per_step;
    r.model_flops_formula = "given by --flops-per-step";
  } else if (options.model) {
    r.model_flops_per_step = options.model->flops_per_step();
    r.model_flops_formula = options.model->formula();
  }

  // Peak: the dense bf16 tensor rate (the chip's training peak), fp8 when fp8 GEMMs dominate.
  Precision peak_precision = Precision::kBf16;
  if (!r.precision.empty() && r.precision.front().dtype == "fp8") peak_precision = Precision::kFp8;
  if (options.peak_tflops) {
    r.peak_tflops = *options.peak_tflops;
    r.peak_basis = "given by --peak-tflops";
  } else if (const PeakTable* row = find_peak_table(r.name)) {
    r.peak_tflops = peak_tflops(r.name, peak_precision);
    if (r.peak_tflops) {
      r.peak_basis = fmt::format("{} {} dense ({})", row->variant, precision_name(peak_precision), row->source);
    }
  }
  if (r.peak_tflops && step_ns > 0) {
    const double peak_per_step = *r.peak_tflops * 1e12 * step_ns / 1e9;
    if (r.model_flops_per_step) r.mfu_pct = 100.0 * *r.model_flops_per_step / peak_per_step;
    if (r.matmul_flops_per_step) r.hfu_pct = 100.0 * *r.matmul_flops_per_step / peak_per_step;
  }

  add_findings(ctx, r, categories, precisions, copies);
  return r;
}

}  // namespace

std::vector<DeviceReport> analyze_trace(const Trace& trace, const AnalysisOptions& options) {
  std::set<int32_t> devices;
  for (const Kernel& k : trace.kernels) devices.insert(k.device);
  for (const Memcpy& m : trace.memcpys) devices.insert(m.device);
  for (const Memset& m : trace.memsets) devices.insert(m.device);
  std::vector<DeviceReport> out;
  if (devices.empty()) return out;
  const HostIndex host(trace);
  StepDetection steps = detect_steps(trace, options.step_range);
  drop_warmup_steps(steps);
  for (int32_t d : devices) {
    DeviceReport r = analyze_device(trace, host, d, steps, options);
    if (r.window_ns > 0) out.push_back(std::move(r));
  }
  return out;
}

Report analyze_traces(const std::vector<Trace>& traces, const AnalysisOptions& options) {
  Report report;
  for (const Trace& t : traces) {
    for (const auto& w : t.warnings) report.warnings.push_back(fmt::format("{}: {}", t.source, w));
    auto devices = analyze_trace(t, options);
    if (devices.empty() && t.truncated) {
      report.rejected.push_back(fmt::format(
          "{}: the file ends before any GPU events (the profiler writes them after the CPU events); "
          "the trace is truncated: export it again",
          t.source));
    } else if (devices.empty()) {
      report.rejected.push_back(fmt::format(
          "{}: no GPU kernels, copies or sets in this trace (a CPU-only rank, or the profiler ran without "
          "ProfilerActivity.CUDA)",
          t.source));
    }
    for (auto& d : devices) report.devices.push_back(std::move(d));
  }
  if (traces.size() > 1 && report.devices.size() > 1) {
    RankSummary s;
    s.ranks = static_cast<int64_t>(report.devices.size());
    s.busy_min_pct = 100;
    for (const auto& d : report.devices) {
      s.busy_min_pct = std::min(s.busy_min_pct, d.busy_pct);
      s.busy_max_pct = std::max(s.busy_max_pct, d.busy_pct);
      if (d.step_mean_ms && d.step_source != "whole_window") {
        if (!s.step_max_ms || *d.step_mean_ms > *s.step_max_ms) {
          s.step_max_ms = d.step_mean_ms;
          s.slowest = d.source;
        }
        if (!s.step_min_ms || *d.step_mean_ms < *s.step_min_ms) s.step_min_ms = d.step_mean_ms;
      }
    }
    std::vector<double> step_ms;
    for (const auto& d : report.devices) {
      if (d.step_mean_ms && d.step_source != "whole_window") step_ms.push_back(*d.step_mean_ms);
    }
    if (step_ms.size() >= 2) {
      // The median of the other ranks (without the slowest), the lower middle for even counts.
      std::sort(step_ms.begin(), step_ms.end());
      step_ms.pop_back();
      s.step_median_ms = step_ms[(step_ms.size() - 1) / 2];
      // Ranks meet at every collective, so each waits for the slowest: bringing it to the
      // median would make every rank's step that much shorter (an estimate).
      const double speedup = *s.step_max_ms / *s.step_median_ms;
      if (speedup >= 1.1) {
        s.findings.push_back(
            {"straggler", severity_for(speedup), "One rank is slower than the others",
             fmt::format("{} takes {:.2f} ms per step against a median of {:.2f} ms over the other {} rank{}",
                         s.slowest, *s.step_max_ms, *s.step_median_ms, step_ms.size(), step_ms.size() == 1 ? "" : "s"),
             speedup,
             "Look at that rank's own idle causes above (input pipeline, host syncs); balance the data shards "
             "and sequence lengths across ranks (bucket or pad); check for CPU contention on its host (other "
             "processes, CPU affinity, fewer DataLoader workers than the others)."});
      }
    }
    report.ranks = s;
  }
  return report;
}

}  // namespace gpuscope
