// The input-bound finding: the GPU waits while the host prepares input (docs/findings.md),
// and what the Python bootstrap's host marks say about the main process's loader.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include <fmt/core.h>

#include "core/findings.h"
#include "core/host_index.h"
#include "core/run_protocol.h"

namespace gpuscope {
namespace {

// The worker count the input finding recommends and its estimate assumes.
constexpr int64_t kLoaderWorkers = 8;

// What the bootstrap's host marks (host_marks.h) say about data loading in the main process.
struct LoaderHost {
  std::optional<int64_t> cpus;           // CPUs the process may use.
  std::optional<int64_t> torch_threads;  // torch's intra-op threads at the first batch.
  // Per batch built in the main process: the median CPU time of all its threads and the
  // median wall time, over the batches marked inside the analysis window (all of them when
  // none is). Null without the per-batch marks.
  std::optional<double> batch_cpu_ns, batch_wall_ns;
  size_t batches = 0;  // The marks the medians are taken over.
  // The DataLoader already runs worker processes: the window's batches all come from its
  // multi-process iterator (PyTorch's profiler and the bootstrap name it), this many (0 when
  // not); how many workers, where the bootstrap marked them.
  int64_t worker_batches = 0;
  std::optional<int64_t> workers;
  // What a worker needs per batch, measured by the bootstrap before the first step in a forked
  // copy of the process on one thread (`loader_one_thread_us`), with the batches it timed.
  std::optional<double> one_thread_ns;
  int64_t one_thread_batches = 0;
  // The copy's CPU time per batch, every thread (`loader_one_thread_cpu_us`): well above
  // one_thread_ns, a thread pool outside torch (numpy's BLAS, OpenMP) ran, which workers keep.
  std::optional<double> one_thread_cpu_ns;
  // Then, in the same copy, a DataLoader with workers over the same data (`loader_pool_us`):
  // the time between its batches once its first round arrived, with how many workers and the
  // batches received. What the fix delivers, workers sharing the CPUs and each batch moved to
  // the receiving process and copied as pinning would.
  std::optional<double> pool_ns;
  int64_t pool_workers = 0, pool_batches = 0;
};

// The window's DataLoader batches when they all come from loaders with worker processes
// ("enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__"); 0 when there are none or
// some come from a loader that builds them in the main process.
int64_t worker_batches_in_window(const Trace& t, int64_t window_start, int64_t window_end) {
  enum : uint8_t { kNone, kWorkers, kMain };
  std::vector<uint8_t> kind(t.strings.size(), kNone);
  bool any = false;
  for (StringId id = 0; id < t.strings.size(); ++id) {
    const std::string_view s = t.strings.view(id);
    if (!s.starts_with(run_protocol::kDataLoaderRange.prefix)) continue;
    kind[id] = s.find("_MultiProcessing") != std::string_view::npos ? kWorkers : kMain;
    any = true;
  }
  if (!any) return 0;
  int64_t batches = 0;
  for (const HostEvent& e : t.host_events) {
    if (kind[e.name] == kNone || e.end_ns <= window_start || e.start_ns >= window_end) continue;
    if (kind[e.name] == kMain) return 0;
    ++batches;
  }
  return batches;
}

double median(std::vector<double>& v) {
  const size_t mid = v.size() / 2;
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(mid), v.end());
  const double upper = v[mid];
  if (v.size() % 2) return upper;
  return (upper + *std::max_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(mid))) / 2;
}

