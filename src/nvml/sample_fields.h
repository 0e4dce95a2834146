// The metrics of a DeviceSample as a table, so that monitor's JSONL/CSV columns, the
// exporter's supported-metric gauge and the fixture recorder name each field once.
#pragma once

#include <optional>
#include <vector>

#include "core/device_sample.h"

namespace gpuscope::nvml {

struct SampleField {
  const char* name;  // The DeviceSample member's name, e.g. "sm_active_pct".
  bool gpm;          // Comes from GPM (absent on GPUs before Hopper).
  std::optional<double> (*get)(const DeviceSample&);
};

// Every optional metric of DeviceSample, in declaration order.
const std::vector<SampleField>& device_sample_fields();

}  // namespace gpuscope::nvml
