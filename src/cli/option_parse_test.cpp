// The option parsers and validators the commands share (option_parse.h): one duration parser,
// and messages that name the option and the value.
#include "cli/option_parse.h"

#include <optional>
#include <string>

#include <gtest/gtest.h>

namespace gpuscope::cli {
namespace {

TEST(OptionParse, OneDurationParser) {
  EXPECT_EQ(parse_duration_ns("100ms", std::nullopt), 100'000'000);
  EXPECT_EQ(parse_duration_ns("1.5s", std::nullopt), 1'500'000'000);
  EXPECT_EQ(parse_duration_ns("2m", std::nullopt), 120'000'000'000);
  EXPECT_EQ(parse_duration_ns("250us", std::nullopt), 250'000);
  EXPECT_EQ(parse_duration_ns("0", std::nullopt), 0);
  EXPECT_EQ(parse_duration_ns("2", std::nullopt), std::nullopt);    // a unit is needed here...
  EXPECT_EQ(parse_duration_ns("2", 1'000'000'000), 2'000'000'000);  // ...or a bare number's unit given
  for (const char* bad : {"", "soon", "-1s", "1e300s", "nan", "inf", "5x", "1d"}) {
    EXPECT_EQ(parse_duration_ns(bad, 1'000'000'000), std::nullopt) << bad;
  }
}

TEST(OptionParse, ValidatorsNameTheOptionAndTheValue) {
  std::string text = "50ms";
  DurationRule rule{"--interval", 1'000'000'000};
  rule.min_ns = 100'000'000;
  EXPECT_EQ(duration_check(rule)(text).rfind("--interval 50ms: below 100ms", 0), 0u);
  text = "-5";
  const std::string peak = peak_tflops_check()(text);
  EXPECT_EQ(peak, "--peak-tflops -5: not a peak in TFLOP/s: expected a number from 0.001 to 1e+06");
  text = "lots";
  EXPECT_NE(size_check("--max-memory", "8G")(text).find("--max-memory lots: not a size"), std::string::npos);
  text = "kernels";
  EXPECT_EQ(one_of({"steps", "kernels", "idle"}, "--csv", "--csv steps")(text), "");
  text = "trace.json";
  EXPECT_EQ(one_of({"steps", "kernels", "idle"}, "--csv", "--csv steps")(text),
            "--csv trace.json: expected steps, kernels or idle (e.g. --csv steps)");
  text = "0";
  EXPECT_EQ(count_between(1, 4096, "--threads")(text), "--threads 0: expected a whole number from 1 to 4096");
}

}  // namespace
}  // namespace gpuscope::cli
