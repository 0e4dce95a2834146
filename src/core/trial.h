// `gpuscope run --try`: the fixes a program can be given with no code change, and what a trial
// measures. A trial runs the same command twice or more: once as it is, once per fix (or set of
// fixes); each run times its steps after warm-up, untraced (the bootstrap's clock), and ends
// after its measured window. The comparison below is a ratio of medians (or of means, for the
// fixes whose effect comes as slow steps every few steps) with a bootstrap interval; no I/O here.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace gpuscope {

struct TrialFix {
  std::string_view name;      // As given to --try.
  std::string_view changes;   // What it changes, in one line (printed beside the result).
  bool numerics = false;      // Changes what the program computes (losses are compared).
  std::string_view env_name;  // Environment fixes: the variable set (empty: a Python fix).
  // The findings whose advice this fix follows (ids of the findings table): `--try auto`
  // tries it when one of them is in the as-is run's report, and prints its estimate.
  std::span<const std::string_view> findings;
  // Fixes of one group are alternatives (tf32 and bf16; compile and reduce-overhead): a
  // together run keeps the fastest of a group. Empty: a group of its own.
  std::string_view group = {};
  // Its effect comes as slow steps every few steps, not as a shorter typical step (a batch the
  // workers have not finished, an allocator's retry): its trial compares mean steps, which a
  // job's throughput pays, where a median would leave those steps out.
  bool by_mean = false;
};

// How a trial compares its runs' steps: medians (a one-off slow step, such as a recompile, is not
// the steady state) or means (the throughput, slow steps included).
enum class StepStatistic { kMedian, kMean };
// kMean when any of the fixes compares means, else kMedian.
StepStatistic trial_statistic(std::span<const TrialFix* const> fixes);
std::string_view statistic_name(StepStatistic s);

// Every fix, in the order `--try auto` tries them.
std::span<const TrialFix> trial_fixes();
const TrialFix* find_trial_fix(std::string_view name);
// "tf32, bf16, ...": every fix's name, in the table's order.
std::string trial_fix_names();

// Parses "tf32,fused-optimizer" or "auto" (returns an empty list and sets *auto_fixes).
// On an unknown name, returns nullopt and sets *error to a message naming the known fixes.
std::optional<std::vector<const TrialFix*>> parse_trial_fixes(std::string_view text, bool* auto_fixes,
                                                              std::string* error);

// The median of step periods (the mean of the middle two for an even count); nullopt when empty.
std::optional<double> median_ns(std::span<const int64_t> steps_ns);
// Their mean; nullopt when empty.
std::optional<double> mean_ns(std::span<const int64_t> steps_ns);

// The speedup of `after` over `before` (step periods in ns): the ratio of their medians (or
// means, by `stat`), and a 95% percentile-bootstrap interval of that ratio (each side resampled
// with replacement, `resamples` times, from a fixed seed: the same steps give the same
// interval). nullopt with fewer than 3 steps on either side.
struct TrialSpeedup {
  StepStatistic statistic = StepStatistic::kMedian;
  double before_median_ns = 0;
  double after_median_ns = 0;
  double before_mean_ns = 0;
  double after_mean_ns = 0;
  double speedup = 0;  // before / after by `statistic`: above 1 is faster.
  double low = 0, high = 0;
  // Both statistics' speedups (rounds combined as `speedup` is), whichever `speedup` is.
  double median_speedup = 0, mean_speedup = 0;
  int64_t before_steps = 0, after_steps = 0;
};
std::optional<TrialSpeedup> compare_steps(std::span<const int64_t> before_ns, std::span<const int64_t> after_ns,
                                          int resamples = 2000, StepStatistic stat = StepStatistic::kMedian);

// Rounds of runs (`run --try-rounds`): each round's tried steps against the as-is runs that
// bracket it (the round's own and the next, or the one at the end), so that a machine whose
// speed drifts from run to run moves both sides of each ratio alike. The speedup is the
// geometric mean of the rounds' ratios of medians (means, by `stat`); the interval, a percentile bootstrap of that
// mean in two levels (the rounds drawn with replacement, then each side's steps within each), so
// that rounds which disagree widen it. Rounds with fewer than 3 steps on a side are left
// out; nullopt when none is left. One round is compare_steps. The medians, means and counts are
// those of all the rounds' steps together.
struct TrialRound {
  std::vector<int64_t> before_ns, after_ns;
};
std::optional<TrialSpeedup> compare_rounds(std::span<const TrialRound> rounds, int resamples = 2000,
                                           StepStatistic stat = StepStatistic::kMedian);

// The losses of two runs of a deterministic program over the steps both saw: the largest
// relative difference |a-b|/max(|a|,tiny), and the last loss of each. nullopt with none in common.
struct LossComparison {
  int64_t compared = 0;
  double max_relative_diff = 0;
  double before_last = 0, after_last = 0;
};
std::optional<LossComparison> compare_losses(std::span<const double> before, std::span<const double> after);

}  // namespace gpuscope
