// `gpuscope top|monitor|serve` run as a user runs them, against the fake NVML.
#include <sys/wait.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

#include <gtest/gtest.h>

#include "nvml/fake_nvml_testing.h"

namespace {

struct Result {
  int rc = -1;
  std::string out;
  std::string err;
};

// Runs `gpuscope ARGS` with the fake NVML and `fixture`; `library` overrides the NVML path.
Result gpuscope(const std::string& args, const std::string& fixture,
                const std::string& library = GPUSCOPE_FAKE_NVML_PATH) {
  const std::string err_path = "/tmp/gpuscope_live_cli_err.txt";
  std::string cmd = "GPUSCOPE_NVML_LIBRARY='" + library + "' GPUSCOPE_FAKE_NVML_FIXTURE='" +
                    fixture + "' " + GPUSCOPE_BIN + " " + args + " 2>" + err_path + " </dev/null";
  Result r;
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return r;
  char buf[4096];
  while (size_t n = fread(buf, 1, sizeof buf, p)) r.out.append(buf, n);
  int status = pclose(p);
  r.rc = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  std::ifstream e(err_path);
  std::stringstream ss;
  ss << e.rdbuf();
  r.err = ss.str();
  return r;
}

int count_lines(const std::string& text, const std::string& needle) {
  std::istringstream in(text);
  int n = 0;
  for (std::string l; std::getline(in, l);) n += l.find(needle) != std::string::npos;
  return n;
}

std::string synthetic() { return gpuscope::nvml::testing::testdata("synthetic_2gpu.txt"); }

TEST(LiveCli, MonitorJsonl) {
  Result r = gpuscope("monitor --interval 100ms --duration 350ms --idle-after 0s", synthetic());
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_GE(count_lines(r.out, R"("type":"device")"), 4) << r.out;
  EXPECT_NE(r.out.find(R"("sm_active_pct":96.5)"), std::string::npos);
  EXPECT_NE(r.out.find(R"("gpu_util_pct":100)"), std::string::npos);
  EXPECT_NE(r.out.find(R"("type":"process")"), std::string::npos);
  EXPECT_NE(r.out.find(R"("signal":"idle_holding_memory")"), std::string::npos);
}

TEST(LiveCli, MonitorCsvLeavesAbsentCellsEmpty) {
  Result r = gpuscope("monitor --interval 100ms --duration 250ms --format csv", synthetic(),
                      GPUSCOPE_FAKE_NVML_LEGACY_PATH);
  ASSERT_EQ(r.rc, 0) << r.err;
  std::istringstream in(r.out);
  std::string header, row;
  std::getline(in, header);
  std::getline(in, row);
  EXPECT_EQ(header.rfind("time_ns,interval_ns,device,gpu_instance_id,uuid,gpu_util_pct,", 0), 0u)
      << header;
  EXPECT_NE(row.find(",100,20,17179869184,"), std::string::npos) << row;
  EXPECT_NE(row.find(",,,,"), std::string::npos) << row;  // No GPM on the legacy fake.
}

TEST(LiveCli, MonitorRecordsAFixtureTheFakeReplays) {
  const std::string rec = "/tmp/gpuscope_live_cli_record.txt";
  Result r = gpuscope("monitor --interval 100ms --duration 250ms --output /dev/null --record " + rec,
                      synthetic());
  ASSERT_EQ(r.rc, 0) << r.err;
  Result replay = gpuscope("monitor --interval 100ms --duration 150ms", rec);
  ASSERT_EQ(replay.rc, 0) << replay.err;
  EXPECT_NE(replay.out.find(R"("sm_active_pct":96.5)"), std::string::npos) << replay.out;
}

TEST(LiveCli, TopDegradesToPlainLinesWithoutATerminal) {
  Result r = gpuscope("top --interval 100ms --count 2 --idle-after 0s", synthetic());
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(r.out.find('\x1b'), std::string::npos);
  EXPECT_EQ(count_lines(r.out, "NVIDIA H200"), 4) << r.out;
  EXPECT_NE(r.out.find("96.5%"), std::string::npos);
  EXPECT_NE(r.out.find("! GPU 1: idle_holding_memory: holds 4.0 GiB, SM active 0.0%; pid 4343"),
            std::string::npos)
      << r.out;
}

TEST(LiveCli, NoDriverIsOneLineAndExitTwo) {
  for (const char* cmd : {"top --count 1", "monitor --duration 1s", "serve --listen 127.0.0.1:0"}) {
    Result r = gpuscope(cmd, synthetic(), "/nonexistent/libnvidia-ml.so.1");
    EXPECT_EQ(r.rc, 2) << cmd;
    EXPECT_EQ(count_lines(r.err, ""), 1) << r.err;
    EXPECT_EQ(r.err.rfind("gpuscope: cannot load NVML from /nonexistent/libnvidia-ml.so.1", 0), 0u)
        << r.err;
  }
}

TEST(LiveCli, NoGpuIsOneLineAndExitTwo) {
  const std::string empty = gpuscope::nvml::testing::use_fixture_text("driver 580.0\n");
  Result r = gpuscope("monitor --duration 1s", empty);
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.err.find("gpuscope: no NVIDIA GPU found"), std::string::npos) << r.err;
}

TEST(LiveCli, BadOptionsExitTwo) {
  Result fast = gpuscope("monitor --interval 50ms", synthetic());
  EXPECT_EQ(fast.rc, 2);
  EXPECT_NE(fast.err.find("below 100ms"), std::string::npos) << fast.err;
  Result dur = gpuscope("monitor --duration soon", synthetic());
  EXPECT_EQ(dur.rc, 2);
  EXPECT_NE(dur.err.find("--duration soon: not a duration"), std::string::npos) << dur.err;
  Result listen = gpuscope("serve --listen 9464", synthetic());
  EXPECT_EQ(listen.rc, 2);
  EXPECT_NE(listen.err.find("--listen 9464"), std::string::npos) << listen.err;
  Result format = gpuscope("monitor --format xml", synthetic());
  EXPECT_EQ(format.rc, 2);
}

}  // namespace
