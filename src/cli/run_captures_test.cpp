// The captures of one `gpuscope run`: staging, what is collected, final names. A run never
// removes, replaces or writes through anything it did not create.
#include "cli/run_captures.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include "capture/capture_writer.h"
#include "input/capture_reader.h"

namespace gpuscope::cli {
namespace {

class RunCapturesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string error;
    dir_ = make_private_dir(::testing::TempDir() + "/run-captures", &error);
    ASSERT_FALSE(dir_.empty()) << error;
  }
  void TearDown() override { std::system(("rm -rf '" + dir_ + "'").c_str()); }
  std::string path(const std::string& name) const { return dir_ + "/" + name; }
  static void write_text(const std::string& p, const std::string& text) { std::ofstream(p) << text; }
  static std::string read_text(const std::string& p) {
    std::ifstream in(p);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }
  // What a traced process does: a new capture under the run's prefix.
  static std::string write_capture(const RunCaptures& run, long pid) {
    capture::CaptureWriter w;
    std::string created, error;
    EXPECT_TRUE(w.open_new_for_process(run.prefix(), pid, {}, &created, &error)) << error;
    capture::ProcessRecord p;
    p.pid = static_cast<int32_t>(pid);
    w.add(p);
    return created;
  }
  std::vector<std::string> listing() const {
    std::vector<std::string> names;
    FILE* ls = popen(("ls -A '" + dir_ + "'").c_str(), "r");
    char line[512];
    while (ls && fgets(line, sizeof(line), ls)) {
      std::string s(line);
      if (!s.empty() && s.back() == '\n') s.pop_back();
      names.push_back(s);
    }
    if (ls) pclose(ls);
    return names;
  }
  std::string dir_;
};

TEST(RunCapturesNames, DefaultStemsAreUniquePerRunAndCarryThePid) {
  const std::string a = default_stem(), b = default_stem();
  EXPECT_EQ(a.rfind("gpuscope-run-", 0), 0u) << a;
  EXPECT_NE(a.find("-" + std::to_string(getpid()) + "-"), std::string::npos) << a;
  // Same process, same second: the random part still differs (2^-16 chance of a false failure
  // per attempt; three attempts).
  EXPECT_TRUE(a != b || default_stem() != default_stem() || default_stem() != default_stem());
}

TEST_F(RunCapturesTest, RenameNeverReplaces) {
  write_text(path("a"), "new");
  write_text(path("b"), "precious");
  ASSERT_EQ(symlink(path("nowhere").c_str(), path("c").c_str()), 0);
  EXPECT_EQ(rename_no_replace(path("a"), path("b")), EEXIST);
  EXPECT_EQ(rename_no_replace(path("a"), path("c")), EEXIST);
  EXPECT_EQ(read_text(path("b")), "precious");
  EXPECT_EQ(rename_no_replace(path("a"), path("d")), 0);
  EXPECT_EQ(read_text(path("d")), "new");
}

