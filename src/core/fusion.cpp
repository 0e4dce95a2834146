#include "core/fusion.h"

#include <algorithm>
#include <map>
#include <string>
#include <string_view>
#include <utility>

namespace gpuscope {
namespace {

// A chain of memory-bound kernels is a fusion candidate only if it recurs this often.
constexpr int64_t kMinFusionOccurrences = 2;
constexpr size_t kMaxCandidates = 5;

// The step each kernel belongs to: the one in which it was launched (or started, without
// launch data). All 0 without steps.
std::vector<size_t> step_of_kernels(const DeviceContext& ctx, const std::vector<Step>& steps) {
  std::vector<size_t> step_of(ctx.kernels.size(), 0);
  if (steps.empty()) return step_of;
  for (size_t i = 0; i < ctx.kernels.size(); ++i) {
    const int64_t api = ctx.host.api_for_correlation(ctx.kernels[i]->correlation);
    const int64_t t = api >= 0 ? ctx.trace.api_calls[api].start_ns : ctx.kernels[i]->start_ns;
    step_of[i] = static_cast<size_t>(
        std::upper_bound(steps.begin(), steps.end(), t, [](int64_t v, const Step& st) { return v < st.start_ns; }) -
        steps.begin());
  }
  return step_of;
}

// Adds the run idx[begin, end) to its group (keyed by the kernels' short names). What fusing
// it saves: a compiler (or a hand-written fused kernel) folds pointwise kernels into their
// neighbours, but each reduction (a norm, a sum over a dimension, softmax, a loss) stays a
// kernel of its own, and reductions over different dimensions (a LayerNorm backward's input
// and weight gradients) do not merge. So the fused run costs its reductions' time, and at
// least one kernel's (its mean) where it has none.
void add_run(const DeviceContext& ctx, const std::vector<KernelCategory>& categories, const std::vector<size_t>& idx,
             size_t begin, size_t end, std::map<std::vector<std::string>, FusionCandidate>& groups) {
  std::vector<std::string> names;
  int64_t ns = 0, reduction_ns = 0;
  for (size_t k = begin; k < end; ++k) {
    names.push_back(ctx.short_name_of(ctx.kernels[idx[k]]->name));
    const int64_t d = ctx.kernels[idx[k]]->end_ns - ctx.kernels[idx[k]]->start_ns;
    ns += d;
    if (categories[idx[k]] == KernelCategory::kReduction) reduction_ns += d;
  }
  const auto n = static_cast<int64_t>(names.size());
  FusionCandidate& g = groups[names];
  if (g.kernels.empty()) g.kernels = std::move(names);
  g.occurrences += 1;
  g.ns += ns;
  g.est_saving_ns += ns - std::max(reduction_ns, ns / n);
}

// Foreach kernels (multi_tensor_apply_kernel: _foreach_* arithmetic, the optimizers' foreach
// paths) already batch many tensors per launch and run in the optimizer step, which
// torch.compile(model) leaves eager; cuDNN's layout conversions (nchwToNhwc, nhwcToNchw) run
// inside a convolution call, around its kernel, where no compiler fuses them (a channels_last
// model does not need them). Either ends a chain instead of joining it.
bool joins_chains(const DeviceContext& ctx, const Kernel& k) {
  const std::string_view name = ctx.short_name_of(k.name);
  return !name.starts_with("multi_tensor_apply_kernel") && !is_layout_conversion(name);
}

}  // namespace

double triton_share(const std::vector<std::string>& names) {
  if (names.empty()) return 0;
  size_t triton = 0;
  for (const auto& n : names) triton += describe_kernel(n).library == KernelLibrary::kTriton;
  return static_cast<double>(triton) / static_cast<double>(names.size());
}

std::vector<FusionCandidate> fusion_candidates(const DeviceContext& ctx, const std::vector<KernelCategory>& categories,
                                               const std::vector<Step>& steps) {
  // Runs break at step boundaries: a loop of only elementwise kernels would otherwise be one
  // endless run.
  const std::vector<size_t> step_of = step_of_kernels(ctx, steps);
  std::map<int32_t, std::vector<size_t>> by_stream;
  for (size_t i = 0; i < ctx.kernels.size(); ++i) by_stream[ctx.kernels[i]->stream].push_back(i);
  std::map<std::vector<std::string>, FusionCandidate> groups;
  for (const auto& [stream, idx] : by_stream) {
    size_t i = 0;
    while (i < idx.size()) {
      size_t j = i;
      while (j < idx.size() && is_memory_bound(categories[idx[j]]) && joins_chains(ctx, *ctx.kernels[idx[j]]) &&
             step_of[idx[j]] == step_of[idx[i]]) {
        ++j;
      }
      if (j - i >= 2) add_run(ctx, categories, idx, i, j, groups);
      i = std::max(j, i + 1);
    }
  }
  std::vector<FusionCandidate> out;
  for (auto& [key, g] : groups) {
    // A chain mostly of Triton kernels is what torch.compile already fused: its boundaries are
    // the compiler's (reductions, graph breaks), not a saving left on the table.
    if (g.occurrences < kMinFusionOccurrences || triton_share(g.kernels) > 0.5) continue;
    g.pct = pct(static_cast<double>(g.ns), static_cast<double>(ctx.window()));
    out.push_back(std::move(g));
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.est_saving_ns > b.est_saving_ns; });
  if (out.size() > kMaxCandidates) out.resize(kMaxCandidates);
  return out;
}

}  // namespace gpuscope
