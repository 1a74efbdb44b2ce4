// JsonObjectText / JsonArrayText / AppendJsonString write text that a JSON parser reads back as
// the values given: escapes, control characters, UTF-8 and nesting.
#include "common/json_text.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <string>

namespace trigd {
namespace {

using nlohmann::json;

TEST(JsonTextTest, StringsAreQuotedAndEscaped) {
  std::string out;
  AppendJsonString(out, "plain");
  EXPECT_EQ(out, "\"plain\"");
  out.clear();
  const std::string tricky = std::string("quote \" backslash \\ newline \n tab \t nul ") + '\0' + " \x1f end";
  AppendJsonString(out, tricky);
  EXPECT_EQ(out, "\"quote \\\" backslash \\\\ newline \\u000a tab \\u0009 nul \\u0000 \\u001f end\"");
  EXPECT_EQ(json::parse(out).get<std::string>(), tricky);
  out.clear();
  AppendJsonString(out, "h\xc3\xa9llo \xe2\x9c\x93");  // UTF-8 copied as is
  EXPECT_EQ(json::parse(out).get<std::string>(), "h\xc3\xa9llo \xe2\x9c\x93");
}

// The word-at-a-time scan against a byte-by-byte reference: every byte that is escaped (and
// bytes beside them that are not: space, '!' and ']' one above '"' and '\\', DEL, UTF-8) at
// every position of texts longer than a word.
TEST(JsonTextTest, EscapesEveryByteAtEveryPositionAsByteByByte) {
  auto reference = [](std::string_view s) {
    std::string out = "\"";
    for (char ch : s) {
      const auto c = static_cast<unsigned char>(ch);
      if (c == '"' || c == '\\') {
        out += '\\';
        out += ch;
      } else if (c < 0x20) {
        static const char kHex[] = "0123456789abcdef";
        out += "\\u00";
        out += kHex[c >> 4];
        out += kHex[c & 15];
      } else {
        out += ch;
      }
    }
    return out + "\"";
  };
  const std::string specials = {'\\', '"', '\0', '\t', '\n', '\x1f', ' ', '!', ']', '\x7f', '\xc3', '\xbc'};
  for (size_t len : {7u, 8u, 9u, 15u, 16u, 17u, 31u}) {
    for (size_t pos = 0; pos < len; ++pos) {
      for (char a : specials) {
        for (char b : {'x', '"', '\x01'}) {
          std::string s(len, 'a');
          s[pos] = a;
          s[(pos * 5 + 3) % len] = b;
          std::string out;
          AppendJsonString(out, s);
          EXPECT_EQ(out, reference(s)) << len << " " << pos;
        }
      }
    }
  }
}

TEST(JsonTextTest, ObjectMembersKeepTheirOrderAndNest) {
  std::string leaves = JsonArrayText().String("trigger: 1 of 4 partitions").String("x\"y").Take();
  std::string entry = JsonObjectText()
                          .String("at", "2026-11-24T06:00:00Z")
                          .String("what", "event counted")
                          .Raw("leaves", leaves)
                          .Raw("checks", JsonArrayText().Raw(JsonObjectText().String("constraint", "c").Take()).Take())
                          .Take();
  EXPECT_EQ(entry.rfind("{\"at\":\"2026-11-24T06:00:00Z\",\"what\":\"event counted\",\"leaves\":[", 0), 0u) << entry;
  json parsed = json::parse(entry);
  EXPECT_EQ(parsed, json({{"at", "2026-11-24T06:00:00Z"},
                          {"what", "event counted"},
                          {"leaves", {"trigger: 1 of 4 partitions", "x\"y"}},
                          {"checks", {{{"constraint", "c"}}}}}));
}

TEST(JsonTextTest, EmptyObjectAndArray) {
  EXPECT_EQ(JsonObjectText().Take(), "{}");
  EXPECT_EQ(JsonArrayText().Take(), "[]");
}

}  // namespace
}  // namespace trigd
