#include "core/report.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

#include "core/findings.h"

namespace gpuscope {
namespace {

TEST(IdleCauseTable, RowsAreInEnumOrderWithUniqueNamesAndLetters) {
  std::set<std::string_view> names;
  std::set<char> letters{kTimelineKernelLetter};
  for (size_t i = 0; i < kNumIdleCauses; ++i) {
    const IdleCauseInfo& c = kIdleCauseTable[i];
    EXPECT_EQ(static_cast<size_t>(c.id), i) << c.name;
    EXPECT_FALSE(c.name.empty());
    EXPECT_TRUE(names.insert(c.name).second) << "duplicate name " << c.name;
    EXPECT_TRUE(letters.insert(c.letter).second) << "letter " << c.letter << " of " << c.name << " is taken";
    EXPECT_EQ(idle_cause_from_name(c.name), c.id);
  }
  EXPECT_EQ(idle_cause_name(IdleCauseId::kInput), "input");
  EXPECT_EQ(idle_cause_letter(IdleCauseId::kMemcpy), 'm');
  EXPECT_FALSE(idle_cause_from_name("nonsense").has_value());
}

TEST(Severity, NamesAndThresholds) {
  EXPECT_EQ(severity_name(Severity::kHigh), "high");
  EXPECT_EQ(severity_name(Severity::kMedium), "medium");
  EXPECT_EQ(severity_name(Severity::kLow), "low");
  EXPECT_EQ(severity_for(1.25), Severity::kHigh);
  EXPECT_EQ(severity_for(1.05), Severity::kMedium);
  EXPECT_EQ(severity_for(1.04), Severity::kLow);
}

TEST(FindingRules, IdsAreUniqueAndEveryRuleIsSet) {
  std::set<std::string_view> ids;
  for (const FindingRuleEntry& e : finding_rules()) {
    EXPECT_TRUE(ids.insert(e.id).second) << "duplicate finding id " << e.id;
    EXPECT_NE(e.rule, nullptr) << e.id;
  }
  EXPECT_EQ(ids.size(), 17u);
}

}  // namespace
}  // namespace gpuscope
