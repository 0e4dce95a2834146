// The machine-readable comparison of two runs: schema "gpuscope.diff/1" (docs/diff.md).
// Times are milliseconds per step; ratios are NEW / BASE; unknown values are null.
#pragma once

#include <string>

#include "core/diff.h"

namespace gpuscope {

inline constexpr const char* kDiffSchema = "gpuscope.diff/1";

// Pretty-printed JSON text of the diff (ends with a newline).
std::string diff_to_json(const ReportDiff& diff);

}  // namespace gpuscope
