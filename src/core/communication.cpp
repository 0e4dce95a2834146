#include "core/communication.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <string>
#include <utility>

namespace gpuscope {
namespace {

// "all_reduce", "AllReduce", "allreduce" -> "allreduce".
std::string canonical_op(std::string_view op) {
  std::string out;
  for (char c : op) {
    if (c != '_') out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  return out;
}

// The exposed part of [a, b): communication union minus the compute union.
int64_t exposed_in(const std::vector<Interval>& comm, const std::vector<Interval>& compute, int64_t a, int64_t b) {
  int64_t out = 0;
  for (const Interval& c : comm) {
    const int64_t s = std::max(a, c.start_ns), e = std::min(b, c.end_ns);
    if (s >= e) continue;
    out += (e - s) - covered(compute, s, e);
  }
  return out;
}

// Per (op, dtype): the calls in the window with their bytes where every call's size is known.
std::vector<CollectiveStats> collective_stats(const DeviceContext& ctx) {
  struct Acc {
    CollectiveStats s;
    bool sizes_known = true;
    uint64_t bytes = 0;
  };
  std::map<std::pair<std::string, std::string>, Acc> by_op;
  for (const CollectiveArgs& c : ctx.trace.collectives) {
    if (c.device != ctx.device_id || !ctx.in_window(c.start_ns)) continue;
    const std::string op(ctx.trace.strings.view(c.name));
    const std::string dtype(ctx.trace.strings.view(c.dtype));
    Acc& a = by_op[{op, dtype}];
    a.s.op = op;
    a.s.dtype = dtype;
    a.s.count += 1;
    a.s.ns += c.end_ns - c.start_ns;
    if (c.group_size) a.s.group_size = std::max(a.s.group_size.value_or(0), *c.group_size);
    const std::optional<int> elem = dtype_bytes(dtype);
    const int64_t nelems = std::max(c.in_nelems.value_or(-1), c.out_nelems.value_or(-1));
    if (!elem || nelems < 0)
      a.sizes_known = false;
    else
      a.bytes += static_cast<uint64_t>(nelems) * static_cast<uint64_t>(*elem);
  }
  std::vector<CollectiveStats> out;
  for (auto& [key, a] : by_op) {
    if (a.sizes_known) {
      a.s.bytes = a.bytes;
      if (a.s.ns > 0) {
        a.s.algbw_gbps = static_cast<double>(a.bytes) / static_cast<double>(a.s.ns);  // bytes/ns = GB/s.
        if (a.s.group_size) {
          if (auto f = busbw_factor(a.s.op, *a.s.group_size)) a.s.busbw_gbps = *a.s.algbw_gbps * *f;
        }
      }
    }
    out.push_back(std::move(a.s));
  }
  std::stable_sort(out.begin(), out.end(), [](const auto& x, const auto& y) { return x.ns > y.ns; });
  return out;
}

}  // namespace

std::optional<double> busbw_factor(std::string_view op_name, int64_t ranks) {
  if (ranks < 1) return std::nullopt;
  const std::string op = canonical_op(op_name);
  const double n = static_cast<double>(ranks);
  if (op == "allreduce" || op == "allreducecoalesced") return 2.0 * (n - 1) / n;
  if (op == "allgather" || op == "allgatherbase" || op == "allgatherintotensorcoalesced" || op == "reducescatter" ||
      op == "reducescatterbase" || op == "reducescattertensorcoalesced" || op == "alltoall" || op == "alltoallbase") {
    return (n - 1) / n;
  }
  if (op == "broadcast" || op == "reduce" || op == "send" || op == "recv") return 1.0;
  return std::nullopt;
}

std::optional<int> dtype_bytes(std::string_view dtype) {
  static const std::map<std::string_view, int> kSizes = {
      {"Float", 4},         {"Double", 8},      {"Half", 2},         {"BFloat16", 2},      {"Int", 4},
      {"Long", 8},          {"Short", 2},       {"Char", 1},         {"Byte", 1},          {"Bool", 1},
      {"Float8_e4m3fn", 1}, {"Float8_e5m2", 1}, {"ComplexFloat", 8}, {"ComplexDouble", 16}};
  const auto it = kSizes.find(dtype);
  if (it == kSizes.end()) return std::nullopt;
  return it->second;
}

void add_communication(const DeviceContext& ctx, DeviceReport& r) {
  std::vector<Interval> comm, compute;
  for (const Kernel* k : ctx.device_kernels) {
    const bool is_comm = ctx.category_of(k->name) == KernelCategory::kCommunication;
    (is_comm ? comm : compute).push_back({k->start_ns, k->end_ns});
  }
  comm = merge(std::move(comm));
  const int64_t comm_ns = covered(comm, ctx.window_start, ctx.window_end);
  if (comm_ns == 0) return;
  compute = merge(std::move(compute));
  CommunicationReport c;
  const double window = static_cast<double>(ctx.window());
  c.kernel_ns = comm_ns;
  c.pct = pct(static_cast<double>(comm_ns), window);
  c.compute_ns = covered(compute, ctx.window_start, ctx.window_end);
  c.busy_without_comm_pct = pct(static_cast<double>(c.compute_ns), window);
  c.exposed_ns = exposed_in(comm, compute, ctx.window_start, ctx.window_end);
  c.exposed_pct = pct(static_cast<double>(c.exposed_ns), window);
  for (const Step& s : ctx.steps) c.exposed_per_step_ns.push_back(exposed_in(comm, compute, s.start_ns, s.end_ns));
  c.collectives = collective_stats(ctx);
  r.communication = std::move(c);
}

}  // namespace gpuscope
