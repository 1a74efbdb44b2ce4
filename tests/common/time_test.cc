#include "common/time.h"

#include <gtest/gtest.h>

namespace trigd {
namespace {

TEST(DurationTest, ParsesEveryUnit) {
  EXPECT_EQ(ParseDuration("90s").value(), Millis(90'000));
  EXPECT_EQ(ParseDuration("10m").value(), Millis(600'000));
  EXPECT_EQ(ParseDuration("4h").value(), Millis(4 * 3'600'000));
  EXPECT_EQ(ParseDuration("1d").value(), Millis(86'400'000));
  EXPECT_EQ(ParseDuration("250ms").value(), Millis(250));
  EXPECT_EQ(ParseDuration("1h30m").value(), Millis(90 * 60'000));
}

TEST(DurationTest, RefusesBadInputWithReason) {
  EXPECT_EQ(ParseDuration("").status().code(), StatusCode::kInvalid);
  EXPECT_NE(ParseDuration("10x").status().message().find("unknown unit \"x\""), std::string::npos);
  EXPECT_FALSE(ParseDuration("m").ok());
  EXPECT_FALSE(ParseDuration("10").ok());
  EXPECT_FALSE(ParseDuration("-5m").ok());
}

// The one duration parser of every path (documents, trigctl flags, TRIGD_RETENTION): days
// multiplied into milliseconds unchecked would wrap "213503982336d" to 33.6 h, and a prune
// delete history 3 days old. Every product and sum is checked against kMaxDuration
// (docs/adr/0051-one-checked-duration-parser.md).
TEST(DurationTest, TheMaximumIsAcceptedAndOneMillisecondMoreIsRefusedNamingIt) {
  EXPECT_EQ(kMaxDuration, std::chrono::hours(24 * 3650));
  EXPECT_EQ(ParseDuration("3650d").value(), kMaxDuration);
  EXPECT_EQ(ParseDuration("315360000000ms").value(), kMaxDuration);
  EXPECT_EQ(ParseDuration("3649d23h59m59s1000ms").value(), kMaxDuration);
  EXPECT_EQ(ParseDuration("0d0ms").value(), Millis(0));
  EXPECT_EQ(ParseDuration("0000000000000000000000001s").value(), Millis(1000));
  for (const char* text : {"3651d", "315360000001ms", "3650d1ms", "3649d23h59m59s1001ms", "87601h"}) {
    Result<Millis> d = ParseDuration(text);
    ASSERT_FALSE(d.ok()) << text;
    EXPECT_EQ(d.status().message(), std::string("duration \"") + text + "\" is longer than the maximum of 3650d");
  }
}

TEST(DurationTest, ValuesThatWouldOverflowInt64AreRefusedNotWrapped) {
  for (const char* text : {"213503982336d", "999999999999d", "106751991167d", "9223372036854775807ms",
                           "9223372036854775808ms", "99999999999999999999999999999d", "3650d3650d3650d"}) {
    Result<Millis> d = ParseDuration(text);
    ASSERT_FALSE(d.ok()) << text << " gave " << d->count() << "ms";
    EXPECT_EQ(d.status().message(), std::string("duration \"") + text + "\" is longer than the maximum of 3650d");
  }
  // A long text is cut in the message.
  const std::string huge(200, '9');
  EXPECT_EQ(ParseDuration(huge + "d").status().message(),
            "duration \"" + std::string(40, '9') + "...\" is longer than the maximum of 3650d");
}

TEST(DurationTest, FormatsShortestExactForm) {
  EXPECT_EQ(FormatDuration(Millis(90'000)), "90s");
  EXPECT_EQ(FormatDuration(Millis(600'000)), "10m");
  EXPECT_EQ(FormatDuration(Millis(86'400'000)), "1d");
  EXPECT_EQ(FormatDuration(Millis(1500)), "1500ms");
}

TEST(TimeTest, RoundTripsRfc3339) {
  auto t = ParseTime("2026-11-22T10:00:00Z");
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(FormatTime(*t), "2026-11-22T10:00:00Z");
  auto offset = ParseTime("2026-11-22T11:00:00+01:00");
  ASSERT_TRUE(offset.ok());
  EXPECT_EQ(*offset, *t);
  auto frac = ParseTime("2026-11-22T10:00:00.250Z");
  ASSERT_TRUE(frac.ok());
  EXPECT_EQ(FormatTime(*frac), "2026-11-22T10:00:00.250Z");
  EXPECT_FALSE(ParseTime("yesterday").ok());
  EXPECT_FALSE(ParseTime("2026-11-22T10:00:00Zjunk").ok());
}

TEST(TimeTest, TimeOfDayAndZones) {
  EXPECT_EQ(ParseTimeOfDay("22:00").value(), 22 * 60);
  EXPECT_EQ(ParseTimeOfDay("00:00").value(), 0);
  EXPECT_FALSE(ParseTimeOfDay("24:00").ok());
  EXPECT_FALSE(ParseTimeOfDay("7:00").ok());
  EXPECT_TRUE(IsKnownTimeZone("Europe/Berlin"));
  EXPECT_TRUE(IsKnownTimeZone("UTC"));
  EXPECT_FALSE(IsKnownTimeZone("Europe/Berln"));
}

}  // namespace
}  // namespace trigd
