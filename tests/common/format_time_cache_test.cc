// FormatTime remembers its last instant per thread (a batch stamps many rows with one instant);
// the remembered text must never leak to another instant or another thread.
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "common/time.h"

namespace trigd {
namespace {

TimePoint At(int64_t ms) { return TimePoint(Millis(ms)); }

TEST(FormatTimeCacheTest, RepeatedAndAlternatingInstantsFormatRight) {
  const TimePoint a = At(1795305600000);  // 2026-11-22T00:00:00Z
  const TimePoint b = At(1795305600250);
  EXPECT_EQ(FormatTime(a), "2026-11-22T00:00:00Z");
  EXPECT_EQ(FormatTime(a), "2026-11-22T00:00:00Z");
  EXPECT_EQ(FormatTime(b), "2026-11-22T00:00:00.250Z");
  EXPECT_EQ(FormatTime(a), "2026-11-22T00:00:00Z");
  EXPECT_EQ(FormatTime(b), "2026-11-22T00:00:00.250Z");
  EXPECT_EQ(FormatTime(At(0)), "1970-01-01T00:00:00Z");
  EXPECT_EQ(FormatTime(At(-1)), "1969-12-31T23:59:59.999Z");
}

TEST(FormatTimeCacheTest, ThreadsKeepTheirOwnLastInstant) {
  std::string other;
  FormatTime(At(1795305600000));
  std::thread t([&] { other = FormatTime(At(1795309200000)); });
  t.join();
  EXPECT_EQ(other, "2026-11-22T01:00:00Z");
  EXPECT_EQ(FormatTime(At(1795305600000)), "2026-11-22T00:00:00Z");
}

}  // namespace
}  // namespace trigd
