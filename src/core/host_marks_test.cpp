#include "core/host_marks.h"

#include <gtest/gtest.h>

#include <string>

#include "core/run_protocol.h"
#include "core/test_builder.h"

namespace gpuscope {
namespace {

using testing::TraceBuilder;

TEST(MarkField, ReadsWholeKeysAndDigits) {
  EXPECT_EQ(mark_field("cpus=16,torch_threads=4", "cpus"), 16);
  EXPECT_EQ(mark_field("cpus=16,torch_threads=4", "torch_threads"), 4);
  // A key is matched whole: "steps" is not "optimizer_steps" nor "untraced_step_us".
  EXPECT_EQ(mark_field("optimizer_steps=4", "steps"), std::nullopt);
  EXPECT_EQ(mark_field("untraced_step_us=4920,steps=8", "steps"), 8);
  EXPECT_EQ(mark_field("cpus=", "cpus"), std::nullopt);
  EXPECT_EQ(mark_field("cpus=x", "cpus"), std::nullopt);
  EXPECT_EQ(mark_field("cpus=12x", "cpus"), 12);
  EXPECT_EQ(mark_field("", "cpus"), std::nullopt);
}

TEST(HostMarks, EveryFieldMarkOfTheProtocolIsParsed) {
  // One mark of each kind the bootstrap writes (run_protocol.h's kFieldMarks), from two
  // processes where values repeat: window values are the largest, loader values the first.
  const Trace t =
      TraceBuilder()
          .annotation(1, 1, "gpuscope.host#cpus=16,torch_threads=4")
          .annotation(2, 2, "gpuscope.host#cpus=8,loader_workers=3")
          .annotation(3, 3, "gpuscope.host#loader_cpu_us=1440,loader_wall_us=900")
          .annotation(4, 4, "gpuscope.host#loader_one_thread_us=0,batches=1")
          .annotation(5, 5, "gpuscope.host#loader_one_thread_us=440000,batches=3,loader_one_thread_cpu_us=1300000")
          .annotation(6, 6, "gpuscope.host#loader_pool_us=52000,pool_workers=8,batches=24")
          .annotation(7, 7, "gpuscope.host#dist_world_size=2,dist_gloo=1")
          .annotation(8, 8, "gpuscope.host#untraced_step_us=4920,steps=8")
          .annotation(9, 9, "gpuscope.host#untraced_step_us=5000,steps=8")
          .annotation(10, 10, "gpuscope.host#optimizer_steps=4")
          .annotation(11, 11, "gpuscope.host#untraced_device_step_us=5100,steps=8")
          .annotation(12, 12, "gpuscope.host#time_window_us=500000,loop_period_ns=4100")
          .annotation(13, 13, "gpuscope.host#time_window_us=10000000,no_steps=1")
          .annotation(14, 14, "gpuscope.host#capped_after_steps=300")
          .annotation(15, 15, "gpuscope.host#capped_after_us=5000000,loop_period_ns=900")
          .annotation(16, 16, "gpuscope.python#ranges=3,samples=2,hook_errors=0")
          .annotation(17, 17, "not.a.host#cpus=99")
          .build();
  const HostMarks m = parse_host_marks(t);
  EXPECT_EQ(m.loader.cpus, 16);
  EXPECT_EQ(m.loader.torch_threads, 4);
  EXPECT_EQ(m.loader.workers, 3);
  EXPECT_EQ(m.loader.one_thread_us, 440000);  // The first positive one.
  EXPECT_EQ(m.loader.one_thread_batches, 3);
  EXPECT_EQ(m.loader.one_thread_cpu_us, 1300000);
  EXPECT_EQ(m.loader.pool_us, 52000);
  EXPECT_EQ(m.loader.pool_workers, 8);
  EXPECT_EQ(m.loader.pool_batches, 24);
  ASSERT_EQ(m.loader.batch_cpu_wall_us.size(), 1u);
  EXPECT_EQ(m.loader.batch_cpu_wall_us.begin()->second, std::make_pair(int64_t{1440}, int64_t{900}));
  EXPECT_EQ(m.dist_world_size, 2);
  EXPECT_TRUE(m.dist_gloo);
  EXPECT_EQ(m.window.untraced_step_us, 5000);
  EXPECT_EQ(m.window.untraced_device_step_us, 5100);
  EXPECT_EQ(m.window.untraced_step_ns(), 5'100'000);  // The longer of host and GPU.
  EXPECT_EQ(m.window.optimizer_steps, 4);
  EXPECT_EQ(m.window.time_window_us, 10'000'000);
  EXPECT_TRUE(m.window.no_steps);
  EXPECT_EQ(m.window.loop_period_ns, 4100);
  EXPECT_EQ(m.window.capped_after_steps, 300);
  EXPECT_EQ(m.window.capped_after_us, 5'000'000);
}

TEST(HostMarks, NothingWithoutMarks) {
  const HostMarks m = parse_host_marks(TraceBuilder().annotation(1, 2, "gpuscope.iter#a.py:3").build());
  EXPECT_FALSE(m.loader.cpus || m.loader.one_thread_us || m.loader.pool_us || m.dist_world_size);
  EXPECT_TRUE(m.loader.batch_cpu_wall_us.empty());
  EXPECT_FALSE(m.dist_gloo || m.window.no_steps);
  EXPECT_FALSE(m.window.untraced_step_ns() || m.window.optimizer_steps || m.window.capped_after_steps);
  // dist_gloo=0 is a process group on NCCL, not gloo.
  EXPECT_FALSE(parse_host_marks(TraceBuilder().annotation(1, 1, "gpuscope.host#dist_world_size=2,dist_gloo=0").build())
                   .dist_gloo);
}

TEST(PySample, TagAndLabel) {
  EXPECT_TRUE(py_sample_in_data_loading("gpuscope.py#data;a.py:3 f"));
  EXPECT_FALSE(py_sample_in_data_loading("gpuscope.py#;a.py:3 f"));
  EXPECT_FALSE(py_sample_in_data_loading("gpuscope.py#database;a.py:3 f"));
  EXPECT_FALSE(py_sample_in_data_loading("data;a.py:3 f"));  // Not a sample's name.
  EXPECT_EQ(py_sample_label("gpuscope.py#data;a.py:3 f|b.py:9 g"), "a.py:3 f (Python)");
  EXPECT_EQ(py_sample_label(";b.py:9 g"), "b.py:9 g (Python)");
  EXPECT_EQ(py_sample_label("gpuscope.py#;"), "");
}

TEST(RunProtocol, EnvironmentNamesAreDistinct) {
  for (size_t i = 0; i < run_protocol::kEnvironment.size(); ++i) {
    for (size_t j = i + 1; j < run_protocol::kEnvironment.size(); ++j) {
      EXPECT_NE(std::string(run_protocol::kEnvironment[i].name), run_protocol::kEnvironment[j].name);
    }
    EXPECT_NE(run_protocol::kEnvironment[i].set_by, 0) << run_protocol::kEnvironment[i].name;
    EXPECT_NE(run_protocol::kEnvironment[i].read_by, 0) << run_protocol::kEnvironment[i].name;
  }
}

}  // namespace
}  // namespace gpuscope
