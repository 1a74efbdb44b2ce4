#include "model/job.h"

#include <gtest/gtest.h>

namespace trigd {
namespace {

TEST(JobStateTest, EveryAllowedAndForbiddenTransition) {
  using S = JobState;
  const S all[] = {S::kPendingTrigger, S::kPendingConstraint, S::kLaunched, S::kDiscarded};
  auto allowed = [](S a, S b) {
    return (a == S::kPendingTrigger && (b == S::kPendingConstraint || b == S::kDiscarded || b == S::kLaunched)) ||
           (a == S::kPendingConstraint && (b == S::kLaunched || b == S::kDiscarded)) ||
           (a == S::kLaunched && b == S::kDiscarded);
  };
  for (S a : all) {
    for (S b : all) {
      EXPECT_EQ(IsAllowedTransition(a, b), allowed(a, b)) << JobStateName(a) << "->" << JobStateName(b);
    }
    EXPECT_EQ(JobStateFromName(JobStateName(a)), a);
  }
}

TEST(TriggerStateTest, RoundTripsThroughJson) {
  TriggerState s;
  s.leaves.push_back({2, 100, {"dt=1", "dt=2"}, false});
  s.leaves.push_back({1, 0, {}, true});
  EXPECT_EQ(TriggerStateFromJson(TriggerStateToJson(s)), s);
}

TEST(TriggerStateTest, TextIsTheJsonDocumentDumped) {
  TriggerState s;
  EXPECT_EQ(TriggerStateText(s), TriggerStateToJson(s).dump());
  s.leaves.push_back({2, 100, {"dt=1", "a \"quoted\" \\ key", "caf\xc3\xa9"}, false});
  s.leaves.push_back({1, 0, {}, true});
  s.leaves.push_back({0, 0, {}, false, TimePoint(Millis(1795784400123))});
  s.leaves.push_back({-3, -1, {"x"}, true, TimePoint(Millis(-5))});
  EXPECT_EQ(TriggerStateText(s), TriggerStateToJson(s).dump());
  EXPECT_EQ(TriggerStateFromJson(nlohmann::json::parse(TriggerStateText(s))), s);
}

TEST(ScheduleTest, LeavesAreDepthFirstWithEventKeys) {
  Trigger p1{.kind = TriggerKind::kPartition, .partition = {.dataset = "a"}};
  Trigger p2{.kind = TriggerKind::kProgram, .program = {.program = "b"}};
  Trigger t{.kind = TriggerKind::kTime};
  Trigger any{.kind = TriggerKind::kAny, .children = {p2, t}};
  Trigger all{.kind = TriggerKind::kAll, .children = {p1, any}};
  auto leaves = TriggerLeaves(all);
  ASSERT_EQ(leaves.size(), 3u);
  ScheduleName s("ns/x");
  EXPECT_EQ(LeafEventKey(*leaves[0], s), "partition:a");
  EXPECT_EQ(LeafEventKey(*leaves[1], s), "program:b");
  EXPECT_EQ(LeafEventKey(*leaves[2], s), "time:ns/x");
}

}  // namespace
}  // namespace trigd
