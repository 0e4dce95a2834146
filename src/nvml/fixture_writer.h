// Writes what the sampler read in the fake NVML's fixture format (fake_nvml.cpp), so that a
// run on a real GPU (`gpuscope monitor --record FILE`) becomes a test input. Values go back
// to NVML's own units (mW, mJ, KB/s, GPM MiB/s); absent metrics are left out and the fake
// answers NOT_SUPPORTED for them, as the driver did.
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
  static StatusOr<std::unique_ptr<FixtureWriter>> create(const std::string& path,
                                                         const Sampler& sampler,
                                                         const std::string& comment);
  ~FixtureWriter();
  Status write_frame(const LiveSnapshot& snapshot);

 private:
  FixtureWriter() = default;
  std::FILE* f_ = nullptr;
  std::string path_;
};

// One "s INDEX ..." line's key=value text for a sample (exposed for tests).
std::string fixture_sample_fields(const DeviceSample& s);

}  // namespace gpuscope::nvml
