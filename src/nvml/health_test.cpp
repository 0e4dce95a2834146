// The health collector through the sampler over the fake NVML: one test per health metric,
// each with a GPU that does not support it (absent, never 0), XID events arriving between
// samples, the slow-counter pacing, and failures.
#include "nvml/health.h"

#include <gtest/gtest.h>

#include "nvml/fake_nvml_testing.h"
#include "nvml/sampler.h"

namespace gpuscope::nvml {
namespace {

using testing::testdata;
using testing::use_fixture_text;

// GPU 0 supports every health reading; GPU 1 none of them (no keys, events=0, no NVLink).
constexpr const char* kHeader =
    "driver 580.159.04\n"
    "device 0 uuid=GPU-0 gpm=0 mig=0 nvlinks=3 name=NVIDIA H200\n"
    "device 1 uuid=GPU-1 gpm=0 mig=0 events=0 name=NVIDIA T4\n";

std::unique_ptr<Sampler> open_fake(const std::string& fixture, int64_t health_interval_ns = 0,
                                   const char* library = GPUSCOPE_FAKE_NVML_PATH) {
  use_fixture_text(fixture);
  auto api = NvmlApi::load(library);
  EXPECT_TRUE(api.ok()) << api.status().message();
  if (!api.ok()) return nullptr;
  SamplerOptions options;
  options.processes = false;
  options.health_interval_ns = health_interval_ns;
  auto sampler = Sampler::open(std::move(*api), options);
  EXPECT_TRUE(sampler.ok()) << sampler.status().message();
  return sampler.ok() ? std::move(*sampler) : nullptr;
}

LiveSnapshot sample(Sampler& s) {
  LiveSnapshot snap;
  EXPECT_TRUE(s.sample(&snap).ok());
  EXPECT_EQ(snap.health.size(), s.devices().size());
  return snap;
}

std::string frame(const std::string& gpu0, const std::string& extra = "") {
  return "frame\ns 0 gpu_util=50 mem_util=1 " + gpu0 + "\ns 1 gpu_util=0 mem_util=0\n" + extra;
}

TEST(Health, XidEventsArrivingBetweenSamplesAreCountedByCode) {
  auto sampler = open_fake(std::string(kHeader) + frame("") + frame("", "x 0 79\nx 0 13\n") + frame("", "x 0 79\n"));
  ASSERT_TRUE(sampler);
  LiveSnapshot s1 = sample(*sampler);
  const DeviceHealth& h1 = s1.health[0];
  EXPECT_TRUE(h1.xid_supported);
  EXPECT_EQ(h1.xid_total, 0u);  // Registered, none seen: a measured zero.
  EXPECT_TRUE(h1.xid_counts.empty());
  EXPECT_FALSE(h1.last_xid);
  EXPECT_FALSE(s1.health[1].xid_supported);  // events=0: absent, not zero.

  // The events were raised by the driver between the first and second samples.
  LiveSnapshot s2 = sample(*sampler);
  const DeviceHealth& h2 = s2.health[0];
  EXPECT_TRUE(h2.updated);
  EXPECT_EQ(h2.xid_total, 2u);
  ASSERT_EQ(h2.xid_counts.size(), 2u);
  EXPECT_EQ(h2.xid_counts[0].xid, 13u);  // Sorted by code.
  EXPECT_EQ(h2.xid_counts[0].count, 1u);
  EXPECT_EQ(h2.xid_counts[1].xid, 79u);
  EXPECT_EQ(h2.last_xid, 13u);  // The later of the two.

  LiveSnapshot s3 = sample(*sampler);
  const DeviceHealth& h3 = s3.health[0];
  EXPECT_EQ(h3.xid_total, 3u);
  EXPECT_EQ(h3.xid_counts[1].count, 2u);
  EXPECT_EQ(h3.last_xid, 79u);
  EXPECT_FALSE(s3.health[1].xid_supported);
  EXPECT_EQ(s3.health[1].xid_total, 0u);
  EXPECT_TRUE(sampler->take_warnings().empty());
}

TEST(Health, EccCountersVolatileAndAggregate) {
  auto sampler = open_fake(std::string(kHeader) + frame("ecc_vol_corr=3 ecc_vol_unc=1 ecc_agg_corr=120 ecc_agg_unc=2"));
  ASSERT_TRUE(sampler);
  LiveSnapshot s = sample(*sampler);
  EXPECT_EQ(s.health[0].ecc_volatile_corrected, 3u);
  EXPECT_EQ(s.health[0].ecc_volatile_uncorrected, 1u);
  EXPECT_EQ(s.health[0].ecc_aggregate_corrected, 120u);
  EXPECT_EQ(s.health[0].ecc_aggregate_uncorrected, 2u);
  EXPECT_FALSE(s.health[1].ecc_volatile_corrected);  // Not supported: absent.
  EXPECT_FALSE(s.health[1].ecc_aggregate_uncorrected);
}

TEST(Health, RemappedRows) {
  auto sampler = open_fake(std::string(kHeader) + frame("remap_corr=4 remap_unc=1 remap_pending=1 remap_failure=0"));
  ASSERT_TRUE(sampler);
  LiveSnapshot s = sample(*sampler);
  EXPECT_EQ(s.health[0].remapped_rows_corrected, 4u);
  EXPECT_EQ(s.health[0].remapped_rows_uncorrected, 1u);
  EXPECT_EQ(s.health[0].remap_pending, true);
  EXPECT_EQ(s.health[0].remap_failure, false);
  EXPECT_FALSE(s.health[1].remapped_rows_corrected);
  EXPECT_FALSE(s.health[1].remap_pending);
  EXPECT_FALSE(s.health[1].remap_failure);
}

TEST(Health, PcieReplayCounter) {
  auto sampler = open_fake(std::string(kHeader) + frame("pcie_replay=17"));
  ASSERT_TRUE(sampler);
  LiveSnapshot s = sample(*sampler);
  EXPECT_EQ(s.health[0].pcie_replays, 17u);
  EXPECT_FALSE(s.health[1].pcie_replays);
}

TEST(Health, NvlinkErrorCountersPerLinkThatIsUp) {
  auto sampler = open_fake(std::string(kHeader) + frame("nvlink0_replay=5 nvlink0_recovery=1 nvlink0_crc_flit=7 "
                                                        "nvlink0_crc_data=2 nvlink1_up=0 nvlink2_replay=9"));
  ASSERT_TRUE(sampler);
  LiveSnapshot s = sample(*sampler);
  const auto& links = s.health[0].nvlink;
  ASSERT_EQ(links.size(), 2u);  // Link 1 is down; link 3 does not exist.
  EXPECT_EQ(links[0].link, 0);
  EXPECT_EQ(links[0].replay, 5u);
  EXPECT_EQ(links[0].recovery, 1u);
  EXPECT_EQ(links[0].crc_flit, 7u);
  EXPECT_EQ(links[0].crc_data, 2u);
  EXPECT_EQ(links[1].link, 2);
  EXPECT_EQ(links[1].replay, 9u);
  EXPECT_FALSE(links[1].recovery);                // This counter not supported on the link: absent.
  EXPECT_TRUE(s.health[1].nvlink.empty());        // No NVLink.
  EXPECT_TRUE(sampler->take_warnings().empty());  // NOT_SUPPORTED is not a warning.
}

TEST(Health, EnforcedPowerLimit) {
  auto sampler = open_fake(std::string(kHeader) + frame("power_limit_mw=700000"));
  ASSERT_TRUE(sampler);
  LiveSnapshot s = sample(*sampler);
  EXPECT_EQ(s.health[0].power_limit_w, 700.0);
  EXPECT_FALSE(s.health[1].power_limit_w);
}

TEST(Health, SlowCountersAreHeldBetweenReadsButXidsAreNot) {
  const std::string fixture = std::string(kHeader) + frame("pcie_replay=1") + frame("pcie_replay=2", "x 0 48\n");
  auto sampler = open_fake(fixture, /*health_interval_ns=*/3'600'000'000'000);
  ASSERT_TRUE(sampler);
  LiveSnapshot s1 = sample(*sampler);
  EXPECT_TRUE(s1.health[0].updated);
  EXPECT_EQ(s1.health[0].pcie_replays, 1u);
  LiveSnapshot s2 = sample(*sampler);
  EXPECT_EQ(s2.health[0].pcie_replays, 1u);  // Held: read again only after an hour.
  EXPECT_EQ(s2.health[0].xid_total, 1u);     // Events are taken every pass.
  EXPECT_EQ(s2.health[0].last_xid, 48u);
  EXPECT_TRUE(s2.health[0].updated);
  EXPECT_FALSE(s2.health[1].updated);
  sampler.reset();  // nvmlShutdown: the next nvmlInit starts the fixture over.

  auto every_pass = open_fake(fixture, 0);
  ASSERT_TRUE(every_pass);
  sample(*every_pass);
  EXPECT_EQ(sample(*every_pass).health[0].pcie_replays, 2u);
}

TEST(Health, FailureIsAWarningAndTheReadingAbsent) {
  auto sampler = open_fake(std::string(kHeader) +
                           "error nvmlDeviceGetPcieReplayCounter 4\n"
                           "error nvmlDeviceRegisterEvents 4\n" +
                           frame("pcie_replay=3 power_limit_mw=700000"));
  ASSERT_TRUE(sampler);
  LiveSnapshot s = sample(*sampler);
  EXPECT_FALSE(s.health[0].pcie_replays);
  EXPECT_FALSE(s.health[0].xid_supported);
  EXPECT_EQ(s.health[0].power_limit_w, 700.0);
  std::string all;
  for (const std::string& w : sampler->take_warnings()) all += w + "\n";
  EXPECT_NE(all.find("nvmlDeviceGetPcieReplayCounter failed"), std::string::npos) << all;
  EXPECT_NE(all.find("nvmlDeviceRegisterEvents failed"), std::string::npos) << all;
  EXPECT_NE(all.find("on GPU 0"), std::string::npos) << all;
}

// With no GPU registered for XIDs the event set is freed, not polled every pass: a failing
// nvmlEventSetWait_v2 is then never called (it would be a warning).
TEST(Health, NoEventSetPolledWithoutAnXidCapableGpu) {
  auto sampler = open_fake(
      "error nvmlEventSetWait_v2 4\n"
      "device 0 uuid=GPU-0 gpm=0 mig=0 events=0 name=NVIDIA T4\n"
      "frame\ns 0 gpu_util=1 mem_util=1\n");
  ASSERT_TRUE(sampler);
  sample(*sampler);
  sample(*sampler);
  EXPECT_TRUE(sampler->take_warnings().empty());
  sampler.reset();  // nvmlShutdown, so that the next nvmlInit reads the next fixture.

  auto capable = open_fake(
      "error nvmlEventSetWait_v2 4\n"
      "device 0 uuid=GPU-0 gpm=0 mig=0 name=NVIDIA H200\n"
      "frame\ns 0 gpu_util=1 mem_util=1\n");
  ASSERT_TRUE(capable);
  sample(*capable);
  const auto warnings = capable->take_warnings();
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("nvmlEventSetWait_v2 failed"), std::string::npos) << warnings[0];
}

TEST(Health, OldDriverWithoutEventSetWaitV2HasNoXidsButOtherCounters) {
  auto sampler = open_fake(std::string(kHeader) + frame("ecc_vol_unc=0 remap_corr=1", "x 0 79\n"), 0,
                           GPUSCOPE_FAKE_NVML_LEGACY_PATH);
  ASSERT_TRUE(sampler);
  LiveSnapshot s = sample(*sampler);
  EXPECT_FALSE(s.health[0].xid_supported);
  EXPECT_EQ(s.health[0].xid_total, 0u);
  EXPECT_EQ(s.health[0].ecc_volatile_uncorrected, 0u);  // A measured zero stays a zero.
  EXPECT_FALSE(s.health[0].remapped_rows_corrected);    // No nvmlDeviceGetRemappedRows.
}

TEST(Health, MigInstancesCarryNoHealthOfTheirOwn) {
  auto sampler = open_fake(
      "device 0 uuid=GPU-0 gpm=1 mig=2 name=NVIDIA H200\n"
      "frame\ns 0 gpu_util=50 mem_util=1 pcie_replay=4\n");
  ASSERT_TRUE(sampler);
  ASSERT_EQ(sampler->devices().size(), 3u);
  LiveSnapshot s = sample(*sampler);
  EXPECT_EQ(s.health[0].pcie_replays, 4u);
  EXPECT_FALSE(s.health[1].pcie_replays);
  EXPECT_FALSE(s.health[2].xid_supported);
}

}  // namespace
}  // namespace gpuscope::nvml
