// gpuscope: entry point. Subcommands register themselves (command.h) and command.cpp builds
// the parser; this file only parses and maps parse errors to exit code 2 with one line on
// stderr: what was wrong, and which --help to read.
#include <cstdio>
#include <string>
#include <string_view>

#include <fmt/core.h>
#include <CLI/CLI.hpp>

#include "cli/command.h"
#include "core/text.h"

namespace {

// The line for a parse error. `app`: the top-level App; `argv`: the arguments as given.
std::string parse_error_line(CLI::App& app, const CLI::ParseError& e, int argc, char** argv) {
  const std::vector<CLI::App*> chosen = app.get_subcommands();
  std::string message = e.what();
  if (chosen.empty()) {
    std::string commands;
    for (const CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; })) {
      commands += (commands.empty() ? "" : ", ") + sub->get_name();
    }
    // The first word that is not an option, where a command was expected.
    for (int i = 1; i < argc; ++i) {
      const std::string_view arg = argv[i];
      if (arg.starts_with("-")) continue;
      return fmt::format("unknown command '{}'; the commands are {} (see gpuscope --help)",
                         gpuscope::terminal_safe(arg), commands);
    }
    if (dynamic_cast<const CLI::RequiredError*>(&e)) {
      return fmt::format("no command given; the commands are {} (see gpuscope --help)", commands);
    }
    return fmt::format("{} (see gpuscope --help)", gpuscope::terminal_safe(message));
  }
  const std::string name = chosen.back()->get_name();
  // A validator's message names the option and the value itself: CLI11's "--opt: " before
  // it would say the option twice.
  if (const size_t colon = message.find(": "); colon != std::string::npos && colon > 0) {
    const std::string option = message.substr(0, colon);
    if (message.compare(colon + 2, option.size(), option) == 0) message = message.substr(colon + 2);
  }
  if (dynamic_cast<const CLI::ExcludesError*>(&e)) {
    // "--model excludes --flops-per-step"
    const size_t at = message.find(" excludes ");
    if (at != std::string::npos) {
      message = fmt::format("{} and {} cannot be used together; use one of them", message.substr(0, at),
                            message.substr(at + 10));
    }
  }
  return fmt::format("{} (see gpuscope {} --help)", gpuscope::terminal_safe(message), name);
}

}  // namespace

int main(int argc, char** argv) {
  using namespace gpuscope::cli;
  set_invocation(argc, argv);
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
    fmt::print(stderr, "gpuscope: {}\n", parse_error_line(app, e, argc, argv));
    return 2;
  }
  for (auto& [sub, action] : cl.actions) {
    if (sub->parsed()) return action();
  }
  return 2;
}
