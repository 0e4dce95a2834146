// The metrics of a DeviceSample as a run-time table (from GPUSCOPE_DEVICE_SAMPLE_FIELDS), for
// monitor's JSONL/CSV columns, the exporter's supported-metric gauge and the fixture recorder.
#pragma once

#include <optional>
#include <vector>

#include "core/device_sample.h"

namespace gpuscope::nvml {

struct SampleField {
  const char* name;  // The DeviceSample member's name, e.g. "sm_active_pct".
  bool gpm;          // Comes from GPM (absent on GPUs before Hopper).
  SampleUnit unit;
  std::optional<double> (*get)(const DeviceSample&);
};

// Every optional metric of DeviceSample, in the order of GPUSCOPE_DEVICE_SAMPLE_FIELDS.
const std::vector<SampleField>& device_sample_fields();

}  // namespace gpuscope::nvml
