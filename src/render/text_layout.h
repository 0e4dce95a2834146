// Text layout shared by the text renderers (analyze's report, diff): cutting and wrapping to
// a terminal's columns without breaking UTF-8.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include <fmt/core.h>

#include "core/text.h"  // terminal_safe

namespace gpuscope {

// ANSI colour, on only for a terminal without NO_COLOR (TextStyle::color). Pad fields before
// painting them, so escapes never shift columns.
struct Painter {
  bool on;
  std::string wrap(std::string_view code, std::string_view text) const {
    if (!on) return std::string(text);
    return fmt::format("\033[{}m{}\033[0m", code, text);
  }
  std::string bold(std::string_view t) const { return wrap("1", t); }
  std::string dim(std::string_view t) const { return wrap("2", t); }
  std::string red(std::string_view t) const { return wrap("31", t); }
  std::string green(std::string_view t) const { return wrap("32", t); }
  std::string yellow(std::string_view t) const { return wrap("33", t); }
  std::string cyan(std::string_view t) const { return wrap("36", t); }
};

// At most n bytes of terminal_safe(s), "..." marking a cut; never cuts inside a UTF-8 character.
std::string clip(std::string_view s, size_t n);
// The same for text already made safe (terminal_safe, or joined from clip's results): cut
// only, not escaped again.
std::string cut(std::string_view safe, size_t n);

// At most n bytes of terminal_safe(path) keeping its end, the file name: the middle of the
// directories becomes "...", or, when the file name alone is too long, its start does
// ("/data/runs/.../rank0.json.gz", "...ng_name.json.gz"). Never cuts inside a UTF-8 character.
std::string elide_path(std::string_view path, size_t n);

// Characters (code points) in valid UTF-8 text: its columns on a terminal (no wide characters).
size_t display_width(std::string_view text);

// Word-wraps terminal_safe(text) to `width` columns, each line prefixed by `indent`. A word
// wider than a line (a path, a mangled name) is broken where the line ends.
std::string wrap_text(std::string_view text, size_t width, std::string_view indent);

// A section heading: `title` in bold, then `note` dimmed where it fits in `width` columns
// (cut, or left out when under 12 columns would be left of it); ends with a newline.
std::string heading(const Painter& p, std::string_view title, std::string_view note, size_t width);

// "12.5 ms", "3.20 s", "850 us", "40 ns": a duration with the unit that keeps 3 or 4
// significant digits, for messages and the text renderers.
std::string duration_text(double ns);

// "14.1 TFLOP", "520 GFLOP", "3.20 PFLOP": FLOPs with an SI prefix, 3 significant digits.
std::string flops_text(double flops);

}  // namespace gpuscope
