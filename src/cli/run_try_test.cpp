// `gpuscope run --try` against a stand-in for the trial runner (run_try_fake_runner.py): which
// trials run with which environment, how results are compared and reported, what a trial that
// fails or a fix that does not apply says. The fixes themselves are tested in
// src/python/try_test.py; real PyTorch on a GPU proves the measurements.
#include "cli/run_try.h"

#include <cstdlib>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace gpuscope::cli {
namespace {

class RunTryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = ::testing::TempDir() + "/run-try-" + std::to_string(::getpid()) + "-" +
           ::testing::UnitTest::GetInstance()->current_test_info()->name();
    std::system(("rm -rf '" + dir_ + "'").c_str());
    ::setenv("FAKE_TRY_CAPTURE", (std::string(GPUSCOPE_SOURCE_DIR) + "/testdata/pyzoo/optimizer.gpuscope").c_str(), 1);
  }
  void TearDown() override {
    std::system(("rm -rf '" + dir_ + "'").c_str());
    ::unsetenv("FAKE_TRY_NO_CACHING");
    ::unsetenv("FAKE_TRY_DRIFT");
    ::unsetenv("PYTORCH_NO_CUDA_MEMORY_CACHING");
  }
  TryRequest request(const std::string& fixes, const std::string& program = "train.py") {
    TryRequest r;
    r.fixes = fixes;
    r.command = {"python3", program};
    r.output_dir = dir_;
    r.steps = 20;
    r.warmup = 4;
    r.runner = std::string(GPUSCOPE_SOURCE_DIR) + "/src/cli/run_try_fake_runner.py";
    r.json = true;
    return r;
  }
  nlohmann::json run(const TryRequest& r, int expect_code = 0) {
    ::testing::internal::CaptureStdout();
    const int code = run_try(r);
    const std::string out = ::testing::internal::GetCapturedStdout();
    EXPECT_EQ(code, expect_code) << out;
    if (!r.json || code != 0) return nlohmann::json(out);
    return nlohmann::json::parse(out);
  }
  std::string dir_;
};

TEST_F(RunTryTest, EachFixIsMeasuredAgainstTheProgramAsItIs) {
  const auto doc = run(request("tf32,expandable-segments"));
  EXPECT_EQ(doc["schema"], "gpuscope.try/1");
  EXPECT_DOUBLE_EQ(doc["as_is"]["step_ms_median"].get<double>(), 10.0);
  EXPECT_DOUBLE_EQ(doc["as_is"]["step_ms_mean"].get<double>(), 10.0);
  ASSERT_EQ(doc["tries"].size(), 2u);
  const auto& tf32 = doc["tries"][0];
  EXPECT_EQ(tf32["label"], "tf32");
  EXPECT_NEAR(tf32["speedup"].get<double>(), 2.0, 1e-9);
  EXPECT_LE(tf32["speedup_interval_95"][0].get<double>(), 2.0);
  EXPECT_GE(tf32["speedup_interval_95"][1].get<double>(), 2.0);
  EXPECT_TRUE(tf32["changes_numerics"].get<bool>());
  EXPECT_EQ(tf32["losses"]["compared"], 24);      // Every loss of both runs, warm-up included.
  EXPECT_EQ(tf32["estimated_speedup"], nullptr);  // The as-is run has no precision finding.
  const auto& segments = doc["tries"][1];
  EXPECT_NEAR(segments["speedup"].get<double>(), 1 / 0.9, 1e-9);  // The variable reached the program.
  EXPECT_EQ(tf32["statistic"], "median");
  EXPECT_EQ(segments["statistic"], "mean");  // Its gain comes as slow steps (an allocator's retries).
  EXPECT_NEAR(segments["speedup_mean"].get<double>(), 1 / 0.9, 1e-9);
  EXPECT_NEAR(segments["speedup_median"].get<double>(), 1 / 0.9, 1e-9);
  EXPECT_EQ(segments["estimated_speedup"], nullptr);
  EXPECT_FALSE(segments["changes_numerics"].get<bool>());
  // Each trial keeps its capture and log in the folder.
  for (const char* name : {"as-is.gpuscope", "tf32.gpuscope", "tf32.log", "expandable-segments.out"})
    EXPECT_TRUE(std::ifstream(dir_ + "/" + name).good()) << name;
}

TEST_F(RunTryTest, AutoTriesWhatTheFindingsAdviseAndPrintsTheirEstimates) {
  // The as-is capture has optimizer-unfused x1.96 and launch-bound (which reduce-overhead
  // answers: CUDA graphs; compile's default mode answers kernel-fusion only).
  const auto doc = run(request("auto"));
  ASSERT_EQ(doc["tries"].size(), 3u);
  const auto& fused = doc["tries"][0];
  EXPECT_EQ(fused["label"], "fused-optimizer");
  EXPECT_NEAR(fused["speedup"].get<double>(), 1.25, 1e-9);
  EXPECT_EQ(fused["estimate_finding"], "optimizer-unfused");
  EXPECT_NEAR(fused["estimated_speedup"].get<double>(), 1.96, 0.01);
  const auto& graphs = doc["tries"][1];
  EXPECT_EQ(graphs["label"], "reduce-overhead");
  EXPECT_NEAR(graphs["speedup"].get<double>(), 1 / 0.9, 1e-9);
  EXPECT_EQ(graphs["estimate_finding"], "launch-bound");
  // Both helped beyond their interval: together, their gains multiply.
  EXPECT_EQ(doc["tries"][2]["label"], "together");
  EXPECT_NEAR(doc["tries"][2]["speedup"].get<double>(), 1 / (0.8 * 0.9), 1e-9);
}

