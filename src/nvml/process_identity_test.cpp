#include "nvml/process_identity.h"

#include <unistd.h>

#include <gtest/gtest.h>

namespace gpuscope::nvml {
namespace {

TEST(ProcessIdentity, PodUidFromCgroupfsDriver) {
  EXPECT_EQ(pod_uid_from_cgroup(
                "11:memory:/kubepods/burstable/pod8f9a5b2c-1d2e-4f3a-9b8c-7d6e5f4a3b2c/abc123\n"),
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
  EXPECT_EQ(slurm_job_from_cgroup("0::/system.slice/slurmstepd.scope/job_77/step_batch/user\n"),
            "77");
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

}  // namespace
}  // namespace gpuscope::nvml
