#include "model/event.h"

#include <gtest/gtest.h>

namespace trigd {
namespace {

TEST(OwnTickTest, IdIsTickScheduleAndFireTime) {
  EXPECT_EQ(OwnTickId("default/nightly", "2026-11-22T05:00:00Z"), "tick:default/nightly:2026-11-22T05:00:00Z");
}

TEST(OwnTickTest, OnlyATickWithItsSchedulesOwnIdIsTrigds) {
  const std::string id = OwnTickId("default/nightly", "2026-11-22T05:00:00Z");
  EXPECT_TRUE(IsOwnTick(EventType::kTick, id, "default/nightly"));
  // Another type, another schedule, a prefix of the schedule, or a manual id: ingested as usual.
  EXPECT_FALSE(IsOwnTick(EventType::kPartition, id, "default/nightly"));
  EXPECT_FALSE(IsOwnTick(EventType::kTick, id, "default/other"));
  EXPECT_FALSE(IsOwnTick(EventType::kTick, id, "default/night"));
  EXPECT_FALSE(IsOwnTick(EventType::kTick, id, "default/nightly:2026"));
  EXPECT_FALSE(IsOwnTick(EventType::kTick, "manual-rerun-1", "default/nightly"));
  EXPECT_FALSE(IsOwnTick(EventType::kTick, "tick:default/nightly:", "default/nightly"));
  EXPECT_FALSE(IsOwnTick(EventType::kTick, "tick:default/nightly", "default/nightly"));
}

}  // namespace
}  // namespace trigd
