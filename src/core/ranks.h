// The cross-rank summary: busy and step-time spread over the device reports of several traces.
#pragma once

#include <vector>

#include "core/report.h"

namespace gpuscope {

// The summary of `devices` (one report per rank), with the straggler finding when the slowest
// rank's step is at least 10% longer than the median of the others.
RankSummary summarize_ranks(const std::vector<DeviceReport>& devices);

}  // namespace gpuscope
