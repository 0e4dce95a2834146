// Helpers for the analysis tests: run the analysis on a built trace and look things up.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <string_view>

#include "core/analysis.h"

namespace gpuscope::testing {

// The report's entry for the idle cause named `name` (an empty one if there is none).
inline const IdleCause& cause(const DeviceReport& r, std::string_view name) {
  for (const auto& c : r.idle_causes) {
    if (idle_cause_name(c.cause) == name) return c;
  }
  static IdleCause none;
  return none;
}

inline double idle_sum_pct(const DeviceReport& r) {
  double s = 0;
  for (const auto& c : r.idle_causes) s += c.pct;
  return s;
}

inline const Finding* FindingById(const DeviceReport& r, const std::string& id) {
  for (const auto& f : r.findings)
    if (f.id == id) return &f;
  return nullptr;
}

// The one device report of `t`.
inline DeviceReport only(const Trace& t, const AnalysisOptions& o = {}) {
  auto reports = analyze_trace(t, o);
  EXPECT_EQ(reports.size(), 1u);
  return reports.empty() ? DeviceReport{} : reports.front();
}

}  // namespace gpuscope::testing
