// The cross-rank summary: busy and step-time spread over the device reports of several traces.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/report.h"
#include "core/trace.h"

namespace gpuscope {

// The summary of `devices` (one report per rank), with the straggler finding when the slowest
// rank's step is at least 10% longer than the median of the others.
RankSummary summarize_ranks(const std::vector<DeviceReport>& devices);

// Why `traces` (each with GPU work; `devices` are their reports) are not the ranks of one job,
// or nullopt when they agree: every trace names its rank and world size (Kineto's
// distributedInfo, a capture's process record), the ranks are distinct and below one common
// world size, the devices that ran work are one model (where the trace names it), and the
// traces' time ranges overlap on their own clocks. Several reasons are joined with "; ".
std::optional<std::string> job_disagreement(const std::vector<const Trace*>& traces,
                                            const std::vector<DeviceReport>& devices);

}  // namespace gpuscope
