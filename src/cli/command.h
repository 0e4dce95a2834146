// Subcommand registry: each front end (analyze, top, monitor, serve, run, export) lives in its
// own cmd_*.cpp, compiled straight into the gpuscope executable, and registers itself here
// with a static CommandRegistration. main.cpp and command.cpp know none of them by name.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <CLI/CLI.hpp>

namespace gpuscope::cli {

// Called once with the subcommand's CLI::App to declare its options; returns the action to
// run if that subcommand is chosen. The action returns the process exit code
// (0 success, 1 the analysed program or a check failed, 2 bad input or usage).
using CommandSetup = std::function<std::function<int()>(CLI::App&)>;

struct CommandSpec {
  std::string name;
  std::string description;
  int order = 0;  // Position in --help.
  CommandSetup setup;
};

std::vector<CommandSpec>& command_registry();

struct CommandRegistration {
  explicit CommandRegistration(CommandSpec spec) { command_registry().push_back(std::move(spec)); }
};

// Checks shared by the commands' options. CLI11's PositiveNumber and Range let NaN through
// (and PositiveNumber infinity), which then reach the report as "MFU nan%".
// A finite number within [lo, hi]; the message names the range and what the number is.
CLI::Validator finite_between(double lo, double hi, const std::string& what);
// --flops-per-step: model FLOPs per step, from one FLOP to 1e27 (far beyond any job).
CLI::Validator flops_per_step_check();
// --peak-tflops: dense peak TFLOP/s of one GPU, from 0.001 (1 GFLOP/s) to 1e6.
CLI::Validator peak_tflops_check();
// An output file's name (--html FILE): not empty.
CLI::Validator output_name_check();

// The whole command line (command.cpp): the top-level App with every registered subcommand in
// `order`, and the help formatter (help_format.h) on all of them. Each action runs when its
// App was parsed.
struct CommandLine {
  std::unique_ptr<CLI::App> app;
  std::vector<std::pair<CLI::App*, std::function<int()>>> actions;
};
CommandLine build_command_line();

}  // namespace gpuscope::cli
