#include "render/json_text.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <limits>

namespace gpuscope {
namespace {

TEST(JsonText, EscapesWhatJsonRequiresAndRoundTrips) {
  const std::string raw = std::string("a\"b\\c\nd\te\rf") + '\x01' + "g ü";
  const std::string quoted = json_string(raw);
  EXPECT_EQ(quoted, "\"a\\\"b\\\\c\\nd\\te\\rf\\u0001g ü\"");
  EXPECT_EQ(nlohmann::json::parse(quoted).get<std::string>(), raw);
  std::string out = "[";
  append_json_string(out, "");
  EXPECT_EQ(out, "[\"\"");
}

TEST(JsonText, InvalidUtf8BecomesReplacementCharacters) {
  // `monitor` JSONL wrote a driver's GPU name with invalid bytes as they were: no JSON parser
  // accepted the line.
  const std::string quoted = json_string("GPU\xff\xc3 name \xc3\xa9");
  EXPECT_EQ(quoted, "\"GPU\xef\xbf\xbd\xef\xbf\xbd name \xc3\xa9\"");
  EXPECT_NO_THROW(nlohmann::json::parse(quoted));
}

TEST(JsonText, NonFiniteNumbersBecomeNull) {
  // `export --perfetto` wrote nan/inf, which no JSON parser accepts.
  std::string out;
  EXPECT_TRUE(append_json_number(out, 67.8));
  out += ",";
  EXPECT_FALSE(append_json_number(out, std::numeric_limits<double>::quiet_NaN()));
  out += ",";
  EXPECT_FALSE(append_json_number(out, -std::numeric_limits<double>::infinity()));
  out += ",";
  EXPECT_TRUE(append_json_number(out, 1e300));
  EXPECT_EQ(out, "67.8,null,null,1e+300");
  EXPECT_EQ(nlohmann::json::parse("[" + out + "]").size(), 4u);
}

}  // namespace
}  // namespace gpuscope