// What the bootstrap's marks say about the main process's loader (parsed by host_marks.h), with
// the per-batch marks' medians over the batches built inside the window (all of them when none
// is): NVTX marks, so zero-length annotations at each batch's end.
LoaderHost loader_host(const Trace& t, const LoaderMarks& marks, int64_t window_start, int64_t window_end) {
  LoaderHost host;
  host.worker_batches = worker_batches_in_window(t, window_start, window_end);
  host.torch_threads = marks.torch_threads;
  host.cpus = marks.cpus;
  host.workers = marks.workers;
  if (marks.one_thread_us) {
    host.one_thread_ns = static_cast<double>(*marks.one_thread_us) * 1e3;
    host.one_thread_batches = marks.one_thread_batches;
    if (marks.one_thread_cpu_us) host.one_thread_cpu_ns = static_cast<double>(*marks.one_thread_cpu_us) * 1e3;
  }
  if (marks.pool_us) {
    host.pool_ns = static_cast<double>(*marks.pool_us) * 1e3;
    host.pool_workers = marks.pool_workers;
    host.pool_batches = marks.pool_batches;
  }
  const auto& batch_marks = marks.batch_cpu_wall_us;
  if (batch_marks.empty()) return host;
  std::vector<double> cpu_in, wall_in, cpu_all, wall_all;
  for (const HostEvent& e : t.host_events) {
    if (e.kind != HostEventKind::kAnnotation) continue;
    const auto it = batch_marks.find(e.name);
    if (it == batch_marks.end()) continue;
    const double cpu = static_cast<double>(it->second.first) * 1e3, wall = static_cast<double>(it->second.second) * 1e3;
    cpu_all.push_back(cpu);
    wall_all.push_back(wall);
    if (e.start_ns < window_start || e.start_ns >= window_end) continue;
    cpu_in.push_back(cpu);
    wall_in.push_back(wall);
  }
  std::vector<double>& cpu = cpu_in.empty() ? cpu_all : cpu_in;
  std::vector<double>& wall = cpu_in.empty() ? wall_all : wall_in;
  if (cpu.empty()) return host;
  host.batches = cpu.size();
  host.batch_cpu_ns = median(cpu);
  host.batch_wall_ns = median(wall);
  return host;
}

// "a DataLoader with 8 workers over the same data delivered one every 22.48 ms (24 batches, each
// copied as pinning would)": the bootstrap copy's timing of the workers together; `per` names
// the batch ("one", "a batch") as the sentence around it needs.
std::string pool_delivery(const LoaderHost& host, std::string_view per) {
  return fmt::format(
      "a DataLoader with {} workers over the same data delivered {} every {} ({} batches, each copied "
      "as pinning would)",
      host.pool_workers, per, fmt_ms(static_cast<int64_t>(*host.pool_ns)), host.pool_batches);
}

// What an estimate from that timing assumes.
std::string pool_assumption(const LoaderHost& host) {
  return fmt::format(
      "delivering a batch every {} as they did in the copy (the training loop's own CPU use beside "
      "them is not in that measurement)",
      fmt_ms(static_cast<int64_t>(*host.pool_ns)));
}

// The estimate's result: the window with the fix, its evidence and what it assumes.
struct InputEstimate {
  double fixed_ns = 0;
  int64_t workers = kLoaderWorkers;
  std::string evidence;
  std::string assumes;
  std::string advice;  // Beyond the workers themselves (empty: nothing more).
};

// A copy that ran torch on one thread and still spent more than this many threads' worth of CPU
// per batch ran a thread pool outside torch.
constexpr double kPoolThreads = 1.5;

// The copy's batches kept a thread pool outside torch busy (numpy's BLAS, OpenMP): DataLoader
// workers set torch's threads to one, not those, so each worker would run that many threads
// and W of them can want more CPUs than there are. Spinning pool threads on oversubscribed CPUs
// can make workers slower than none (an H100 run: 8 workers, 3.9 threads' worth a batch in
// the main process, 16 CPUs: the step 2.6 times slower by its mean). Adds that to the evidence,
// the limit to the advice, and says the estimate assumes it.
void pool_threads_caveat(const LoaderHost& host, InputEstimate& e) {
  if (!host.one_thread_ns || !host.one_thread_cpu_ns || *host.one_thread_ns <= 0) return;
  const double threads = *host.one_thread_cpu_ns / *host.one_thread_ns;
  if (threads <= kPoolThreads) return;
  e.evidence += fmt::format(
      "; that copy ran torch on one thread yet spent {} of CPU per batch, {:.1f} threads' worth: a thread pool "
      "outside torch (numpy's BLAS, OpenMP), which DataLoader workers do not limit, so {} workers would keep "
      "about {:.0f} threads busy{}",
      fmt_ms(static_cast<int64_t>(*host.one_thread_cpu_ns)), threads, e.workers,
      threads * static_cast<double>(e.workers), host.cpus ? fmt::format(" on {} CPUs", *host.cpus) : std::string());
  e.advice =
      " Limit each worker's thread pools to one thread (a worker_init_fn calling "
      "threadpoolctl.threadpool_limits(1), or OMP_NUM_THREADS=1 set before numpy is imported): workers that "
      "oversubscribe the CPUs can be slower than none.";
  e.assumes += "; with their thread pools so limited (an upper bound: the copy did not run them limited)";
}

