#include "render/text_layout.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include <fmt/core.h>

namespace gpuscope {

size_t display_width(std::string_view text) {
  size_t n = 0;
  for (char c : text) n += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  return n;
}

std::string clip(std::string_view raw, size_t n) { return cut(terminal_safe(raw), n); }

std::string cut(std::string_view s, size_t n) {
  if (s.size() <= n) return std::string(s);
  size_t cut = n > 3 ? n - 3 : 0;
  while (cut > 0 && (static_cast<unsigned char>(s[cut]) & 0xC0) == 0x80) --cut;
  return std::string(s.substr(0, cut)) + "...";
}

std::string elide_path(std::string_view raw, size_t n) {
  const std::string s = terminal_safe(raw);
  if (s.size() <= n) return s;
  auto is_char_start = [&](size_t i) { return i >= s.size() || (static_cast<unsigned char>(s[i]) & 0xC0) != 0x80; };
  const size_t slash = s.rfind('/');
  const size_t name_at = slash == std::string::npos ? 0 : slash;  // the name, with its slash
  const size_t name_bytes = s.size() - name_at;
  if (n <= 3) return std::string(std::min(n, size_t{3}), '.');
  if (name_bytes + 3 >= n) {
    // The end of the name only.
    size_t from = s.size() - (n - 3);
    while (!is_char_start(from)) ++from;
    return "..." + s.substr(from);
  }
  // The start of the directories, "...", the name.
  size_t head = n - 3 - name_bytes;
  while (head > 0 && !is_char_start(head)) --head;
  return s.substr(0, head) + "..." + s.substr(name_at);
}

std::string heading(const Painter& p, std::string_view title, std::string_view note, size_t width) {
  const size_t used = display_width(title);
  if (note.empty() || used + 12 > width) return p.bold(title) + "\n";
  std::string n(note);
  if (used + display_width(n) > width) {
    // Cut at a character boundary to the columns left, "..." marking the cut.
    size_t at = 0, chars = 0;
    const size_t keep = width - used - 3;
    while (at < n.size() && chars < keep) {
      ++at;
      while (at < n.size() && (static_cast<unsigned char>(n[at]) & 0xC0) == 0x80) ++at;
      ++chars;
    }
    n = n.substr(0, at) + "...";
  }
  return p.bold(title) + p.dim(n) + "\n";
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
    // A word wider than a whole line: the line's room filled with its start, the rest next.
    const size_t room = width > indent.size() ? width - indent.size() : 1;
    while (display_width(word) > room) {
      if (!line.empty()) {
        out += std::string(indent) + line + "\n";
        line.clear();
      }
      size_t at = 0, chars = 0;
      while (at < word.size() && chars < room) {
        ++at;
        while (at < word.size() && (static_cast<unsigned char>(word[at]) & 0xC0) == 0x80) ++at;
        ++chars;
      }
      out += std::string(indent) + std::string(word.substr(0, at)) + "\n";
      word.remove_prefix(at);
    }
    if (!line.empty() && indent.size() + display_width(line) + 1 + display_width(word) > width) {
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

std::string duration_text(double ns) {
  const double a = std::abs(ns);
  auto digits = [](double v) {
    return v >= 100 ? fmt::format("{:.0f}", v) : v >= 10 ? fmt::format("{:.1f}", v) : fmt::format("{:.2f}", v);
  };
  if (a >= 1e9) return digits(ns / 1e9) + " s";
  if (a >= 1e6) return digits(ns / 1e6) + " ms";
  if (a >= 1e3) return digits(ns / 1e3) + " us";
  return fmt::format("{:.0f} ns", ns);
}

std::string flops_text(double flops) {
  static constexpr std::pair<double, const char*> kPrefixes[] = {{1e24, "Y"}, {1e21, "Z"}, {1e18, "E"}, {1e15, "P"},
                                                                 {1e12, "T"}, {1e9, "G"},  {1e6, "M"},  {1e3, "k"}};
  for (const auto& [scale, prefix] : kPrefixes) {
    if (std::abs(flops) >= scale) {
      const double v = flops / scale;
      const double a = std::abs(v);
      return fmt::format("{} {}FLOP",
                         a >= 100  ? fmt::format("{:.0f}", v)
                         : a >= 10 ? fmt::format("{:.1f}", v)
                                   : fmt::format("{:.2f}", v),
                         prefix);
    }
  }
  return fmt::format("{:.0f} FLOP", flops);
}

}  // namespace gpuscope
