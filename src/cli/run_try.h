// `gpuscope run --try FIX[,FIX...]|auto -- CMD`: measures advised fixes on the user's own
// program, with no code change.
//
// Each trial is a run of the same command under `gpuscope run` (GPUSCOPE runner, below) with
// bounded tracing: the Python bootstrap applies the trial's fixes when the program imports torch
// (GPUSCOPE_TRY; environment fixes are set here), times `steps` steps after `warmup` untraced
// (GPUSCOPE_TRY_WARMUP, GPUSCOPE_SKIP_STEPS), keeps the losses, traces `traced_steps` more for
// the capture, writes its measurement (GPUSCOPE_TRY_RESULT) and ends the program. The first
// trial runs the program as it is; its report's findings give the estimates (and, with `auto`,
// the fixes to try). Trials run one after another, never at once, on the same GPUs.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/trial.h"

namespace gpuscope::cli {

struct TryRequest {
  std::string fixes;                 // --try: "tf32,bf16" or "auto".
  std::vector<std::string> command;  // The program and its arguments.
  std::string output_dir;            // Where captures, logs and results go (created).
  int steps = 30;                    // Steps timed per trial.
  int warmup = 10;                   // Steps run before timing (compilation, autotuning).
  int traced_steps = 20;             // Steps traced after timing, for the captures.
  int rounds = 1;                    // Rounds of runs (as is, then each fix), pooled per fix.
  std::string runner;                // The `gpuscope` executable that runs each trial.
  bool json = false;                 // The result as one JSON document (gpuscope.try/1).
  std::string html;                  // The as-is and best tried run side by side (diff page).
};

// What one trial measured.
struct TrialRun {
  std::string label;  // "as is", a fix's name, or "together".
  std::vector<const TrialFix*> fixes;
  int exit_code = 0;
  std::string error;             // Set when the trial gave no measurement.
  std::string capture;           // Its capture, when one was written.
  std::string log;               // The trial's program and runner output.
  std::vector<int64_t> step_ns;  // Timed step periods (GPU timeline where measured).
  std::string clock;             // "device" or "host": where step_ns come from.
  std::vector<double> losses;
  struct Outcome {
    bool applied = false;
    std::vector<std::string> details;
  };
  std::map<std::string, Outcome> outcome;  // Per fix, what the bootstrap did.
};

// Reads a trial's result file (written by the bootstrap's _gpuscope_try.write_result) into run.
// Returns false with run->error set when it is missing or malformed.
bool read_trial_result(const std::string& path, TrialRun* run);

// Why a trial's fixes were not all applied (empty when they were): a fix is applied when the
// bootstrap says so, or when it is an environment fix. Python fixes the bootstrap never
// mentioned had nothing to act on (no optimizer of those classes, no DataLoader).
std::string not_applied_reason(const TrialRun& run);

// Runs the trials and prints the comparison; returns the exit code (the as-is trial's code when
// it failed, 2 for bad input, else 0).
int run_try(const TryRequest& request);

}  // namespace gpuscope::cli
