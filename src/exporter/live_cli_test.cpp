// `gpuscope top|monitor|serve` run as a user runs them, against the fake NVML.
#include <poll.h>
#include <pty.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>

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
  // A name of its own per call: ctest runs these tests in parallel processes.
  char err_template[] = "/tmp/gpuscope-live-cli-err-XXXXXX";
  const int fd = mkstemp(err_template);
  if (fd >= 0) close(fd);
  const std::string err_path = err_template;
  std::string cmd = "GPUSCOPE_NVML_LIBRARY='" + library + "' GPUSCOPE_FAKE_NVML_FIXTURE='" + fixture + "' " +
                    GPUSCOPE_BIN + " " + args + " 2>" + err_path + " </dev/null";
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
  std::remove(err_path.c_str());
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

// The one command that shows a GPU's health counters (docs/live.md): a "health" record per
// GPU on the first pass, null where unsupported.
TEST(LiveCli, MonitorPrintsHealthRecords) {
  Result r =
      gpuscope("monitor --interval 100ms --duration 100ms", gpuscope::nvml::testing::testdata("synthetic_health.txt"));
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(count_lines(r.out, R"("type":"health")"), 2) << r.out;
  EXPECT_NE(
      r.out.find(
          R"("device":0,"uuid":"GPU-4ea17400-0000-4000-8000-000000000000","xid_errors_total":3,"xid_errors":{"79":2,"94":1},"last_xid":79,)"
          R"("ecc_volatile_corrected":2,"ecc_volatile_uncorrected":1,"ecc_aggregate_corrected":10,"ecc_aggregate_uncorrected":1,)"
          R"("remapped_rows_correctable":3,"remapped_rows_uncorrectable":1,"remap_pending":true,"remap_failure":false,"pcie_replays":12,)"
          R"("nvlink":[{"link":0,"replay":1,"recovery":0,"crc_flit":4,"crc_data":0},{"link":1,"replay":2,"recovery":1,"crc_flit":0,"crc_data":1}],)"
          R"("power_limit_w":700,"clocks_event_reasons":["sw_power_cap","hw_thermal_slowdown"]})"),
      std::string::npos)
      << r.out;
  EXPECT_NE(
      r.out.find(
          R"("device":1,"uuid":"GPU-4ea17400-0000-4000-8000-000000000001","xid_errors_total":null,"xid_errors":null,"last_xid":null,"ecc_volatile_corrected":null,)"),
      std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find(R"("pcie_replays":null,"nvlink":[],"power_limit_w":null,"clocks_event_reasons":["gpu_idle"]})"),
            std::string::npos)
      << r.out;
}

TEST(LiveCli, MonitorCsvLeavesAbsentCellsEmpty) {
  Result r =
      gpuscope("monitor --interval 100ms --duration 250ms --format csv", synthetic(), GPUSCOPE_FAKE_NVML_LEGACY_PATH);
  ASSERT_EQ(r.rc, 0) << r.err;
  std::istringstream in(r.out);
  std::string header, row;
  std::getline(in, header);
  std::getline(in, row);
  EXPECT_EQ(header.rfind("time_ns,interval_ns,device,gpu_instance_id,uuid,gpu_util_pct,", 0), 0u) << header;
  EXPECT_NE(row.find(",100,20,17179869184,"), std::string::npos) << row;
  EXPECT_NE(row.find(",,,,"), std::string::npos) << row;  // No GPM on the legacy fake.
}

TEST(LiveCli, MonitorRecordsAFixtureTheFakeReplays) {
  const std::string rec = "/tmp/gpuscope_live_cli_record." + std::to_string(getpid()) + ".txt";
  Result r = gpuscope("monitor --interval 100ms --duration 250ms --output /dev/null --record " + rec, synthetic());
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
  EXPECT_NE(r.out.find("! GPU 1: idle_holding_memory: holds 4.0 GiB, SM active 0.0%; pid 4343"), std::string::npos)
      << r.out;
}

