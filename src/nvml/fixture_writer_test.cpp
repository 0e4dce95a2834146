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

// Health counters and XIDs recorded on a real GPU replay as read (testdata/nvml/synthetic_health.txt:
// ECC, remapped rows, PCIe replays, power limit, two NVLinks, XIDs 79, 94, 79; a GPU with none).
TEST(FixtureWriter, RoundTripsHealth) {
  auto first = open_with(testing::testdata("synthetic_health.txt"));
  ASSERT_TRUE(first.ok()) << first.status().message();
  LiveSnapshot original;
  ASSERT_TRUE((*first)->sample(&original).ok());
  const std::string path = "/tmp/gpuscope_fixture_health." + std::to_string(getpid()) + ".txt";
  {
    auto writer = FixtureWriter::create(path, **first, "health round trip test");
    ASSERT_TRUE(writer.ok()) << writer.status().message();
    ASSERT_TRUE((*writer)->write_frame(original).ok());
  }
  first->reset();
  auto second = open_with(path);
  ASSERT_TRUE(second.ok()) << second.status().message();
  EXPECT_TRUE((*second)->devices()[0].xid_events);
  EXPECT_FALSE((*second)->devices()[1].xid_events);
  LiveSnapshot replayed;
  ASSERT_TRUE((*second)->sample(&replayed).ok());
  ASSERT_EQ(replayed.health.size(), 2u);
  for (size_t d = 0; d < 2; ++d) {
    const DeviceHealth& a = original.health[d];
    const DeviceHealth& b = replayed.health[d];
    EXPECT_EQ(a.xid_supported, b.xid_supported) << d;
    EXPECT_EQ(a.xid_total, b.xid_total) << d;
    EXPECT_EQ(a.last_xid, b.last_xid) << d;
    ASSERT_EQ(a.xid_counts.size(), b.xid_counts.size()) << d;
    for (size_t k = 0; k < a.xid_counts.size(); ++k) {
      EXPECT_EQ(a.xid_counts[k].xid, b.xid_counts[k].xid);
      EXPECT_EQ(a.xid_counts[k].count, b.xid_counts[k].count);
    }
    EXPECT_EQ(a.ecc_volatile_corrected, b.ecc_volatile_corrected) << d;
    EXPECT_EQ(a.ecc_volatile_uncorrected, b.ecc_volatile_uncorrected) << d;
    EXPECT_EQ(a.ecc_aggregate_corrected, b.ecc_aggregate_corrected) << d;
    EXPECT_EQ(a.ecc_aggregate_uncorrected, b.ecc_aggregate_uncorrected) << d;
    EXPECT_EQ(a.remapped_rows_corrected, b.remapped_rows_corrected) << d;
    EXPECT_EQ(a.remapped_rows_uncorrected, b.remapped_rows_uncorrected) << d;
    EXPECT_EQ(a.remap_pending, b.remap_pending) << d;
    EXPECT_EQ(a.remap_failure, b.remap_failure) << d;
    EXPECT_EQ(a.pcie_replays, b.pcie_replays) << d;
    EXPECT_EQ(a.power_limit_w, b.power_limit_w) << d;
    ASSERT_EQ(a.nvlink.size(), b.nvlink.size()) << d;
    for (size_t k = 0; k < a.nvlink.size(); ++k) {
      EXPECT_EQ(a.nvlink[k].link, b.nvlink[k].link);
      EXPECT_EQ(a.nvlink[k].replay, b.nvlink[k].replay);
      EXPECT_EQ(a.nvlink[k].recovery, b.nvlink[k].recovery);
      EXPECT_EQ(a.nvlink[k].crc_flit, b.nvlink[k].crc_flit);
      EXPECT_EQ(a.nvlink[k].crc_data, b.nvlink[k].crc_data);
    }
  }
  EXPECT_EQ(original.health[0].xid_total, 3u);  // The fixture's events did arrive.
  EXPECT_EQ(original.health[0].nvlink.size(), 2u);
  std::remove(path.c_str());
}

}  // namespace
}  // namespace gpuscope::nvml
