// The Prometheus text exposition lines, written once for the exporter's family writers
// (prometheus.cpp, prometheus_health.cpp): a family's HELP and TYPE, and one sample line
// (NaN is not a reading: no line).
#pragma once

#include <cmath>
#include <string>

#include <fmt/core.h>

namespace gpuscope::exporter {

inline void family_header(std::string& out, const char* name, const char* type, const char* help) {
  out += fmt::format("# HELP {} {}\n# TYPE {} {}\n", name, help, name, type);
}

inline void value_line(std::string& out, const char* name, const std::string& labels, double v) {
  if (std::isnan(v)) return;
  out += fmt::format("{}{{{}}} {}\n", name, labels, v);
}

}  // namespace gpuscope::exporter
