#include "core/steps.h"

#include <gtest/gtest.h>

#include "core/test_builder.h"

namespace gpuscope {
namespace {

using testing::TraceBuilder;

TEST(Steps, ProfilerStepsWin) {
  TraceBuilder b;
  b.annotation(0, 10, "ProfilerStep#7").annotation(10, 20, "ProfilerStep#8").annotation(2, 3, "train_step");
  const auto d = detect_steps(b.build(), "");
  EXPECT_EQ(d.source, StepSource::kProfilerStep);
  ASSERT_EQ(d.steps.size(), 2u);
  EXPECT_EQ(d.steps[0].number, 7);
  EXPECT_EQ(d.steps[1].start_ns, 10'000);
}

TEST(Steps, NamedRangesAndNestingKeepsOutermost) {
  TraceBuilder b;
  b.annotation(0, 10, "train_step").annotation(1, 5, "train_step").annotation(10, 20, "train_step");
  const auto d = detect_steps(b.build(), "");
  EXPECT_EQ(d.source, StepSource::kNvtxRange);
  EXPECT_EQ(d.steps.size(), 2u);
  TraceBuilder c;
  c.annotation(0, 10, "iteration").annotation(10, 20, "iteration");
  EXPECT_EQ(detect_steps(c.build(), "iteration").steps.size(), 2u);
}

TEST(Steps, OptimizerStepsBoundIterations) {
  TraceBuilder b;
  for (int i = 0; i < 4; ++i) b.annotation(i * 100 + 90, i * 100 + 100, "Optimizer.step#AdamW.step");
  const auto d = detect_steps(b.build(), "");
  EXPECT_EQ(d.source, StepSource::kOptimizerStep);
  ASSERT_EQ(d.steps.size(), 3u);
  EXPECT_EQ(d.steps[0].start_ns, 100'000);
  EXPECT_EQ(d.steps[0].end_ns, 200'000);
}

TEST(Steps, TwoOptimizersAnIterationAreOneStep) {
  // A GAN: the discriminator steps, then the generator, every iteration. The bootstrap names the
  // second optimizer's ranges with its ordinal; PyTorch's profiler names them by class.
  for (const char* second : {"Optimizer.step#AdamW.step#2", "Optimizer.step#SGD.step"}) {
    TraceBuilder b;
    for (int i = 0; i < 4; ++i) {
      b.annotation(i * 100 + 40, i * 100 + 50, "Optimizer.step#AdamW.step");
      b.annotation(i * 100 + 90, i * 100 + 100, second);
    }
    const auto d = detect_steps(b.build(), "");
    EXPECT_EQ(d.source, StepSource::kOptimizerStep);
    ASSERT_EQ(d.steps.size(), 3u) << second;
    EXPECT_EQ(d.steps[0].start_ns, 50'000);
    EXPECT_EQ(d.steps[0].end_ns, 150'000);
    EXPECT_EQ(d.steps[2].end_ns, 350'000);
  }
}

TEST(Steps, ACycleOfOptimizerStepsIsOneStep) {
  // A critic stepped five times for each generator step: one step per cycle of six.
  TraceBuilder b;
  for (int i = 0; i < 4; ++i) {
    for (int k = 0; k < 5; ++k)
      b.annotation(i * 600 + k * 100 + 90, i * 600 + k * 100 + 100, "Optimizer.step#Adam.step");
    b.annotation(i * 600 + 590, i * 600 + 600, "Optimizer.step#Adam.step#2");
  }
  const auto d = detect_steps(b.build(), "");
  ASSERT_EQ(d.steps.size(), 3u);
  EXPECT_EQ(d.steps[0].start_ns, 100'000);
  EXPECT_EQ(d.steps[0].end_ns, 700'000);
  // A program that switches from one optimizer to another half-way: each step of either is one.
  TraceBuilder c;
  for (int i = 0; i < 20; ++i)
    c.annotation(i * 100 + 90, i * 100 + 100, i < 10 ? "Optimizer.step#Adam.step" : "Optimizer.step#SGD.step");
  EXPECT_EQ(detect_steps(c.build(), "").steps.size(), 19u);
  // No cycle (the generator steps after one to four critic steps, at random): a step ends where
  // an optimizer steps again, so each generator step is folded into the next critic step's.
  TraceBuilder r;
  int at = 0, critic = 0;
  for (int k : {1, 3, 2, 4, 1, 1, 3, 2, 4, 2}) {
    for (int j = 0; j < k; ++j, ++critic) r.annotation(at * 100 + 90, at * 100 + 100, "Optimizer.step#Adam.step"), ++at;
    r.annotation(at * 100 + 90, at * 100 + 100, "Optimizer.step#Adam.step#2"), ++at;
  }
  EXPECT_EQ(detect_steps(r.build(), "").steps.size(), static_cast<size_t>(critic - 1));
}

// The loop's iterations as the bootstrap marks them from `first_marked` on, each launching
// kernels a, b, c; the ones before run the same launches unmarked.
TraceBuilder loop_found_late(int iterations, int first_marked, double period_us = 100) {
  TraceBuilder b;
  for (int i = 0; i < iterations; ++i) {
    const double t = i * period_us;
    if (i >= first_marked) b.annotation(t, t + period_us, "gpuscope.iter#serve.py:12");
    b.kernel(t + 20, t + 30, "a", 1000, 0, 7, t + 5);
    b.kernel(t + 40, t + 50, "b", 1000, 0, 7, t + 15);
    b.kernel(t + 60, t + 70, "c", 1000, 0, 7, t + 25);
  }
  return b;
}

TEST(Steps, PythonLoopIterationsBeforeTheLoopWasFoundAreSteps) {
  // The loop was found 12 iterations in; those 12 launched what the marked ones launch.
  const auto d = detect_steps(loop_found_late(40, 12).build(), "");
  EXPECT_EQ(d.source, StepSource::kPythonLoop);
  ASSERT_EQ(d.steps.size(), 40u);
  EXPECT_EQ(d.steps[0].start_ns, 0);
  EXPECT_EQ(d.steps[11].end_ns, 1'200'000);
  EXPECT_EQ(d.steps[12].start_ns, 1'200'000);
  EXPECT_EQ(d.steps.front().number, 1);
  EXPECT_EQ(d.steps.back().number, 40);
}

TEST(Steps, PythonLoopIsNotExtendedOverOtherWork) {
  // Before the loop, other kernels (a warm-up of other shapes, set-up): no iteration is made of them.
  TraceBuilder b = loop_found_late(30, 10);
  for (int i = 0; i < 10; ++i) b.kernel(-1000 + i * 100 + 20, -1000 + i * 100 + 30, "init");
  auto d = detect_steps(b.build(), "");
  EXPECT_EQ(d.steps.size(), 30u);
  // A pause of ten iterations' length before the unmarked ones: the walk stops at it.
  TraceBuilder c = loop_found_late(30, 10);
  for (int i = 0; i < 5; ++i) {
    const double t = -1500 + i * 100;
    c.kernel(t + 20, t + 30, "a", 1000, 0, 7, t + 5);
    c.kernel(t + 40, t + 50, "b", 1000, 0, 7, t + 15);
    c.kernel(t + 60, t + 70, "c", 1000, 0, 7, t + 25);
  }
  EXPECT_EQ(detect_steps(c.build(), "").steps.size(), 30u);
  // Marked iterations that launch different sequences (data-dependent work): not extended.
  TraceBuilder e = loop_found_late(30, 10);
  e.kernel(1050, 1055, "extra", 1000, 0, 7, 1045);
  EXPECT_EQ(detect_steps(e.build(), "").steps.size(), 20u);
  // Launches of another thread (a helper) between the unmarked iterations do not break them.
  TraceBuilder f = loop_found_late(30, 10);
  for (int i = 0; i < 10; ++i) f.kernel(i * 100 + 80, i * 100 + 85, "copy_helper", 1000, 0, 9, i * 100 + 75, 2, 2);
  EXPECT_EQ(detect_steps(f.build(), "").steps.size(), 30u);
}

TEST(Steps, PythonLoopIterationsAreSteps) {
  // The bootstrap's step-loop ranges, one per iteration, back to back; a range of another loop
  // with fewer iterations (another process, an earlier phase) does not compete.
  TraceBuilder b;
  for (int i = 0; i < 5; ++i) b.annotation(i * 100, i * 100 + 100, "gpuscope.iter#decode.py:41");
  b.annotation(600, 700, "gpuscope.iter#warmup.py:3");
  for (int i = 0; i < 6; ++i) b.kernel(i * 100 + 10, i * 100 + 60, "gemm");
  const auto d = detect_steps(b.build(), "");
  EXPECT_EQ(d.source, StepSource::kPythonLoop);
  ASSERT_EQ(d.steps.size(), 5u);
  EXPECT_EQ(d.steps[0].start_ns, 0);
  EXPECT_EQ(d.steps[4].end_ns, 500'000);
  EXPECT_EQ(d.steps[4].number, 5);
  EXPECT_EQ(step_source_name(d.source), "python_loop");
  // Optimizer steps win: with gradient accumulation a training step is several iterations.
  TraceBuilder c;
  for (int i = 0; i < 8; ++i) c.annotation(i * 100, i * 100 + 100, "gpuscope.iter#train.py:9");
  for (int i = 0; i < 4; ++i) c.annotation(i * 200 + 190, i * 200 + 199, "Optimizer.step#AdamW.step");
  EXPECT_EQ(detect_steps(c.build(), "").source, StepSource::kOptimizerStep);
}

TEST(Steps, NoneMeansWholeWindow) {
  TraceBuilder b;
  b.op(0, 10, "aten::mm");
  const auto d = detect_steps(b.build(), "");
  EXPECT_EQ(d.source, StepSource::kWholeWindow);
  EXPECT_TRUE(d.steps.empty());
}

}  // namespace
}  // namespace gpuscope

namespace gpuscope {
namespace {

TEST(Steps, PeriodicKernelPatternWithoutMarkers) {
  testing::TraceBuilder b;
  // 5 iterations of 1 ms: one "embedding" kernel, then 4 GEMMs and 3 elementwise kernels.
  for (int it = 0; it < 5; ++it) {
    const double t0 = it * 1000.0 + 3.0 * (it % 2);  // Slight jitter.
    b.kernel(t0, t0 + 10, "embedding_kernel");
    for (int g = 0; g < 4; ++g) b.kernel(t0 + 20 + g * 100, t0 + 100 + g * 100, "nvjet_gemm");
    for (int e = 0; e < 3; ++e) b.kernel(t0 + 500 + e * 50, t0 + 540 + e * 50, "vectorized_elementwise_kernel");
  }
  const auto d = detect_steps(b.build(), "");
  EXPECT_EQ(d.source, StepSource::kKernelPattern);
  ASSERT_EQ(d.steps.size(), 4u);
  EXPECT_EQ(d.steps[0].start_ns, 0);
  EXPECT_EQ(d.steps[0].end_ns, 1'003'000);
}

TEST(Steps, ShortRunAfterALongStartUpHasItsSteps) {
  // A model built on the GPU (12 kernels), 200 ms of start-up, then 30 steps of 1 ms each: the
  // steps span an eighth of the window's time but hold most of its kernels.
  testing::TraceBuilder b;
  for (int i = 0; i < 12; ++i) b.kernel(i * 100.0, i * 100.0 + 50, "normal_kernel");
  for (int it = 0; it < 30; ++it) {
    const double t0 = 200'000.0 + it * 1000.0 + 5.0 * (it % 3);
    for (int layer = 0; layer < 4; ++layer) {
      b.kernel(t0 + layer * 200, t0 + layer * 200 + 120, "nvjet_gemm");
      b.kernel(t0 + layer * 200 + 130, t0 + layer * 200 + 150, "gelu_kernel");
    }
    b.kernel(t0 + 850, t0 + 860, "reduce_kernel");
  }
  const auto d = detect_steps(b.build(), "");
  EXPECT_EQ(d.source, StepSource::kKernelPattern);
  ASSERT_EQ(d.steps.size(), 29u);
  EXPECT_NEAR(static_cast<double>(d.steps[0].end_ns - d.steps[0].start_ns), 1e6, 1e4);
}

TEST(Steps, IrregularKernelsGiveNoPattern) {
  testing::TraceBuilder b;
  const double starts[] = {0, 10, 500, 520, 4000, 4100, 9000};
  for (double t : starts) b.kernel(t, t + 5, "k");
  EXPECT_EQ(detect_steps(b.build(), "").source, StepSource::kWholeWindow);
}

}  // namespace
}  // namespace gpuscope

namespace gpuscope {
namespace {

TEST(Steps, WarmupStepsAreDropped) {
  StepDetection d;
  d.source = StepSource::kNvtxRange;
  const int64_t durations[] = {2'000'000, 130, 100, 101, 99, 100};  // A 2 ms first step.
  int64_t t = 0;
  for (int64_t dur : durations) {
    d.steps.push_back({t, t + dur, 0});
    t += dur;
  }
  drop_warmup_steps(d);
  EXPECT_EQ(d.skipped_warmup, 1);
  ASSERT_EQ(d.steps.size(), 5u);
  EXPECT_EQ(d.steps.front().start_ns, 2'000'000);

  StepDetection even;
  for (int i = 0; i < 3; ++i) even.steps.push_back({i * 100, i * 100 + 100, i});
  even.steps.front().end_ns = 10'000;  // Fewer than 4 steps: nothing is dropped.
  drop_warmup_steps(even);
  EXPECT_EQ(even.skipped_warmup, 0);
}

}  // namespace
}  // namespace gpuscope

namespace gpuscope {
namespace {

TEST(Steps, OneSetOfStepNameRules) {
  EXPECT_TRUE(step_range_name_matches("step", ""));
  EXPECT_TRUE(step_range_name_matches("train_step", ""));
  EXPECT_TRUE(step_range_name_matches("step 3", ""));
  EXPECT_TRUE(step_range_name_matches("Train_Step#3", ""));
  EXPECT_TRUE(step_range_name_matches("ProfilerStep#12", ""));
  EXPECT_FALSE(step_range_name_matches("forward", ""));
  EXPECT_FALSE(step_range_name_matches("optimizer.step", ""));
  EXPECT_FALSE(step_range_name_matches("stepper", ""));
  // A given name: exact, or followed by a number.
  EXPECT_TRUE(step_range_name_matches("iteration", "iteration"));
  EXPECT_TRUE(step_range_name_matches("iteration#4", "iteration"));
  EXPECT_FALSE(step_range_name_matches("step", "iteration"));
}

TEST(Steps, StepRangeIsHonouredOverDefaultNames) {
  testing::TraceBuilder b;
  for (int i = 0; i < 3; ++i) {
    b.annotation(i * 100.0, i * 100.0 + 90, "step");
    b.annotation(i * 100.0 + 10, i * 100.0 + 50, "iteration#" + std::to_string(i));
  }
  const StepDetection d = detect_steps(b.build(), "iteration");
  EXPECT_EQ(d.source, StepSource::kNvtxRange);
  ASSERT_EQ(d.steps.size(), 3u);
  EXPECT_EQ(d.steps[2].number, 2);
  EXPECT_EQ(d.steps[0].end_ns, 50'000);
}

// What --step-range is checked against: the annotations it matches, and the recurring ones
// a message lists when it matches none.
TEST(Steps, StepRangeMatchesAndTheAnnotationsThatCouldBeSteps) {
  testing::TraceBuilder b;
  for (int i = 0; i < 3; ++i) {
    b.annotation(i * 100.0, i * 100.0 + 90, "ProfilerStep#" + std::to_string(i));
    b.annotation(i * 100.0 + 10, i * 100.0 + 50, "forward");
  }
  b.annotation(400, 410, "setup");           // once, no number: not a step candidate
  b.annotation(500, 500, "ProfilerStep#9");  // no duration: not counted
  const Trace t = b.build();
  EXPECT_EQ(count_step_range_matches(t, "ProfilerStep"), 3);
  EXPECT_EQ(count_step_range_matches(t, "forward"), 3);
  EXPECT_EQ(count_step_range_matches(t, "backward"), 0);
  const std::vector<StepNameCount> names = step_like_annotations(t);
  ASSERT_EQ(names.size(), 2u);
  EXPECT_EQ(names[0].name, "ProfilerStep#N");
  EXPECT_EQ(names[0].count, 3);
  EXPECT_EQ(names[1].name, "forward");
  EXPECT_EQ(step_like_annotations(t, 1).size(), 1u);
}

TEST(Steps, IdenticalLayersGiveWholeSteps) {
  // Eight identical layers (gemm, relu), a sync after each, then a loss kernel; the steps'
  // timing wobbles. The period is the whole step, not one layer.
  testing::TraceBuilder b;
  double t = 0;
  for (int step = 0; step < 6; ++step) {
    for (int layer = 0; layer < 8; ++layer) {
      b.kernel(t, t + 10, "gemm");
      b.kernel(t + 10, t + 12, "relu");
      t += 20 + (step == 0 ? 30 : 0);
    }
    b.kernel(t, t + 5, "loss");
    t += 10 + step % 2;
  }
  const StepDetection d = detect_steps(b.build(), "");
  EXPECT_EQ(d.source, StepSource::kKernelPattern);
  EXPECT_EQ(d.steps.size(), 5u);
}

}  // namespace
}  // namespace gpuscope