TEST_F(RunTryTest, AutoTriesTf32AndBf16ButNeverRunsBothTogether) {
  ::setenv("FAKE_TRY_CAPTURE", (std::string(GPUSCOPE_SOURCE_DIR) + "/testdata/pyzoo/fp32.gpuscope").c_str(), 1);
  const auto doc = run(request("auto"));
  // precision-fp32 answers tf32 and bf16; together keeps the faster of the two only, so no
  // "together" run of one fix.
  ASSERT_EQ(doc["tries"].size(), 2u);
  EXPECT_EQ(doc["tries"][0]["label"], "tf32");
  EXPECT_EQ(doc["tries"][1]["label"], "bf16");
  EXPECT_NEAR(doc["tries"][1]["estimated_speedup"].get<double>(), 10.17, 0.01);
  // TF32 alone does less than the move to bf16 the finding's own estimate assumes: its part.
  const double tf32 = doc["tries"][0]["estimated_speedup"].get<double>();
  EXPECT_GT(tf32, 1.5);
  EXPECT_LT(tf32, 10.17 * 0.9);
}

TEST_F(RunTryTest, CompileAndReduceOverheadAreAlternativesTogether) {
  // allocation, launch-bound and kernel-fusion: auto tries expandable-segments (x1.11), compile
  // (x1.05) and reduce-overhead (x1.11); together keeps the faster compiling fix only.
  ::setenv("FAKE_TRY_CAPTURE", (std::string(GPUSCOPE_SOURCE_DIR) + "/testdata/pyzoo/alloc.gpuscope").c_str(), 1);
  const auto doc = run(request("auto"));
  std::vector<std::string> labels;
  for (const auto& t : doc["tries"]) labels.push_back(t["label"]);
  EXPECT_EQ(labels, (std::vector<std::string>{"expandable-segments", "compile", "reduce-overhead", "together"}));
  EXPECT_EQ(doc["tries"][1]["estimate_finding"], "kernel-fusion");
  EXPECT_EQ(doc["tries"][3]["fixes"], nlohmann::json({"expandable-segments", "reduce-overhead"}));
  EXPECT_NEAR(doc["tries"][3]["speedup"].get<double>(), 1 / (0.9 * 0.9), 1e-9);
}

TEST_F(RunTryTest, CachingAllocatorUnsetsTheVariableForTheTrialOnly) {
  ::setenv("PYTORCH_NO_CUDA_MEMORY_CACHING", "1", 1);
  ::setenv("FAKE_TRY_NO_CACHING", "1", 1);
  const auto doc = run(request("caching-allocator"));
  EXPECT_NEAR(doc["tries"][0]["speedup"].get<double>(), 1 / 0.7, 1e-9);
  EXPECT_STREQ(std::getenv("PYTORCH_NO_CUDA_MEMORY_CACHING"), "1");
}

TEST_F(RunTryTest, AFixThatCannotApplySaysWhyAndIsNotMeasured) {
  const auto doc = run(request("fused-optimizer,dataloader", "own-step"));
  EXPECT_EQ(doc["tries"][0]["applied"], false);
  EXPECT_EQ(doc["tries"][0]["not_applied"], "fused-optimizer: Lion has a step of its own");
  EXPECT_EQ(doc["tries"][1]["not_applied"], "dataloader: no DataLoader was built");
  ::setenv("FAKE_TRY_CAPTURE", (std::string(GPUSCOPE_SOURCE_DIR) + "/testdata/pyzoo/fp32.gpuscope").c_str(), 1);
  TryRequest text = request("fused-optimizer", "own-step");
  text.json = false;
  text.output_dir += "-text";
  const std::string out = run(text).get<std::string>();
  std::system(("rm -rf '" + text.output_dir + "'").c_str());
  EXPECT_NE(out.find("fused-optimizer      not applied: Lion has a step of its own"), std::string::npos) << out;
  EXPECT_EQ(out.find("measured x"), std::string::npos) << out;
}

