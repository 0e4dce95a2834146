// Writing a file the user named with an option (`--html FILE`, `--perfetto FILE`): never
// destroying what is there by accident, never leaving a half-written file.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace gpuscope {

// The checks write_output_file makes before writing, for commands that would rather fail
// before their work than after it. `option` names the flag in messages ("--html"). `path`
// must be a name (not empty, not "-"); not one of `inputs` (the same file by device and inode
// after following links, or the same name): the output must never replace what it was made
// from; and, when something is already there (after following links), a regular file that
// may be written: not a directory, a device, a FIFO or a socket (replacing /dev/null or a
// pipe with a regular file surprises everyone), and not read-only (its mode has no write bit,
// or this user may not write it). A symlink at `path` is replaced, never written through.
Status check_output_path(std::string_view option, const std::string& path, const std::vector<std::string>& inputs);

// Writes `path` atomically: into a new temporary file beside it (mkstemp, so nothing else is
// touched), filled by `fill` through its descriptor (which `fill` must not close), flushed to
// disk, then renamed over `path`; a reader sees the old file or the whole new one, never a
// part. The new file keeps the permissions of the file it replaces, else 0666 less the umask
// (as fopen would). Refuses, touching nothing, when check_output_path does. `fill`'s error (one
// line) is returned as is; other errors are one line naming the file and what to do.
Status write_output_file(std::string_view option, const std::string& path, const std::vector<std::string>& inputs,
                         const std::function<Status(int fd)>& fill);
// The same with the whole text in memory.
Status write_output_file(std::string_view option, const std::string& path, const std::vector<std::string>& inputs,
                         std::string_view text);

}  // namespace gpuscope
