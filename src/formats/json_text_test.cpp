#include "formats/json_text.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

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

}  // namespace
}  // namespace gpuscope
