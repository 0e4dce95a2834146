#include "core/text.h"

#include <fmt/core.h>

namespace gpuscope {
namespace {

constexpr std::string_view kReplacement = "\xEF\xBF\xBD";  // U+FFFD

}  // namespace

bool is_valid_utf8(std::string_view s) { return to_valid_utf8(s).size() == s.size(); }

std::string to_valid_utf8(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      out += static_cast<char>(c);
      ++i;
      continue;
    }
    // Unicode 15, table 3-7: well-formed byte sequences.
    int need = 0;
    unsigned char lo = 0x80, hi = 0xBF;
    if (c >= 0xC2 && c <= 0xDF)
      need = 1;
    else if (c == 0xE0)
      need = 2, lo = 0xA0;
    else if ((c >= 0xE1 && c <= 0xEC) || c == 0xEE || c == 0xEF)
      need = 2;
    else if (c == 0xED)
      need = 2, hi = 0x9F;
    else if (c == 0xF0)
      need = 3, lo = 0x90;
    else if (c >= 0xF1 && c <= 0xF3)
      need = 3;
    else if (c == 0xF4)
      need = 3, hi = 0x8F;
    size_t j = i + 1;
    int k = 0;
    for (; k < need && j < s.size(); ++k, ++j) {
      const auto d = static_cast<unsigned char>(s[j]);
      if (d < (k == 0 ? lo : 0x80) || d > (k == 0 ? hi : 0xBF)) break;
    }
    if (need > 0 && k == need)
      out.append(s.substr(i, j - i));
    else
      out += kReplacement;  // The maximal invalid subpart s[i, j) becomes one U+FFFD.
    i = j;
  }
  return out;
}

std::string_view truncate_utf8(std::string_view text, size_t max_bytes) {
  if (text.size() <= max_bytes) return text;
  size_t cut = max_bytes;
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;
  return text.substr(0, cut);
}

std::string terminal_safe(std::string_view text) {
  const std::string valid = to_valid_utf8(text);
  std::string out;
  out.reserve(valid.size());
  for (size_t i = 0; i < valid.size(); ++i) {
    const auto c = static_cast<unsigned char>(valid[i]);
    if (c < 0x20 || c == 0x7f) {
      out += fmt::format("\\x{:02x}", c);
    } else if (c == 0xC2 && i + 1 < valid.size() && static_cast<unsigned char>(valid[i + 1]) < 0xA0) {
      out += fmt::format("\\u{:04x}", static_cast<unsigned char>(valid[++i]));  // C1: U+0080..U+009F.
    } else if (c == '\\') {
      out += "\\\\";
    } else {
      out += static_cast<char>(c);
    }
  }
  return out;
}

}  // namespace gpuscope
