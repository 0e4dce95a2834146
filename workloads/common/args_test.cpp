#include "common/args.h"

#include <gtest/gtest.h>

namespace gpuscope::workloads {
namespace {

Args Parse(std::vector<std::string> v) {
  static std::vector<std::string> keep;
  keep = std::move(v);
  static std::vector<char*> argv;
  argv.clear();
  for (auto& s : keep) argv.push_back(s.data());
  return Args(int(argv.size()), argv.data(), 1);
}

TEST(Args, ValuesSwitchesAndDefaults) {
  Args a = Parse({"prog", "--steps", "7", "--fixed", "--lr=0.5", "--precision", "bf16"});
  EXPECT_EQ(a.Int("steps", 1), 7);
  EXPECT_TRUE(a.Flag("fixed"));
  EXPECT_FALSE(a.Flag("check"));
  EXPECT_DOUBLE_EQ(a.Real("lr", 1.0), 0.5);
  EXPECT_EQ(a.Choice("precision", {"fp32", "bf16"}), "bf16");
  EXPECT_EQ(a.Choice("kernels", {"unfused", "fused"}), "unfused");  // default: first choice
  EXPECT_EQ(a.Int("batch", 16), 16);
  a.RejectUnknown();  // everything was asked for
}

TEST(Args, UsageErrorsExitWithTwo) {
  EXPECT_EXIT(Parse({"prog", "--steps", "x"}).Int("steps", 1), ::testing::ExitedWithCode(2), "integer");
  EXPECT_EXIT(Parse({"prog", "--precision", "fp8"}).Choice("precision", {"fp32", "bf16"}), ::testing::ExitedWithCode(2),
              "fp32\\|bf16");
  EXPECT_EXIT(Parse({"prog", "--typo", "1"}).RejectUnknown(), ::testing::ExitedWithCode(2), "unknown flag --typo");
  EXPECT_EXIT(Parse({"prog", "stray"}), ::testing::ExitedWithCode(2), "unexpected argument");
}

TEST(JsonLine, OneObjectInInsertionOrder) {
  JsonLine j;
  j.Add("case", "sync_bound").Add("fixed", false).Add("steps", 3L).Add("steps_per_s", 2.5);
  EXPECT_EQ(j.Str(), R"({"case":"sync_bound","fixed":false,"steps":3,"steps_per_s":2.5})");
}

}  // namespace
}  // namespace gpuscope::workloads