// On a terminal: alternate screen, lines rewritten in place (never a full-screen clear, which
// is what flickers), colour unless NO_COLOR, and a single 'q' quits.
TEST(LiveCli, TopOnATerminalRedrawsInPlaceAndQuitsOnQ) {
  int master = -1;
  pid_t pid = forkpty(&master, nullptr, nullptr, nullptr);
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    setenv("GPUSCOPE_NVML_LIBRARY", GPUSCOPE_FAKE_NVML_PATH, 1);
    setenv("GPUSCOPE_FAKE_NVML_FIXTURE", synthetic().c_str(), 1);
    setenv("GPUSCOPE_PROC_ROOT", gpuscope::nvml::testing::testdata("proc").c_str(), 1);
    unsetenv("NO_COLOR");
    execl(GPUSCOPE_BIN, GPUSCOPE_BIN, "top", "--interval", "100ms", "--idle-after", "0s", static_cast<char*>(nullptr));
    _exit(127);
  }
  std::string out;
  auto read_for = [&](int ms) {
    auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
    while (std::chrono::steady_clock::now() < end) {
      pollfd pfd{master, POLLIN, 0};
      if (poll(&pfd, 1, 20) > 0) {
        char buf[4096];
        ssize_t n = read(master, buf, sizeof buf);
        if (n <= 0) break;
        out.append(buf, static_cast<size_t>(n));
      }
    }
  };
  read_for(800);  // Several frames.
  ASSERT_EQ(write(master, "q", 1), 1);
  int status = -1;
  bool exited = false;
  for (int i = 0; i < 300 && !exited; ++i) {
    read_for(10);
    exited = waitpid(pid, &status, WNOHANG) == pid;
    if (!exited) usleep(10000);
  }
  if (!exited) {
    kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
    FAIL() << "top did not quit on q; output: " << out.substr(out.size() > 600 ? out.size() - 600 : 0);
  }
  read_for(200);  // What it wrote on the way out.
  close(master);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  EXPECT_NE(out.find("\x1b[?1049h"), std::string::npos);                           // Alternate screen on...
  EXPECT_NE(out.find("\x1b[?1049l"), std::string::npos);                           // ...and off again.
  EXPECT_EQ(out.find("\x1b[2J"), std::string::npos);                               // Never a full clear.
  EXPECT_GE(count_lines(out, "\x1b[H"), 2);                                        // Redrawn from home, in place.
  EXPECT_NE(out.find("\x1b[1;31mGPU 1: idle_holding_memory"), std::string::npos);  // Highlighted.
  // Executable names only unless --process-args.
  EXPECT_NE(out.find("4242 root"), std::string::npos);
  EXPECT_NE(out.find(" python3\x1b[K"), std::string::npos);
  EXPECT_EQ(out.find("train.py"), std::string::npos);
}

// Runs `gpuscope ARGS` with GPUSCOPE_PROC_ROOT at testdata/nvml/proc.
Result gpuscope_with_proc(const std::string& args, const std::string& fixture) {
  setenv("GPUSCOPE_PROC_ROOT", gpuscope::nvml::testing::testdata("proc").c_str(), 1);
  Result r = gpuscope(args, fixture);
  unsetenv("GPUSCOPE_PROC_ROOT");
  return r;
}

std::string hostile() { return gpuscope::nvml::testing::testdata("synthetic_hostile.txt"); }

// Another user's argv holds an OSC title, a screen clear and invalid UTF-8: `top` shows them
// escaped and never sends a control character of theirs to the terminal.
TEST(LiveCli, TopShowsOtherUsersControlCharactersEscaped) {
  for (const char* flags : {"", " --process-args"}) {
    Result r = gpuscope_with_proc(std::string("top --interval 100ms --count 1") + flags, hostile());
    ASSERT_EQ(r.rc, 0) << r.err;
    EXPECT_EQ(r.out.find('\x1b'), std::string::npos) << flags;
    EXPECT_NE(r.out.find("tr\xef\xbf\xbd"
                         "ain\\x1b[2J"),
              std::string::npos)
        << flags << r.out;
  }
  Result args = gpuscope_with_proc("top --interval 100ms --count 1 --process-args", hostile());
  EXPECT_NE(args.out.find("python3 train.py --batch 16"), std::string::npos) << args.out;
  EXPECT_NE(args.out.find("--password=***"), std::string::npos) << args.out;
  EXPECT_EQ(args.out.find("hunter2"), std::string::npos) << args.out;
}

TEST(LiveCli, MonitorCommandIsTheExecutableUnlessProcessArgs) {
  Result r = gpuscope_with_proc("monitor --interval 100ms --duration 100ms", hostile());
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(
      r.out.find(
          R"("pid":4242,"memory_used_bytes":17179869184,"sm_util_pct":100,"mem_util_pct":20,"command":"python3",)"),
      std::string::npos)
      << r.out;
  Result a = gpuscope_with_proc("monitor --interval 100ms --duration 100ms --process-args", hostile());
  ASSERT_EQ(a.rc, 0) << a.err;
  EXPECT_NE(a.out.find(R"("command":"python3 train.py --batch 16")"), std::string::npos) << a.out;
  EXPECT_EQ(a.out.find("hunter2"), std::string::npos);
}

