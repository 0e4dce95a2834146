// The terminal report: headline first (utilization vs SM-active estimate vs MFU), then idle
// causes, kernels, precision, fusion, findings. Fits 100 columns.
#pragma once

#include <cstdio>
#include <string>

#include "core/report.h"

namespace gpuscope::cli {

struct TextStyle {
  bool color = false;
  int width = 100;
};

// Colour when `stream` is a terminal and NO_COLOR is unset (https://no-color.org).
TextStyle style_for(FILE* stream);

std::string render_report(const Report& report, const TextStyle& style);

}  // namespace gpuscope::cli