// "; with 8 loader workers the step would take about ..." for a fixed window.
std::string workers_evidence(const FindingContext& f, int64_t workers, double fixed, double hidden) {
  if (fixed > hidden) {
    return fmt::format(
        "; with {} loader workers the step would take about {} (est.), hiding the input "
        "entirely about {}",
        workers, fmt_ms(static_cast<int64_t>(fixed / f.steps())), fmt_ms(static_cast<int64_t>(hidden / f.steps())));
  }
  return fmt::format("; {} loader workers would hide the input entirely: about {} per step (est.)", workers,
                     fmt_ms(static_cast<int64_t>(fixed / f.steps())));
}

// A worker's cost per batch lies between two true bounds, so the window with the fix lies
// between `fast` and `slow`. The headline is the middle of that range in ratio (the geometric
// mean of the two speedups): of all single numbers it has the smallest worst-case error, the
// square root of the range's width, whatever the worker's cost turns out to be. Returns the
// window for that headline and sets *range to "xS to xF" for the evidence.
double middle_of_range(const FindingContext& f, double base, double fast, double slow, std::string* range) {
  const double s_fast = f.speedup_removing(base - fast);
  const double s_slow = slow >= base ? 1.0 : f.speedup_removing(base - slow);
  *range = fmt::format("x{:.2f} to x{:.2f}", s_slow, s_fast);
  const double headline = std::sqrt(s_fast * s_slow);
  return base / headline;
}

// Without the per-batch marks: kLoaderWorkers workers, each as fast as the main process. Workers
// run torch ops on one thread each: where the main process had T intra-op threads, a batch may
// take up to T times longer in a worker, stated as the other end of the range.
InputEstimate assumed_estimate(const FindingContext& f, const LoaderHost& host, double base, double input) {
  InputEstimate e;
  e.fixed_ns = std::max(base - input, input / static_cast<double>(kLoaderWorkers));
  e.assumes = "each as fast as the main process";
  const int64_t threads = host.torch_threads.value_or(0);
  if (threads > 1) {
    const double slow = std::max(base - input, input * static_cast<double>(threads) / kLoaderWorkers);
    std::string range;
    e.fixed_ns = middle_of_range(f, base, e.fixed_ns, slow, &range);
    e.assumes = fmt::format(
        "a worker somewhere between as fast as the main process and {}x slower: the main process built batches "
        "with {} torch threads and workers use one each ({}; the estimate is the middle of that range in "
        "ratio). Time one batch with torch.set_num_threads(1) to know where",
        threads, threads, range);
  }
  e.evidence = workers_evidence(f, kLoaderWorkers, e.fixed_ns, base - input);
  return e;
}

