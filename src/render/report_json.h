// The machine-readable report: schema "gpuscope.report/1". Unknown values are null.
#pragma once

#include <string>

#include "core/report.h"

namespace gpuscope {

// Pretty-printed JSON text of the report (ends with a newline).
std::string report_to_json(const Report& report);

}  // namespace gpuscope
