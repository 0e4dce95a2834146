// The comparison of two runs as one self-contained HTML page (`diff --html FILE`): the same
// ReportDiff the text and JSON writers take (core/diff.h), as tables with paired bars: the
// change that made the difference beside the measured step-time ratio, headline numbers BASE
// and NEW, idle by cause, GPU time by category, precision, the kernels whose time changed
// most, and the findings resolved, new, changed and unchanged. Page rules: html_page.h.
#pragma once

#include <string>

#include "core/diff.h"
#include "render/html_page.h"

namespace gpuscope {

// `origin`: the version, date and command line shown on the page.
std::string diff_to_html(const ReportDiff& diff, const html::PageOrigin& origin = {});

}  // namespace gpuscope
