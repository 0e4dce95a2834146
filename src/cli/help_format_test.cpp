// --help within 80 columns (help_format.h): the wrapping rules on small cases with exact
// expected text, then the built gpuscope's --help for the top level and every subcommand of the
// App that command.cpp builds (walked, not listed by hand): no line over 80 columns, every
// option and positional named, every word of every description and footer whole, every
// preformatted example line kept as written.
#include "cli/help_format.h"

#include <cstdio>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "cli/command.h"

namespace gpuscope::cli {
namespace {

TEST(WrapHelp, JoinsProseAndWrapsWithHangingIndent) {
  EXPECT_EQ(wrap_help("one two three\nfour five", 12, "", "  "), "one two\n  three four\n  five\n");
}

TEST(WrapHelp, FirstLinePrefixThenHangingIndent) {
  EXPECT_EQ(wrap_help("alpha beta gamma delta", 22, "  --x      ", "           "),
            "  --x      alpha beta\n"
            "           gamma delta\n");
}

TEST(WrapHelp, WordWiderThanTheLineStaysWholeOnItsOwnLine) {
  EXPECT_EQ(wrap_help("a gpt:params=124M,layers=12,heads=12 b", 10, "", ""),
            "a\ngpt:params=124M,layers=12,heads=12\nb\n");
  EXPECT_EQ(wrap_help("x gpt:params=124M,layers=12 y", 10, "  ", "    "),
            "  x\n    gpt:params=124M,layers=12\n    y\n");
}

TEST(WrapHelp, PreformattedLinesAndBlankLinesKept) {
  const std::string text =
      "\n\nExamples:\n"
      "  gpuscope analyze --json traces/ > report.json   # longer than the width\n"
      "  gpuscope top\n"
      "\n"
      "Prose that was\nwrapped by hand\nis joined.\n\n";
  EXPECT_EQ(wrap_help(text, 30, "", ""),
            "Examples:\n"
            "  gpuscope analyze --json traces/ > report.json   # longer than the width\n"
            "  gpuscope top\n"
            "\n"
            "Prose that was wrapped by hand\n"
            "is joined.\n");
}

TEST(WrapHelp, EmptyTextAndSpacesCollapse) {
  EXPECT_EQ(wrap_help("", 80, "", ""), "");
  EXPECT_EQ(wrap_help("", 80, "  --flag   ", "    "), "  --flag\n");
  EXPECT_EQ(wrap_help("a  b   c", 80, "", ""), "a b c\n");
}

TEST(WrapHelp, CountsCodePointsNotBytes) {
  EXPECT_EQ(display_width("\xc3\xa9t\xc3\xa9"), 3u);  // "été"
  // "été été" is 7 columns but 11 bytes: one line at 7 columns, two at 6.
  EXPECT_EQ(wrap_help("\xc3\xa9t\xc3\xa9 \xc3\xa9t\xc3\xa9", 7, "", ""), "\xc3\xa9t\xc3\xa9 \xc3\xa9t\xc3\xa9\n");
  EXPECT_EQ(wrap_help("\xc3\xa9t\xc3\xa9 \xc3\xa9t\xc3\xa9", 6, "", ""), "\xc3\xa9t\xc3\xa9\n\xc3\xa9t\xc3\xa9\n");
}

TEST(HelpFormatter, NameLeftDescriptionWrappedBeside) {
  HelpFormatter f(50);  // left column: 50 * 3 / 8 = 18
  EXPECT_EQ(f.two_columns("--json", "Print the report as JSON (schema gpuscope.report/1) instead of text"),
            "  --json          Print the report as JSON (schema\n"
            "                  gpuscope.report/1) instead of\n"
            "                  text\n");
}

TEST(HelpFormatter, LongNameGetsItsOwnLine) {
  HelpFormatter f(50);
  EXPECT_EQ(f.two_columns("--format TEXT:{jsonl,csv}=jsonl", "jsonl or csv"),
            "  --format TEXT:{jsonl,csv}=jsonl\n"
            "                  jsonl or csv\n");
}

TEST(HelpFormatter, DescriptionWithAWordTooWideForItsColumnGoesBelow) {
  HelpFormatter f(50);
  EXPECT_EQ(f.two_columns("--model TEXT", "Model, e.g. gpt:params=124M,layers=12,heads=12,dmodel=768"),
            "  --model TEXT\n"
            "      Model, e.g.\n"
            "      gpt:params=124M,layers=12,heads=12,dmodel=768\n");
}

// The built binary's output for `args`, with its exit status.
std::string run_binary(const std::string& args, int* status) {
  const std::string command = std::string(GPUSCOPE_BINARY) + " " + args + " 2>&1";
  FILE* pipe = ::popen(command.c_str(), "r");
  if (!pipe) return "";
  std::string out;
  char buffer[4096];
  size_t n;
  while ((n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0) out.append(buffer, n);
  *status = ::pclose(pipe);
  return out;
}

std::vector<std::string> words_of(const std::string& text) {
  std::vector<std::string> words;
  std::istringstream in(text);
  for (std::string w; in >> w;) words.push_back(w);
  return words;
}

void collect(const CLI::App* app, std::vector<const CLI::App*>& all) {
  all.push_back(app);
  for (const CLI::App* sub : app->get_subcommands([](const CLI::App*) { return true; })) collect(sub, all);
}

TEST(HelpOfEveryCommand, FitsEightyColumnsAndNamesEveryOption) {
  CommandLine cl = build_command_line();
  std::vector<const CLI::App*> apps;
  collect(cl.app.get(), apps);
  ASSERT_GE(apps.size(), 8u) << "the top level and its subcommands (analyze, run, export, diff, ...)";

  for (const CLI::App* app : apps) {
    std::string path;
    for (const CLI::App* a = app; a->get_parent() != nullptr; a = a->get_parent()) path = a->get_name() + " " + path;
    SCOPED_TRACE("gpuscope " + path + "--help");
    int status = -1;
    const std::string help = run_binary(path + "--help", &status);
    ASSERT_EQ(status, 0) << help;

    std::set<std::string> left_column;  // "-o", "--output" of a row "  -o,--output TEXT  ..."
    std::istringstream lines(help);
    for (std::string line; std::getline(lines, line);) {
      EXPECT_LE(display_width(line), kMaxHelpWidth) << line;
      EXPECT_TRUE(line.empty() || line.back() != ' ') << "trailing space: '" << line << "'";
      if (line.size() > 2 && line.compare(0, 2, "  ") == 0 && line[2] != ' ') {
        std::istringstream names(line.substr(2, line.find(' ', 2) - 2));
        for (std::string name; std::getline(names, name, ',');) left_column.insert(name);
      }
    }

    // No word cut: every word of the texts given to CLI11 appears whole in the output.
    const std::vector<std::string> shown = words_of(help);
    const std::set<std::string> shown_set(shown.begin(), shown.end());
    auto expect_words_whole = [&](const std::string& text) {
      for (const std::string& w : words_of(text)) EXPECT_TRUE(shown_set.count(w)) << "'" << w << "' of: " << text;
    };
    expect_words_whole(app->get_description());
    expect_words_whole(app->get_footer());
    for (const CLI::App* sub : app->get_subcommands([](const CLI::App*) { return true; })) {
      EXPECT_TRUE(left_column.count(sub->get_name())) << sub->get_name();
      expect_words_whole(sub->get_description());
    }
    // Examples keep their own lines.
    std::istringstream footer(app->get_footer());
    for (std::string line; std::getline(footer, line);) {
      if (!line.empty() && line[0] == ' ') {
        EXPECT_NE(help.find(line + "\n"), std::string::npos) << line;
      }
    }

    for (const CLI::Option* opt : app->get_options()) {
      std::vector<std::string> names;
      for (const std::string& l : opt->get_lnames()) names.push_back("--" + l);
      for (const std::string& s : opt->get_snames()) names.push_back("-" + s);
      if (opt->get_positional()) names.push_back(opt->get_name(true, false));
      ASSERT_FALSE(names.empty());
      for (const std::string& name : names) {
        EXPECT_TRUE(left_column.count(name)) << name << " not in the left column of:\n" << help;
      }
      expect_words_whole(opt->get_description());
    }
  }
}

}  // namespace
}  // namespace gpuscope::cli
