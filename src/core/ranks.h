// The cross-rank summary: busy and step-time spread over the device reports of several traces.
#pragma once

#include <climits>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/report.h"
#include "core/trace.h"

namespace gpuscope {

// The summary of `devices` (one report per rank), with the straggler finding when the slowest
// rank's step is at least 10% longer than the median of the others.
RankSummary summarize_ranks(const std::vector<DeviceReport>& devices);

// What the job check needs of one trace, so that traces can be dropped once analysed (a
// job's traces are read and analysed a few at a time).
struct RankFacts {
  std::optional<int32_t> rank;
  std::optional<int32_t> world_size;
  std::vector<std::string> device_models;  // Names of the devices that ran work, where known.
  // The time range of the trace's events on its own clock: [earliest start, latest end).
  int64_t start_ns = INT64_MAX;
  int64_t end_ns = INT64_MIN;
};

// The facts of `trace`, whose device reports are `devices`.
RankFacts rank_facts(const Trace& trace, const std::vector<DeviceReport>& devices);

// Why the traces described by `traces` (each with GPU work) are not the ranks of one job, or
// nullopt when they agree: every trace names its rank and world size (Kineto's
// distributedInfo, a capture's process record), the ranks are distinct and below one common
// world size, the devices that ran work are one model (where the trace names it), and the
// traces' time ranges overlap on their own clocks. Several reasons are joined with "; ".
std::optional<std::string> job_disagreement(const std::vector<RankFacts>& traces);

}  // namespace gpuscope