TEST_F(RunCapturesTest, StagingIsAPrivateFolderBesideTheOutput) {
  RunCaptures run;
  std::string error;
  ASSERT_TRUE(run.begin(path("exp.gpuscope"), &error)) << error;
  EXPECT_EQ(run.staging_dir().rfind(path("exp.partial-"), 0), 0u) << run.staging_dir();
  struct stat st;
  ASSERT_EQ(stat(run.staging_dir().c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  EXPECT_EQ(run.prefix().rfind(run.staging_dir() + "/", 0), 0u);
  run.discard();
  EXPECT_TRUE(listing().empty());
}

TEST_F(RunCapturesTest, OneCaptureBecomesTheOutput) {
  RunCaptures run;
  ASSERT_TRUE(run.begin(path("exp.gpuscope"), nullptr));
  write_capture(run, 1234);
  std::vector<std::string> notes;
  EXPECT_EQ(run.publish(&notes), std::vector<std::string>{path("exp.gpuscope")});
  EXPECT_TRUE(notes.empty());
  EXPECT_EQ(listing(), std::vector<std::string>{"exp.gpuscope"});
  EXPECT_TRUE(read_capture_file(path("exp.gpuscope")).ok());
}

// `-o exp.gpuscope` deleted an existing exp.1.gpuscope; and replaced exp.gpuscope.
TEST_F(RunCapturesTest, ExistingCapturesOfTheSameStemSurvive) {
  write_text(path("exp.gpuscope"), "earlier run");
  write_text(path("exp.1.gpuscope"), "earlier run, pid 1");
  RunCaptures run;
  ASSERT_TRUE(run.begin(path("exp.gpuscope"), nullptr));
  write_capture(run, 1);
  std::vector<std::string> notes;
  const auto written = run.publish(&notes);
  EXPECT_EQ(written, std::vector<std::string>{path("exp.1.3.gpuscope")});
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_NE(notes[0].find("not replaced"), std::string::npos) << notes[0];
  EXPECT_EQ(read_text(path("exp.gpuscope")), "earlier run");
  EXPECT_EQ(read_text(path("exp.1.gpuscope")), "earlier run, pid 1");
  EXPECT_TRUE(read_capture_file(written[0]).ok());
}

TEST_F(RunCapturesTest, SeveralProcessesKeepTheirPidNames) {
  write_text(path("exp.20.gpuscope"), "someone else's");
  RunCaptures run;
  ASSERT_TRUE(run.begin(path("exp.gpuscope"), nullptr));
  write_capture(run, 10);
  write_capture(run, 20);
  write_capture(run, 20);  // The same pid again (exec): capture.20-2.gpuscope.
  std::vector<std::string> notes;
  const auto written = run.publish(&notes);
  EXPECT_EQ(written,
            (std::vector<std::string>{path("exp.10.gpuscope"), path("exp.20-2.gpuscope"), path("exp.20.2.gpuscope")}));
  EXPECT_EQ(read_text(path("exp.20.gpuscope")), "someone else's");
  EXPECT_EQ(notes.size(), 1u);
}

TEST_F(RunCapturesTest, OnlyRegularFilesOfTheRunAreCollectedAndAppendedTo) {
  write_text(path("victim"), "precious");
  RunCaptures run;
  ASSERT_TRUE(run.begin(path("exp.gpuscope"), nullptr));
  const std::string mine = write_capture(run, 5);
  ASSERT_EQ(symlink(path("victim").c_str(), (run.prefix() + ".6.gpuscope").c_str()), 0);
  write_text(run.prefix() + ".notapid.gpuscope", "x");
  EXPECT_EQ(run.staged(), std::vector<std::string>{mine});
  DeviceSample s;
  s.time_ns = 1;
  EXPECT_TRUE(run.append({s}, TracingCost{1000, 2000}).empty());
  EXPECT_EQ(read_text(path("victim")), "precious");
  auto t = read_capture_file(mine);
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->device_samples.size(), 1u);
  EXPECT_TRUE(t->tracing_cost.has_value());
  std::vector<std::string> notes;
  run.publish(&notes);
  ASSERT_EQ(notes.size(), 1u) << "the staging folder holds what the run did not create";
  EXPECT_NE(notes[0].find("left in place"), std::string::npos);
}

TEST_F(RunCapturesTest, TwoRunsWithTheSameOutputKeepBothCaptures) {
  RunCaptures a, b;
  ASSERT_TRUE(a.begin(path("exp.gpuscope"), nullptr));
  ASSERT_TRUE(b.begin(path("exp.gpuscope"), nullptr));
  EXPECT_NE(a.staging_dir(), b.staging_dir());
  write_capture(a, 100);
  write_capture(b, 100);  // Even the same pid (another pid namespace).
  std::vector<std::string> notes;
  const auto wa = a.publish(&notes);
  const auto wb = b.publish(&notes);
  ASSERT_EQ(wa.size(), 1u);
  ASSERT_EQ(wb.size(), 1u);
  EXPECT_NE(wa[0], wb[0]);
  EXPECT_TRUE(read_capture_file(wa[0]).ok());
  EXPECT_TRUE(read_capture_file(wb[0]).ok());
  EXPECT_EQ(listing().size(), 2u);
}

TEST_F(RunCapturesTest, RemovePrivateDirLeavesLinkTargetsAlone) {
  write_text(path("victim"), "precious");
  std::string error;
  const std::string scratch = make_private_dir(path("scratch"), &error);
  ASSERT_FALSE(scratch.empty()) << error;
  write_text(scratch + "/cal.1.gpuscope", "x");
  ASSERT_EQ(symlink(path("victim").c_str(), (scratch + "/link").c_str()), 0);
  EXPECT_TRUE(remove_private_dir(scratch));
  EXPECT_EQ(read_text(path("victim")), "precious");
}

}  // namespace
}  // namespace gpuscope::cli
