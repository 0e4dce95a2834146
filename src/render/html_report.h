// The report as one self-contained HTML page (`analyze --html FILE`, `run --html FILE`): the
// same Report the text and JSON writers take (core/report.h), drawn: headline numbers with how
// each was obtained (measured / estimate / computed / null, as the JSON report labels them),
// the window as a timeline of kernels and idle causes, idle causes by step, GPU time by
// category, top kernels, precision mix, device samples over time (captures), findings with
// their evidence. Nothing is analysed here: the pictures place the report's intervals, steps
// and samples on a time axis. Page rules: html_page.h. Size: bounded by the number of devices
// (every picture has a fixed number of columns or rows), about 100 KB per device.
#pragma once

#include <span>
#include <string>

#include "core/report.h"
#include "core/trace.h"
#include "render/html_page.h"

namespace gpuscope {

// `traces`: the traces the report was made from, for their device samples (matched to a
// device report by source and device id); may be empty (then no samples chart).
// `origin`: the version, date and command line shown on the page.
std::string report_to_html(const Report& report, std::span<const Trace> traces = {},
                           const html::PageOrigin& origin = {});

}  // namespace gpuscope
