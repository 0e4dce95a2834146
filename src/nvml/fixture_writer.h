// Writes what the sampler read in the fake NVML's fixture format (fake_nvml.cpp), so that a
// run on a real GPU (`gpuscope monitor --record FILE`) becomes a test input. Values go back
// to NVML's own units (mW, mJ, KB/s, GPM MiB/s); absent metrics are left out and the fake
// answers NOT_SUPPORTED for them, as the driver did. Health counters go on the same lines and
// each XID seen becomes an "x" line of the frame it was seen in; the device lines wait for the
// first frame, whose health says how many NVLinks to declare.
#pragma once

#include <cstdio>
#include <string>
#include <vector>

#include "core/status.h"
#include "nvml/sampler.h"

namespace gpuscope::nvml {

class FixtureWriter {
 public:
  // Creates `path` and writes the header: driver and devices (MIG instances are not written;
  // the fake derives them from a device's mig= count).
  static StatusOr<std::unique_ptr<FixtureWriter>> create(const std::string& path, const Sampler& sampler,
                                                         const std::string& comment);
  ~FixtureWriter();
  Status write_frame(const LiveSnapshot& snapshot);

 private:
  FixtureWriter() = default;
  void write_devices(const LiveSnapshot& snapshot);
  std::FILE* f_ = nullptr;
  std::string path_;
  std::vector<DeviceInfo> devices_;
  bool devices_written_ = false;
  std::vector<std::vector<XidCount>> xids_written_;  // Per device: XIDs already written.
  std::vector<int32_t> nvlinks_;                     // Per device: NVLinks declared.
};

// One "s INDEX ..." line's key=value text for a sample (exposed for tests).
std::string fixture_sample_fields(const DeviceSample& s);
// The health keys of an "s" line (ECC, remapped rows, PCIe replays, power limit, NVLink);
// `nvlinks`: the link count written on the device line.
std::string fixture_health_fields(const DeviceHealth& h, int32_t nvlinks);

}  // namespace gpuscope::nvml
