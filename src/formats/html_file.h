// Writing an HTML page (html_report.h, html_diff.h) to the file the user named.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace gpuscope {

// Writes `text` to `path` atomically: into a new temporary file beside it (mkstemp, so nothing
// else is touched), flushed, then renamed over `path`; a reader sees the old file or the whole
// new one, never a part. Refuses, touching nothing, when check_html_path does. Errors are one
// line naming the file and what to do.
Status write_html_file(const std::string& path, std::string_view text, const std::vector<std::string>& inputs);

// The checks write_html_file makes before writing, for commands that would rather fail before
// their work than after it: `path` is a name (not empty, not "-"), not a directory, and not one
// of `inputs` (the same file by device and inode, or the same name): the page must never
// replace a trace it was made from.
Status check_html_path(const std::string& path, const std::vector<std::string>& inputs);

}  // namespace gpuscope