// With the per-batch marks. A worker runs torch ops on one thread: it needs at least the main
// process's wall time per batch and at most the CPU time the main process spent on it (all its
// threads' time, which also counts threads that spin-wait: on the H200 pyzoo dataloader case the
// CPU time was 3.5x the measured one-thread time, 1.5 s against 0.44 s, and the main process's
// wall time 4.9x shorter). The headline is the middle of that range (middle_of_range), never
// "no gain" (a finding that drops because of the slow end would hide a real input bottleneck);
// where the two ends meet (loading on one thread) the estimate is as good as the measurement.
// Where the bootstrap timed batches on one thread in a forked copy (what a worker is), that
// cost replaces the range.
InputEstimate measured_estimate(const FindingContext& f, const LoaderHost& host, double base, double input) {
  InputEstimate e;
  if (host.cpus && *host.cpus >= 1) e.workers = std::clamp<int64_t>(*host.cpus - 1, 1, kLoaderWorkers);
  const double cpu = *host.batch_cpu_ns, wall = *host.batch_wall_ns;
  const double workers = static_cast<double>(e.workers);
  e.fixed_ns = std::max(base - input, input / workers);
  e.evidence = fmt::format(
      "; the main process spent {} of CPU per batch over {} ({:.1f} threads' worth; "
      "median of {} batch{})",
      fmt_ms(static_cast<int64_t>(cpu)), fmt_ms(static_cast<int64_t>(wall)), cpu / wall, host.batches,
      host.batches == 1 ? "" : "es");
  e.assumes = "each as fast as the main process";
  // The bootstrap's forked copy built batches on one thread, as a worker does: the worker's cost
  // is measured, not bounded (pyzoo dataloader on the H200: 441 ms a batch on one thread
  // against 90 ms wall and 1,419 ms CPU on sixteen).
  if (host.one_thread_ns && host.pool_ns) {
    // The copy ran the fix: workers together delivered a batch every pool_ns (on the H200
    // pyzoo light-items case 8 workers needed ~30 ms a batch against 137/8 = 17 ms from one
    // worker's time alone, which predicted x3.30 for a measured x2.25; timed together, three
    // item costs came within +5% to +14% of the measured medians).
    e.workers = host.pool_workers;
    e.fixed_ns = std::max(base - input, input * (*host.pool_ns / wall));
    e.evidence += fmt::format(
        "; in a forked copy of the process (before the first step) a batch took {} on one "
        "thread, and {}",
        fmt_ms(static_cast<int64_t>(*host.one_thread_ns)), pool_delivery(host, "one"));
    e.assumes = pool_assumption(host);
  } else if (host.one_thread_ns) {
    const double one = *host.one_thread_ns;
    e.fixed_ns = std::max(base - input, input * (one / wall) / workers);
    e.evidence += fmt::format(
        "; a batch took {} on one thread in a forked copy of the process (what a worker "
        "does; {} batch{} timed before the first step)",
        fmt_ms(static_cast<int64_t>(one)), host.one_thread_batches, host.one_thread_batches == 1 ? "" : "es");
    // Measured alone: workers running together share cores and memory bandwidth, and each
    // batch still has to reach the main process (shared memory) and be pinned there. On the H200
    // pyzoo dataloader case that cost nothing visible with 312-387 ms items (x2.05-x2.28 predicted,
    // x2.16 measured); with items an eighth as costly but as large (--loader-width 128), 8 workers
    // delivered a batch every ~30 ms against 137/8 = 17 ms predicted (x3.30 against x2.25).
    e.assumes = fmt::format(
        "each building a batch in the {} measured on one thread, alone (workers running "
        "together, and the batches' way to the main process, can make that longer: the "
        "estimate is then an upper bound)",
        fmt_ms(static_cast<int64_t>(one)));
  } else if (cpu > 1.1 * wall) {
    const double slow = std::max(base - input, input * (cpu / wall) / workers);
    std::string range;
    e.fixed_ns = middle_of_range(f, base, e.fixed_ns, slow, &range);
    e.assumes = fmt::format(
        "a worker on its one thread somewhere between as fast as the main process and needing all the {} of "
        "CPU the main process spent per batch (more than one thread's worth ran; spin-waiting threads count "
        "too): {}, the estimate the middle of that range in ratio. Time one batch with "
        "torch.set_num_threads(1) to know where",
        fmt_ms(static_cast<int64_t>(cpu)), range);
  }
  e.evidence += workers_evidence(f, e.workers, e.fixed_ns, base - input);
  pool_threads_caveat(host, e);
  if (e.workers < kLoaderWorkers && host.cpus) {
    e.assumes +=
        fmt::format("; {} workers: as many as the {} CPUs here leave beside the main process", e.workers, *host.cpus);
  }
  return e;
}

// The DataLoader runs fewer workers than advised, and the bootstrap's copy timed the advised
// number together over the same data (`loader_pool_us`): a batch every I. The window's B
// batches then need at least B x I; the step becomes the longer of that and the rest of the
// step (the input hidden), a prediction from the measured pace, not a bound.
std::optional<Finding> too_few_workers(const FindingContext& f, const IdleCause& c, const LoaderHost& host, double base,
                                       double input) {
  const double fixed = std::max(base - input, static_cast<double>(host.worker_batches) * *host.pool_ns);
  std::string ev = idle_evidence(f, c);
  ev += fmt::format(
      "; the DataLoader runs {} worker processes and the step still waits for its batches. In a forked "
      "copy of the process (before the first step) {}; with {} workers the step would take about {} "
      "(est.), hiding the input entirely about {}",
      *host.workers, pool_delivery(host, "a batch"), host.pool_workers, fmt_ms(static_cast<int64_t>(fixed / f.steps())),
      fmt_ms(static_cast<int64_t>((base - input) / f.steps())));
  return proposal(
      "The GPU waits for the DataLoader's workers: too few of them", std::move(ev), f.speedup_removing(base - fixed),
      fmt::format("Raise the DataLoader's num_workers from {} to {} (one per CPU beside the main process{}, at most "
                  "8), with pin_memory=True and persistent_workers=True. Estimate assumes {} workers {}.",
                  *host.workers, host.pool_workers,
                  host.cpus ? fmt::format(": {} CPUs here", *host.cpus) : std::string(), host.pool_workers,
                  pool_assumption(host)));
}

