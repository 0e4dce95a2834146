// Starting and supervising the traced program for `gpuscope run`. No CUDA, no gpuscope
// dependencies: tested with plain child programs (src/cupti/run_process_test.cpp).
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace gpuscope::cli {

struct ChildSpec {
  std::vector<std::string> argv;  // argv[0] is looked up in PATH.
  // Variables set (or replaced) in the child's environment; everything else is inherited.
  std::vector<std::pair<std::string, std::string>> env;
  // Variables removed from the child's environment (after `env` is applied).
  std::vector<std::string> unset_env;
  // If set, the child's stdout / stderr go to this file (created or truncated) instead of
  // gpuscope's.
  std::string stdout_path;
  std::string stderr_path;
  // The child's stdout goes to gpuscope's stderr (unless stdout_path is set): for when
  // gpuscope's own stdout carries a document (`run --json`) the program must not mix into.
  bool stdout_to_stderr = false;
};

struct ChildResult {
  // What a shell would report: the exit status, or 128 + signal number if the child died of a
  // signal; 127 if the command could not be found, 126 if it could not be executed (as
  // `timeout` and `env` do).
  int exit_code = 0;
  std::optional<int> signal;  // Set when the child died of a signal.
  std::string error;          // Set when it could not be started: one line.
};

// Runs the child in gpuscope's process group (so a terminal's Ctrl-C reaches both directly) and
// waits for it. SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2 and SIGWINCH sent to gpuscope
// are forwarded to the child, except ones the terminal already delivered to the whole
// group (si_code SI_KERNEL), which would otherwise arrive twice. gpuscope itself does not die
// of them: it waits for the child and reports.
//
// `on_started`, if given, runs in the parent once the child exists (e.g. to start sampling).
// Blocks the forwarded signals in the calling thread for the duration; threads started
// after this call inherit the block (start helper threads from on_started).
ChildResult run_child(const ChildSpec& spec, void (*on_started)(void*) = nullptr, void* context = nullptr);

}  // namespace gpuscope::cli
