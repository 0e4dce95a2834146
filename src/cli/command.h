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

#include "cli/option_parse.h"
#include "render/html_page.h"

namespace gpuscope::cli {

// Called once with the subcommand's CLI::App to declare its options; returns the action to
// run if that subcommand is chosen. The action returns the process exit code
// (0 success, 2 bad input or usage; `run`: the traced program's own exit code).
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

// Checks shared by the commands' options: option_parse.h.

// gpuscope's version, as --version and the --html pages show it.
inline constexpr const char* kVersion = GPUSCOPE_VERSION;  // CMake's project version

// The whole command line (command.cpp): the top-level App with every registered subcommand in
// `order`, and the help formatter (help_format.h) on all of them. Each action runs when its
// App was parsed.
struct CommandLine {
  std::unique_ptr<CLI::App> app;
  std::vector<std::pair<CLI::App*, std::function<int()>>> actions;
};
CommandLine build_command_line();

// The command line gpuscope was started with, as one line (arguments holding spaces or quotes
// quoted for a POSIX shell), for the --html pages; main() records it before parsing.
void set_invocation(int argc, const char* const* argv);
const std::string& invocation();

// What an --html page says about its making: kVersion, the date now (UTC), invocation().
html::PageOrigin page_origin();

}  // namespace gpuscope::cli
