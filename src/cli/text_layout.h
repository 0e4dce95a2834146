// Text layout shared by the text renderers (analyze's report, diff): cutting and wrapping to
// a terminal's columns without breaking UTF-8.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace gpuscope::cli {

// At most n bytes of s, "..." marking a cut; never cuts inside a UTF-8 character ("→").
std::string clip(std::string_view s, size_t n);

// Word-wraps `text` to `width` columns, each line prefixed by `indent`.
std::string wrap_text(std::string_view text, size_t width, std::string_view indent);

}  // namespace gpuscope::cli
