// The report model: everything the analyses conclude, in units, ready for any front end
// (text, JSON). Unknown values are std::optional and stay empty, never 0.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/trace.h"

namespace gpuscope {

// The schema name of the report's JSON, written by render/report_json.h and checked by
// input/report_json_reader.h.
inline constexpr const char* kReportSchema = "gpuscope.report/1";

// The idle causes: one row each, in report order (docs/design.md, "Idle attribution", gives the
// rules; the rule that picks a cause is `idle_cause_at` in idle.cpp). Columns: enumerator, the
// name in reports, the letter on the timeline (K is taken by "kernels running"). A new cause
// is a new row here plus its rule.
#define GPUSCOPE_IDLE_CAUSES(X)     \
  X(kMemcpy, "memcpy", 'm')         \
  X(kAlloc, "alloc", 'a')           \
  X(kInput, "input", 'i')           \
  X(kCollective, "collective", 'c') \
  X(kLaunch, "launch", 'l')         \
  X(kQueued, "queued", 'q')         \
  X(kSync, "sync", 's')             \
  X(kHost, "host", 'h')             \
  X(kOther, "other", 'o')

enum class IdleCauseId : uint8_t {
#define GPUSCOPE_CAUSE_ENUM(id, name, letter) id,
  GPUSCOPE_IDLE_CAUSES(GPUSCOPE_CAUSE_ENUM)
#undef GPUSCOPE_CAUSE_ENUM
};

struct IdleCauseInfo {
  IdleCauseId id;
  std::string_view name;
  char letter;
};

inline constexpr IdleCauseInfo kIdleCauseTable[] = {
#define GPUSCOPE_CAUSE_ROW(id, name, letter) {IdleCauseId::id, name, letter},
    GPUSCOPE_IDLE_CAUSES(GPUSCOPE_CAUSE_ROW)
#undef GPUSCOPE_CAUSE_ROW
};
inline constexpr size_t kNumIdleCauses = std::size(kIdleCauseTable);
// The timeline's letter for "kernels running".
inline constexpr char kTimelineKernelLetter = 'K';

constexpr const IdleCauseInfo& idle_cause_info(IdleCauseId c) { return kIdleCauseTable[static_cast<size_t>(c)]; }
constexpr std::string_view idle_cause_name(IdleCauseId c) { return idle_cause_info(c).name; }
constexpr char idle_cause_letter(IdleCauseId c) { return idle_cause_info(c).letter; }
// The cause whose name is `name`, if any.
constexpr std::optional<IdleCauseId> idle_cause_from_name(std::string_view name) {
  for (const IdleCauseInfo& c : kIdleCauseTable) {
    if (c.name == name) return c.id;
  }
  return std::nullopt;
}

// How much a finding matters, from its estimated speedup (docs/findings.md).
enum class Severity : uint8_t { kHigh, kMedium, kLow };
inline constexpr std::string_view kSeverityNames[] = {"high", "medium", "low"};
constexpr std::string_view severity_name(Severity s) { return kSeverityNames[static_cast<size_t>(s)]; }

struct HostTime {
  std::string name;  // A host op or annotation that covered idle time.
  int64_t ns = 0;
};

struct IdleCause {
  IdleCauseId cause = IdleCauseId::kOther;
  int64_t ns = 0;
  double pct = 0;                  // Of the window.
  std::vector<HostTime> top_host;  // What the host was doing meanwhile, longest first.
  // Of ns, the part the tracer's own launch cost explains (the program run without the tracer
  // would not have it): for each idle gap that ended when a launch call returned, up to one
  // measured TracingCost::added_ns(). Set only when the trace carries a measured cost.
  std::optional<int64_t> tracing_ns;
  // Of ns, the part inside optimizer steps (for the optimizer finding; not in the JSON).
  int64_t optimizer_ns = 0;
  // Of ns, the part inside one-off calls and CUDA graph captures (kHostOneOff): start-up, left
  // out of every estimate (not in the JSON).
  int64_t one_off_ns = 0;
  // Of ns (host cause), the part at code lines or ops that also fill launch idle: the code that
  // issues the step's launches, which a CUDA graph replay does not run (not in the JSON).
  int64_t launching_code_ns = 0;
};

struct CategoryTime {
  std::string category;
  int64_t ns = 0;  // Sum of durations (streams may overlap).
  double pct = 0;  // Of all GPU activity time on the device.
  int64_t count = 0;
};

struct PrecisionTime {
  std::string dtype;
  int64_t ns = 0;
  double pct = 0;  // Of GEMM (+attention) time.
};

struct TopKernel {
  std::string name;
  std::string category;
  int64_t count = 0;
  int64_t ns = 0;
  double pct = 0;  // Of kernel time.
};

struct FusionCandidate {
  std::vector<std::string> kernels;  // Short names, in launch order.
  int64_t occurrences = 0;
  int64_t ns = 0;             // Kernel time of all occurrences.
  double pct = 0;             // Of the window.
  int64_t est_saving_ns = 0;  // Estimate: the runs' kernel time less their reductions' (at least a kernel's).
};

struct Finding {
  std::string id;
  Severity severity = Severity::kLow;
  std::string title;
  std::string evidence;
  std::optional<double> est_speedup;  // Whole-step speedup if fixed; an estimate.
  std::string recommendation;
  // Where one fix of those `gpuscope run --try` applies does only part of what est_speedup
  // assumes, that fix's own estimate by its name (precision-fp32: "tf32", fp32 matrix kernels on
  // TF32 tensor cores, against est_speedup's move to a 16-bit type).
  std::vector<std::pair<std::string, double>> est_speedup_of_fix;
};

struct LaunchStats {
  int64_t kernels_under_10us = 0;
  double under_10us_count_pct = 0;
  double under_10us_time_pct = 0;
  std::optional<int64_t> shorter_than_launch;  // Needs correlation to launch calls.
  std::optional<double> shorter_than_launch_pct;
  std::optional<double> launch_delay_median_us;  // Kernel start minus launch-call start.
  std::optional<double> launch_delay_p90_us;
};

// One stretch of idle time within the window, charged to one cause (idle.cpp): adjacent pieces
// of a gap with the same cause are merged. Host-clock nanoseconds, [start_ns, end_ns).
struct IdleInterval {
  int64_t start_ns = 0;
  int64_t end_ns = 0;
  IdleCauseId cause = IdleCauseId::kOther;
};

struct StepReport {
  int64_t number = 0;
  int64_t start_ns = 0;
  int64_t duration_ns = 0;
  double busy_pct = 0;
  std::optional<double> matmul_flops;
};

// What a server's iterations look like, when the steps are forward passes (an inference loop:
// one step per forward iteration).
struct ServingStats {
  double iterations_per_s = 0;      // Steps over the window (traced).
  double gpu_ms_per_iteration = 0;  // Kernel busy time per iteration.
  // The token dimension (M) of the iteration's weight GEMMs (the largest in each iteration),
  // averaged over iterations; from op shapes, so absent without record_shapes.
  std::optional<double> tokens_per_iteration_mean;
};

// One collective operation's calls on a device (those whose sizes the trace records), with
// bandwidth as nccl-tests defines it (doc/PERFORMANCE.md there): algbw = bytes / time, busbw =
// algbw x 2(n-1)/n for all-reduce, (n-1)/n for all-gather, reduce-scatter and all-to-all, 1 for
// broadcast, reduce, send and recv. Time is the kernel's, waiting for peers included, so both
// are what the job achieved, a lower bound of what the link can do.
struct CollectiveStats {
  std::string op;                     // As the trace names it: "allreduce", "allgather", ...
  std::string dtype;                  // "Float", "BFloat16"; "" when not recorded.
  std::optional<int64_t> group_size;  // Ranks in the group (the largest seen).
  int64_t count = 0;
  int64_t ns = 0;                    // Kernel time of the calls.
  std::optional<uint64_t> bytes;     // Sum of max(in, out) elements x element size.
  std::optional<double> algbw_gbps;  // bytes / ns (GB/s, 1e9 bytes).
  std::optional<double> busbw_gbps;  // algbw x the operation's factor for group_size ranks.
};

// Communication kernels (NCCL/RCCL) on a device, in the window (communication.cpp). Present
// only when the window holds any.
struct CommunicationReport {
  int64_t kernel_ns = 0;  // Union of communication kernels in the window.
  double pct = 0;         // Of the window.
  // The share of the window in which a kernel other than communication runs: busy_pct without
  // the GPUs spinning in collectives (waiting for a peer is not work).
  double busy_without_comm_pct = 0;
  // Communication time not overlapped by any other kernel on this GPU.
  int64_t exposed_ns = 0;
  double exposed_pct = 0;  // Of the window.
  // Non-communication kernel time (union) in the window: the compute that could hide it.
  int64_t compute_ns = 0;
  std::vector<int64_t> exposed_per_step_ns;  // One per analysed step; empty without steps.
  std::vector<CollectiveStats> collectives;  // Longest first; empty when no sizes recorded.
};

struct DeviceReport {
  std::string source;  // Trace file.
  std::optional<int32_t> rank;
  int32_t device = 0;
  std::string name;
  std::optional<int32_t> num_sms;
  int64_t window_start_ns = 0;
  int64_t window_ns = 0;

