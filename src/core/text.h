// Text from elsewhere (kernel, op and file names from a trace; GPU names from the driver; other
// users' command lines) made safe for where it is shown. One implementation of each rule, used
// by every front end: the JSON writers, the terminal, CSV, the Prometheus exposition.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace gpuscope {

// `bytes` with every maximal invalid UTF-8 subsequence replaced by U+FFFD (overlong forms,
// surrogates and code points above U+10FFFF are invalid). Valid text is returned unchanged.
std::string to_valid_utf8(std::string_view bytes);
bool is_valid_utf8(std::string_view bytes);
// The longest prefix of valid UTF-8 `text` of at most max_bytes that ends on a character
// boundary.
std::string_view truncate_utf8(std::string_view text, size_t max_bytes);

// Safe for a terminal: valid UTF-8, control characters (C0, DEL, C1) and backslashes shown
// escaped ("\x1b", "\u0085", "\\"), so it cannot move the cursor, retitle or clear the user's
// terminal. Printable text is unchanged.
std::string terminal_safe(std::string_view text);

}  // namespace gpuscope
