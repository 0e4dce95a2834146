// A report as one CSV table (RFC 4180: fields holding a comma or quote are quoted, quotes
// doubled, lines end in CRLF; control characters escaped as csv_field says), for pasting into
// a spreadsheet: `analyze --csv TABLE`.
// Values that are unmeasured (std::optional without a value) are empty cells, never 0.
//
// Tables (one row per entry, for every device of the report in report order; with more than
// one device each row starts with the device's source and device id, so rows stay apart):
// - steps:   number,start_ms,duration_ms,busy_pct,matmul_flops (start from the window's start)
// - kernels: name,category,count,ms,pct (every kernel name, most time first; pct of kernel time)
// - idle:    cause,ms,pct,ms_per_step,top_host (pct of the window; top_host: what the host did
//            during most of that idle time)
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "core/report.h"

namespace gpuscope {

enum class CsvTable { kSteps, kKernels, kIdle };

// "steps", "kernels", "idle"; nullopt for anything else.
std::optional<CsvTable> csv_table_from_name(std::string_view name);

std::string report_to_csv(const Report& report, CsvTable table);

// One field as RFC 4180 writes it: quoted only when it must be. Text from a trace or a driver
// is first made terminal_safe (core/text.h): a CSV printed to a terminal cannot drive it, and
// CR and LF inside a name are shown as \x0d and \x0a, never a broken row.
std::string csv_field(std::string_view text);

}  // namespace gpuscope
