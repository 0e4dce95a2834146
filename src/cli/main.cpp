// gpuscope: entry point. Subcommands register themselves (command.h) and command.cpp builds
// the parser; this file only parses and maps parse errors to exit code 2 with one line on stderr.
#include <cstdio>

#include <CLI/CLI.hpp>
#include <fmt/core.h>

#include "cli/command.h"

int main(int argc, char** argv) {
  using namespace gpuscope::cli;
  CommandLine cl = build_command_line();
  CLI::App& app = *cl.app;
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    fmt::print(stderr, "gpuscope: {} (see gpuscope --help)\n", e.what());
    return 2;
  }
  for (auto& [sub, action] : cl.actions) {
    if (sub->parsed()) return action();
  }
  return 2;
}
