#include "cli/text_layout.h"

#include <fmt/core.h>

#include "nvml/process_identity.h"

namespace gpuscope::cli {

std::string terminal_safe(std::string_view text) {
  const std::string valid = nvml::to_valid_utf8(text);
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

size_t display_width(std::string_view text) {
  size_t n = 0;
  for (char c : text) n += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  return n;
}

std::string clip(std::string_view raw, size_t n) {
  const std::string shown = terminal_safe(raw);
  std::string_view s = shown;
  if (s.size() <= n) return std::string(s);
  size_t cut = n > 3 ? n - 3 : 0;
  while (cut > 0 && (static_cast<unsigned char>(s[cut]) & 0xC0) == 0x80) --cut;
  return std::string(s.substr(0, cut)) + "...";
}

std::string wrap_text(std::string_view raw, size_t width, std::string_view indent) {
  const std::string shown = terminal_safe(raw);
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
