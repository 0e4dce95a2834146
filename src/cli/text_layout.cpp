#include "cli/text_layout.h"

#include <algorithm>

#include <fmt/core.h>


namespace gpuscope::cli {

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

}  // namespace gpuscope::cli
