#include "core/findings.h"

#include "core/host_index.h"
#include "core/intervals.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include <fmt/core.h>

namespace gpuscope {
namespace {

// An idle cause makes a finding from this share of the window.
constexpr double kIdleFindingMinPct = 2.0;
// Findings estimated to gain less are not reported.
constexpr double kMinSpeedup = 1.01;

// Host names that filled a cause's idle time, for evidence lines.
std::string top_names(const IdleCause& c) {
  std::string out;
  for (const auto& h : c.top_host) {
    if (!out.empty()) out += ", ";
    out += fmt::format("{} {}", h.name.size() > 60 ? h.name.substr(0, 57) + "..." : h.name, fmt_ms(h.ns));
  }
  return out;
}

double launch_claimed_host_ns(const FindingContext& f);
double steady_at_launching_code(const IdleCause& host);

// The common estimate of the idle-cause rules: that idle removed, less the tracer's part.
double speedup_removing_idle(const FindingContext& f, const IdleCause& c) {
  return f.speedup_removing(steady_idle_ns(c));
}

// Whether any name in the trace contains `word` (an op, annotation or kernel).
bool trace_mentions(const Trace& t, std::string_view word) {
  for (StringId id = 0; id < t.strings.size(); ++id) {
    if (t.strings.view(id).find(word) != std::string_view::npos) return true;
  }
  return false;
}

std::optional<Finding> memcpy_stall(const FindingContext& f) {
  const IdleCause* c = idle_trigger(f, IdleCauseId::kMemcpy);
  if (!c) return std::nullopt;
  // Estimate: copies from pinned memory, issued ahead (non_blocking, the next batch prefetched
  // while the step computes), overlap compute: the copy stalls go, but the step cannot be
  // shorter than the copies themselves take on the link. Pageable copies are re-priced at the
  // best pinned rate seen in this trace, else an assumed rate for the host link (PCIe 5 on
  // Hopper and later: 50 GB/s; PCIe 4: 25 GB/s).
  const Device* dev = f.device.device;
  std::string ev = idle_evidence(f, *c);
  const double assumed_bw = dev && dev->cc_major && *dev->cc_major >= 9 ? 50e9 : 25e9;
  const double bw = f.copies.pinned_bytes_per_s.value_or(assumed_bw);
  const double copy_floor_ns =
      static_cast<double>(f.copies.pageable_bytes) / bw * 1e9 + static_cast<double>(f.copies.other_copy_ns);
  if (f.copies.pageable_count > 0) {
    ev += fmt::format("; {} copies ({:.1f} MB) from pageable host memory", f.copies.pageable_count,
                      static_cast<double>(f.copies.pageable_bytes) / 1e6);
  }
  const double base = f.base_ns();
  const double stalls = steady_idle_ns(*c);
  const double fixed = std::max(base - stalls, copy_floor_ns);
  ev += fmt::format("; the copies themselves need about {} per step at {:.0f} GB/s",
                    fmt_ms(static_cast<int64_t>(copy_floor_ns / f.steps())), bw / 1e9);
  // Advice follows the copies' kind: host memory is pinned only where copies touch the host;
  // copies between device buffers are the program's own data movement on the GPU.
  const bool host_copies = f.copies.pageable_count > 0 || f.copies.host_copy_ns > 0;
  const bool device_copies = f.copies.device_copy_ns > 0 && f.copies.device_copy_ns >= f.copies.host_copy_ns;
  ev += fmt::format("; device time of host<->device copies {} per step, device-to-device {} per step",
                    fmt_ms(static_cast<int64_t>(static_cast<double>(f.copies.host_copy_ns) / f.steps())),
                    fmt_ms(static_cast<int64_t>(static_cast<double>(f.copies.device_copy_ns) / f.steps())));
  std::string advice;
  if (device_copies) {
    advice =
        "Most copy time is between device buffers: avoid copies the model does not need (.contiguous() "
        "after a transpose, .clone(), torch.cat growing a tensor in a loop, .to() of a tensor already on the "
        "device); write into preallocated buffers. ";
  }
  if (host_copies) {
    const bool loader = trace_mentions(f.device.trace, "DataLoader");
    // Host memory that is pinned already is not told to be pinned: what is left is to issue the
    // copies early enough to overlap compute.
    const bool all_pinned =
        f.copies.pageable_count == 0 && f.copies.unknown_memory_count == 0 && f.copies.pinned_count > 0;
    if (all_pinned) {
      ev += fmt::format("; all {} host copies are from or to pinned memory", f.copies.pinned_count);
    }
    advice += fmt::format(
        "{}copy with non_blocking=True and issue the next copy before this step's compute (a side "
        "stream{}) so copies overlap compute; keep tensors on the GPU between steps. ",
        all_pinned
            ? "The host memory is pinned already: "
            : fmt::format("Pin host memory ({}tensor.pin_memory()), ", loader ? "DataLoader pin_memory=True or " : ""),
        loader ? ", or the DataLoader's prefetch" : "");
  }
  advice += fmt::format("Estimate assumes copies at {:.0f} GB/s{} that overlap compute.", bw / 1e9,
                        f.copies.pinned_bytes_per_s ? " (the best pinned rate in this trace)"
                                                    : " (assumed for the host link; none measured here)");
  return proposal("Copies stall the GPU", std::move(ev), f.speedup_removing(std::max(0.0, base - fixed)),
                  std::move(advice));
}

// The advice follows what the Python bootstrap read of PyTorch's caching allocator (where the
// trace has its marks): turned off by PYTORCH_NO_CUDA_MEMORY_CACHING; out of memory and retrying
// (it frees its whole cache, synchronising, and allocates again: fragmentation, or a GPU too
// full); or neither, so the calls come from the program (empty_cache(), buffers allocated every
// step). Without the marks (a profiler trace, a program without torch) it names all three.
std::optional<Finding> allocation(const FindingContext& f) {
  const IdleCause* c = idle_trigger(f, IdleCauseId::kAlloc);
  if (!c) return std::nullopt;
  std::string ev = idle_evidence(f, *c);
  const AllocatorMarks& alloc = f.device.host.marks().allocator;
  const std::optional<int64_t> retries = alloc.traced_retries();
  std::string advice;
  if (alloc.uncached) {
    ev +=
        "; PYTORCH_NO_CUDA_MEMORY_CACHING is set in this process: PyTorch's caching allocator is off, so "
        "every tensor is a cudaMalloc and every free a cudaFree";
    advice =
        "Unset PYTORCH_NO_CUDA_MEMORY_CACHING so that PyTorch's caching allocator reuses memory (`gpuscope run "
        "--try caching-allocator` measures it).";
  } else if (retries && *retries > 0) {
    ev += fmt::format(
        "; PyTorch's caching allocator ran out of memory {} {} while traced (torch.cuda.memory_stats "
        "num_alloc_retries): each time it freed its whole cache, synchronising, and allocated again",
        *retries, *retries == 1 ? "time" : "times");
    advice = alloc.expandable
                 ? "Expandable segments are on already: lower the peak memory (smaller batches or sequences, "
                   "activation checkpointing) so that the cache need not be freed."
                 : "Set PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True, so that freed memory can serve larger "
                   "tensors (`gpuscope run --try expandable-segments` measures it), or lower the peak memory "
                   "(smaller batches or sequences, activation checkpointing).";
  } else if (retries) {
    ev +=
        "; PyTorch's caching allocator never ran out of memory while traced (no retries), so these calls "
        "are the program's";
    advice =
        "Let PyTorch's caching allocator reuse memory: do not call torch.cuda.empty_cache() in the loop, and "
        "allocate buffers once instead of every step.";
  } else {
    advice =
        "Let PyTorch's caching allocator reuse memory: do not call torch.cuda.empty_cache() in the loop, "
        "preallocate buffers; where PYTORCH_NO_CUDA_MEMORY_CACHING is set, unset it; where the allocator runs "
        "out of memory (torch.cuda.memory_stats()['num_alloc_retries'] grows), try "
        "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True.";
  }
  const double speedup = speedup_removing_idle(f, *c);
  Finding out = proposal("Memory allocation stalls the GPU", std::move(ev), speedup, std::move(advice));
  // What each allocator setting can give here: expandable segments answer retries only (and do
  // nothing with the cache off); turning the cache back on answers its being off.
  if (alloc.uncached) {
    out.est_speedup_of_fix.emplace_back("caching-allocator", speedup);
    out.est_speedup_of_fix.emplace_back("expandable-segments", 1.0);
  } else if (retries && (*retries == 0 || alloc.expandable)) {
    out.est_speedup_of_fix.emplace_back("expandable-segments", 1.0);
  }
  return out;
}

// Estimate: the host idle goes, less what other findings claim of it (each gap is claimed by
// one finding only): the gaps inside a per-tensor optimizer step (optimizer-unfused) and the
// gaps between inference iterations (scheduling-gap).
std::optional<Finding> host_bound(const FindingContext& f) {
  const IdleCause* c = idle_trigger(f, IdleCauseId::kHost);
  if (!c) return std::nullopt;
  std::string ev = idle_evidence(f, *c);
  double saved = steady_idle_ns(*c);
  if (optimizer_unfused_fires(f) && c->optimizer_ns > 0) {
    saved -= static_cast<double>(c->optimizer_ns);
    ev += fmt::format("; of them {} per step inside the optimizer step are optimizer-unfused's",
                      fmt_ms(static_cast<int64_t>(static_cast<double>(c->optimizer_ns) / f.steps())));
  }
  // Gaps at the code that issues the launches that launch-bound does not claim (it claims them
  // only where the step is bound by issuing): PyTorch's own work per op between kernels, not
  // code that issues no GPU work. Said, and the advice says what removes it.
  double at_launching_code = 0;
  if (const double by_launch = std::min(saved, launch_claimed_host_ns(f)); by_launch > 0) {
    saved -= by_launch;
    ev += fmt::format(
        "; of them {} per step at the code that issues the launches are launch-bound's (a CUDA "
        "graph of the step removes them)",
        fmt_ms(static_cast<int64_t>(by_launch / f.steps())));
  } else {
    at_launching_code = steady_at_launching_code(*c);
  }
  if (const int64_t between = scheduling_gap_ns(f); between > 0) {
    const double claimed = std::min(saved, static_cast<double>(between));
    saved -= claimed;
    ev += fmt::format("; of them {} per step between iterations are scheduling-gap's",
                      fmt_ms(static_cast<int64_t>(claimed / f.steps())));
  }
  if (pct(saved, f.window_ns()) < 2.0) return std::nullopt;
  at_launching_code = std::min(at_launching_code, saved);
  constexpr std::string_view kMoveIt =
      "run it while the GPU computes (after launching the step's work, in a background thread or a "
      "worker process), do it less often, or do it on the GPU";
  std::string advice = fmt::format(
      "Take that host work off the step's critical path: {}. The host lines above are where the time went.", kMoveIt);
  const bool mostly_issuing = 2 * at_launching_code >= saved;
  if (at_launching_code > 0) {
    ev += fmt::format(
        "; of them {} per step at code that also issues the step's kernels: PyTorch's own work per op "
        "between launches",
        fmt_ms(static_cast<int64_t>(at_launching_code / f.steps())));
    constexpr std::string_view kPerOp =
        "Where the code above issues the step's kernels (the model's forward, backward, the optimizer), the "
        "time is the framework's per-op work: fewer, larger ops (torch.compile) remove part of it, a CUDA "
        "graph of the step all of it.";
    advice = mostly_issuing ? fmt::format("{} Host work of other kinds there: {}.", kPerOp, kMoveIt)
                            : fmt::format("{} {}", advice, kPerOp);
  }
  return proposal(mostly_issuing ? "The GPU waits on the host's work between launches"
                                 : "The GPU waits while the host runs code that issues no GPU work",
                  std::move(ev), f.speedup_removing(saved), std::move(advice));
}

// Whether the trace's CUDA collectives run on gloo: PyTorch's profiler names ProcessGroupGloo's
// work "gloo:all_reduce" (and so on), and the Python bootstrap marks a process whose default
// process group sends CUDA tensors through gloo (`gpuscope.host#dist_gloo=1`).
bool collectives_on_gloo(const Trace& t, const HostMarks& marks) {
  if (marks.dist_gloo) return true;
  for (StringId id = 0; id < t.strings.size(); ++id) {
    if (t.strings.view(id).starts_with("gloo:")) return true;
  }
  return false;
}

std::optional<Finding> collective_wait(const FindingContext& f) {
  const IdleCause* c = idle_trigger(f, IdleCauseId::kCollective);
  if (!c) return std::nullopt;
  if (collectives_on_gloo(f.device.trace, f.device.host.marks())) {
    return proposal(
        "The GPU waits for collectives that gloo runs on the CPU",
        idle_evidence(f, *c) +
            "; the process group is gloo: each bucket is copied to host memory, reduced by the "
            "CPU over TCP and copied back while the GPU waits",
        speedup_removing_idle(f, *c),
        "Use the NCCL backend for CUDA tensors (init_process_group(\"nccl\"), or "
        "\"cpu:gloo,cuda:nccl\" to keep gloo for CPU tensors): NCCL reduces on the GPUs over NVLink or PCIe, "
        "and DDP overlaps it with the backward pass. The estimate, the waits removed, is an upper bound: "
        "NCCL's own time, mostly hidden behind the backward pass, is not in this trace.");
  }
  return proposal("Communication stalls the GPU", idle_evidence(f, *c), speedup_removing_idle(f, *c),
                  "Overlap communication with compute (DDP bucket sizes, FSDP prefetch), and balance work across "
                  "ranks.");
}

// The launch-bound evidence's step in absolute terms. A tracer slows every launch call, so the
// traced step can be much longer than the program's own (on the H200, 6% to 63% on the zoo's
// launch_bound case); with the tracer's cost measured on this host, the estimate's base is the
// step without it (the estimate clause prints both).
std::string launch_step_evidence(const FindingContext& f) {
  const DeviceReport& r = f.report;
  const double window = f.window_ns(), steps = f.steps();
  if (r.untraced_step_measured_ns && r.untraced_window_est_ns) {
    return fmt::format("; untraced, the program's step took {} before the window opened (measured; traced: {})",
                       fmt_ms(*r.untraced_step_measured_ns), fmt_ms(static_cast<int64_t>(window / steps)));
  }
  if (r.tracing_cost && r.untraced_window_est_ns) {
    return fmt::format(
        "; tracing adds {:.1f} us to each launch call on this host (measured: {:.1f} -> {:.1f} us), "
        "so the program would take about {} per step untraced (traced: {})",
        r.tracing_cost->added_ns() / 1e3, r.tracing_cost->plain_launch_ns / 1e3, r.tracing_cost->traced_launch_ns / 1e3,
        fmt_ms(static_cast<int64_t>(static_cast<double>(*r.untraced_window_est_ns) / steps)),
        fmt_ms(static_cast<int64_t>(window / steps)));
  }
  return "; tracing slows launches, so compare with the step time measured without the profiler";
}

// Whether the program replays CUDA graphs (cudaGraphLaunch calls): it captures already.
bool replays_cuda_graphs(const Trace& t) {
  for (const ApiCall& c : t.api_calls) {
    if (c.api_class == ApiClass::kLaunch && t.strings.view(c.name).find("GraphLaunch") != std::string_view::npos) {
      return true;
    }
  }
  return false;
}

// Of a host cause's idle, the part at the code that issues the launches
// (IdleCause::launching_code_ns), as the same share of what a fix can remove (the tracer's part
// and one-off start-up left out).
double steady_at_launching_code(const IdleCause& host) {
  if (host.ns <= 0 || host.launching_code_ns <= 0) return 0;
  return steady_idle_ns(host) * static_cast<double>(std::min(host.launching_code_ns, host.ns)) /
         static_cast<double>(host.ns);
}

// The host idle launch-bound claims (0 when it does not fire): where most kernels run shorter
// than their launch call, the step is bound by issuing and its fix (a CUDA graph of the step, or
// torch.compile's reduce-overhead) replays the step without running the code that issues it, so
// the host gaps at that code (the lines and ops that also fill launch idle,
// IdleCause::launching_code_ns) go with the launch gaps. Host gaps at code that launches nothing
// (data preparation, numpy, logging) are not replaced by a replay: they stay host-bound's. Less
// the optimizer's part where optimizer-unfused claims it, and the gaps between inference
// iterations, which scheduling-gap claims.
double launch_claimed_host_ns(const FindingContext& f) {
  const LaunchStats& launch = f.report.launch;
  if (!idle_trigger(f, IdleCauseId::kLaunch) || !launch.shorter_than_launch_pct ||
      *launch.shorter_than_launch_pct < 50) {
    return 0;
  }
  const IdleCause& host = f.idle(IdleCauseId::kHost);
  double claimed = steady_at_launching_code(host);
  if (claimed <= 0) return 0;
  if (optimizer_unfused_fires(f)) claimed = std::max(0.0, claimed - static_cast<double>(host.optimizer_ns));
  // The gaps between inference iterations are scheduling-gap's.
  return std::max(0.0, claimed - static_cast<double>(scheduling_gap_ns(f)));
}

// Estimate: the launch gaps go, less what the optimizer finding claims (launch gaps inside a
// per-tensor optimizer step are its cost), and the host gaps launch_claimed_host_ns gives it.
// Each gap is claimed by one finding only: host-bound leaves those host gaps out.
std::optional<Finding> launch_bound(const FindingContext& f) {
  const IdleCause* c = idle_trigger(f, IdleCauseId::kLaunch);
  if (!c) return std::nullopt;
  std::string ev = idle_evidence(f, *c);
  const LaunchStats& launch = f.report.launch;
  if (launch.shorter_than_launch_pct) {
    ev += fmt::format("; {:.0f}% of kernels run shorter than their launch call, {:.0f}% under 10 us",
                      *launch.shorter_than_launch_pct, launch.under_10us_count_pct);
  }
  ev += launch_step_evidence(f);
  double saved = steady_idle_ns(*c);
  const bool unfused = optimizer_unfused_fires(f);
  // The gaps inside the optimizer step that this estimate removes (a CUDA graph of the whole
  // step replays the optimizer too; torch.compile's mode="reduce-overhead" graphs the compiled
  // modules only and leaves them). Each cause's share scaled as its removable part is.
  auto removable_share = [](const IdleCause& cause, double part) {
    return cause.ns > 0 ? part * steady_idle_ns(cause) / static_cast<double>(cause.ns) : 0.0;
  };
  double eager_optimizer = 0;
  if (!unfused) {
    eager_optimizer += removable_share(*c, static_cast<double>(c->optimizer_ns));
  } else if (c->optimizer_ns > 0) {
    saved -= static_cast<double>(c->optimizer_ns);
    ev += fmt::format("; of them {} per step inside the optimizer step are optimizer-unfused's",
                      fmt_ms(static_cast<int64_t>(static_cast<double>(c->optimizer_ns) / f.steps())));
  }
  if (const double host = launch_claimed_host_ns(f); host > 0) {
    saved += host;
    ev += fmt::format(
        "; most kernels run shorter than their launch call, so the step is bound by issuing: a CUDA "
        "graph replays it without the code that issues it, and the host gaps at that code ({} per "
        "step) go too",
        fmt_ms(static_cast<int64_t>(host / f.steps())));
    const IdleCause& h = f.idle(IdleCauseId::kHost);
    if (!unfused) eager_optimizer += std::min(host, removable_share(h, static_cast<double>(h.optimizer_ns)));
  }
  eager_optimizer = std::min(eager_optimizer, saved);
  const bool graphs = replays_cuda_graphs(f.device.trace);
  const bool compiled = uses_torch_compile(f);
  std::optional<double> modules_alone;
  if (!graphs && eager_optimizer > 0 && saved > 0) {
    modules_alone = f.speedup_removing(saved - eager_optimizer);
    ev += fmt::format(
        "; of these gaps {} per step are inside the optimizer step, which torch.compile's "
        "mode=\"reduce-overhead\" leaves eager (the modules alone: at most x{:.2f}; what each compiled call costs the "
        "host is not in this trace)",
        fmt_ms(static_cast<int64_t>(eager_optimizer / f.steps())), *modules_alone);
  }
  if (graphs) ev += "; the program already replays CUDA graphs (cudaGraphLaunch): these gaps are outside them";
  if (compiled) ev += "; the program already runs torch.compile";
  std::string advice = graphs ? "Cut per-kernel host overhead in the work the CUDA graphs do not cover: bring it "
                                "into the captured region"
                       : compiled
                           ? "Cut per-kernel host overhead: the program is compiled already, so capture the "
                             "step in a CUDA graph (torch.compile's mode=\"reduce-overhead\") and remove the "
                             "graph breaks that leave eager ops between compiled regions"
                           : "Cut per-kernel host overhead: torch.compile(model) fuses small ops "
                             "(mode=\"reduce-overhead\" also uses CUDA graphs); capture the step in a CUDA graph";
  advice += "; use larger batches or shapes so each kernel does more work.";
  Finding out = proposal("The host cannot issue kernels fast enough", std::move(ev), f.speedup_removing(saved),
                         std::move(advice));
  if (modules_alone) out.est_speedup_of_fix.emplace_back("reduce-overhead", *modules_alone);
  return out;
}

// The time in the window that the thread that syncs spends blocked waiting for the GPU
// (synchronize, .item(), blocking copies): the most of any thread's. (PyTorch launches the
// backward from its autograd thread, so the thread that launches most is not always the one
// that waits.)
int64_t host_blocked_ns(const FindingContext& f) {
  int64_t most = 0;
  for (const ThreadTimeline& thread : f.device.host.threads()) {
    int64_t blocked = 0;
    for (const HostSegment& s : thread.segments) {
      if (!(s.flags & kHostBlocking)) continue;
      blocked +=
          std::max<int64_t>(0, std::min(s.end_ns, f.device.window_end) - std::max(s.start_ns, f.device.window_start));
    }
    most = std::max(most, blocked);
  }
  return most;
}

// Estimate: without the syncs the host's own work overlaps the GPU's, so the sync idle goes;
// but the step cannot be shorter than the time the host is busy (not blocked) per step.
std::optional<Finding> host_sync(const FindingContext& f) {
  const IdleCause* c = idle_trigger(f, IdleCauseId::kSync);
  if (!c) return std::nullopt;
  const double base = f.base_ns();
  const double host_busy = std::max(0.0, base - static_cast<double>(host_blocked_ns(f)));
  const double fixed = std::max(base - steady_idle_ns(*c), host_busy);
  std::string ev = idle_evidence(f, *c);
  ev += fmt::format("; the host is busy {} per step (not waiting on the GPU), which bounds the step without the syncs",
                    fmt_ms(static_cast<int64_t>(host_busy / f.steps())));
  return proposal("Host syncs drain the GPU queue", std::move(ev), f.speedup_removing(base - fixed),
                  "Remove .item(), .cpu(), .tolist(), print(tensor) and torch.cuda.synchronize() from the step; "
                  "log metrics every N steps; keep data on the GPU so the host never waits. Estimate: the host's "
                  "own work then overlaps the GPU's.");
}

// The one list of device findings (docs/findings.md describes each). Idle-cause
// findings come first, in cause order.
constexpr FindingRuleEntry kFindingRules[] = {
    {"memcpy", &memcpy_stall},
    {"allocation", &allocation},
    {"input-bound", &input_bound},
    {"collective-wait", &collective_wait},
    {"exposed-communication", &exposed_communication},
    {"launch-bound", &launch_bound},
    {"host-sync", &host_sync},
    {"host-bound", &host_bound},
    {"precision-fp32", &precision_fp32},
    {"optimizer-unfused", &optimizer_unfused},
    {"kernel-fusion", &kernel_fusion},
    {"attention-unfused", &attention_unfused},
    {"small-grid", &small_grid},
    {"low-occupancy", &low_occupancy},
    {"under-batched", &under_batched},
    {"scheduling-gap", &scheduling_gap},
    {"tensor-unfriendly-shape", &tensor_unfriendly_shape},
};

}  // namespace

const IdleCause* idle_trigger(const FindingContext& f, IdleCauseId cause) {
  const IdleCause& c = f.idle(cause);
  return pct(static_cast<double>(c.ns - c.one_off_ns), f.window_ns()) < kIdleFindingMinPct ? nullptr : &c;
}

double steady_idle_ns(const IdleCause& c) {
  return std::max(0.0, static_cast<double>(c.ns - c.tracing_ns.value_or(0) - c.one_off_ns));
}

std::string idle_evidence(const FindingContext& f, const IdleCause& c) {
  const std::string per_step = fmt_ms(static_cast<int64_t>(static_cast<double>(c.ns) / f.steps()));
  std::string ev = fmt::format("GPU idle {:.1f}% of the window ({} per step) while the host was in: {}", c.pct,
                               per_step, top_names(c));
  if (c.one_off_ns > 0) {
    ev += fmt::format("; {} of it in one-off start-up calls, left out", fmt_ms(c.one_off_ns));
  }
  if (c.tracing_ns.value_or(0) > 0) {
    ev += fmt::format("; {} of it the tracer's own cost, left out", fmt_ms(*c.tracing_ns));
  }
  return ev;
}

double FindingContext::base_ns() const {
  const double base = static_cast<double>(report.untraced_window_est_ns.value_or(report.window_ns));
  return std::max(1.0, base - static_cast<double>(report.one_off_ns));
}

double FindingContext::speedup_removing(double saved_ns) const {
  const double base = base_ns();
  return base / std::max(1.0, base - saved_ns);
}

// Below this paced share the GPU-time estimates count only the paced part of their saving.
constexpr double kFullyPaced = 0.98;

double FindingContext::speedup_removing_gpu_time(double saved_ns, std::optional<double> paced_share) const {
  const double base = base_ns();
  if (paced_share && *paced_share < kFullyPaced) saved_ns *= *paced_share;
  const double copies = static_cast<double>(covered(device.copy_union, device.window_start, device.window_end));
  return base / std::max(1.0, std::max(base - saved_ns, std::min(base, copies)));
}

std::string FindingContext::gpu_paced_clause(std::optional<double> paced_share) {
  if (!paced_share || *paced_share >= kFullyPaced) return "";
  return fmt::format(
      "; the GPU had its next kernel queued after {:.0f}% of these kernels' time; after the rest it waited for "
      "the host's next launch, where a shorter kernel only lengthens the wait, so {:.0f}% of the saving is counted",
      100 * *paced_share, 100 * *paced_share);
}

const IdleCause& FindingContext::idle(IdleCauseId cause) const {
  for (const IdleCause& c : report.idle_causes) {
    if (c.cause == cause) return c;
  }
  static const IdleCause kNone;
  return kNone;
}

Finding proposal(std::string title, std::string evidence, double speedup, std::string recommendation) {
  return Finding{"", Severity::kLow, std::move(title), std::move(evidence), speedup, std::move(recommendation)};
}

std::span<const FindingRuleEntry> finding_rules() { return kFindingRules; }

std::string fmt_ms_precise(double ns) {
  const double ms = ns / 1e6;
  const int magnitude = ms > 0 ? static_cast<int>(std::floor(std::log10(ms))) : 0;
  return fmt::format("{:.{}f} ms", ms, std::clamp(3 - magnitude, 2, 6));
}

std::string estimate_clause(double before_ns, double after_ns, std::string_view what) {
  return fmt::format("; estimate: {} {} -> {}", what, fmt_ms_precise(before_ns), fmt_ms_precise(after_ns));
}

int64_t largest_idle_gap(const DeviceContext& d) {
  std::vector<Interval> busy = d.kernel_union;
  busy.insert(busy.end(), d.copy_union.begin(), d.copy_union.end());
  int64_t longest = 0;
  for (const Interval& g : gaps(merge(std::move(busy)), d.window_start, d.window_end))
    longest = std::max(longest, g.end_ns - g.start_ns);
  return longest;
}

void add_findings(const FindingContext& ctx, DeviceReport& r) {
  // One-off calls filling half the window or more: what is left is start-up too, more often than
  // not (stream creation, cuDNN's first calls), and nothing in the trace shows the steady state.
  // Nor does a window without steps (no markers, no loop, no repeating kernel pattern) that one
  // idle gap fills half of: nothing shows that the gap recurs. A finding there may be right, but
  // its estimate is a guess about start-up or about one gap: low confidence, and the evidence
  // says why.
  const bool start_up = r.one_off_ns > 0 && 2 * r.one_off_ns >= r.window_ns;
  const int64_t one_gap =
      r.step_source == step_source_name(StepSource::kWholeWindow) ? largest_idle_gap(ctx.device) : 0;
  const bool lone_gap = one_gap > 0 && 2 * one_gap >= r.window_ns;
  for (const FindingRuleEntry& entry : kFindingRules) {
    std::optional<Finding> f = entry.rule(ctx);
    if (!f || f->est_speedup.value_or(0) < kMinSpeedup) continue;
    // Every multiplier follows from numbers its evidence prints: the step (the window's base
    // over its steps: untraced where measured, one-off start-up left out) before and after.
    // A rule whose estimate is not a step time prints its own estimate clause.
    if (f->evidence.find(kEstimatePrefix) == std::string::npos) {
      const double step = ctx.base_ns() / ctx.steps();
      f->evidence += estimate_clause(step, step / *f->est_speedup, ctx.report.step_count > 1 ? "step" : "window");
    }
    f->id = std::string(entry.id);
    f->severity = severity_for(*f->est_speedup);
    if (start_up) {
      f->severity = Severity::kLow;
      f->evidence += fmt::format(
          "; one-off start-up calls fill {:.0f}% of the window, so the trace holds no steady "
          "state and this estimate is of start-up",
          pct(static_cast<double>(r.one_off_ns), static_cast<double>(r.window_ns)));
    } else if (lone_gap) {
      f->severity = Severity::kLow;
      f->evidence += fmt::format(
          "; one idle gap of {} fills {:.0f}% of the window and no steps were found (no step markers, no "
          "step loop, no repeating kernel pattern), so nothing shows that it recurs: this estimate is of "
          "one gap",
          fmt_ms_precise(static_cast<double>(one_gap)),
          pct(static_cast<double>(one_gap), static_cast<double>(r.window_ns)));
    }
    r.findings.push_back(std::move(*f));
  }
  std::stable_sort(r.findings.begin(), r.findings.end(), [](const Finding& a, const Finding& b) {
    return a.est_speedup.value_or(1) > b.est_speedup.value_or(1);
  });
}

Severity severity_for(double speedup) {
  return speedup >= 1.25 ? Severity::kHigh : speedup >= 1.05 ? Severity::kMedium : Severity::kLow;
}

std::string fmt_ms(int64_t ns) { return fmt::format("{:.2f} ms", static_cast<double>(ns) / 1e6); }

}  // namespace gpuscope
