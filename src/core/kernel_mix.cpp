#include "core/kernel_mix.h"

#include <algorithm>
#include <array>
#include <unordered_map>
#include <utility>

namespace gpuscope {
namespace {

constexpr int64_t kSmallKernelNs = 10'000;

int64_t duration(const Kernel& k) { return k.end_ns - k.start_ns; }

// Sum of durations per category, copies and sets included; shares of all GPU activity time.
void add_categories(const DeviceContext& ctx, const KernelMix& mix, DeviceReport& r) {
  std::array<CategoryTime, kNumKernelCategories> cat_time{};
  for (size_t i = 0; i < ctx.kernels.size(); ++i) {
    auto& ct = cat_time[static_cast<size_t>(mix.categories[i])];
    ct.ns += duration(*ctx.kernels[i]);
    ct.count += 1;
  }
  CategoryTime& copy_set = cat_time[static_cast<size_t>(KernelCategory::kCopySet)];
  auto add_copy = [&](int32_t device, int64_t start_ns, int64_t end_ns) {
    if (device == ctx.device_id && ctx.in_window(start_ns)) {
      copy_set.ns += end_ns - start_ns;
      copy_set.count += 1;
    }
  };
  for (const Memcpy& m : ctx.trace.memcpys) add_copy(m.device, m.start_ns, m.end_ns);
  for (const Memset& m : ctx.trace.memsets) add_copy(m.device, m.start_ns, m.end_ns);
  int64_t activity_ns = 0;
  for (const auto& c : cat_time) activity_ns += c.ns;
  for (int c = 0; c < kNumKernelCategories; ++c) {
    CategoryTime ct = cat_time[c];
    ct.category = category_name(static_cast<KernelCategory>(c));
    ct.pct = pct(static_cast<double>(ct.ns), static_cast<double>(activity_ns));
    r.categories.push_back(std::move(ct));
  }
  std::sort(r.categories.begin(), r.categories.end(), [](auto& a, auto& b) { return a.ns > b.ns; });
}

// Every kernel name by time, most first; the first ten are the top kernels.
void add_top_kernels(const DeviceContext& ctx, const KernelMix& mix, DeviceReport& r) {
  std::unordered_map<StringId, TopKernel> by_name;
  int64_t kernel_ns = 0;
  for (size_t i = 0; i < ctx.kernels.size(); ++i) {
    const Kernel& k = *ctx.kernels[i];
    auto& tk = by_name[k.name];
    tk.count += 1;
    tk.ns += duration(k);
    kernel_ns += duration(k);
    if (tk.category.empty()) tk.category = category_name(mix.categories[i]);
  }
  std::vector<std::pair<StringId, TopKernel>> tops(by_name.begin(), by_name.end());
  std::sort(tops.begin(), tops.end(), [](auto& a, auto& b) { return a.second.ns > b.second.ns; });
  r.kernels.reserve(tops.size());
  for (auto& [name, t] : tops) {
    t.name = std::string(ctx.trace.strings.view(name));
    t.pct = pct(static_cast<double>(t.ns), static_cast<double>(kernel_ns));
    r.kernels.push_back(std::move(t));
  }
  r.top_kernels.assign(r.kernels.begin(),
                       r.kernels.begin() + static_cast<ptrdiff_t>(std::min<size_t>(10, r.kernels.size())));
}

// Small kernels, and kernels against their launch calls (where correlated).
void add_launch_stats(const DeviceContext& ctx, DeviceReport& r) {
  int64_t kernel_ns = 0, small = 0, small_ns = 0, shorter = 0, correlated = 0;
  std::vector<double> delays_us;
  for (const Kernel* k : ctx.kernels) {
    const int64_t d = duration(*k);
    kernel_ns += d;
    if (d < kSmallKernelNs) ++small, small_ns += d;
    const int64_t api = ctx.host.api_for_correlation(k->correlation);
    if (api >= 0) {
      const ApiCall& call = ctx.trace.api_calls[api];
      ++correlated;
      if (d < call.end_ns - call.start_ns) ++shorter;
      delays_us.push_back(static_cast<double>(k->start_ns - call.start_ns) / 1e3);
    }
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
}

// Matrix math time (GEMM, convolution, attention) by precision, largest first.
void add_precision(const DeviceContext& ctx, const KernelMix& mix, DeviceReport& r) {
  std::array<int64_t, kNumPrecisions> prec_ns{};
  for (size_t i = 0; i < ctx.kernels.size(); ++i) {
    if (is_matrix_math(mix.categories[i])) prec_ns[static_cast<size_t>(mix.precisions[i])] += duration(*ctx.kernels[i]);
  }
  int64_t gemm_ns = 0;
  for (auto v : prec_ns) gemm_ns += v;
  for (int p = 0; p < kNumPrecisions; ++p) {
    if (prec_ns[p] == 0) continue;
    r.precision.push_back({std::string(precision_name(static_cast<Precision>(p))), prec_ns[p],
                           pct(static_cast<double>(prec_ns[p]), static_cast<double>(gemm_ns))});
  }
  std::sort(r.precision.begin(), r.precision.end(), [](auto& a, auto& b) { return a.ns > b.ns; });
}

}  // namespace

KernelCategory kernel_category(const DeviceContext& ctx, const Kernel& k) {
  const KernelCategory c = ctx.category_of(k.name);
  // Matrix math and collectives keep their category inside an optimizer step too (a weight
  // update may run a GEMM or an all-reduce; neither is optimizer arithmetic).
  if (is_matrix_math(c) || c == KernelCategory::kCommunication) return c;
  const int64_t api = ctx.host.api_for_correlation(k.correlation);
  if (api >= 0 && (ctx.host.context_flags(static_cast<size_t>(api)) & kHostOptimizer)) {
    return KernelCategory::kOptimizer;
  }
  return c;
}

Precision kernel_precision(const DeviceContext& ctx, const Kernel& k) {
  const Precision from_name = ctx.precision_of(k.name);
  if (from_name == Precision::kTf32 || from_name == Precision::kFp8) return from_name;
  const int64_t api = ctx.host.api_for_correlation(k.correlation);
  if (api < 0) return from_name;
  const int64_t op = ctx.host.owner_op(static_cast<size_t>(api));
  if (op < 0) return from_name;
  const HostEvent& e = ctx.trace.host_events[op];
  for (const Matmul& m : ctx.trace.matmuls_of(e)) {
    if (m.dtype != Precision::kUnknown) return m.dtype;
  }
  // Ops without matmul records (convolutions): the dtype of their matrix arguments.
  for (uint16_t i = 0; i < e.num_args; ++i) {
    const OpArg& a = ctx.trace.op_args[e.first_arg + i];
    if (a.rank < 2 || a.dtype == 0) continue;  // Matrices only; skips bias and scalars.
    const Precision p = precision_from_dtype(ctx.trace.strings.view(a.dtype));
    if (p != Precision::kUnknown) return p;
  }
  return from_name;
}

KernelMix add_kernel_mix(const DeviceContext& ctx, DeviceReport& r) {
  KernelMix mix;
  mix.categories.resize(ctx.kernels.size());
  mix.precisions.assign(ctx.kernels.size(), Precision::kUnknown);
  for (size_t i = 0; i < ctx.kernels.size(); ++i) {
    mix.categories[i] = kernel_category(ctx, *ctx.kernels[i]);
    if (is_matrix_math(mix.categories[i])) mix.precisions[i] = kernel_precision(ctx, *ctx.kernels[i]);
  }
  r.kernel_count = static_cast<int64_t>(ctx.kernels.size());
  add_categories(ctx, mix, r);
  add_top_kernels(ctx, mix, r);
  add_launch_stats(ctx, r);
  add_precision(ctx, mix, r);
  return mix;
}

}  // namespace gpuscope
