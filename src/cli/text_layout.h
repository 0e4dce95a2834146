// Text layout shared by the text renderers (analyze's report, diff): cutting and wrapping to
// a terminal's columns without breaking UTF-8.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace gpuscope::cli {

// `s` with control characters (C0, DEL) shown escaped ("\x1b"), so names from a trace (kernel,
// op, file names) cannot move the cursor, retitle or clear the user's terminal.
std::string printable(std::string_view s);

// At most n bytes of printable(s), "..." marking a cut; never cuts inside a UTF-8 character.
std::string clip(std::string_view s, size_t n);

// Word-wraps printable(text) to `width` columns, each line prefixed by `indent`.
std::string wrap_text(std::string_view text, size_t width, std::string_view indent);

}  // namespace gpuscope::cli
