#include <gtest/gtest.h>

#include <string>

#include "core/ranks.h"

namespace gpuscope {
namespace {

const Finding* by_id(const RankSummary& s, const std::string& id) {
  for (const Finding& f : s.findings) {
    if (f.id == id) return &f;
  }
  return nullptr;
}

// A rank's report: step time, busy, and where the idle time went.
DeviceReport rank(int32_t r, double step_ms, double busy, double without_comm, double exposed,
                  IdleCauseId idle_cause = IdleCauseId::kHost) {
  DeviceReport d;
  d.source = "rank" + std::to_string(r);
  d.rank = r;
  d.step_source = "profiler_step";
  d.step_mean_ms = step_ms;
  d.busy_pct = busy;
  d.idle_pct = 100 - busy;
  IdleCause c;
  c.cause = idle_cause;
  c.pct = 100 - busy;
  d.idle_causes.push_back(c);
  CommunicationReport comm;
  comm.busy_without_comm_pct = without_comm;
  comm.exposed_pct = exposed;
  d.communication = comm;
  return d;
}

Finding finding(std::string id, double speedup) {
  Finding f;
  f.id = std::move(id);
  f.est_speedup = speedup;
  return f;
}

TEST(Ranks, StragglerNamesThePartOfTheStepThatIsSlow) {
  // Rank 0: 10 ms = 6 compute + 3 exposed communication + 1 host. Rank 1: 15 ms = 6 compute +
  // 3 communication + 6 input.
  const RankSummary s = summarize_ranks({rank(0, 10, 90, 60, 30), rank(1, 15, 60, 40, 20, IdleCauseId::kInput)});
  const Finding* f = by_id(s, "straggler");
  ASSERT_NE(f, nullptr);
  EXPECT_NEAR(*f->est_speedup, 1.5, 1e-9);
  EXPECT_NE(f->evidence.find("longer in input: 6.00 ms against a median of 0.00 ms"), std::string::npos) << f->evidence;
  ASSERT_TRUE(s.busy_without_comm_min_pct);
  EXPECT_NEAR(*s.busy_without_comm_min_pct, 40, 1e-9);
  EXPECT_NEAR(*s.busy_without_comm_max_pct, 60, 1e-9);
}

TEST(Ranks, StragglerNamesThePartThatGrewMost) {
  // Rank 1 is 20% slower with every part 20% longer: compute grows most (1.2 ms of 12 ms).
  const RankSummary s = summarize_ranks({rank(0, 10, 90, 60, 30), rank(1, 12, 90, 60, 30)});
  const Finding* f = by_id(s, "straggler");
  ASSERT_NE(f, nullptr);
  EXPECT_NE(f->evidence.find("longer in compute: 7.20 ms against a median of 6.00 ms"), std::string::npos)
      << f->evidence;
}

TEST(Ranks, StragglerIsTheRankThatArrivesLastNotTheOneThatWaitsLongest) {
  // Rank 0 enters the collectives first and waits there 7 of its 12 ms; rank 3 arrives last:
  // 9 ms of its own work, 1 ms waiting. The others do 5 ms of work and wait 5 ms.
  const RankSummary s = summarize_ranks({rank(0, 12, 100, 100 * 5.0 / 12, 100 * 7.0 / 12), rank(1, 10, 100, 50, 50),
                                         rank(2, 10, 100, 50, 50), rank(3, 10, 100, 90, 10)});
  const Finding* f = by_id(s, "straggler");
  ASSERT_NE(f, nullptr);
  EXPECT_NE(f->evidence.find("rank 3: rank3 works 9.00 ms"), std::string::npos) << f->evidence;
  // Its own 9 ms against the others' median of 5 ms: the job's 10 ms step becomes 6 ms.
  EXPECT_NE(f->evidence.find("estimate: step 10.00 ms -> 6.000 ms"), std::string::npos) << f->evidence;
  EXPECT_NEAR(*f->est_speedup, 10.0 / 6.0, 1e-9);
}

TEST(Ranks, NoStragglerWhenOnlyTheWaitsDiffer) {
  // Every rank works 5 ms; rank 0's step looks longer only because it waits longer.
  const RankSummary s = summarize_ranks(
      {rank(0, 14, 100, 100 * 5.0 / 14, 100 * 9.0 / 14), rank(1, 10, 100, 50, 50), rank(2, 10, 100, 50, 50)});
  EXPECT_EQ(by_id(s, "straggler"), nullptr);
}

TEST(Ranks, ScaleBeforeHealthyNamesTheSingleGpuFindings) {
  DeviceReport a = rank(0, 10, 90, 30, 5), b = rank(1, 10, 90, 30, 5);
  a.findings = {finding("launch-bound", 1.6), finding("exposed-communication", 2.5)};
  b.findings = {finding("exposed-communication", 2.5), finding("launch-bound", 1.5), finding("precision-fp32", 1.3)};
  const RankSummary s = summarize_ranks({a, b});
  const Finding* f = by_id(s, "scale-before-healthy");
  ASSERT_NE(f, nullptr);
  EXPECT_NEAR(*f->est_speedup, 1.5, 1e-9);  // The median rank's largest single-GPU finding.
  EXPECT_NE(f->evidence.find("launch-bound x1.50, precision-fp32 x1.30"), std::string::npos) << f->evidence;
  EXPECT_EQ(f->evidence.find("exposed-communication"), std::string::npos);
}

TEST(Ranks, HealthyGpusOrOnlyCommunicationFindingsAreNotScaleBeforeHealthy) {
  DeviceReport a = rank(0, 10, 90, 80, 5), b = rank(1, 10, 90, 80, 5);
  a.findings = {finding("exposed-communication", 2.0), finding("launch-bound", 1.1)};
  b.findings = {finding("collective-wait", 2.0)};
  EXPECT_EQ(by_id(summarize_ranks({a, b}), "scale-before-healthy"), nullptr);
}

}  // namespace
}  // namespace gpuscope
