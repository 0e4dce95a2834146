// The capture files of one `gpuscope run`: where the traced processes write them, what is
// appended to them afterwards, and the names they end up with.
//
// Contract: a run never touches a file it did not create. The traced processes write into a
// staging folder made for this run alone (mkdtemp, mode 0700, beside the output), each capture
// created with O_EXCL|O_NOFOLLOW (CaptureWriter::open_new_for_process). Afterwards the run
// appends only to the regular files of its own user in that folder (O_NOFOLLOW), then moves
// each to its final name without replacing anything there (renameat2 RENAME_NOREPLACE, or
// link+unlink where the filesystem lacks it): a taken name gets a numbered one beside it.
// Several runs started together in one folder, with or without the same --output, therefore
// never lose or mix captures.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/device_sample.h"
#include "core/trace.h"

namespace gpuscope::cli {

// $TMPDIR, or /tmp.
std::string temp_dir();
// mkdtemp(prefix + "-XXXXXX"): a new folder of mode 0700. Returns its path, or empty with *error
// set to one line.
std::string make_private_dir(const std::string& prefix, std::string* error);
// Removes the regular files and symlinks directly inside `dir` (a folder made by
// make_private_dir), then `dir` itself; leaves anything else. Returns true if `dir` is gone.
bool remove_private_dir(const std::string& dir);

// "gpuscope-run-YYYYmmdd-HHMMSS-<pid>-<4 random hex digits>": unique among runs started in the
// same second (pid), and unlikely to meet a leftover of an earlier run with the same pid.
std::string default_stem();
// `path` made absolute against the current folder.
std::string absolute(const std::string& path);
// Moves `from` to `to` unless `to` exists (any kind of file, a dangling symlink included).
// Returns 0 or the errno (EEXIST when `to` exists).
int rename_no_replace(const std::string& from, const std::string& to);

class RunCaptures {
 public:
  // `output`: the --output file, absolute (empty: default_stem() in the current folder). The
  // stem is output without a trailing ".gpuscope". Creates the staging folder
  // "<stem>.partial-XXXXXX". On failure returns false with *error set to one line.
  bool begin(const std::string& output, std::string* error);

  // GPUSCOPE_CAPTURE_PREFIX for the traced program.
  std::string prefix() const { return staging_ + "/capture"; }
  const std::string& staging_dir() const { return staging_; }

  // The captures the traced processes wrote: "capture.<pid>[-n].gpuscope" regular files of
  // this user in the staging folder, sorted.
  std::vector<std::string> staged() const;

  // Appends the device samples and the tracing cost (if any) to every staged capture. Returns
  // one line per capture that could not be appended to.
  std::vector<std::string> append(const std::vector<DeviceSample>& samples,
                                  const std::optional<TracingCost>& cost) const;

  // Moves the staged captures to their final names, removes the staging folder, and returns the
  // final paths. One capture: the output file; several (or the output taken): "<stem>.<pid>.gpuscope"
  // each. A taken name is never replaced: the next free "<name>.<k>.gpuscope" is used and a line
  // saying so is added to *notes.
  std::vector<std::string> publish(std::vector<std::string>* notes);

  // Removes the staging folder if nothing was written into it (e.g. nothing was traced).
  void discard();

 private:
  std::string output_;
  std::string stem_;
  std::string staging_;
};

}  // namespace gpuscope::cli
