// Pieces shared by the HTML front ends (html_report.cpp for `analyze`/`run`, html_diff.cpp for
// `diff`): escaping, the page shell, the colour of each idle cause, number formatting.
//
// Contract of every page: one self-contained file. No script, no external resource: the
// Content-Security-Policy in the head forbids loading anything (default-src 'none'), so a page
// that tried would say so in the browser's console (the headless-Chromium test checks it has
// nothing to say). Pictures are inline SVG written here.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "core/report.h"

namespace gpuscope::html {

// Text from a trace (kernel, op and file names) made safe for HTML text and attribute values:
// invalid UTF-8 replaced the way the JSON report replaces it (U+FFFD per bad sequence,
// nlohmann's error_handler_t::replace), & < > " ' as entities, other control characters than
// tab and newline shown as "\xNN".
std::string escape(std::string_view text);

// Where a page came from, shown on it: the gpuscope version, when it was written, and the
// command line that wrote it. Empty fields are left out.
struct PageOrigin {
  std::string version;       // "0.1.0"
  std::string date;          // "2026-12-03 12:40 UTC"
  std::string command_line;  // "gpuscope analyze --html r.html trace.json.gz"
};

// "<!DOCTYPE html>...<body>" with the style sheet; `title` is escaped here.
std::string page_head(std::string_view title);
// A line under the page's heading: "gpuscope VERSION · DATE · COMMAND"; "" when `origin` is empty.
std::string origin_line(const PageOrigin& origin);
// "</body></html>" after a footer line naming the tool (and its version, the date and the
// command line, from `origin`).
std::string page_tail(const PageOrigin& origin = {});

// A kernel or op name for a table cell: escaped, and when longer than `max_chars` characters
// (demangled templates run to hundreds), its first max_chars characters and "…", the full
// name in a tooltip (title attribute).
inline constexpr size_t kNameChars = 120;
std::string short_name(std::string_view name, size_t max_chars = kNameChars);

// Colour of the timeline's "kernels running" and of each idle cause (one per cause in
// kIdleCauseTable order, distinct, readable on white).
inline constexpr std::string_view kKernelColour = "#2e9d4e";
std::string_view cause_colour(IdleCauseId cause);

// A legend line: a swatch and a name for kernels and each idle cause.
std::string cause_legend();

// "12.3%" or, when empty, a null marker (<span class=null>null</span>).
std::string pct(std::optional<double> value, int decimals = 1);
// "12.35 ms" from nanoseconds.
std::string ms(double ns);
// A horizontal bar of `pct` percent (0..100, clamped), as an inline block.
std::string bar(double pct, std::string_view colour = "#4a78c2");
// A label saying how a number was obtained: "measured", "estimate", "computed" or "null".
std::string provenance(std::string_view kind);

}  // namespace gpuscope::html
