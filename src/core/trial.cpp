#include "core/trial.h"

#include <algorithm>
#include <cmath>
#include <random>

#include <fmt/format.h>

namespace gpuscope {
namespace {

constexpr std::string_view kPrecisionFindings[] = {"precision-fp32"};
constexpr std::string_view kOptimizerFindings[] = {"optimizer-unfused"};
constexpr std::string_view kInputFindings[] = {"input-bound", "memcpy"};
constexpr std::string_view kAllocationFindings[] = {"allocation"};
// torch.compile's default mode fuses kernels; launches stay one per kernel, so launch-bound's
// estimate (a step replayed without the code that issues it) is reduce-overhead's: CUDA graphs.
constexpr std::string_view kCompileFindings[] = {"kernel-fusion"};
constexpr std::string_view kCudaGraphFindings[] = {"launch-bound", "kernel-fusion"};

constexpr TrialFix kFixes[] = {
    {"tf32", "float32 matmuls and convolutions on TF32 tensor cores (set_float32_matmul_precision('high'))", true, "",
     kPrecisionFindings, "precision"},
    {"bf16", "autocast to bfloat16 around each outermost module call, from the second step", true, "",
     kPrecisionFindings, "precision"},
    {"fused-optimizer", "Adam, AdamW, SGD and Adagrad built with fused=True", false, "", kOptimizerFindings},
    {"dataloader", "DataLoaders without workers get workers, pin_memory and persistent_workers", false, "",
     kInputFindings},
    {"caching-allocator", "PyTorch's caching allocator back on (PYTORCH_NO_CUDA_MEMORY_CACHING unset)", false,
     "PYTORCH_NO_CUDA_MEMORY_CACHING", kAllocationFindings},
    {"expandable-segments", "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True", false, "PYTORCH_CUDA_ALLOC_CONF",
     kAllocationFindings},
    // Last: its trial spends its warm-up compiling.
    {"compile", "torch.compile (default mode) of each outermost module with parameters, from the second step", false,
     "", kCompileFindings, "compile"},
    {"reduce-overhead",
     "torch.compile(mode='reduce-overhead') of each outermost module with parameters, from the second step: "
     "CUDA graphs",
     false, "", kCudaGraphFindings, "compile"},
};

double median(std::vector<double> v) {
  const size_t mid = v.size() / 2;
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(mid), v.end());
  const double upper = v[mid];
  if (v.size() % 2 == 1) return upper;
  return (*std::max_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(mid)) + upper) / 2;
}

double quantile_sorted(const std::vector<double>& sorted, double q) {
  const double pos = q * static_cast<double>(sorted.size() - 1);
  const size_t lo = static_cast<size_t>(std::floor(pos));
  const size_t hi = std::min(lo + 1, sorted.size() - 1);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - static_cast<double>(lo));
}

}  // namespace

std::span<const TrialFix> trial_fixes() { return kFixes; }

std::optional<double> median_ns(std::span<const int64_t> steps_ns) {
  if (steps_ns.empty()) return std::nullopt;
  return median(std::vector<double>(steps_ns.begin(), steps_ns.end()));
}

const TrialFix* find_trial_fix(std::string_view name) {
  for (const TrialFix& f : kFixes)
    if (f.name == name) return &f;
  return nullptr;
}

std::string trial_fix_names() {
  std::string out;
  for (const TrialFix& f : kFixes) out += std::string(out.empty() ? "" : ", ") + std::string(f.name);
  return out;
}

std::optional<std::vector<const TrialFix*>> parse_trial_fixes(std::string_view text, bool* auto_fixes,
                                                              std::string* error) {
  *auto_fixes = false;
  std::vector<const TrialFix*> out;
  if (text == "auto") {
    *auto_fixes = true;
    return out;
  }
  size_t start = 0;
  while (start <= text.size()) {
    const size_t comma = std::min(text.find(',', start), text.size());
    const std::string_view name = text.substr(start, comma - start);
    const TrialFix* fix = find_trial_fix(name);
    if (!fix) {
      *error = fmt::format("unknown fix '{}'; one of: auto, {}", name, trial_fix_names());
      return std::nullopt;
    }
    if (std::find(out.begin(), out.end(), fix) == out.end()) out.push_back(fix);
    start = comma + 1;
  }
  return out;
}

std::optional<TrialSpeedup> compare_steps(std::span<const int64_t> before_ns, std::span<const int64_t> after_ns,
                                          int resamples) {
  if (before_ns.size() < 3 || after_ns.size() < 3) return std::nullopt;
  const std::vector<double> before(before_ns.begin(), before_ns.end());
  const std::vector<double> after(after_ns.begin(), after_ns.end());
  TrialSpeedup s;
  s.before_median_ns = median(before);
  s.after_median_ns = median(after);
  if (!(s.before_median_ns > 0) || !(s.after_median_ns > 0)) return std::nullopt;
  s.speedup = s.before_median_ns / s.after_median_ns;
  s.before_steps = static_cast<int64_t>(before.size());
  s.after_steps = static_cast<int64_t>(after.size());
  std::mt19937_64 rng(0x5eed);
  std::vector<double> ratios, a(before.size()), b(after.size());
  ratios.reserve(static_cast<size_t>(resamples));
  std::uniform_int_distribution<size_t> pick_a(0, before.size() - 1), pick_b(0, after.size() - 1);
  for (int r = 0; r < resamples; ++r) {
    for (double& x : a) x = before[pick_a(rng)];
    for (double& x : b) x = after[pick_b(rng)];
    ratios.push_back(median(a) / median(b));
  }
  std::sort(ratios.begin(), ratios.end());
  s.low = quantile_sorted(ratios, 0.025);
  s.high = quantile_sorted(ratios, 0.975);
  return s;
}

std::optional<LossComparison> compare_losses(std::span<const double> before, std::span<const double> after) {
  LossComparison c;
  const size_t n = std::min(before.size(), after.size());
  for (size_t i = 0; i < n; ++i) {
    if (!std::isfinite(before[i]) || !std::isfinite(after[i])) continue;
    const double scale = std::max(std::abs(before[i]), 1e-12);
    c.max_relative_diff = std::max(c.max_relative_diff, std::abs(before[i] - after[i]) / scale);
    c.before_last = before[i];
    c.after_last = after[i];
    ++c.compared;
  }
  if (c.compared == 0) return std::nullopt;
  return c;
}

}  // namespace gpuscope
