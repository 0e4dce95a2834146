// A snapshot written by FixtureWriter and read back by the fake NVML gives the same readings.
#include "nvml/fixture_writer.h"

#include <unistd.h>

#include <chrono>
#include <thread>

#include <gtest/gtest.h>

#include "nvml/fake_nvml_testing.h"
#include "nvml/sample_fields.h"

namespace gpuscope::nvml {
namespace {

StatusOr<std::unique_ptr<Sampler>> open_with(const std::string& fixture) {
  testing::use_fixture(fixture);
  ASSIGN_OR_RETURN(auto api, NvmlApi::load(GPUSCOPE_FAKE_NVML_PATH));
  SamplerOptions options;
  options.proc_root = testing::testdata("proc");
  return Sampler::open(std::move(api), options);
}

TEST(FixtureWriter, RoundTripsThroughTheFake) {
  auto first = open_with(testing::testdata("synthetic_2gpu.txt"));
  ASSERT_TRUE(first.ok()) << first.status().message();
  std::this_thread::sleep_for(std::chrono::milliseconds(110));
  LiveSnapshot original;
  ASSERT_TRUE((*first)->sample(&original).ok());
  const std::string path = "/tmp/gpuscope_fixture_roundtrip." + std::to_string(getpid()) + ".txt";
  {
    auto writer = FixtureWriter::create(path, **first, "round trip test");
    ASSERT_TRUE(writer.ok()) << writer.status().message();
    ASSERT_TRUE((*writer)->write_frame(original).ok());
  }
  first->reset();

  auto second = open_with(path);
  ASSERT_TRUE(second.ok()) << second.status().message();
  EXPECT_EQ((*second)->devices()[1].uuid, "GPU-55555555-6666-7777-8888-999999999999");
  std::this_thread::sleep_for(std::chrono::milliseconds(110));
  LiveSnapshot replayed;
  ASSERT_TRUE((*second)->sample(&replayed).ok());
  ASSERT_EQ(replayed.devices.size(), original.devices.size());
  for (size_t d = 0; d < original.devices.size(); ++d) {
    for (const SampleField& f : device_sample_fields()) {
      auto a = f.get(original.devices[d]);
      auto b = f.get(replayed.devices[d]);
      ASSERT_EQ(a.has_value(), b.has_value()) << f.name;
      if (a) {
        EXPECT_NEAR(*a, *b, 1e-6 * std::max(1.0, std::abs(*a))) << f.name;
      }
    }
  }
  ASSERT_EQ(replayed.processes.size(), 2u);
  EXPECT_EQ(replayed.processes[0].memory_used_bytes, original.processes[0].memory_used_bytes);
  EXPECT_EQ(replayed.processes[0].sm_util_pct, 100.0);
}

}  // namespace
}  // namespace gpuscope::nvml
