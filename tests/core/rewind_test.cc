#include "core/rewind.h"

#include <gtest/gtest.h>

namespace trigd {
namespace {

TEST(RewindTest, StoreBehindGroupIsARewind) {
  auto r = FindRewinds({{"e", 0, 100, 120}, {"e", 1, 50, 50}, {"e", 2, 70, 60}});
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].topic, "e");
  EXPECT_EQ(r[0].partition, 0);
  EXPECT_EQ(r[0].store, 100);
  EXPECT_EQ(r[0].group, 120);
}

TEST(RewindTest, StoreWithoutPositionCountsAsZero) {
  auto r = FindRewinds({{"e", 3, std::nullopt, 5}});
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].store, 0);
}

TEST(RewindTest, GroupWithoutPositionSaysNothing) {
  EXPECT_TRUE(FindRewinds({{"e", 0, std::nullopt, std::nullopt}, {"e", 1, 10, std::nullopt}}).empty());
}

TEST(RewindTest, DescriptionNamesPartitionsCountAndCommands) {
  std::string d = DescribeRewinds({{"t.events.data", 0, 100, 120}, {"t.events.data", 3, 0, 5}}, "trigd");
  EXPECT_NE(d.find("t.events.data[0] store 100 < group 120, t.events.data[3] store 0 < group 5"), std::string::npos)
      << d;
  EXPECT_NE(d.find("up to 25 events"), std::string::npos) << d;
  EXPECT_NE(d.find("trigctl positions resolve --skip"), std::string::npos);
  EXPECT_NE(d.find("trigctl positions resolve --replay"), std::string::npos);
}

}  // namespace
}  // namespace trigd
