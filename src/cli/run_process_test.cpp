// Process handling of `gpuscope run` with plain child programs (no CUDA): exit codes, death by
// signal, forwarding, environment, commands that cannot start.
#include "cli/run_process.h"

#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <thread>

#include <gtest/gtest.h>

namespace gpuscope::cli {
namespace {

ChildResult sh(const std::string& script) { return run_child({{"sh", "-c", script}, {}}); }

TEST(RunProcess, ReturnsTheChildsExitCode) {
  EXPECT_EQ(sh("exit 0").exit_code, 0);
  EXPECT_EQ(sh("exit 3").exit_code, 3);
  EXPECT_EQ(sh("exit 255").exit_code, 255);
  EXPECT_FALSE(sh("exit 3").signal.has_value());
}

TEST(RunProcess, DeathBySignalIs128PlusSignal) {
  ChildResult r = sh("kill -KILL $$");
  EXPECT_EQ(r.exit_code, 128 + SIGKILL);
  EXPECT_EQ(r.signal, SIGKILL);
}

TEST(RunProcess, MissingCommandIs127WithOneLine) {
  ChildResult r = run_child({{"gpuscope-no-such-command-xyz"}, {}});
  EXPECT_EQ(r.exit_code, 127);
  EXPECT_NE(r.error.find("gpuscope-no-such-command-xyz"), std::string::npos);
  EXPECT_EQ(r.error.find('\n'), std::string::npos);
}

TEST(RunProcess, NotExecutableIs126) {
  ChildResult r = run_child({{"/dev/null"}, {}});
  EXPECT_EQ(r.exit_code, 126);
}

TEST(RunProcess, EnvironmentIsSetAndInherited) {
  setenv("GPUSCOPE_TEST_INHERITED", "yes", 1);
  ChildResult r =
      run_child({{"sh", "-c", "test \"$GPUSCOPE_TEST_SET\" = bar && test \"$GPUSCOPE_TEST_INHERITED\" = yes"},
                 {{"GPUSCOPE_TEST_SET", "bar"}}});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(getenv("GPUSCOPE_TEST_SET"), nullptr) << "the parent's environment must not change";
}

std::string read_all(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(RunProcess, RedirectsStdoutAndStderrToFiles) {
  char dir[] = "/tmp/gpuscope-run-process-XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  ChildSpec spec{{"sh", "-c", "echo out; echo err >&2"}, {}};
  spec.stdout_path = std::string(dir) + "/out";
  spec.stderr_path = std::string(dir) + "/err";
  EXPECT_EQ(run_child(spec).exit_code, 0);
  EXPECT_EQ(read_all(spec.stdout_path), "out\n");
  EXPECT_EQ(read_all(spec.stderr_path), "err\n");
  std::remove(spec.stdout_path.c_str());
  std::remove(spec.stderr_path.c_str());
  rmdir(dir);
}

TEST(RunProcess, UnwritableRedirectIsAnErrorBeforeTheChildStarts) {
  ChildSpec spec{{"sh", "-c", "exit 0"}, {}};
  spec.stdout_path = "/nonexistent-dir-xyz/out";
  ChildResult r = run_child(spec);
  EXPECT_EQ(r.exit_code, 126);
  EXPECT_NE(r.error.find("/nonexistent-dir-xyz/out"), std::string::npos);
}

void send_after(void* signal_number) {
  int sig = *static_cast<int*>(signal_number);
  // Started after run_child blocked the forwarded signals, so this thread does not take them.
  std::thread([sig] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    kill(getpid(), sig);  // As `kill <gpuscope pid>` would: si_code SI_USER.
  }).detach();
}

TEST(RunProcess, ForwardsSigtermAndSurvivesIt) {
  int sig = SIGTERM;
  ChildResult r = run_child(
      {{"sh", "-c", "trap 'exit 7' TERM; i=0; while [ $i -lt 100 ]; do sleep 0.05; i=$((i+1)); done; exit 1"}, {}},
      send_after, &sig);
  EXPECT_EQ(r.exit_code, 7) << "the child's TERM trap must have run";
}

TEST(RunProcess, ForwardedSigintKillsAChildWithoutHandler) {
  int sig = SIGINT;
  auto start = std::chrono::steady_clock::now();
  ChildResult r = run_child({{"sleep", "10"}, {}}, send_after, &sig);
  EXPECT_EQ(r.exit_code, 128 + SIGINT);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
}

TEST(RunProcess, GrandchildrenDoNotConfuseTheWait) {
  // The child starts a background grandchild that outlives it.
  ChildResult r = sh("(sleep 0.3) & exit 4");
  EXPECT_EQ(r.exit_code, 4);
}

}  // namespace
}  // namespace gpuscope::cli