  double busy_pct = 0;  // Any kernel running: what nvidia-smi utilization measures.
  double copy_pct = 0;  // Copy/set engines busy.
  // Estimate from grid sizes; unknown (not 0, not utilization) without the SM count.
  std::optional<double> sm_active_est_pct;
  // Hardware counters sampled during the trace (captures), reported beside the estimates.
  std::optional<double> hw_gpu_util_pct;
  std::optional<double> hw_sm_active_pct;
  std::optional<double> hw_tensor_active_pct;
  // How far the hardware readings were found to lag the kernel timeline (they are aligned by it
  // before averaging); empty where it could not be told.
  std::optional<int64_t> hw_sample_lag_ns;
  int64_t hw_gpm_samples = 0;  // The device's samples with GPM readings in the input (none in profiler traces).

  double idle_pct = 0;
  std::vector<IdleCause> idle_causes;
  // The idle time as intervals in time order; per cause they sum to idle_causes[cause].ns.
  // For timeline exports (Perfetto); not in the JSON report.
  std::vector<IdleInterval> idle_intervals;
  // The measured tracing cost per launch call, and the window without the idle it explains
  // (an estimate of the same window run untraced); absent without a measured cost.
  std::optional<TracingCost> tracing_cost;
  std::optional<int64_t> untraced_window_est_ns;
  // The program's own step time before a bounded window opened, untraced (the Python bootstrap
  // timed it); where known, the tracer's share of the idle and untraced_window_est_ns come from it.
  std::optional<int64_t> untraced_step_measured_ns;
  // The idle time inside one-off calls and CUDA graph captures (all causes), and the calls,
  // longest first: start-up or warm-up that a steady state does not repeat, left out of the
  // estimates (the findings' base is the window less this; not in the JSON).
  int64_t one_off_ns = 0;
  std::vector<HostTime> one_off_calls;
  // The window in equal slices, one letter each for what filled most of the slice:
  // kTimelineKernelLetter (K) kernels running, else the idle cause's letter (kIdleCauseTable).
  std::string timeline;

