// What changed between two runs: a pure function from two Reports (BASE, then NEW) to a
// ReportDiff, which the front ends render (text in render/diff_text.cpp, schema "gpuscope.diff/1" in
// render/diff_json.cpp). Times are per step (a report's window holds step_count whole steps),
// so runs of different lengths compare. Ratios are NEW / BASE; a ratio whose BASE is zero, or
// any value one side did not measure, is empty, never 0.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/report.h"

namespace gpuscope {

// A ratio or difference of two numbers that are large or tiny enough overflows: then it is
// empty (not measured), never shown as "inf" or "nan".
inline std::optional<double> finite_or_empty(double x) {
  if (!std::isfinite(x)) return std::nullopt;
  return x;
}

// One number on both sides.
struct ValueChange {
  std::optional<double> base;
  std::optional<double> now;  // NEW's value ("new" is a keyword).
  std::optional<double> delta() const {
    if (!base || !now) return std::nullopt;
    return finite_or_empty(*now - *base);
  }
  std::optional<double> ratio() const {
    if (!base || !now || *base == 0) return std::nullopt;
    return finite_or_empty(*now / *base);
  }
};

// What a per-step time belongs to: a candidate for "the change that made the difference".
enum class ComponentKind : uint8_t { kIdle, kCategory, kPrecision };
inline constexpr std::string_view kComponentKindNames[] = {"idle", "kernel_category", "precision"};
constexpr std::string_view component_kind_name(ComponentKind k) { return kComponentKindNames[static_cast<size_t>(k)]; }

// Time per step of one idle cause, kernel category or precision (matrix math time by dtype),
// in ms. A row absent from one report counts 0 there (the report lists every cause and
// category; a dtype it does not list had no matrix time).
struct ComponentChange {
  ComponentKind kind = ComponentKind::kIdle;
  std::string name;  // "input", "gemm", "bf16".
  double base_ms = 0;
  double new_ms = 0;
  // Kernel categories only: launches per step (fusion lowers them).
  std::optional<double> base_launches, new_launches;
  double delta_ms() const { return new_ms - base_ms; }
  std::optional<double> ratio() const {
    if (base_ms == 0) return std::nullopt;
    return finite_or_empty(new_ms / base_ms);
  }
};

// A kernel of either report's top list, matched by normalised name (normalize_kernel_name).
// The reports list only their top kernels: a kernel not listed on one side has an unknown time
// there, at most that side's smallest listed one; its side is empty and the change is taken
// against 0 (so a kernel that appears or vanishes shows its whole time).
struct KernelChange {
  std::string name;               // Normalised.
  std::string category;           // From whichever side lists it (NEW first).
  std::optional<double> base_ms;  // Per step.
  std::optional<double> new_ms;
  double delta_ms() const { return new_ms.value_or(0) - base_ms.value_or(0); }
};

enum class FindingStatus : uint8_t { kResolved, kNew, kChanged, kUnchanged };
inline constexpr std::string_view kFindingStatusNames[] = {"resolved", "new", "changed", "unchanged"};
constexpr std::string_view finding_status_name(FindingStatus s) { return kFindingStatusNames[static_cast<size_t>(s)]; }

// A finding matched by id. `changed` when both sides have it and the estimated speedup moved by
// more than kFindingSpeedupTolerance (or the severity changed).
struct FindingChange {
  std::string id;
  FindingStatus status = FindingStatus::kUnchanged;
  std::string title;  // NEW's when it has the finding, else BASE's.
  std::optional<Severity> base_severity, new_severity;
  std::optional<double> base_est_speedup, new_est_speedup;
};
inline constexpr double kFindingSpeedupTolerance = 0.01;

// The component whose time per step changed most (by absolute change), next to the measured
// step-time change. `share_of_step_change` = its change / the step time's change, when the step
// time changed. For precision, the dominant dtype (most matrix time) on each side.
struct HeadlineChange {
  ComponentChange component;
  double step_time_ratio = 0;
  std::optional<double> share_of_step_change;
  std::string base_dominant_dtype, new_dominant_dtype;
};

// The two devices' reports compared. Comparability problems are in `warnings`, each one line.
struct DeviceDiff {
  std::string base_source, new_source;
  std::string base_device, new_device;  // Device names.
  std::optional<int32_t> rank;
  bool comparable = true;
  std::vector<std::string> warnings;

  std::string base_step_source, new_step_source;
  int64_t base_steps = 0, new_steps = 0;
  ValueChange step_ms;         // Mean step time.
  double step_time_ratio = 0;  // NEW / BASE step time (< 1: faster).
  // Work per time, NEW / BASE: FLOPs per step over step time where both sides know the same
  // kind of FLOPs (throughput_basis "model_flops" or "matmul_flops"), else steps per time
  // ("steps": assumes the same work per step).
  double throughput_ratio = 0;
  std::string throughput_basis;
  ValueChange model_flops_per_step, matmul_flops_per_step;

  ValueChange mfu_pct, hfu_pct;
  ValueChange busy_pct, sm_active_est_pct, hw_sm_active_pct, hw_tensor_active_pct;
  ValueChange idle_pct;
  ValueChange kernels_per_step;  // Kernel launches per step (fusion lowers it).

  std::vector<ComponentChange> idle;        // Cause table order; both sides, per step.
  std::vector<ComponentChange> categories;  // Largest absolute change first.
  std::vector<ComponentChange> precision;   // Largest absolute change first.
  std::vector<KernelChange> kernels;        // Largest absolute change first, at most kMaxKernelChanges.
  std::vector<FindingChange> findings;      // Resolved, new, changed, unchanged; by id within each.

  std::optional<HeadlineChange> headline;  // Empty only when nothing has any time.

  // The smallest change of a kernel's time per step (ms) that the text and HTML pages list
  // among the kernels that changed most: 0.02 ms, or 0.2% of BASE's step time where that is
  // more. Below it, run-to-run noise (timer granularity, clocks) would be listed as a change.
  double kernel_noise_floor_ms() const { return std::max(0.02, 0.002 * step_ms.base.value_or(0)); }
};
inline constexpr size_t kMaxKernelChanges = 10;

struct ReportDiff {
  std::vector<DeviceDiff> devices;    // Paired by rank when both reports have ranks, else in order.
  std::vector<std::string> warnings;  // Devices that could not be paired.
};

// A kernel name with template arguments (<...>), the parameter list ((...)), a leading "void ",
// hexadecimal literals (0x...) and whitespace runs removed, so one kernel compiled with other
// template parameters, or an address in its name, matches across runs:
// "void at::native::vectorized_elementwise_kernel<4, F>(int, F)" -> "at::native::vectorized_elementwise_kernel".
std::string normalize_kernel_name(std::string_view name);

// Compares two devices' reports.
DeviceDiff diff_devices(const DeviceReport& base, const DeviceReport& now);

// Compares two reports (each of one or several devices / ranks).
ReportDiff diff_reports(const Report& base, const Report& now);

}  // namespace gpuscope
