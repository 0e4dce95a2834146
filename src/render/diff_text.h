// The terminal comparison of two runs (`gpuscope diff`): the change that made the difference
// first, then the headline numbers side by side, idle by cause, GPU time by category, the
// kernels that changed most, precision, findings. Fits style.width columns (80).
#pragma once

#include <string>

#include "core/diff.h"
#include "render/report_text.h"

namespace gpuscope {

std::string render_diff(const ReportDiff& diff, const TextStyle& style);

}  // namespace gpuscope
