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
// A synchronous copy waits for the GPU's queue to drain: a stall of the copy or a host sync.
constexpr std::string_view kCopyFindings[] = {"memcpy", "host-sync"};
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
    {"dataloader",
     "DataLoaders without workers get workers (their thread pools outside torch limited to one thread), "
     "pin_memory and persistent_workers",
     false, "", kInputFindings, "", true},
    {"non-blocking", "copies of pinned host tensors to the GPU made asynchronous (non_blocking=True)", false, "",
     kCopyFindings},
    {"caching-allocator", "PyTorch's caching allocator back on (PYTORCH_NO_CUDA_MEMORY_CACHING unset)", false,
     "PYTORCH_NO_CUDA_MEMORY_CACHING", kAllocationFindings},
    {"expandable-segments", "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True", false, "PYTORCH_CUDA_ALLOC_CONF",
     kAllocationFindings, "", true},
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

double mean(const std::vector<double>& v) {
  double sum = 0;
  for (double x : v) sum += x;
  return sum / static_cast<double>(v.size());
}

double quantile_sorted(const std::vector<double>& sorted, double q) {
  const double pos = q * static_cast<double>(sorted.size() - 1);
  const size_t lo = static_cast<size_t>(std::floor(pos));
  const size_t hi = std::min(lo + 1, sorted.size() - 1);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - static_cast<double>(lo));
}

}  // namespace

std::span<const TrialFix> trial_fixes() { return kFixes; }

StepStatistic trial_statistic(std::span<const TrialFix* const> fixes) {
  for (const TrialFix* f : fixes)
    if (f->by_mean) return StepStatistic::kMean;
  return StepStatistic::kMedian;
}

std::string_view statistic_name(StepStatistic s) { return s == StepStatistic::kMean ? "mean" : "median"; }

std::optional<double> median_ns(std::span<const int64_t> steps_ns) {
  if (steps_ns.empty()) return std::nullopt;
  return median(std::vector<double>(steps_ns.begin(), steps_ns.end()));
}

std::optional<double> mean_ns(std::span<const int64_t> steps_ns) {
  if (steps_ns.empty()) return std::nullopt;
  return mean(std::vector<double>(steps_ns.begin(), steps_ns.end()));
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
                                          int resamples, StepStatistic stat) {
  const TrialRound one{std::vector<int64_t>(before_ns.begin(), before_ns.end()),
                       std::vector<int64_t>(after_ns.begin(), after_ns.end())};
  return compare_rounds(std::span<const TrialRound>(&one, 1), resamples, stat);
}

std::optional<TrialSpeedup> compare_rounds(std::span<const TrialRound> rounds, int resamples, StepStatistic stat) {
  struct Sides {
    std::vector<double> before, after;
  };
  std::vector<Sides> used;
  std::vector<double> all_before, all_after;
  for (const TrialRound& r : rounds) {
    if (r.before_ns.size() < 3 || r.after_ns.size() < 3) continue;
    Sides s{std::vector<double>(r.before_ns.begin(), r.before_ns.end()),
            std::vector<double>(r.after_ns.begin(), r.after_ns.end())};
    if (!(median(s.before) > 0) || !(median(s.after) > 0)) continue;
    all_before.insert(all_before.end(), s.before.begin(), s.before.end());
    all_after.insert(all_after.end(), s.after.begin(), s.after.end());
    used.push_back(std::move(s));
  }
  if (used.empty()) return std::nullopt;
  // The statistic `stat` names, of one side's steps (a copy: median reorders).
  auto typical = [stat](const std::vector<double>& v) { return stat == StepStatistic::kMean ? mean(v) : median(v); };
  TrialSpeedup out;
  out.statistic = stat;
  out.before_median_ns = median(all_before);
  out.after_median_ns = median(all_after);
  out.before_mean_ns = mean(all_before);
  out.after_mean_ns = mean(all_after);
  out.before_steps = static_cast<int64_t>(all_before.size());
  out.after_steps = static_cast<int64_t>(all_after.size());
  // The geometric mean of the rounds' ratios of medians or means (one round: its ratio).
  auto combined = [&](const std::vector<double>& ratios) {
    double log_sum = 0;
    for (double r : ratios) log_sum += std::log(r);
    return std::exp(log_sum / static_cast<double>(ratios.size()));
  };
  std::vector<double> by_median, by_mean;
  for (const Sides& s : used) {
    by_median.push_back(median(s.before) / median(s.after));
    by_mean.push_back(mean(s.before) / mean(s.after));
  }
  out.median_speedup = combined(by_median);
  out.mean_speedup = combined(by_mean);
  out.speedup = stat == StepStatistic::kMean ? out.mean_speedup : out.median_speedup;
  std::vector<double> ratios(used.size());  // One draw's, per round.
  // Two levels: the rounds themselves (with replacement), so that runs that disagree widen the
  // interval as much as they move the answer, then each side's steps within each round drawn.
  std::mt19937_64 rng(0x5eed);
  std::uniform_int_distribution<size_t> pick_round(0, used.size() - 1);
  std::vector<double> resampled;
  resampled.reserve(static_cast<size_t>(resamples));
  for (int i = 0; i < resamples; ++i) {
    for (size_t k = 0; k < used.size(); ++k) {
      const Sides& s = used[used.size() > 1 ? pick_round(rng) : k];
      std::vector<double> a(s.before.size()), b(s.after.size());
      std::uniform_int_distribution<size_t> pick_a(0, s.before.size() - 1), pick_b(0, s.after.size() - 1);
      for (double& x : a) x = s.before[pick_a(rng)];
      for (double& x : b) x = s.after[pick_b(rng)];
      ratios[k] = typical(a) / typical(b);
    }
    resampled.push_back(combined(ratios));
  }
  std::sort(resampled.begin(), resampled.end());
  out.low = quantile_sorted(resampled, 0.025);
  out.high = quantile_sorted(resampled, 0.975);
  return out;
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
