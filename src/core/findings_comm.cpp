// The communication rule (docs/design.md, "Findings"): collectives that no compute hides.
#include <algorithm>
#include <utility>

#include <fmt/core.h>

#include "core/findings.h"

namespace gpuscope {
namespace {

// Exposed communication makes a finding from this share of the window.
constexpr double kExposedMinPct = 2.0;

// "; allreduce 12 calls, 98.3 MB, bus 41.2 GB/s": the longest collective with sizes, if any.
std::string collective_evidence(const CommunicationReport& c) {
  for (const CollectiveStats& s : c.collectives) {
    if (!s.bytes) continue;
    std::string out = fmt::format("; longest collective {} x{} ({:.1f} MB in all)", s.op, s.count,
                                  static_cast<double>(*s.bytes) / 1e6);
    if (s.busbw_gbps) out += fmt::format(", bus bandwidth {:.1f} GB/s (waiting included)", *s.busbw_gbps);
    return out;
  }
  return "";
}

}  // namespace

// Trigger: communication kernels run with no other kernel on the GPU for >= 2% of the window.
// Estimate: that exposed time is hidden under compute, as far as there is compute to hide it:
// the compute time not already overlapping communication (compute - (comm - exposed)) bounds
// what can still overlap; saved = min(exposed, that).
std::optional<Finding> exposed_communication(const FindingContext& f) {
  if (!f.report.communication) return std::nullopt;
  const CommunicationReport& c = *f.report.communication;
  if (c.exposed_pct < kExposedMinPct) return std::nullopt;
  const int64_t overlapped = c.kernel_ns - c.exposed_ns;
  const int64_t room = std::max<int64_t>(0, c.compute_ns - overlapped);
  const int64_t saved = std::min(c.exposed_ns, room);
  const double steps = f.steps();
  std::string ev = fmt::format(
      "Communication kernels run alone {:.1f}% of the window ({} per step of {} in collectives; {:.0f}% "
      "overlapped by compute); compute {} per step could hide {}",
      c.exposed_pct, fmt_ms(static_cast<int64_t>(static_cast<double>(c.exposed_ns) / steps)),
      fmt_ms(static_cast<int64_t>(static_cast<double>(c.kernel_ns) / steps)),
      c.kernel_ns > 0 ? 100.0 * static_cast<double>(overlapped) / static_cast<double>(c.kernel_ns) : 0.0,
      fmt_ms(static_cast<int64_t>(static_cast<double>(c.compute_ns) / steps)),
      fmt_ms(static_cast<int64_t>(static_cast<double>(saved) / steps)));
  ev += collective_evidence(c);
  return proposal(
      "Collectives are not hidden behind compute", std::move(ev), f.speedup_removing(static_cast<double>(saved)),
      "Overlap gradient communication with backward: let DDP's hooks all-reduce buckets as gradients become "
      "ready (no all-reduce by hand after backward(); static_graph=True, gradient_as_bucket_view=True) and tune "
      "bucket_cap_mb (default 25: larger means fewer, more efficient collectives, smaller lets the first "
      "start earlier); with FSDP set backward_prefetch=BACKWARD_PRE and forward_prefetch=True; with gradient "
      "accumulation skip the all-reduce of all but the last micro-batch (model.no_sync()). A collective's "
      "time includes waiting for the slowest rank: where the cross-rank summary finds one rank slower than the "
      "rest, fix that first. Estimate: the exposed time hidden under the compute not already overlapping "
      "communication.");
}

}  // namespace gpuscope
