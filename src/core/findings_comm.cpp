// The communication rule (docs/findings.md): collectives that no compute hides.
#include <algorithm>
#include <cctype>
#include <iterator>
#include <string>
#include <utility>

#include <fmt/core.h>

#include "core/findings.h"
#include "core/findings_serving_detail.h"

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

// The collective that takes most communication kernel time, from the kernels' names
// (NCCL/RCCL "AllReduce", "AllGather", "ReduceScatter", "SendRecv", "AllToAll"; symmetric
// memory's multimem_all_reduce_kernel).
enum class Collective { kUnknown, kAllReduce, kAllGather, kReduceScatter, kAllToAll, kSendRecv };
Collective dominant_collective(const FindingContext& f) {
  double ns[6] = {};
  for (size_t i = 0; i < f.device.kernels.size(); ++i) {
    if (f.categories[i] != KernelCategory::kCommunication) continue;
    std::string n(f.device.trace.strings.view(f.device.kernels[i]->name));
    std::transform(n.begin(), n.end(), n.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    std::erase(n, '_');
    const Collective c = n.find("alltoall") != std::string::npos        ? Collective::kAllToAll
                         : n.find("allreduce") != std::string::npos     ? Collective::kAllReduce
                         : n.find("allgather") != std::string::npos     ? Collective::kAllGather
                         : n.find("reducescatter") != std::string::npos ? Collective::kReduceScatter
                         : n.find("sendrecv") != std::string::npos || n.find("send") != std::string::npos ||
                                 n.find("recv") != std::string::npos
                             ? Collective::kSendRecv
                             : Collective::kUnknown;
    ns[static_cast<int>(c)] += static_cast<double>(f.device.kernels[i]->end_ns - f.device.kernels[i]->start_ns);
  }
  return static_cast<Collective>(std::max_element(std::begin(ns), std::end(ns)) - std::begin(ns));
}

// Advice for the parallelism the trace shows: inference (tensor or expert parallel serving has
// no backward to hide communication behind), all-to-all (expert parallelism, MoE), point-to-point
// (pipeline stages; all-to-all as NCCL runs it), else data-parallel training (DDP, FSDP).
std::string communication_advice(const FindingContext& f) {
  const Collective c = dominant_collective(f);
  const std::string slow_rank =
      " A collective's time includes waiting for the slowest rank: where the cross-rank summary finds one rank "
      "slower than the rest, fix that first.";
  if (serving_detail::is_inference(f)) {
    return "Inference communicates inside every layer (tensor-parallel all-reduce or all-gather, expert-parallel "
           "all-to-all), with no backward pass to hide it behind: overlap it with the next GEMM (async tensor "
           "parallelism, symmetric-memory collectives), fuse the all-reduce with the following norm, and use no "
           "more tensor-parallel ranks than the batch keeps busy." +
           slow_rank + " Estimate: the exposed time hidden under the compute not already overlapping communication.";
  }
  if (c == Collective::kAllToAll || c == Collective::kSendRecv) {
    return "Most communication is all-to-all or point-to-point (expert-parallel token dispatch and combine, or "
           "pipeline stages): overlap it with computation on other micro-batches or experts (split the batch and "
           "pipeline dispatch, expert compute and combine; interleaved pipeline schedules), and balance tokens per "
           "expert (capacity factor, load-balancing loss) so no rank waits on the busiest." +
           slow_rank + " Estimate: the exposed time hidden under the compute not already overlapping communication.";
  }
  return "Overlap gradient communication with backward: let DDP's hooks all-reduce buckets as gradients become "
         "ready (no all-reduce by hand after backward(); static_graph=True, gradient_as_bucket_view=True) and tune "
         "bucket_cap_mb (default 25: larger means fewer, more efficient collectives, smaller lets the first "
         "start earlier); with FSDP set backward_prefetch=BACKWARD_PRE and forward_prefetch=True; with gradient "
         "accumulation skip the all-reduce of all but the last micro-batch (model.no_sync())." +
         slow_rank + " Estimate: the exposed time hidden under the compute not already overlapping communication.";
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
  return proposal("Collectives are not hidden behind compute", std::move(ev),
                  f.speedup_removing(static_cast<double>(saved)), communication_advice(f));
}

}  // namespace gpuscope
