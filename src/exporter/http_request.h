// The exporter's HTTP/1.1 request-head parser: pure functions over bytes, so that the server
// (http_server.cpp) and the fuzzer (http_request_fuzz.cpp) run the same code.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace gpuscope::exporter {

// Where the request head at the front of `in` ends (just after the blank line), or npos. Bare
// LF line ends are accepted, as RFC 9112 section 2.2 allows.
size_t find_head_end(std::string_view in);

// Lines in `s` (its '\n' count).
size_t count_lines(std::string_view s);

// One request head: the request line and the header lines, blank line included.
struct RequestHead {
  int error_status = 0;       // 0: a request to answer; else 400, 431 or 505, and close.
  std::string method;         // As sent; the server answers 405 to all but GET and HEAD.
  std::string path;           // The target without its query string.
  bool close_after = false;   // HTTP/1.0, or "Connection: close".
  bool has_body = false;      // Content-Length > 0 or any Transfer-Encoding.
  std::string authorization;  // The last Authorization header's value; empty if none.
};

// Parses `head` (what find_head_end delimits). More than max_header_count header lines: 431.
RequestHead parse_request_head(std::string_view head, size_t max_header_count);

}  // namespace gpuscope::exporter
