// Findings: what to change, with evidence from the trace and an estimated gain (docs/design.md,
// "Findings"). Each finding is one rule function; kFindingRules in findings.cpp is the one list
// of them. A rule states its trigger (return nullopt when it does not fire) and its estimate
// (the whole-window speedup if fixed); the runner fills in the id and severity and drops
// findings worth under 1%.
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/catalog.h"
#include "core/device_context.h"
#include "core/report.h"

namespace gpuscope {

// What a rule may read: the device, the report so far (everything but findings) and the
// per-kernel results (indexed like DeviceContext::kernels).
struct FindingContext {
  const DeviceContext& device;
  const DeviceReport& report;
  const std::vector<KernelCategory>& categories;
  const std::vector<Precision>& precisions;
  const CopyStats& copies;
  // gpu_paced_kernels(device): a fix that shortens kernels saves only where the GPU paced.
  std::vector<int8_t> paced = {};

  double window_ns() const { return static_cast<double>(report.window_ns); }
  double steps() const { return static_cast<double>(std::max<int64_t>(1, report.step_count)); }
  // Speedups are ratios to the window the program would take untraced, where the tracer's
  // measured launch cost is known (idle it explains is neither in the base nor saved by a fix).
  double speedup_removing(double saved_ns) const;
  // The window the estimates are ratios to: untraced where the tracer's cost is known, less the
  // idle inside one-off start-up calls and CUDA graph captures (DeviceReport::one_off_ns).
  double base_ns() const;
  // The same for GPU work a fix makes shorter (fusion, precision, fuller grids): the step
  // cannot get shorter than the time the copy engines are busy in it (a copy on a side stream
  // can be what paces the loop).
  // Only the share of the saving the GPU paced counts (paced_share of the kernels the fix
  // shortens): elsewhere the GPU waited for the host's next launch, and a shorter kernel only
  // lengthens the wait.
  double speedup_removing_gpu_time(double saved_ns, std::optional<double> paced_share) const;
  // Of the time of the window's kernels i with shortened(i), the share after which the GPU had
  // its next kernel already (gpu_paced_kernels); null where that is unknown for over half of it.
  template <typename Pred>
  std::optional<double> paced_share(Pred shortened) const {
    double all = 0, known = 0, yes = 0;
    for (size_t i = 0; i < device.kernels.size() && i < paced.size(); ++i) {
      if (!shortened(i)) continue;
      const double d = static_cast<double>(device.kernels[i]->end_ns - device.kernels[i]->start_ns);
      all += d;
      if (paced[i] < 0) continue;
      known += d;
      if (paced[i] > 0) yes += d;
    }
    if (known <= 0 || 2 * known < all) return std::nullopt;
    return yes / known;
  }
  // The evidence clause that says so, empty where the GPU paced (almost) all of that time.
  static std::string gpu_paced_clause(std::optional<double> paced_share);
  // The idle cause's entry of the report.
  const IdleCause& idle(IdleCauseId cause) const;
};

// A rule's result before the runner sets its id and severity.
Finding proposal(std::string title, std::string evidence, double speedup, std::string recommendation);

using FindingRule = std::optional<Finding> (*)(const FindingContext&);
struct FindingRuleEntry {
  std::string_view id;
  FindingRule rule;
};
// Every device finding, in the order they are evaluated (ties in speedup keep this order).
std::span<const FindingRuleEntry> finding_rules();

// The longest time in the window with neither a kernel nor a copy on the device.
int64_t largest_idle_gap(const DeviceContext& d);

// Runs every rule into r.findings, largest estimated speedup first. Where the window holds no
// steady state (one-off start-up calls fill half of it, or it has no steps and one idle gap
// fills half of it), every finding is low severity and its evidence says why.
void add_findings(const FindingContext& ctx, DeviceReport& r);

// high >= x1.25, medium >= x1.05, else low.
Severity severity_for(double speedup);
// "12.34 ms".
std::string fmt_ms(int64_t ns);
// Milliseconds with at least four significant digits ("0.03125 ms", "1.630 ms", "123.40 ms"),
// so that a ratio of two printed values reproduces a multiplier.
std::string fmt_ms_precise(double ns);
// Every finding's evidence ends with its estimate as two printed values whose ratio is the
// multiplier: "; estimate: step 1.630 ms -> 0.8000 ms" (a throughput rule prints rates instead,
// after the same prefix).
inline constexpr std::string_view kEstimatePrefix = "; estimate: ";
std::string estimate_clause(double before_ns, double after_ns, std::string_view what);

// The idle-cause rules' trigger (the cause when it reaches the share that makes a finding,
// else null) and evidence line (findings.cpp).
const IdleCause* idle_trigger(const FindingContext& f, IdleCauseId cause);
std::string idle_evidence(const FindingContext& f, const IdleCause& c);
// A cause's idle time that a fix can remove: less the tracer's part and one-off start-up.
double steady_idle_ns(const IdleCause& c);
// The input rule (findings_input.cpp).
std::optional<Finding> input_bound(const FindingContext& f);

// The rules over kernels (findings_kernels.cpp); the idle-cause rules are in findings.cpp.
std::optional<Finding> precision_fp32(const FindingContext& f);
std::optional<Finding> optimizer_unfused(const FindingContext& f);
// The optimizer finding's trigger (launch-bound leaves the optimizer's launch gaps to it).
bool optimizer_unfused_fires(const FindingContext& f);
std::optional<Finding> kernel_fusion(const FindingContext& f);
// Whether the program already runs torch.compile: a compiled region (CompiledFunction,
// "Torch-Compiled Region") in the trace, or most kernel time in Triton kernels. Such a program
// is not told to use torch.compile.
bool uses_torch_compile(const FindingContext& f);
// The attention rule (findings_attention.cpp) and its trigger (kernel-fusion leaves the score
// passes' chains to it).
std::optional<Finding> attention_unfused(const FindingContext& f);
bool attention_unfused_fires(const FindingContext& f);
std::optional<Finding> small_grid(const FindingContext& f);
std::optional<Finding> low_occupancy(const FindingContext& f);

// The serving rules (findings_serving.cpp): under-batched GEMMs, gaps between iterations,
// GEMM dimensions that do not fill tensor-core tiles.
std::optional<Finding> under_batched(const FindingContext& f);
std::optional<Finding> scheduling_gap(const FindingContext& f);
std::optional<Finding> tensor_unfriendly_shape(const FindingContext& f);
// The host idle between iterations that scheduling-gap claims (0 when it does not fire), so
// host-bound can leave it out rather than count it twice.
int64_t scheduling_gap_ns(const FindingContext& f);
// The communication rule (findings_comm.cpp).
std::optional<Finding> exposed_communication(const FindingContext& f);

// Sets r.serving when the steps are forward passes. Needs r.step_source and r.window_ns.
void add_serving_metrics(const DeviceContext& ctx, DeviceReport& r);

}  // namespace gpuscope