  int64_t kernel_count = 0;
  std::vector<CategoryTime> categories;
  std::vector<TopKernel> top_kernels;  // The 10 kernel names with the most time (JSON, text, HTML).
  // Every kernel name, most time first (top_kernels is its start): `analyze --csv kernels`.
  // Not in the JSON report; empty in a report read back from JSON.
  std::vector<TopKernel> kernels;
  LaunchStats launch;
  std::vector<PrecisionTime> precision;
  std::vector<FusionCandidate> fusion;

  std::string step_source;  // profiler_step, nvtx_range, optimizer_step, whole_window.
  int64_t step_count = 0;
  int64_t steps_skipped_warmup = 0;  // Leading warm-up steps left out of the window.
  // The device's activity outside the window: start-up, compilation and warm-up before it,
  // teardown after it (excluded, not analysed as idle).
  int64_t steps_dropped_last = 0;  // The last step, whose end is unknown, left out (0 or 1).
  int64_t excluded_before_ns = 0;
  int64_t excluded_after_ns = 0;
  std::optional<double> step_mean_ms;
  std::vector<StepReport> steps;

  std::optional<double> matmul_flops_per_step;
  std::optional<double> model_flops_per_step;
  std::string model_flops_formula;
  std::optional<double> peak_tflops;
  std::string peak_basis;  // e.g. "H200 SXM bf16 dense (NVIDIA H200 datasheet)".
  std::optional<double> mfu_pct;
  std::optional<double> hfu_pct;
  // Why HFU is not given although matmul FLOPs were counted (convolutions, whose FLOPs shapes
  // alone do not give); empty otherwise. Not in the JSON (hfu_pct is null there).
  std::string hfu_unavailable;
  std::optional<ServingStats> serving;               // Only when the steps are forward passes.
  std::optional<CommunicationReport> communication;  // Only with communication kernels.

  std::vector<Finding> findings;
};

struct RankSummary {
  int64_t ranks = 0;
  double busy_min_pct = 0, busy_max_pct = 0;
  // The same without communication kernels, over the ranks that have any.
  std::optional<double> busy_without_comm_min_pct, busy_without_comm_max_pct;
  std::optional<double> step_min_ms, step_max_ms;
  std::optional<double> step_median_ms;  // Of the ranks other than the slowest.
  std::string slowest;                   // Source of the slowest rank.
  std::vector<Finding> findings;         // Across ranks (e.g. a straggler).
};

struct Report {
  std::vector<DeviceReport> devices;
  std::optional<RankSummary> ranks;  // When several traces (ranks) were analysed.
  std::vector<std::string> warnings;
  std::vector<std::string> rejected;  // "file: reason" for unusable inputs (truncated, empty).
  // "file: what it holds" for valid traces of work without a GPU (CPU-only, another
  // accelerator, counters only): a description, not an error.
  std::vector<std::string> without_gpu_work;
};

}  // namespace gpuscope
