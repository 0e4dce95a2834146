// The terminal report: headline first (utilization vs SM-active estimate vs MFU), then idle
// causes, kernels, precision, fusion, findings. Fits style.width columns (60 or more): bars
// narrow, long names and notes are cut or wrapped, never the terminal's own wrapping.
#pragma once

#include <cstdio>
#include <string>

#include "core/report.h"

namespace gpuscope {

inline constexpr int kMinTextWidth = 60;
inline constexpr int kMaxTextWidth = 140;

struct TextStyle {
  bool color = false;
  int width = 80;
};

// Colour when `stream` is a terminal and NO_COLOR is unset (https://no-color.org). Width: the
// terminal's columns (TIOCGWINSZ, else $COLUMNS) within [kMinTextWidth, kMaxTextWidth] when
// `stream` is a terminal, else 80.
TextStyle style_for(FILE* stream);

std::string render_report(const Report& report, const TextStyle& style);

}  // namespace gpuscope
