// Lineages (SPEC §10): which job an event of lineage L goes to in a correlated schedule, the
// failure remembered per lineage, which lineage a run gets, and a lineage's state and tree.
#include "core/lineage.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "core/accumulator.h"
#include "core/schedule_parser.h"

namespace trigd {
namespace {

using nlohmann::json;

const TimePoint kNow = TimePoint(Millis(1795305600250));  // 2026-11-22T00:00:00.250Z

// p6 waits for p3 and p4, correlated, failure discards.
ScheduleView Join(int64_t id, bool correlate, std::optional<std::string> timeout = std::nullopt) {
  json leaf3 = {{"name", "p3"}, {"on_upstream_failure", "discard"}};
  json leaf4 = {{"name", "p4"}, {"on_upstream_failure", "discard"}};
  if (correlate) {
    leaf3["correlate"] = true;
    leaf4["correlate"] = true;
  }
  json doc = {{"namespace", "default"},
              {"name", "p6"},
              {"program", {{"name", "p6"}}},
              {"trigger", {{"all", {{{"program", leaf3}}, {{"program", leaf4}}}}}}};
  if (timeout) doc["timeout"] = {{"after", *timeout}};
  ParsedSchedule p = ParseSchedule(doc);
  EXPECT_TRUE(p.ok());
  return {id, 1, std::make_shared<const Schedule>(std::move(p.schedule))};
}

Event Program(std::string id, std::string program, std::string run_id, std::string lineage,
              ProgramStatus status = ProgramStatus::kSucceeded) {
  Event e;
  e.id = std::move(id);
  e.type = EventType::kProgram;
  e.program.program = std::move(program);
  e.program.run_id = std::move(run_id);
  e.program.lineage = std::move(lineage);
  e.program.status = status;
  e.payload = {{"program", e.program.program},
               {"run_id", e.program.run_id},
               {"status", ProgramStatusName(status)},
               {"lineage", e.program.lineage}};
  return e;
}

TEST(CorrelatedJoinTest, AJoinCompletesOnlyWithUpstreamRunsOfOneLineage) {
  std::map<int64_t, ScheduleView> schedules = {{1, Join(1, true)}};
  // Monday's B (p4) and Tuesday's A (p3) arrive first: two jobs, neither complete.
  Event b_mon = Program("e1", "p4", "r4-mon", "L-mon");
  Event a_tue = Program("e2", "p3", "r3-tue", "L-tue");
  Event a_mon = Program("e3", "p3", "r3-mon", "L-mon");
  Accumulation acc = Accumulate({{&b_mon, {1}}, {&a_tue, {1}}, {&a_mon, {1}}}, schedules, {}, FailedLineageSet(), kNow);
  ASSERT_EQ(acc.jobs.size(), 2u);
  EXPECT_EQ(acc.jobs[0].lineage, "L-mon");
  EXPECT_TRUE(acc.jobs[0].complete);
  ASSERT_EQ(acc.jobs[0].triggered_by.size(), 2u);
  EXPECT_EQ(acc.jobs[0].triggered_by[0].id, "e1");
  EXPECT_EQ(acc.jobs[0].triggered_by[1].id, "e3");
  EXPECT_EQ(acc.jobs[1].lineage, "L-tue");
  EXPECT_FALSE(acc.jobs[1].complete);
}

TEST(CorrelatedJoinTest, WithoutCorrelateTheJoinMixesCycles) {
  std::map<int64_t, ScheduleView> schedules = {{1, Join(1, false)}};
  Event b_mon = Program("e1", "p4", "r4-mon", "L-mon");
  Event a_tue = Program("e2", "p3", "r3-tue", "L-tue");
  Accumulation acc = Accumulate({{&b_mon, {1}}, {&a_tue, {1}}}, schedules, {}, kNow);
  ASSERT_EQ(acc.jobs.size(), 1u);
  EXPECT_EQ(acc.jobs[0].lineage, "");
  EXPECT_TRUE(acc.jobs[0].complete);  // the §5 behaviour: one open job per schedule
}

TEST(CorrelatedJoinTest, AStoredJobOfALineageCollectsOnlyItsLineage) {
  std::map<int64_t, ScheduleView> schedules = {{1, Join(1, true)}};
  OpenJob stored;
  stored.id = 9;
  stored.schedule_id = 1;
  stored.schedule_version = 1;
  stored.lineage = "L-mon";
  stored.state = TriggerState{{LeafState{1, 0, {}, true}, LeafState{}}};  // p3 seen
  Event b_tue = Program("e5", "p4", "r4-tue", "L-tue");
  Accumulation acc = Accumulate({{&b_tue, {1}}}, schedules, {stored}, FailedLineageSet(), kNow);
  ASSERT_EQ(acc.jobs.size(), 2u);
  EXPECT_FALSE(acc.jobs[0].changed);
  EXPECT_FALSE(acc.jobs[0].complete);
  EXPECT_EQ(acc.jobs[1].lineage, "L-tue");
  EXPECT_FALSE(acc.jobs[1].complete);
}

TEST(CorrelatedJoinTest, AnUpstreamFailureDiscardsTheLineagesJobAndIsRemembered) {
  std::map<int64_t, ScheduleView> schedules = {{1, Join(1, true, "6h")}};
  Event a = Program("e1", "p3", "r3", "L1");
  Event other = Program("e2", "p3", "r3b", "L2");
  Event failed = Program("e3", "p4", "r4", "L1", ProgramStatus::kFailed);
  Accumulation acc = Accumulate({{&a, {1}}, {&other, {1}}, {&failed, {1}}}, schedules, {}, FailedLineageSet(), kNow);
  ASSERT_EQ(acc.jobs.size(), 2u);
  EXPECT_TRUE(acc.jobs[0].discarded);
  EXPECT_EQ(acc.jobs[0].lineage, "L1");
  EXPECT_FALSE(acc.jobs[1].discarded);  // L2 untouched
  ASSERT_EQ(acc.failed_lineages.size(), 1u);
  EXPECT_EQ(acc.failed_lineages[0].schedule_id, 1);
  EXPECT_EQ(acc.failed_lineages[0].lineage, "L1");
  EXPECT_EQ(acc.failed_lineages[0].expires_at, kNow + std::chrono::hours(6));
  ASSERT_EQ(acc.published.size(), 1u);
  EXPECT_EQ(acc.published[0].program.lineage, "L1");
  EXPECT_EQ(acc.published[0].payload["lineage"], "L1");
}

TEST(CorrelatedJoinTest, AFailureWithNoOpenJobStillKeepsALaterSiblingFromOpeningOne) {
  std::map<int64_t, ScheduleView> schedules = {{1, Join(1, true)}};
  Event failed = Program("e1", "p4", "r4", "L1", ProgramStatus::kFailed);
  Event sibling = Program("e2", "p3", "r3", "L1");
  Accumulation acc = Accumulate({{&failed, {1}}, {&sibling, {1}}}, schedules, {}, FailedLineageSet(), kNow);
  EXPECT_TRUE(acc.jobs.empty());
  ASSERT_EQ(acc.failed_lineages.size(), 1u);
  EXPECT_EQ(acc.failed_lineages[0].expires_at, kNow + kFailedLineageMemory);
  EXPECT_FALSE(acc.applied[1]);

  // In a later batch, from the stored memory.
  Accumulation later = Accumulate({{&sibling, {1}}}, schedules, {}, FailedLineageSet{{1, "L1"}}, kNow);
  EXPECT_TRUE(later.jobs.empty());
  // The next cycle's lineage is not affected.
  Event next = Program("e3", "p3", "r3n", "L2");
  Accumulation next_acc = Accumulate({{&next, {1}}}, schedules, {}, FailedLineageSet{{1, "L1"}}, kNow);
  ASSERT_EQ(next_acc.jobs.size(), 1u);
  EXPECT_EQ(next_acc.jobs[0].lineage, "L2");
}

TEST(CorrelatedJoinTest, WithoutCorrelateNothingIsRemembered) {
  std::map<int64_t, ScheduleView> schedules = {{1, Join(1, false)}};
  Event failed = Program("e1", "p4", "r4", "L1", ProgramStatus::kFailed);
  Event sibling = Program("e2", "p3", "r3", "L1");
  Accumulation acc = Accumulate({{&failed, {1}}, {&sibling, {1}}}, schedules, {}, FailedLineageSet(), kNow);
  EXPECT_TRUE(acc.failed_lineages.empty());
  ASSERT_EQ(acc.jobs.size(), 1u);  // the §5 behaviour: the sibling opens a job
}

TEST(CorrelatedJoinTest, AReportWithoutLineageCountsInItsRunsOwnLineage) {
  std::map<int64_t, ScheduleView> schedules = {{1, Join(1, true)}};
  Event a = Program("e1", "p3", "r3", "");
  Accumulation acc = Accumulate({{&a, {1}}}, schedules, {}, FailedLineageSet(), kNow);
  ASSERT_EQ(acc.jobs.size(), 1u);
  EXPECT_EQ(acc.jobs[0].lineage, "r3");
}

TEST(CorrelatedParserTest, ACorrelatedTriggerHoldsOnlyCorrelatedProgramLeaves) {
  ParsedSchedule p = ParseSchedule(
      {{"name", "x"},
       {"program", {{"name", "x"}}},
       {"trigger",
        {{"all", {{{"program", {{"name", "a"}, {"correlate", true}}}}, {{"partition", {{"dataset", "d"}}}}}}}}});
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.errors.at(0).path, "trigger.all[1].partition");
}

TEST(RunLineageTest, ARunOfNoUpstreamRunStartsItsOwnLineage) {
  json by = json::array({{{"id", "e"}, {"type", "partition"}, {"payload", {{"dataset", "d"}}}}});
  RunLineage l = DecideRunLineage("", by, "run-1");
  EXPECT_EQ(l.lineage, "run-1");
  EXPECT_TRUE(l.all.empty());
}

TEST(RunLineageTest, ARunInheritsTheOldestLineageOfItsUpstreamRuns) {
  json by = json::array({
      {{"id", "e1"}, {"type", "program"}, {"payload", {{"run_id", "r2"}, {"lineage", "0195-b"}}}},
      {{"id", "e2"}, {"type", "program"}, {"payload", {{"run_id", "0195-a"}}}},  // no lineage: its run id
      {{"id", "e3"}, {"type", "program"}, {"payload", {{"run_id", "r3"}, {"lineage", "0195-b"}}}},
  });
  RunLineage l = DecideRunLineage("", by, "run-9");
  EXPECT_EQ(l.lineage, "0195-a");
  EXPECT_EQ(l.all, (std::vector<std::string>{"0195-a", "0195-b"}));
}

TEST(RunLineageTest, ACorrelatedJobsLineageWins) {
  json by = json::array({{{"id", "e1"}, {"type", "program"}, {"payload", {{"run_id", "r2"}, {"lineage", "L"}}}}});
  EXPECT_EQ(DecideRunLineage("L", by, "run-9").lineage, "L");
}

TEST(LineageStateTest, RunningWhileActiveThenFailedOrSucceeded) {
  EXPECT_EQ(DecideLineageState(1, 1), LineageState::kRunning);
  EXPECT_EQ(DecideLineageState(0, 1), LineageState::kFailed);
  EXPECT_EQ(DecideLineageState(0, 0), LineageState::kSucceeded);
  for (LineageState s : kAllLineageStates) EXPECT_EQ(LineageStateFromName(LineageStateName(s)), s);
  EXPECT_FALSE(LineageStateFromName("done"));
}

TEST(LineageTreeTest, RunsHangUnderTheirFirstUpstreamRunInTheLineage) {
  std::vector<LineageRun> runs(4);
  runs[0].run_id = "r1";
  runs[1].run_id = "r2";
  runs[1].upstream = {"r1"};
  runs[2].run_id = "r3";
  runs[2].upstream = {"r1"};
  runs[3].run_id = "r4";
  runs[3].upstream = {"elsewhere", "r3", "r2"};
  std::vector<LineageTreeRow> tree = LineageTree(runs);
  ASSERT_EQ(tree.size(), 4u);
  EXPECT_EQ(tree[0].run, 0u);
  EXPECT_EQ(tree[0].depth, 0);
  EXPECT_EQ(tree[1].run, 1u);
  EXPECT_EQ(tree[1].depth, 1);
  EXPECT_EQ(tree[2].run, 2u);
  EXPECT_EQ(tree[3].run, 3u);
  EXPECT_EQ(tree[3].depth, 2);
  EXPECT_EQ(UpstreamRunIds(json::array({{{"type", "program"}, {"payload", {{"run_id", "x"}}}}})),
            std::vector<std::string>{"x"});
}

}  // namespace
}  // namespace trigd
