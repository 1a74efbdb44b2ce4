// Configuration read from the environment and flags (app/config.h): values out of range are
// refused with what is wrong and the limit, never capped or wrapped without a word.
#include "app/config.h"

#include <gtest/gtest.h>

namespace trigd {
namespace {

// Unchecked, 999999999999d would wrap to a negative duration and be refused as "must be at
// least 1d", and 213503982336d wrap to 33.6 h and be accepted.
TEST(ConfigTest, RetentionTooLongIsRefusedAsTooLong) {
  for (const char* text : {"999999999999d", "213503982336d", "3651d"}) {
    Result<Millis> r = ParseRetention(text);
    ASSERT_FALSE(r.ok()) << text;
    EXPECT_EQ(r.status().message(),
              std::string("retention: duration \"") + text + "\" is longer than the maximum of 3650d");
  }
  EXPECT_EQ(ParseRetention("3650d").value(), kMaxDuration);
  EXPECT_EQ(ParseRetention("0").value(), Millis(0));
  EXPECT_EQ(ParseRetention("12h").status().message(), "retention must be at least 1d (or 0: keep everything), got 12h");
}

// TRIGD_CHECKERS=1000 ran 16 checkers without a word.
TEST(ConfigTest, CheckersOutOfRangeAreRefusedNamingTheRange) {
  EXPECT_EQ(ParseCheckers("1").value(), 1);
  EXPECT_EQ(ParseCheckers("16").value(), kMaxCheckers);
  for (const char* text : {"1000", "17", "0", "-1", "two", "", "4 ", "99999999999999999999"}) {
    Result<int> r = ParseCheckers(text);
    ASSERT_FALSE(r.ok()) << text;
    EXPECT_EQ(r.status().message(),
              std::string("TRIGD_CHECKERS must be an integer from 1 to 16, got \"") + text + "\"");
  }
}

}  // namespace
}  // namespace trigd
