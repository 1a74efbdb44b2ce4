// The one reader of JSON from outside trigd: size and nesting refused before a value is built.
#include "common/json_reader.h"

#include <gtest/gtest.h>

#include <string>

namespace trigd {
namespace {

std::string Nested(size_t depth) { return std::string(depth, '[') + std::string(depth, ']'); }

TEST(JsonReader, RefusesEightyThousandLevelsWithoutRecursing) {
  const std::string body = R"({"reason":)" + Nested(80000) + "}";
  Result<nlohmann::json> r = ReadJson(body);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalid);
  EXPECT_EQ(r.status().message().rfind(R"(invalid JSON: nested deeper than 128 levels at "reason[0][0][0])", 0), 0u)
      << r.status().message();
}

TEST(JsonReader, AcceptsTheLimitAndRefusesOneLevelMore) {
  EXPECT_TRUE(ReadJson(Nested(128)).ok());
  EXPECT_FALSE(ReadJson(Nested(129)).ok());
  EXPECT_TRUE(CheckJsonLimits(Nested(129), JsonLimits{.max_depth = 129}) == std::nullopt);
}

TEST(JsonReader, BracketsInsideStringsAndEscapedQuotesDoNotCount) {
  const std::string text = R"({"a\"[[[": ")" + std::string(500, '[') + R"(\"{{{"})";
  EXPECT_TRUE(ReadJson(text).ok());
}

TEST(JsonReader, ThePathNamesKeysAsDecodedAndArrayIndexes) {
  auto breach = CheckJsonLimits(R"({"a": 1, "b\u0021": [0, {"c": [[[]]]}]})", JsonLimits{.max_depth = 4});
  ASSERT_TRUE(breach);
  EXPECT_EQ(breach->path, "b![1].c[0]");
  EXPECT_EQ(breach->reason, R"(invalid JSON: nested deeper than 4 levels at "b![1].c[0]")");
}

TEST(JsonReader, RefusesTextOverItsSizeBeforeReadingIt) {
  Result<nlohmann::json> r = ReadJson(std::string(100, ' ') + "{}", JsonLimits{.max_bytes = 64});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "invalid JSON: 102 bytes, more than the limit of 64");
}

TEST(JsonReader, NamesSyntaxErrorsNulBytesAndNumbersBeyondADouble) {
  EXPECT_EQ(ReadJson("{").status().message(),
            "invalid JSON at line 1, column 2 (byte 2): syntax error while parsing object key - unexpected end of "
            "input; expected string literal");
  EXPECT_EQ(ReadJson(std::string("{}\0x", 4)).status().message(),
            "invalid JSON at byte 2: a NUL byte (JSON text cannot contain one)");
  EXPECT_EQ(ReadJson(R"({"n": 1e400})").status().message(),
            "invalid JSON: number 1e400 is out of range (beyond a double)");
  EXPECT_EQ(ReadJson(R"({"n": [1, "x"]})")->at("n").at(1), "x");
}

}  // namespace
}  // namespace trigd
