// FormatTime writes RFC 3339 UTC text digit by digit for years 0-9999 (date::format otherwise):
// checked against date::format itself over instants spread across the whole range, and at the
// edges (epoch, before it, leap days, the last millisecond of a day and of year 9999).
#include <cstdint>
#include <random>
#include <string>

#include <date/date.h>
#include <gtest/gtest.h>

#include "common/time.h"

namespace trigd {
namespace {

TimePoint At(int64_t ms) { return TimePoint(Millis(ms)); }

std::string Reference(TimePoint t) {
  return t.time_since_epoch().count() % 1000 == 0
             ? date::format("%FT%TZ", std::chrono::time_point_cast<std::chrono::seconds>(t))
             : date::format("%FT%TZ", t);
}

TEST(FormatTimeTest, KnownInstants) {
  EXPECT_EQ(FormatTime(At(1795305600000)), "2026-11-22T00:00:00Z");
  EXPECT_EQ(FormatTime(At(1795305600250)), "2026-11-22T00:00:00.250Z");
  EXPECT_EQ(FormatTime(At(1795305600007)), "2026-11-22T00:00:00.007Z");
  EXPECT_EQ(FormatTime(At(0)), "1970-01-01T00:00:00Z");
  EXPECT_EQ(FormatTime(At(-1)), "1969-12-31T23:59:59.999Z");
  EXPECT_EQ(FormatTime(At(951782400000)), "2000-02-29T00:00:00Z");
  EXPECT_EQ(FormatTime(At(1795391999999)), "2026-11-22T23:59:59.999Z");
}

TEST(FormatTimeTest, AgreesWithDateFormatAcrossTheRange) {
  // Year 0 to past year 9999 (where date::format takes over), and a bit before year 0.
  const int64_t lo = -62200000000000, hi = 253500000000000;
  std::mt19937_64 rng(20261124);
  std::uniform_int_distribution<int64_t> any(lo, hi);
  for (int i = 0; i < 200000; ++i) {
    int64_t ms = any(rng);
    if (i % 3 == 0) ms -= ms % 1000;  // whole seconds take the short form
    ASSERT_EQ(FormatTime(At(ms)), Reference(At(ms))) << ms;
  }
  const int64_t edges[] = {253402300799999, 253402300800000, -62167219200000, -62167219200001};
  for (int64_t ms : edges) EXPECT_EQ(FormatTime(At(ms)), Reference(At(ms))) << ms;
}

}  // namespace
}  // namespace trigd
