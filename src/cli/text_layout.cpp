#include "cli/text_layout.h"

#include <fmt/core.h>

namespace gpuscope::cli {

std::string printable(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u == 0x7f) {
      out += fmt::format("\\x{:02x}", u);
    } else {
      out += c;
    }
  }
  return out;
}

std::string clip(std::string_view raw, size_t n) {
  const std::string shown = printable(raw);
  std::string_view s = shown;
  if (s.size() <= n) return std::string(s);
  size_t cut = n > 3 ? n - 3 : 0;
  while (cut > 0 && (static_cast<unsigned char>(s[cut]) & 0xC0) == 0x80) --cut;
  return std::string(s.substr(0, cut)) + "...";
}

std::string wrap_text(std::string_view raw, size_t width, std::string_view indent) {
  const std::string shown = printable(raw);
  std::string_view text = shown;
  std::string out, line;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t next = text.find(' ', pos);
    if (next == std::string_view::npos) next = text.size();
    std::string_view word = text.substr(pos, next - pos);
    if (!line.empty() && indent.size() + line.size() + 1 + word.size() > width) {
      out += std::string(indent) + line + "\n";
      line.clear();
    }
    if (!line.empty()) line += ' ';
    line += word;
    pos = next + 1;
  }
  if (!line.empty()) out += std::string(indent) + line + "\n";
  return out;
}

}  // namespace gpuscope::cli
