// Reading a saved report back: the JSON that `gpuscope analyze --json` writes (schema
// "gpuscope.report/1", render/report_json.h) into the core's Report, so that `gpuscope diff`
// compares saved runs with new ones. Writing what was read gives the same text back
// (report_json_reader_test.cpp); what the JSON does not hold (the window's start time, the
// optimizer's share of an idle cause) stays at its default.
#pragma once

#include <string_view>

#include "core/report.h"
#include "core/status.h"

namespace gpuscope {

// True when `head` (the first bytes of a file) starts like a saved report: a JSON object whose
// first key is "devices" or "schema" (the writer sorts its keys). Traces start otherwise
// ("schemaVersion", "traceEvents", a capture's magic).
bool looks_like_report_json(std::string_view head);

// The report in `text`. Errors are one line: the byte offset for invalid JSON, the key for a
// value of the wrong type, or the schema when it is not gpuscope.report/1.
StatusOr<Report> report_from_json(std::string_view text);

}  // namespace gpuscope
