#include "core/trial.h"

#include <cmath>

#include <gtest/gtest.h>

namespace gpuscope {
namespace {

TEST(Trial, FixesParseByNameOrAuto) {
  bool automatic = true;
  std::string error;
  auto fixes = parse_trial_fixes("tf32,fused-optimizer,tf32", &automatic, &error);
  ASSERT_TRUE(fixes);
  EXPECT_FALSE(automatic);
  ASSERT_EQ(fixes->size(), 2u);
  EXPECT_EQ((*fixes)[0]->name, "tf32");
  EXPECT_TRUE((*fixes)[0]->numerics);
  EXPECT_EQ((*fixes)[1]->name, "fused-optimizer");
  EXPECT_FALSE((*fixes)[1]->numerics);
  fixes = parse_trial_fixes("auto", &automatic, &error);
  ASSERT_TRUE(fixes);
  EXPECT_TRUE(automatic);
  EXPECT_TRUE(fixes->empty());
  EXPECT_FALSE(parse_trial_fixes("tf32,warp-speed", &automatic, &error));
  EXPECT_NE(error.find("unknown fix 'warp-speed'; one of: auto, tf32, bf16"), std::string::npos) << error;
  EXPECT_FALSE(parse_trial_fixes("", &automatic, &error));
}

TEST(Trial, EveryFixFollowsAFindingAndEnvironmentFixesNameTheirVariable) {
  for (const TrialFix& f : trial_fixes()) {
    EXPECT_FALSE(f.findings.empty()) << f.name;
    EXPECT_FALSE(f.changes.empty()) << f.name;
    EXPECT_EQ(find_trial_fix(f.name), &f);
  }
  EXPECT_EQ(find_trial_fix("caching-allocator")->env_name, "PYTORCH_NO_CUDA_MEMORY_CACHING");
  EXPECT_TRUE(find_trial_fix("tf32")->env_name.empty());
}

TEST(Trial, SpeedupIsTheRatioOfMediansWithAnIntervalAroundIt) {
  // Before: 20 steps of 9.9-10.1 ms and one of 30 ms; after: 20 steps of 4.8-5.2 ms.
  std::vector<int64_t> before = {30'000'000}, after;
  for (int i = 0; i < 20; ++i) {
    before.push_back(9'900'000 + (i % 3) * 100'000);
    after.push_back(4'800'000 + (i % 5) * 100'000);
  }
  auto s = compare_steps(before, after);
  ASSERT_TRUE(s);
  EXPECT_DOUBLE_EQ(s->before_median_ns, 10'000'000);
  EXPECT_DOUBLE_EQ(s->after_median_ns, 5'000'000);
  EXPECT_DOUBLE_EQ(s->speedup, 2.0);
  EXPECT_LE(s->low, s->speedup);
  EXPECT_GE(s->high, s->speedup);
  EXPECT_GT(s->low, 1.8);   // The outlier does not drag the interval down...
  EXPECT_LT(s->high, 2.2);  // ...nor up.
  EXPECT_EQ(s->before_steps, 21);
  EXPECT_EQ(s->after_steps, 20);
  // The same steps give the same interval.
  auto again = compare_steps(before, after);
  EXPECT_DOUBLE_EQ(again->low, s->low);
  EXPECT_DOUBLE_EQ(again->high, s->high);
}

TEST(Trial, FixesWhoseGainComesAsSlowStepsCompareMeans) {
  // A loader with workers: most steps 2 ms, but every fifth waits 60 ms for a batch the workers
  // have not finished; without workers, every step 15 ms. The median says x7.5; the job's
  // throughput (the mean, 13.6 ms a step) says x1.10.
  std::vector<int64_t> before(30, 15'000'000), after;
  for (int i = 0; i < 30; ++i) after.push_back(i % 5 == 4 ? 60'000'000 : 2'000'000);
  auto by_median = compare_steps(before, after);
  auto by_mean = compare_steps(before, after, 2000, StepStatistic::kMean);
  ASSERT_TRUE(by_median && by_mean);
  EXPECT_DOUBLE_EQ(by_median->speedup, 7.5);
  EXPECT_DOUBLE_EQ(by_median->mean_speedup, 15.0 / 13.6);
  EXPECT_EQ(by_mean->statistic, StepStatistic::kMean);
  EXPECT_NEAR(by_mean->speedup, 15.0 / 13.6, 1e-9);
  EXPECT_DOUBLE_EQ(by_mean->median_speedup, 7.5);
  EXPECT_DOUBLE_EQ(by_mean->after_mean_ns, 13'600'000);
  EXPECT_LE(by_mean->low, by_mean->speedup);
  EXPECT_GE(by_mean->high, by_mean->speedup);
  EXPECT_LT(by_mean->high, 4.0);  // Resampled means (how many slow steps a draw has), not medians.
  // Which fixes compare means: those whose effect comes as slow steps every few steps.
  const TrialFix* loader = find_trial_fix("dataloader");
  const TrialFix* segments = find_trial_fix("expandable-segments");
  const TrialFix* tf32 = find_trial_fix("tf32");
  EXPECT_TRUE(loader->by_mean && segments->by_mean);
  EXPECT_FALSE(tf32->by_mean);
  const TrialFix* alone[] = {tf32};
  const TrialFix* together[] = {tf32, loader};
  EXPECT_EQ(trial_statistic(alone), StepStatistic::kMedian);
  EXPECT_EQ(trial_statistic(together), StepStatistic::kMean);
}

TEST(Trial, RoundsCompareEachTriedRunWithTheAsIsRunsAroundIt) {
  // The machine slowed by 20% in the second round, both sides alike: each round's ratio is 2,
  // so is their mean, where pooling every step would mix 10 ms as-is steps with 6 ms tried ones.
  auto steps = [](int64_t ms, int n) { return std::vector<int64_t>(static_cast<size_t>(n), ms * 1'000'000); };
  std::vector<TrialRound> rounds = {{steps(10, 20), steps(5, 20)}, {steps(12, 20), steps(6, 20)}};
  rounds[0].before_ns[0] = 10'100'000;  // Some spread, for the interval.
  rounds[1].after_ns[3] = 5'900'000;
  auto s = compare_rounds(rounds);
  ASSERT_TRUE(s);
  EXPECT_NEAR(s->speedup, 2.0, 1e-9);
  EXPECT_LE(s->low, s->speedup);
  EXPECT_GE(s->high, s->speedup);
  EXPECT_EQ(s->before_steps, 40);
  EXPECT_EQ(s->after_steps, 40);
  // Geometric: rounds of x2 and x3 give x2.449.
  rounds[1].after_ns = steps(4, 20);
  EXPECT_NEAR(compare_rounds(rounds)->speedup, std::sqrt(6.0), 1e-9);
  // A round with too few steps on a side is left out.
  rounds[1].after_ns = steps(4, 2);
  EXPECT_NEAR(compare_rounds(rounds)->speedup, 2.0, 1e-9);
}

TEST(Trial, RoundsThatDisagreeWidenTheInterval) {
  // Three rounds with little spread inside each run, but ratios of x1.5, x2 and x2.5 between
  // them: the interval spans the rounds, not the few percent one round's steps would give.
  auto steps = [](int64_t us, int n) {
    std::vector<int64_t> v;
    for (int i = 0; i < n; ++i) v.push_back((us + i % 3) * 1'000);
    return v;
  };
  std::vector<TrialRound> rounds = {
      {steps(3000, 30), steps(2000, 30)}, {steps(4000, 30), steps(2000, 30)}, {steps(5000, 30), steps(2000, 30)}};
  auto s = compare_rounds(rounds);
  ASSERT_TRUE(s);
  EXPECT_NEAR(s->speedup, std::cbrt(1.5 * 2.0 * 2.5), 0.01);
  EXPECT_LT(s->low, 1.85);
  EXPECT_GT(s->high, 2.15);
  // One round: its steps only (the interval stays within a few percent).
  auto one = compare_rounds(std::span<const TrialRound>(rounds.data(), 1));
  ASSERT_TRUE(one);
  EXPECT_GT(one->low, 1.45);
  EXPECT_LT(one->high, 1.55);
}

TEST(Trial, NoSpeedupWithoutSteps) {
  const std::vector<int64_t> two = {1, 2};
  const std::vector<int64_t> three = {1, 2, 3};
  EXPECT_FALSE(compare_steps(two, three));
  EXPECT_FALSE(compare_steps(three, two));
  const std::vector<int64_t> zeros = {0, 0, 0};
  EXPECT_FALSE(compare_steps(zeros, three));
}

TEST(Trial, LossesComparedOverTheStepsBothSaw) {
  const std::vector<double> before = {2.0, 1.5, 1.0};
  const std::vector<double> after = {2.0, 1.53, 1.01, 0.9};
  auto c = compare_losses(before, after);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->compared, 3);
  EXPECT_NEAR(c->max_relative_diff, 0.02, 1e-12);
  EXPECT_DOUBLE_EQ(c->before_last, 1.0);
  EXPECT_DOUBLE_EQ(c->after_last, 1.01);
  EXPECT_FALSE(compare_losses({}, after));
}

}  // namespace
}  // namespace gpuscope
