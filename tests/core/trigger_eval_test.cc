#include "core/trigger_eval.h"

#include <limits>

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace trigd {
namespace {

const ScheduleName kSchedule("default/nightly");

Trigger PartitionLeaf(std::string dataset, std::optional<int64_t> count = std::nullopt,
                      std::optional<int64_t> min_bytes = std::nullopt) {
  Trigger t;
  t.kind = TriggerKind::kPartition;
  t.partition = {std::move(dataset), count, min_bytes};
  return t;
}

Trigger ProgramLeaf(std::string program, std::vector<ProgramStatus> statuses = {ProgramStatus::kSucceeded},
                    int64_t count = 1, UpstreamFailurePolicy policy = UpstreamFailurePolicy::kWait) {
  Trigger t;
  t.kind = TriggerKind::kProgram;
  t.program = {std::move(program), std::move(statuses), count, policy};
  return t;
}

Trigger TimeLeaf() {
  Trigger t;
  t.kind = TriggerKind::kTime;
  t.time.cron = "0 5 * * *";
  return t;
}

Trigger Composite(TriggerKind kind, std::vector<Trigger> children) {
  Trigger t;
  t.kind = kind;
  t.children = std::move(children);
  return t;
}
Trigger All(std::vector<Trigger> children) { return Composite(TriggerKind::kAll, std::move(children)); }
Trigger Any(std::vector<Trigger> children) { return Composite(TriggerKind::kAny, std::move(children)); }

Event PartitionEvent(std::string dataset, std::vector<std::string> partitions,
                     std::optional<int64_t> bytes = std::nullopt) {
  Event e;
  e.type = EventType::kPartition;
  e.partition = {std::move(dataset), std::move(partitions), bytes};
  return e;
}

Event ProgramEvent(std::string program, ProgramStatus status) {
  Event e;
  e.type = EventType::kProgram;
  e.program.program = std::move(program);
  e.program.run_id = "r-1";
  e.program.status = status;
  return e;
}

Event Tick(std::string schedule) {
  Event e;
  e.type = EventType::kTick;
  e.tick.schedule = std::move(schedule);
  return e;
}

// --- State -----------------------------------------------------------------------------------

TEST(TriggerEvalTest, NewStateHasOneEmptyLeafPerLeaf) {
  const Trigger trigger = All({PartitionLeaf("a"), Any({ProgramLeaf("p"), All({PartitionLeaf("b"), TimeLeaf()})})});
  TriggerState state = NewTriggerState(trigger);
  ASSERT_EQ(state.leaves.size(), 4u);
  for (const LeafState& leaf : state.leaves) EXPECT_EQ(leaf, LeafState());
  EXPECT_FALSE(IsComplete(trigger, state));
}

TEST(TriggerEvalTest, StateOfADifferentLeafCountIsResetBeforeApplying) {
  const Trigger trigger = All({PartitionLeaf("a"), PartitionLeaf("b")});
  TriggerState stale;
  stale.leaves.resize(1);
  stale.leaves[0].satisfied = true;
  stale.leaves[0].count = 9;
  // A stale state never completes the new trigger.
  EXPECT_FALSE(IsComplete(trigger, stale));
  ApplyResult result = ApplyEvent(trigger, kSchedule, PartitionEvent("b", {"p"}), stale);
  EXPECT_EQ(result.leaves, std::vector<int>{1});
  ASSERT_EQ(stale.leaves.size(), 2u);
  EXPECT_EQ(stale.leaves[0], LeafState());
  EXPECT_TRUE(stale.leaves[1].satisfied);
  EXPECT_FALSE(IsComplete(trigger, stale));
}

// --- Partition leaves ------------------------------------------------------------------------

TEST(TriggerEvalTest, PartitionLeafWithoutCountNeedsOnePartition) {
  const Trigger trigger = PartitionLeaf("sales.raw");
  TriggerState state = NewTriggerState(trigger);
  ApplyResult result = ApplyEvent(trigger, kSchedule, PartitionEvent("sales.raw", {"dt=1"}, 10), state);
  EXPECT_TRUE(result.changed);
  EXPECT_FALSE(result.upstream_failure);
  EXPECT_EQ(result.leaves, std::vector<int>{0});
  EXPECT_EQ(state.leaves[0].count, 1);
  EXPECT_EQ(state.leaves[0].bytes, 10);
  EXPECT_TRUE(state.leaves[0].satisfied);
  EXPECT_TRUE(IsComplete(trigger, state));
}

TEST(TriggerEvalTest, PartitionLeafCountsDistinctPartitionsOnly) {
  const Trigger trigger = PartitionLeaf("d", 3);
  TriggerState state = NewTriggerState(trigger);
  EXPECT_TRUE(ApplyEvent(trigger, kSchedule, PartitionEvent("d", {"p2"}), state).changed);
  // A re-sent partition adds nothing and does not count as a change.
  ApplyResult again = ApplyEvent(trigger, kSchedule, PartitionEvent("d", {"p2"}), state);
  EXPECT_FALSE(again.changed);
  EXPECT_TRUE(again.leaves.empty());
  EXPECT_EQ(state.leaves[0].count, 1);
  // Duplicates within one event count once.
  EXPECT_TRUE(ApplyEvent(trigger, kSchedule, PartitionEvent("d", {"p1", "p1", "p2"}), state).changed);
  EXPECT_EQ(state.leaves[0].count, 2);
  EXPECT_FALSE(state.leaves[0].satisfied);
  EXPECT_FALSE(IsComplete(trigger, state));
  ApplyEvent(trigger, kSchedule, PartitionEvent("d", {"p0"}), state);
  EXPECT_EQ(state.leaves[0].count, 3);
  EXPECT_TRUE(state.leaves[0].satisfied);
  EXPECT_EQ(state.leaves[0].partitions, (std::vector<std::string>{"p0", "p1", "p2"}));
  EXPECT_TRUE(IsComplete(trigger, state));
}

TEST(TriggerEvalTest, PartitionLeafIgnoresOtherDatasetsAndOtherEventTypes) {
  const Trigger trigger = PartitionLeaf("sales.raw");
  TriggerState state = NewTriggerState(trigger);
  EXPECT_FALSE(ApplyEvent(trigger, kSchedule, PartitionEvent("sales.raw2", {"p"}), state).changed);
  EXPECT_FALSE(ApplyEvent(trigger, kSchedule, PartitionEvent("sales", {"p"}), state).changed);
  EXPECT_FALSE(ApplyEvent(trigger, kSchedule, ProgramEvent("sales.raw", ProgramStatus::kSucceeded), state).changed);
  EXPECT_FALSE(ApplyEvent(trigger, kSchedule, Tick(kSchedule.value()), state).changed);
  EXPECT_EQ(state, NewTriggerState(trigger));
}

TEST(TriggerEvalTest, MinBytesAloneCountsOnlyBytes) {
  const Trigger trigger = PartitionLeaf("d", std::nullopt, 100);
  TriggerState state = NewTriggerState(trigger);
  for (int i = 0; i < 10; ++i) {
    ApplyEvent(trigger, kSchedule, PartitionEvent("d", {"small-" + std::to_string(i)}), state);
  }
  EXPECT_EQ(state.leaves[0].count, 10);
  EXPECT_FALSE(state.leaves[0].satisfied);  // ten partitions, no bytes
  ApplyEvent(trigger, kSchedule, PartitionEvent("d", {"a"}, 60), state);
  EXPECT_FALSE(state.leaves[0].satisfied);
  ApplyEvent(trigger, kSchedule, PartitionEvent("d", {"b"}, 39), state);
  EXPECT_EQ(state.leaves[0].bytes, 99);
  EXPECT_FALSE(state.leaves[0].satisfied);
  ApplyEvent(trigger, kSchedule, PartitionEvent("d", {"c"}, 1), state);
  EXPECT_EQ(state.leaves[0].bytes, 100);
  EXPECT_TRUE(state.leaves[0].satisfied);
}

// Two partitions of 5e18 bytes must not wrap the sum negative (the leaf would never hold): the
// sum saturates.
TEST(TriggerEvalTest, HugeBytesSaturateInsteadOfWrapping) {
  const int64_t min_bytes = 9'000'000'000'000'000'000;
  const Trigger trigger = PartitionLeaf("d", std::nullopt, min_bytes);
  TriggerState state = NewTriggerState(trigger);
  ApplyEvent(trigger, kSchedule, PartitionEvent("d", {"a"}, 5'000'000'000'000'000'000), state);
  EXPECT_FALSE(state.leaves[0].satisfied);
  ApplyEvent(trigger, kSchedule, PartitionEvent("d", {"b"}, 5'000'000'000'000'000'000), state);
  EXPECT_EQ(state.leaves[0].bytes, std::numeric_limits<int64_t>::max());
  EXPECT_TRUE(state.leaves[0].satisfied);
}

TEST(TriggerEvalTest, BytesOfAReSentPartitionAreNotCountedAgain) {
  const Trigger trigger = PartitionLeaf("d", std::nullopt, 100);
  TriggerState state = NewTriggerState(trigger);
  ApplyEvent(trigger, kSchedule, PartitionEvent("d", {"a"}, 60), state);
  EXPECT_FALSE(ApplyEvent(trigger, kSchedule, PartitionEvent("d", {"a"}, 60), state).changed);
  EXPECT_EQ(state.leaves[0].bytes, 60);
  EXPECT_FALSE(state.leaves[0].satisfied);
  // An event with at least one new partition brings its bytes.
  ApplyEvent(trigger, kSchedule, PartitionEvent("d", {"a", "b"}, 40), state);
  EXPECT_EQ(state.leaves[0].bytes, 100);
  EXPECT_TRUE(state.leaves[0].satisfied);
}

TEST(TriggerEvalTest, CountOrMinBytesWhicheverComesFirst) {
  const Trigger trigger = PartitionLeaf("d", 3, 100);
  TriggerState by_bytes = NewTriggerState(trigger);
  ApplyEvent(trigger, kSchedule, PartitionEvent("d", {"big"}, 150), by_bytes);
  EXPECT_TRUE(IsComplete(trigger, by_bytes));

  TriggerState by_count = NewTriggerState(trigger);
  ApplyEvent(trigger, kSchedule, PartitionEvent("d", {"a", "b"}, 10), by_count);
  EXPECT_FALSE(IsComplete(trigger, by_count));
  ApplyEvent(trigger, kSchedule, PartitionEvent("d", {"c"}), by_count);
  EXPECT_TRUE(IsComplete(trigger, by_count));
}

TEST(TriggerEvalTest, SatisfiedLeafKeepsCountingAndStaysSatisfied) {
  const Trigger trigger = All({PartitionLeaf("d"), ProgramLeaf("p")});
  TriggerState state = NewTriggerState(trigger);
  ApplyEvent(trigger, kSchedule, PartitionEvent("d", {"a"}), state);
  ApplyResult more = ApplyEvent(trigger, kSchedule, PartitionEvent("d", {"b"}, 5), state);
  EXPECT_TRUE(more.changed);
  EXPECT_EQ(state.leaves[0].count, 2);
  EXPECT_EQ(state.leaves[0].bytes, 5);
  EXPECT_TRUE(state.leaves[0].satisfied);
}

TEST(TriggerEvalTest, PartitionsRestoredFromStorageStillDeduplicate) {
  const Trigger trigger = PartitionLeaf("d", 4);
  TriggerState state = NewTriggerState(trigger);
  ApplyEvent(trigger, kSchedule, PartitionEvent("d", {"b", "a"}), state);
  TriggerState restored = TriggerStateFromJson(TriggerStateToJson(state));
  EXPECT_EQ(restored, state);
  EXPECT_FALSE(ApplyEvent(trigger, kSchedule, PartitionEvent("d", {"a"}), restored).changed);
  // Even an unsorted list, as another writer might leave it, is handled.
  restored.leaves[0].partitions = {"b", "a"};
  EXPECT_FALSE(ApplyEvent(trigger, kSchedule, PartitionEvent("d", {"b"}), restored).changed);
  EXPECT_TRUE(ApplyEvent(trigger, kSchedule, PartitionEvent("d", {"c"}), restored).changed);
  EXPECT_EQ(restored.leaves[0].partitions, (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_EQ(restored.leaves[0].count, 3);
}

// --- Program leaves --------------------------------------------------------------------------

TEST(TriggerEvalTest, ProgramLeafCountsOnlyItsStatuses) {
  const Trigger trigger = ProgramLeaf("sales.ingest");
  TriggerState state = NewTriggerState(trigger);
  for (ProgramStatus s :
       {ProgramStatus::kStarted, ProgramStatus::kHeartbeat, ProgramStatus::kFailed, ProgramStatus::kKilled}) {
    ApplyResult result = ApplyEvent(trigger, kSchedule, ProgramEvent("sales.ingest", s), state);
    EXPECT_FALSE(result.changed) << ProgramStatusName(s);
    EXPECT_FALSE(result.upstream_failure) << ProgramStatusName(s);  // policy is wait
  }
  EXPECT_FALSE(ApplyEvent(trigger, kSchedule, ProgramEvent("other", ProgramStatus::kSucceeded), state).changed);
  EXPECT_FALSE(IsComplete(trigger, state));
  ApplyResult result = ApplyEvent(trigger, kSchedule, ProgramEvent("sales.ingest", ProgramStatus::kSucceeded), state);
  EXPECT_TRUE(result.changed);
  EXPECT_EQ(result.leaves, std::vector<int>{0});
  EXPECT_TRUE(IsComplete(trigger, state));
}

TEST(TriggerEvalTest, ProgramLeafIsSatisfiedAtItsCount) {
  const Trigger trigger = ProgramLeaf("p", {ProgramStatus::kSucceeded, ProgramStatus::kFailed}, 3);
  TriggerState state = NewTriggerState(trigger);
  ApplyEvent(trigger, kSchedule, ProgramEvent("p", ProgramStatus::kSucceeded), state);
  ApplyEvent(trigger, kSchedule, ProgramEvent("p", ProgramStatus::kFailed), state);
  EXPECT_EQ(state.leaves[0].count, 2);
  EXPECT_FALSE(IsComplete(trigger, state));
  ApplyEvent(trigger, kSchedule, ProgramEvent("p", ProgramStatus::kSucceeded), state);
  EXPECT_EQ(state.leaves[0].count, 3);
  EXPECT_TRUE(IsComplete(trigger, state));
}

TEST(TriggerEvalTest, UpstreamFailureIsReportedOnlyWithDiscardPolicy) {
  const Trigger discard = ProgramLeaf("up", {ProgramStatus::kSucceeded}, 1, UpstreamFailurePolicy::kDiscard);
  for (ProgramStatus s : {ProgramStatus::kFailed, ProgramStatus::kKilled}) {
    TriggerState state = NewTriggerState(discard);
    ApplyResult result = ApplyEvent(discard, kSchedule, ProgramEvent("up", s), state);
    EXPECT_TRUE(result.upstream_failure) << ProgramStatusName(s);
    EXPECT_FALSE(result.changed);
    EXPECT_TRUE(result.leaves.empty());
  }
  TriggerState state = NewTriggerState(discard);
  // Not failures: started and heartbeat; not this leaf's upstream: another program.
  EXPECT_FALSE(ApplyEvent(discard, kSchedule, ProgramEvent("up", ProgramStatus::kStarted), state).upstream_failure);
  EXPECT_FALSE(ApplyEvent(discard, kSchedule, ProgramEvent("up", ProgramStatus::kHeartbeat), state).upstream_failure);
  EXPECT_FALSE(ApplyEvent(discard, kSchedule, ProgramEvent("other", ProgramStatus::kFailed), state).upstream_failure);

  const Trigger wait = ProgramLeaf("up");
  TriggerState wait_state = NewTriggerState(wait);
  EXPECT_FALSE(ApplyEvent(wait, kSchedule, ProgramEvent("up", ProgramStatus::kFailed), wait_state).upstream_failure);
}

TEST(TriggerEvalTest, WantedFailureStatusCountsInsteadOfFailingUpstream) {
  const Trigger trigger = ProgramLeaf("up", {ProgramStatus::kFailed}, 1, UpstreamFailurePolicy::kDiscard);
  TriggerState state = NewTriggerState(trigger);
  ApplyResult failed = ApplyEvent(trigger, kSchedule, ProgramEvent("up", ProgramStatus::kFailed), state);
  EXPECT_TRUE(failed.changed);
  EXPECT_FALSE(failed.upstream_failure);
  // killed is a failure the leaf does not want.
  ApplyResult killed = ApplyEvent(trigger, kSchedule, ProgramEvent("up", ProgramStatus::kKilled), state);
  EXPECT_TRUE(killed.upstream_failure);
}

// --- Time leaves -----------------------------------------------------------------------------

TEST(TriggerEvalTest, TimeLeafMatchesTicksOfItsOwnScheduleOnly) {
  const Trigger trigger = TimeLeaf();
  TriggerState state = NewTriggerState(trigger);
  EXPECT_FALSE(ApplyEvent(trigger, kSchedule, Tick("default/other"), state).changed);
  EXPECT_FALSE(ApplyEvent(trigger, kSchedule, Tick("other/nightly"), state).changed);
  EXPECT_FALSE(ApplyEvent(trigger, kSchedule, PartitionEvent("default/nightly", {"p"}), state).changed);
  EXPECT_FALSE(IsComplete(trigger, state));
  ApplyResult result = ApplyEvent(trigger, kSchedule, Tick("default/nightly"), state);
  EXPECT_TRUE(result.changed);
  EXPECT_EQ(result.leaves, std::vector<int>{0});
  EXPECT_TRUE(IsComplete(trigger, state));
}

// --- Composites ------------------------------------------------------------------------------

TEST(TriggerEvalTest, NestedAllAnyThreeLevelsDeep) {
  // all[ partition a, any[ program p, all[ partition b (2), time ] ] ]
  // leaves:  0            1            2                 3
  const Trigger trigger = All({PartitionLeaf("a"), Any({ProgramLeaf("p"), All({PartitionLeaf("b", 2), TimeLeaf()})})});
  TriggerState state = NewTriggerState(trigger);
  EXPECT_EQ(ApplyEvent(trigger, kSchedule, PartitionEvent("a", {"1"}), state).leaves, std::vector<int>{0});
  EXPECT_FALSE(IsComplete(trigger, state));
  EXPECT_EQ(ApplyEvent(trigger, kSchedule, PartitionEvent("b", {"1"}), state).leaves, std::vector<int>{2});
  EXPECT_EQ(ApplyEvent(trigger, kSchedule, Tick(kSchedule.value()), state).leaves, std::vector<int>{3});
  EXPECT_FALSE(IsComplete(trigger, state));  // b has 1 of 2
  ApplyEvent(trigger, kSchedule, PartitionEvent("b", {"2"}), state);
  EXPECT_TRUE(IsComplete(trigger, state));

  // The other branch of the any completes it as well.
  TriggerState other = NewTriggerState(trigger);
  ApplyEvent(trigger, kSchedule, ProgramEvent("p", ProgramStatus::kSucceeded), other);
  EXPECT_FALSE(IsComplete(trigger, other));
  ApplyEvent(trigger, kSchedule, PartitionEvent("a", {"1"}), other);
  EXPECT_TRUE(IsComplete(trigger, other));
}

TEST(TriggerEvalTest, AnyNeedsOneChildAndAllNeedsEvery) {
  const Trigger any = Any({PartitionLeaf("a"), PartitionLeaf("b")});
  const Trigger all = All({PartitionLeaf("a"), PartitionLeaf("b")});
  TriggerState any_state = NewTriggerState(any);
  TriggerState all_state = NewTriggerState(all);
  ApplyEvent(any, kSchedule, PartitionEvent("b", {"1"}), any_state);
  ApplyEvent(all, kSchedule, PartitionEvent("b", {"1"}), all_state);
  EXPECT_TRUE(IsComplete(any, any_state));
  EXPECT_FALSE(IsComplete(all, all_state));
}

TEST(TriggerEvalTest, OneEventCountsInEveryLeafItMatches) {
  const Trigger trigger = Any({All({PartitionLeaf("d", 2), ProgramLeaf("p")}), PartitionLeaf("d")});
  TriggerState state = NewTriggerState(trigger);
  ApplyResult result = ApplyEvent(trigger, kSchedule, PartitionEvent("d", {"x"}), state);
  EXPECT_EQ(result.leaves, (std::vector<int>{0, 2}));
  EXPECT_FALSE(state.leaves[0].satisfied);
  EXPECT_TRUE(state.leaves[2].satisfied);
  EXPECT_TRUE(IsComplete(trigger, state));
}

// --- DescribeProgress ------------------------------------------------------------------------

TEST(TriggerEvalTest, DescribesARootLeafAsTrigger) {
  const Trigger trigger = PartitionLeaf("sales.raw", 4);
  TriggerState state = NewTriggerState(trigger);
  ApplyEvent(trigger, kSchedule, PartitionEvent("sales.raw", {"a", "b"}), state);
  std::vector<LeafProgress> progress = DescribeProgress(trigger, state);
  ASSERT_EQ(progress.size(), 1u);
  EXPECT_EQ(progress[0].path, "trigger");
  EXPECT_FALSE(progress[0].satisfied);
  EXPECT_EQ(progress[0].detail, "2 of 4 partitions of sales.raw");
}

// Events keep counting while an `all` waits for its other branches: the description says how
// many are needed, not "2 of 1 succeeded events".
TEST(TriggerEvalTest, DescribesCountsPastTheTargetAsNeeded) {
  const Trigger trigger = All({ProgramLeaf("up", {ProgramStatus::kSucceeded}, 1), PartitionLeaf("d", 1, 10)});
  TriggerState state = NewTriggerState(trigger);
  ApplyEvent(trigger, kSchedule, ProgramEvent("up", ProgramStatus::kSucceeded), state);
  ApplyEvent(trigger, kSchedule, ProgramEvent("up", ProgramStatus::kSucceeded), state);
  std::vector<LeafProgress> progress = DescribeProgress(trigger, state);
  ASSERT_EQ(progress.size(), 2u);
  EXPECT_EQ(progress[0].detail, "2 succeeded events (1 needed) of up");
  EXPECT_EQ(progress[1].detail, "0 of 1 partitions or 0 of 10 bytes of d");
}

TEST(TriggerEvalTest, DescribesNestedLeavesWithDocumentPaths) {
  const Trigger trigger = Any({PartitionLeaf("sales.raw", std::nullopt, 1000),
                               All({ProgramLeaf("sales.ingest", {ProgramStatus::kSucceeded, ProgramStatus::kFailed}, 2),
                                    TimeLeaf(), PartitionLeaf("d", 2, 50)})});
  TriggerState state = NewTriggerState(trigger);
  ApplyEvent(trigger, kSchedule, PartitionEvent("sales.raw", {"a"}, 300), state);
  ApplyEvent(trigger, kSchedule, ProgramEvent("sales.ingest", ProgramStatus::kFailed), state);
  ApplyEvent(trigger, kSchedule, Tick(kSchedule.value()), state);
  ApplyEvent(trigger, kSchedule, PartitionEvent("d", {"x"}, 7), state);
  std::vector<LeafProgress> progress = DescribeProgress(trigger, state);
  ASSERT_EQ(progress.size(), 4u);
  EXPECT_EQ(progress[0].path, "trigger.any[0].partition");
  EXPECT_EQ(progress[0].detail, "300 of 1000 bytes (1 partitions) of sales.raw");
  EXPECT_FALSE(progress[0].satisfied);
  EXPECT_EQ(progress[1].path, "trigger.any[1].all[0].program");
  EXPECT_EQ(progress[1].detail, "1 of 2 succeeded or failed events of sales.ingest");
  EXPECT_FALSE(progress[1].satisfied);
  EXPECT_EQ(progress[2].path, "trigger.any[1].all[1].time");
  EXPECT_EQ(progress[2].detail, "ticked (cron \"0 5 * * *\" in UTC)");
  EXPECT_TRUE(progress[2].satisfied);
  EXPECT_EQ(progress[3].path, "trigger.any[1].all[2].partition");
  EXPECT_EQ(progress[3].detail, "1 of 2 partitions or 7 of 50 bytes of d");
  EXPECT_FALSE(progress[3].satisfied);
}

// A history record describes a counted leaf from its number and its state alone
// (DescribeLeafAt): the same path and text as DescribeProgress's entry for that leaf.
TEST(TriggerEvalTest, DescribesOneLeafFromItsStateAsDescribeProgress) {
  const Trigger trigger = Any({PartitionLeaf("sales.raw", std::nullopt, 1000),
                               All({ProgramLeaf("sales.ingest", {ProgramStatus::kSucceeded, ProgramStatus::kFailed}, 2),
                                    TimeLeaf(), Any({PartitionLeaf("d", 2, 50), PartitionLeaf("e")})})});
  TriggerState state = NewTriggerState(trigger);
  ApplyEvent(trigger, kSchedule, PartitionEvent("sales.raw", {"a"}, 300), state);
  ApplyEvent(trigger, kSchedule, ProgramEvent("sales.ingest", ProgramStatus::kFailed), state);
  ApplyEvent(trigger, kSchedule, Tick(kSchedule.value()), state);
  ApplyEvent(trigger, kSchedule, PartitionEvent("d", {"x"}, 7), state);
  const std::vector<LeafProgress> progress = DescribeProgress(trigger, state);
  ASSERT_EQ(progress.size(), 5u);
  for (size_t leaf = 0; leaf < progress.size(); ++leaf) {
    LeafState alone = state.leaves[leaf];
    alone.partitions.clear();  // as a record keeps it
    const LeafProgress one = DescribeLeafAt(trigger, static_cast<int>(leaf), alone);
    EXPECT_EQ(one.path, progress[leaf].path) << leaf;
    EXPECT_EQ(one.detail, progress[leaf].detail) << leaf;
    EXPECT_EQ(one.satisfied, progress[leaf].satisfied) << leaf;
  }
  EXPECT_EQ(DescribeLeafAt(PartitionLeaf("a"), 0, LeafState()).path, "trigger");
}

TEST(TriggerEvalTest, DescribesAStaleStateAsFresh) {
  const Trigger trigger = All({PartitionLeaf("a"), TimeLeaf()});
  TriggerState stale;
  stale.leaves.resize(5);
  stale.leaves[0].satisfied = true;
  std::vector<LeafProgress> progress = DescribeProgress(trigger, stale);
  ASSERT_EQ(progress.size(), 2u);
  EXPECT_EQ(progress[0].path, "trigger.all[0].partition");
  EXPECT_FALSE(progress[0].satisfied);
  EXPECT_EQ(progress[0].detail, "0 of 1 partitions of a");
  EXPECT_EQ(progress[1].detail, "waiting for a tick (cron \"0 5 * * *\" in UTC)");
}

}  // namespace
}  // namespace trigd
