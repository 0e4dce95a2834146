#include "nvml/process_identity.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

namespace gpuscope::nvml {
namespace {

TEST(ProcessIdentity, PodUidFromCgroupfsDriver) {
  EXPECT_EQ(pod_uid_from_cgroup("11:memory:/kubepods/burstable/pod8f9a5b2c-1d2e-4f3a-9b8c-7d6e5f4a3b2c/abc123\n"),
            "8f9a5b2c-1d2e-4f3a-9b8c-7d6e5f4a3b2c");
}

TEST(ProcessIdentity, PodUidFromSystemdDriver) {
  EXPECT_EQ(pod_uid_from_cgroup("0::/kubepods.slice/kubepods-besteffort.slice/"
                                "kubepods-besteffort-pod8F9A5B2C_1d2e_4f3a_9b8c_7d6e5f4a3b2c.slice/"
                                "cri-containerd-1.scope\n"),
            "8f9a5b2c-1d2e-4f3a-9b8c-7d6e5f4a3b2c");
}

TEST(ProcessIdentity, NoPodOutsideKubepods) {
  EXPECT_EQ(pod_uid_from_cgroup("0::/user.slice/pod8f9a5b2c-1d2e-4f3a-9b8c-7d6e5f4a3b2c\n"), "");
  EXPECT_EQ(pod_uid_from_cgroup("0::/kubepods/burstable/podnot-a-uid/x\n"), "");
}

TEST(ProcessIdentity, SlurmJobFromCgroupV1AndV2) {
  EXPECT_EQ(slurm_job_from_cgroup("4:devices:/slurm/uid_1000/job_1234/step_0/task_0\n"), "1234");
  EXPECT_EQ(slurm_job_from_cgroup("0::/system.slice/slurmstepd.scope/job_77/step_batch/user\n"), "77");
  EXPECT_EQ(slurm_job_from_cgroup("0::/system.slice/job_77x/\n"), "");
  EXPECT_EQ(slurm_job_from_cgroup("0::/user.slice/user-1000.slice\n"), "");
}

TEST(ProcessIdentity, MissingPidLeavesEverythingEmpty) {
  ProcessIdentity id = read_process_identity("/nonexistent-proc", 1);
  EXPECT_EQ(id.command, "");
  EXPECT_EQ(id.user, "");
  EXPECT_EQ(id.pod_uid, "");
}

TEST(ProcessIdentity, ReadsThisProcess) {
  ProcessIdentity id = read_process_identity("/proc", static_cast<uint32_t>(getpid()));
  EXPECT_NE(id.command.find("gpuscope_nvml_test"), std::string::npos) << id.command;
  EXPECT_FALSE(id.user.empty());
}

TEST(CommandText, InvalidUtf8BecomesReplacementCharacter) {
  EXPECT_EQ(to_valid_utf8("ok \xc3\xa9 \xe2\x82\xac"), "ok \xc3\xa9 \xe2\x82\xac");
  EXPECT_EQ(to_valid_utf8("a\xff"
                          "b"),
            "a\xef\xbf\xbd"
            "b");
  EXPECT_EQ(to_valid_utf8("\xe2\x82"), "\xef\xbf\xbd");                              // Truncated sequence: one U+FFFD.
  EXPECT_EQ(to_valid_utf8("\xc0\xaf"), "\xef\xbf\xbd\xef\xbf\xbd");                  // Overlong '/'.
  EXPECT_EQ(to_valid_utf8("\xed\xa0\x80"), "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd");  // Surrogate.
  EXPECT_TRUE(is_valid_utf8("\xf0\x9f\x98\x80"));
  EXPECT_FALSE(is_valid_utf8("\xf4\x90\x80\x80"));  // Above U+10FFFF.
}

TEST(CommandText, TruncationNeverCutsACharacter) {
  std::string s(199, 'x');
  s += "\xc3\xa9tail";  // 'é' at bytes 199..200.
  EXPECT_EQ(truncate_utf8(s, 200), std::string(199, 'x'));
  EXPECT_EQ(truncate_utf8(s, 201).size(), 201u);
  EXPECT_EQ(truncate_utf8("short", 200), "short");
}

TEST(CommandText, RedactsSecretOptionsAndUrlCredentials) {
  auto shown = [](std::vector<std::string> argv) { return command_text(argv, CommandLine::kArguments); };
  EXPECT_EQ(shown({"python3", "train.py", "--password=hunter2", "--batch", "16"}),
            "python3 train.py --password=*** --batch 16");
  EXPECT_EQ(shown({"app", "--password", "hunter2", "--db-passwd", "x", "--api-token", "t"}),
            "app --password *** --db-passwd *** --api-token ***");
  EXPECT_EQ(shown({"app", "--API_KEY=abc", "--client-secret", "s", "-Djavax.net.ssl.keyStorePassword=p"}),
            "app --API_KEY=*** --client-secret *** -Djavax.net.ssl.keyStorePassword=***");
  EXPECT_EQ(shown({"app", "--token", "--verbose"}), "app --token --verbose");  // No value to hide.
  EXPECT_EQ(shown({"git", "clone", "https://alice:hunter3@example.com/r.git"}),
            "git clone https://alice:***@example.com/r.git");
  EXPECT_EQ(shown({"curl", "--url=https://ghp_tok@github.com/x", "http://host/a@b"}),
            "curl --url=https://***@github.com/x http://host/a@b");
  // A title rewritten into one string (setproctitle) is redacted word by word.
  EXPECT_EQ(shown({"worker --password=hunter2 --token abc"}), "worker --password=*** --token ***");
}

TEST(CommandText, ExecutableNameOnlyByDefault) {
  auto exe = [](std::vector<std::string> argv) { return command_text(argv, CommandLine::kExecutable); };
  EXPECT_EQ(exe({"/usr/bin/python3", "train.py", "--password=hunter2"}), "python3");
  EXPECT_EQ(exe({"postgres: checkpointer"}), "postgres:");
  EXPECT_EQ(exe({"/opt/my app/bin/run", "x"}), "run");
  // `exec -a "runner --password=hunter2 --token=abc123" prog arg1`: argv[0] with options in it
  // was shown whole in /metrics and monitor JSONL.
  EXPECT_EQ(exe({"runner --password=hunter2 --token=abc123", "arg1"}), "runner");
  EXPECT_EQ(exe({"https://user:hunter2@host/x", "arg1"}).find("hunter2"), std::string::npos);
  EXPECT_EQ(exe({}), "");
}

TEST(CommandText, AProcFileThatBlocksDoesNotHangTheReader) {
  // `serve` never listened when the first /proc/PID/cmdline read blocked (a process stuck in
  // uninterruptible sleep; here a FIFO with no writer), and then ignored SIGTERM.
  char root[] = "/tmp/gpuscope-proc-XXXXXX";
  ASSERT_NE(mkdtemp(root), nullptr);
  const std::string dir = std::string(root) + "/77";
  ASSERT_EQ(mkdir(dir.c_str(), 0700), 0);
  ASSERT_EQ(mkfifo((dir + "/cmdline").c_str(), 0600), 0);
  {
    std::ofstream comm(dir + "/comm");
    comm << "stuck\n";
  }
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(read_process_command(root, 77, CommandLine::kExecutable), "stuck");
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 3.0);
  // Opening the FIFO for writing releases the abandoned reader.
  const int fd = open((dir + "/cmdline").c_str(), O_WRONLY | O_NONBLOCK);
  if (fd >= 0) close(fd);
  std::filesystem::remove_all(root);
}

// testdata/nvml/proc/4444: invalid UTF-8 and ESC in argv[0], secrets, 'é' across byte 200.
TEST(CommandText, HostileCommandLineFromProc) {
  const std::string proc = std::string(GPUSCOPE_SOURCE_DIR) + "/testdata/nvml/proc";
  ProcessIdentity id = read_process_identity(proc, 4444);
  EXPECT_TRUE(is_valid_utf8(id.command));
  EXPECT_LE(id.command.size(), kMaxCommandBytes);
  EXPECT_EQ(id.command.size(), 199u) << id.command;  // The 'é' at 199..200 is dropped whole.
  EXPECT_EQ(id.command.find("hunter"), std::string::npos) << id.command;
  EXPECT_EQ(id.command.find("tok3n"), std::string::npos) << id.command;
  EXPECT_EQ(id.command.rfind("/usr/bin/tr\xef\xbf\xbd"
                             "ain\x1b[2J --password=*** --api-token *** "
                             "https://alice:***@example.com/data xx",
                             0),
            0u)
      << id.command;
  std::string exe = read_process_command(proc, 4444, CommandLine::kExecutable);
  EXPECT_EQ(exe,
            "tr\xef\xbf\xbd"
            "ain\x1b[2J");
  EXPECT_EQ(read_process_command(proc, 4343, CommandLine::kExecutable), "notebook");  // comm.
}

}  // namespace
}  // namespace gpuscope::nvml
