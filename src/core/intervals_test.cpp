// Interval helpers (intervals.cpp).
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <vector>

#include "core/intervals.h"

namespace gpuscope {
namespace {

TEST(Intervals, InsideSaysWhereTheAnswerNextChanges) {
  const std::vector<Interval> merged = merge({{30, 40}, {10, 20}, {15, 25}});
  ASSERT_EQ(merged.size(), 2u);  // [10, 25) and [30, 40)
  int64_t boundary = 0;
  EXPECT_FALSE(inside(merged, 5, &boundary));
  EXPECT_EQ(boundary, 10);
  EXPECT_TRUE(inside(merged, 10, &boundary));
  EXPECT_EQ(boundary, 25);
  EXPECT_FALSE(inside(merged, 25, &boundary));  // half-open: the end is outside
  EXPECT_EQ(boundary, 30);
  EXPECT_TRUE(inside(merged, 39, &boundary));
  EXPECT_EQ(boundary, 40);
  EXPECT_FALSE(inside(merged, 40, &boundary));
  EXPECT_EQ(boundary, std::numeric_limits<int64_t>::max());
  EXPECT_FALSE(inside({}, 0, &boundary));
  EXPECT_EQ(boundary, std::numeric_limits<int64_t>::max());
}

}  // namespace
}  // namespace gpuscope