TEST_F(RunTryTest, TheProgramAsItIsRunsAgainLastAndItsDriftIsReported) {
  const auto steady = run(request("tf32"));
  EXPECT_EQ(steady["as_is"]["steps_timed"], 40);  // Both as-is runs are the reference.
  EXPECT_NEAR(steady["as_is"]["drift"].get<double>(), 0.0, 1e-9);
  ::setenv("FAKE_TRY_DRIFT", "1.1", 1);
  TryRequest r = request("tf32");
  r.output_dir += "-drift";
  const auto doc = run(r);
  ASSERT_EQ(doc["as_is"]["step_ms_medians"].size(), 2u);
  EXPECT_NEAR(doc["as_is"]["step_ms_medians"][0].get<double>(), 10.0, 1e-9);
  EXPECT_NEAR(doc["as_is"]["step_ms_medians"][1].get<double>(), 11.0, 1e-9);
  EXPECT_NEAR(doc["as_is"]["drift"].get<double>(), 0.1, 1e-9);
  // Compared with both as-is runs: between 10/5 and 11/5.
  const double speedup = doc["tries"][0]["speedup"].get<double>();
  EXPECT_GT(speedup, 2.0);
  EXPECT_LT(speedup, 2.2);
  r.json = false;
  r.output_dir += "-text";
  const std::string out = run(r).get<std::string>();
  std::system(("rm -rf '" + r.output_dir + "' '" + dir_ + "-drift'").c_str());
  EXPECT_NE(out.find("(first 10.00, last 11.00)"), std::string::npos) << out;
  EXPECT_NE(out.find("ran 10.0% slower at the end than at the start"), std::string::npos) << out;
}

TEST_F(RunTryTest, RoundsPoolEachFixAndTheirOwnAsIsRuns) {
  // Round 2 runs 20% slower, as is and tried alike: the speedup stays that of each round.
  ::setenv("FAKE_TRY_SLOW_ROUND2", "1.2", 1);
  TryRequest r = request("tf32");
  r.rounds = 2;
  const auto doc = run(r);
  ::unsetenv("FAKE_TRY_SLOW_ROUND2");
  for (const char* f :
       {"as-is.gpuscope", "tf32.gpuscope", "as-is.2.gpuscope", "tf32.2.gpuscope", "as-is-again.gpuscope"})
    EXPECT_TRUE(std::ifstream(dir_ + "/" + f).good()) << f;
  EXPECT_EQ(doc["as_is"]["steps_timed"], 60);  // Three as-is runs of 20 steps.
  ASSERT_EQ(doc["as_is"]["step_ms_medians"].size(), 3u);
  EXPECT_NEAR(doc["as_is"]["step_ms_medians"][1].get<double>(), 12.0, 1e-9);
  EXPECT_NEAR(doc["as_is"]["drift"].get<double>(), 0.0, 1e-9);  // First and last alike.
  ASSERT_EQ(doc["tries"].size(), 1u);
  EXPECT_EQ(doc["tries"][0]["steps_timed"], 40);
  // As is 10, 12, 10 ms around tf32 5 and 6 ms: each round against the as-is runs around it
  // (about 11 / 5 and 11 / 6), their geometric mean x2.0; pooling every step would give x1.84.
  EXPECT_NEAR(doc["tries"][0]["speedup"].get<double>(), 2.0, 0.05);
}

TEST_F(RunTryTest, AProgramThatFailsAsItIsEndsTheTrialsWithItsCode) {
  run(request("tf32", "fail"), 3);
  EXPECT_FALSE(std::ifstream(dir_ + "/tf32.log").good());  // No trial after it.
  std::ifstream log(dir_ + "/as-is.log");
  std::stringstream text;
  text << log.rdbuf();
  EXPECT_NE(text.str().find("CUDA out of memory"), std::string::npos);
}

TEST_F(RunTryTest, BadRequestsAreRefusedBeforeAnythingRuns) {
  run(request("tf32,warp-speed"), 2);
  EXPECT_FALSE(std::ifstream(dir_ + "/as-is.log").good());
  ASSERT_EQ(std::system(("mkdir -p '" + dir_ + "'").c_str()), 0);
  run(request("tf32"), 2);  // The folder exists: nothing in it is replaced.
  EXPECT_FALSE(std::ifstream(dir_ + "/as-is.log").good());
}

TEST(TrialResult, MalformedOrMissingResultsAreNoMeasurement) {
  TrialRun run;
  EXPECT_FALSE(read_trial_result("/nonexistent/result.json", &run));
  const std::string path = ::testing::TempDir() + "/bad-result.json";
  std::ofstream(path) << "{\"host_step_ns\": [1, 2";
  EXPECT_FALSE(read_trial_result(path, &run));
  EXPECT_NE(run.error.find("is not JSON"), std::string::npos);
  std::ofstream(path) << R"({"host_step_ns": [5, 6, 7, 8, 1e300, -1], "device_step_ns": [4],
                             "fixes": {"tf32": 3, "bf16": {"applied": "yes", "details": [1, "why"]}}})";
  TrialRun ok;
  ASSERT_TRUE(read_trial_result(path, &ok));
  EXPECT_EQ(ok.clock, "host");  // One device period of four steps: the host's are used.
  EXPECT_EQ(ok.step_ns.size(), 4u);
  EXPECT_FALSE(ok.outcome["tf32"].applied);
  EXPECT_FALSE(ok.outcome["bf16"].applied);  // Not a boolean: not applied.
  EXPECT_EQ(ok.outcome["bf16"].details, std::vector<std::string>{"why"});
}

}  // namespace
}  // namespace gpuscope::cli
