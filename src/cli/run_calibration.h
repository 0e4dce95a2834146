// What tracing adds to one kernel launch call on this host, measured by running
// gpuscope-calibrate (src/cupti/calibrate.cpp) plain and with the injection library.
#pragma once

#include <optional>
#include <string>

#include "core/trace.h"

namespace gpuscope::cli {

struct Calibration {
  std::optional<TracingCost> cost;
  std::string note;  // On failure: why, in one line.
};

// Runs `tool` plain, then with `inject` as CUDA_INJECTION64_PATH; the traced run's capture goes
// to a private scratch folder (mkdtemp in $TMPDIR or /tmp) that is removed afterwards. Each run
// takes well under a second.
Calibration calibrate_tracing(const std::string& tool, const std::string& inject);

}  // namespace gpuscope::cli
