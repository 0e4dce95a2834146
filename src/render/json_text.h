// JSON text for the writers that stream JSON by hand (Perfetto export, `gpuscope monitor`
// JSONL): building a nlohmann::json value per string there would cost allocations per event.
#pragma once

#include <string>
#include <string_view>

namespace gpuscope {

// Appends s to out as a JSON string literal (quotes, backslash, control characters escaped;
// valid UTF-8 copied as it is, each invalid sequence replaced by U+FFFD as to_valid_utf8 does,
// so the output is always valid JSON).
void append_json_string(std::string& out, std::string_view s);

// Appends v as a JSON number ("%.6g", which round-trips the 6 significant digits shown), or
// `null` when v is NaN or infinite: JSON has no such numbers, and `nan` in the output made
// whole files unreadable. Returns false when it wrote null, so callers can warn.
bool append_json_number(std::string& out, double v);

// s as a JSON string literal.
inline std::string json_string(std::string_view s) {
  std::string out;
  append_json_string(out, s);
  return out;
}

}  // namespace gpuscope
