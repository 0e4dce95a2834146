// Labels for GPUs and processes from pod-resources assignments and cgroup pod UIDs.
#include "k8s/pod_assignments.h"

#include <gtest/gtest.h>

namespace gpuscope::k8s {
namespace {

const ContainerRef kTrainer{"ml", "trainer-0", "pytorch"};
const ContainerRef kServer{"serving", "llm-7f9c", "vllm"};

PodAssignments two_pods() {
  PodAssignments a;
  add_container_devices(a, kTrainer, "nvidia.com/gpu", {"GPU-a", "GPU-b"});
  add_container_devices(a, kServer, "nvidia.com/mig-1g.10gb", {"MIG-c"});
  add_container_devices(a, kServer, "cpu", {"GPU-z"});  // Not an NVIDIA resource.
  return a;
}

TEST(PodAssignments, KeepsNvidiaResourcesAndStripsReplicaSuffix) {
  PodAssignments a = two_pods();
  EXPECT_EQ(a.by_device.size(), 3u);
  EXPECT_FALSE(a.by_device.contains("GPU-z"));
  EXPECT_EQ(device_id_without_replica("GPU-a::3"), "GPU-a");
  EXPECT_EQ(device_id_without_replica("MIG-c"), "MIG-c");
  // Two slices of one time-shared GPU in one container count once; two containers twice.
  add_container_devices(a, kTrainer, "nvidia.com/gpu", {"GPU-s::0", "GPU-s::1"});
  EXPECT_EQ(a.by_device["GPU-s"].size(), 1u);
  add_container_devices(a, kServer, "nvidia.com/gpu", {"GPU-s::2"});
  EXPECT_EQ(a.by_device["GPU-s"].size(), 2u);
}

TEST(PodIndex, DeviceHasLabelsOnlyWithOneOwner) {
  PodAssignments a = two_pods();
  add_container_devices(a, kTrainer, "nvidia.com/gpu", {"GPU-s::0"});
  add_container_devices(a, kServer, "nvidia.com/gpu", {"GPU-s::1"});
  PodIndex index(a, {});
  ASSERT_NE(index.for_device("GPU-a"), nullptr);
  EXPECT_EQ(*index.for_device("GPU-a"), kTrainer);
  EXPECT_EQ(*index.for_device("MIG-c"), kServer);
  EXPECT_EQ(index.for_device("GPU-s"), nullptr);  // Shared: not one pod's.
  EXPECT_EQ(index.for_device("GPU-unassigned"), nullptr);
}

TEST(PodIndex, ProcessFollowsItsGpuAndLearnsPodUid) {
  PodAssignments a = two_pods();
  std::vector<ProcessRef> procs = {
      {"GPU-a", "uid-trainer"},     // On the trainer's GPU, in its pod.
      {"GPU-b", ""},                // Pod UID unreadable: the GPU's owner.
      {"GPU-free", "uid-trainer"},  // Same pod on a GPU it was not assigned (sees all GPUs).
      {"GPU-free", "uid-other"},    // A pod that holds no GPU: unknown.
  };
  PodIndex index(a, procs);
  EXPECT_EQ(*index.for_process(procs[0]), kTrainer);
  EXPECT_EQ(*index.for_process(procs[1]), kTrainer);
  ContainerRef pod_only{"ml", "trainer-0", ""};
  ASSERT_NE(index.for_process(procs[2]), nullptr);
  EXPECT_EQ(*index.for_process(procs[2]), pod_only);
  EXPECT_EQ(index.for_process(procs[3]), nullptr);
}

TEST(PodIndex, ForeignPodOnAssignedGpuIsNotNamedAfterTheOwner) {
  PodAssignments a = two_pods();
  // GPU-a: the trainer's process and a debugging pod's process; the UID of the trainer's pod
  // cannot be told from the debugger's there, but GPU-b (trainer only) says it.
  std::vector<ProcessRef> procs = {{"GPU-a", "uid-trainer"}, {"GPU-a", "uid-debug"}, {"GPU-b", "uid-trainer"}};
  PodIndex index(a, procs);
  EXPECT_EQ(*index.for_process(procs[0]), kTrainer);
  EXPECT_EQ(index.for_process(procs[1]), nullptr);
  EXPECT_EQ(*index.for_process(procs[2]), kTrainer);
  // Without GPU-b, neither process on GPU-a can be attributed.
  std::vector<ProcessRef> only_a = {procs[0], procs[1]};
  PodIndex index2(a, only_a);
  EXPECT_EQ(index2.for_process(only_a[0]), nullptr);
  EXPECT_EQ(index2.for_process(only_a[1]), nullptr);
}

}  // namespace
}  // namespace gpuscope::k8s