// The DataLoader already runs worker processes and the step still waits for its batches: the
// workers do not keep up. Advice to add workers and pin memory would repeat what the program
// does; more workers help only while CPUs are free (on the H200 pyzoo case, 16 workers on 16
// CPUs did no better than 8), and the trace cannot say how much cheaper samples would be. So
// the estimate is the bound, the input hidden entirely, and says so.
std::optional<Finding> workers_behind(const FindingContext& f, const IdleCause& c, const LoaderHost& host, double base,
                                      double input) {
  if (host.pool_ns && host.workers && host.pool_workers > *host.workers) {
    return too_few_workers(f, c, host, base, input);
  }
  const std::string workers =
      host.workers ? fmt::format("{} worker processes", *host.workers) : std::string("worker processes");
  std::string ev = idle_evidence(f, c);
  ev += fmt::format(
      "; the DataLoader already runs {} (its multi-process iterator) and the step still waits "
      "for its batches: the workers do not keep up. With the input hidden entirely a step would "
      "take about {} (an upper bound)",
      workers, fmt_ms(static_cast<int64_t>((base - input) / f.steps())));
  const std::string cpus = host.cpus && host.workers
                               ? fmt::format(" ({} workers on {} CPUs here)", *host.workers, *host.cpus)
                               : std::string();
  return proposal(
      "The GPU waits for the DataLoader's workers", std::move(ev), f.speedup_removing(input),
      fmt::format("Make each sample cheaper: time __getitem__ and the collate function in one worker, decode "
                  "and augment on the GPU (torchvision.transforms.v2 on CUDA tensors, NVIDIA DALI), or cache "
                  "preprocessed data; raise num_workers only while CPUs are free{}. The estimate is a bound "
                  "(the input hidden entirely), not a prediction: how much the workers can gain is not in the "
                  "trace.",
                  cpus));
}

}  // namespace

// Estimate: the loading moves to worker processes, which prepare batches in parallel while the
// step runs: the step becomes the longer of the rest of the step and the input time divided
// among the workers (scaled by what one worker needs per batch, when measured). Hiding it all
// is the upper bound, also stated.
std::optional<Finding> input_bound(const FindingContext& f) {
  const IdleCause* c = idle_trigger(f, IdleCauseId::kInput);
  if (!c) return std::nullopt;
  const double base = f.base_ns();
  const double input = static_cast<double>(c->ns - c->tracing_ns.value_or(0));
  const LoaderHost host =
      loader_host(f.device.trace, f.device.host.marks().loader, f.device.window_start, f.device.window_end);
  if (host.worker_batches > 0 && !host.batch_cpu_ns) {
    return workers_behind(f, *c, host, base, input);
  }
  const InputEstimate e = host.batch_cpu_ns && *host.batch_wall_ns > 0 ? measured_estimate(f, host, base, input)
                                                                       : assumed_estimate(f, host, base, input);
  return proposal("The GPU waits for the host to prepare input", idle_evidence(f, *c) + e.evidence,
                  f.speedup_removing(base - e.fixed_ns),
                  fmt::format("Prepare batches off the training loop: DataLoader(num_workers={} (up to the CPU "
                              "cores per GPU), pin_memory=True, prefetch_factor=2+, persistent_workers=True) and "
                              ".to(device, non_blocking=True); move CPU preprocessing into the workers or onto the "
                              "GPU.{} Estimate assumes {} workers, {}.",
                              e.workers, e.advice, e.workers, e.assumes));
}

}  // namespace gpuscope
