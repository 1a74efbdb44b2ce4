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