// JSON and CSV have no NaN or infinity (issue: monitor wrote nan and exited 0).
TEST(LiveCli, MonitorWritesNullForNonFiniteReadings) {
  const std::string fixture = gpuscope::nvml::testing::testdata("nonfinite.txt");
  Result r = gpuscope("monitor --interval 100ms --duration 300ms", fixture);
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(r.out.find("nan"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("inf"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(R"("sm_active_pct":null,"sm_occupancy_pct":null)"), std::string::npos) << r.out;
  EXPECT_EQ(count_lines(r.out, R"("type":"device")"), 3);
  // One warning per field, not one per record.
  EXPECT_EQ(count_lines(r.err, "GPU 0 sm_active_pct read as nan; written as null"), 1) << r.err;
  EXPECT_EQ(count_lines(r.err, "GPU 0 sm_occupancy_pct read as inf"), 1) << r.err;
  Result csv = gpuscope("monitor --interval 100ms --duration 100ms --format csv", fixture);
  ASSERT_EQ(csv.rc, 0) << csv.err;
  EXPECT_EQ(csv.out.find("nan"), std::string::npos) << csv.out;
  EXPECT_EQ(csv.out.find("inf"), std::string::npos) << csv.out;
}

// --listen :PORT means every interface, said once; beyond loopback, one warning line.
TEST(LiveCli, ServeWarnsBeyondLoopback) {
  // Runs serve for a second, then Ctrl-C; returns its stderr and exit status.
  auto serve = [](const std::string& listen) {
    std::string cmd = std::string("(GPUSCOPE_NVML_LIBRARY='") + GPUSCOPE_FAKE_NVML_PATH +
                      "' GPUSCOPE_FAKE_NVML_FIXTURE='" + synthetic() + "' " + GPUSCOPE_BIN +
                      " serve --interval 100ms --listen " + listen +
                      " </dev/null >/dev/null & pid=$!; sleep 1; kill -INT $pid; wait $pid) 2>&1";
    Result r;
    FILE* p = popen(cmd.c_str(), "r");
    char buf[4096];
    while (size_t n = fread(buf, 1, sizeof buf, p)) r.err.append(buf, n);
    int status = pclose(p);
    r.rc = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    return r;
  };
  Result every = serve(":0");
  EXPECT_EQ(every.rc, 0) << every.err;
  EXPECT_EQ(count_lines(every.err, "listening on every interface"), 1) << every.err;
  EXPECT_EQ(count_lines(every.err, "gpuscope: warning:"), 1) << every.err;
  EXPECT_NE(every.err.find("reachable beyond this host"), std::string::npos) << every.err;
  Result local = serve("127.0.0.1:0");
  EXPECT_EQ(local.rc, 0) << local.err;
  EXPECT_EQ(local.err.find("warning"), std::string::npos) << local.err;
}

TEST(LiveCli, NoDriverIsOneLineAndExitTwo) {
  for (const char* cmd : {"top --count 1", "monitor --duration 1s", "serve --listen 127.0.0.1:0"}) {
    Result r = gpuscope(cmd, synthetic(), "/nonexistent/libnvidia-ml.so.1");
    EXPECT_EQ(r.rc, 2) << cmd;
    EXPECT_EQ(count_lines(r.err, ""), 1) << r.err;
    EXPECT_EQ(r.err.rfind("gpuscope: cannot load NVML from /nonexistent/libnvidia-ml.so.1", 0), 0u) << r.err;
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
  Result huge = gpuscope("monitor --interval 1e300s", synthetic());  // Not "below 100ms".
  EXPECT_EQ(huge.rc, 2);
  EXPECT_NE(huge.err.find("--interval 1e300s: too long"), std::string::npos) << huge.err;
}

// A bad --web.config.file stops serve before it samples or binds: one line naming the file and
// the field, exit 2. A missing file likewise.
TEST(LiveCli, BadWebConfigFileIsOneLineAndExitTwo) {
  char dir_template[] = "/tmp/gpuscope-live-cli-web-XXXXXX";
  const std::string dir = mkdtemp(dir_template);
  const std::string bad = dir + "/web.yml";
  std::ofstream(bad) << "basic_auth_users:\n  prometheus: hunter2\n";
  Result r = gpuscope("serve --listen 127.0.0.1:0 --web.config.file " + bad, synthetic());
  EXPECT_EQ(r.rc, 2);
  EXPECT_EQ(count_lines(r.err, ""), 1) << r.err;
  EXPECT_EQ(r.err.rfind("gpuscope: " + bad + ": basic_auth_users.prometheus: not a bcrypt hash", 0), 0u) << r.err;
  EXPECT_EQ(r.err.find("hunter2"), std::string::npos) << "the value is not echoed: " << r.err;
  Result missing = gpuscope("serve --listen 127.0.0.1:0 --web.config.file " + dir + "/none.yml", synthetic());
  EXPECT_EQ(missing.rc, 2);
  EXPECT_EQ(missing.err, "gpuscope: " + dir + "/none.yml: cannot read the web config file\n");
  std::remove(bad.c_str());
  rmdir(dir.c_str());
}

}  // namespace
