#include "render/json_text.h"

#include <cmath>
#include <cstdio>

#include <simdjson.h>

#include "core/text.h"

namespace gpuscope {

void append_json_string(std::string& out, std::string_view s) {
  // JSON text is UTF-8 (RFC 8259 section 8.1): invalid bytes (a driver's or a trace's) would
  // make the whole line or file unreadable. Valid text, the common case, takes the fast check.
  if (!simdjson::validate_utf8(s.data(), s.size())) {
    append_json_string(out, to_valid_utf8(s));
    return;
  }
  out.push_back('"');
  for (char c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\r':
        out += "\\r";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof(buf), "\\u%04x", static_cast<unsigned>(static_cast<unsigned char>(c)));
          out += buf;
        } else {
          out.push_back(c);
        }
    }
  }
  out.push_back('"');
}

bool append_json_number(std::string& out, double v) {
  if (!std::isfinite(v)) {
    out += "null";
    return false;
  }
  char buf[48];
  std::snprintf(buf, sizeof(buf), "%.6g", v);
  out += buf;
  return true;
}

}  // namespace gpuscope
