// core/check_plan.h: the checker's write-set for a batch of due jobs, without PostgreSQL.
#include "core/check_plan.h"

#include <gtest/gtest.h>

#include "core/schedule_parser.h"

namespace trigd {
namespace {

using nlohmann::json;

const TimePoint kNow = TimePoint(std::chrono::hours(24 * 20000));

Schedule Parse(json doc) {
  doc["program"] = {{"name", "p"}};
  doc["trigger"] = {{"partition", {{"dataset", "d"}}}};
  ParsedSchedule p = ParseSchedule(doc);
  EXPECT_TRUE(p.ok()) << doc.dump();
  return p.schedule;
}

DueJob Due(int64_t id, int64_t schedule_id, std::string last_decision = "") {
  DueJob d;
  d.id = id;
  d.schedule_id = schedule_id;
  d.version = 1;
  d.opened_at = kNow - std::chrono::minutes(5);
  d.ready_at = kNow - std::chrono::minutes(1);
  d.last_decision = std::move(last_decision);
  return d;
}

// A batch of three jobs of a schedule limited to one run: the first launches and takes the
// slot, the other two wait for a run to end; the counters after say one run, launched now.
TEST(CheckPlanTest, ALaunchTakesItsSlotBeforeTheNextJobIsDecided) {
  const Schedule s = Parse({{"name", "one"}, {"constraints", {{"max_concurrent_runs", 1}}}});
  const std::map<int64_t, CheckedSchedule> schedules{{7, {1, &s}}};
  CheckPlan plan = PlanChecks({Due(1, 7), Due(2, 7), Due(3, 7)}, schedules, {}, kNow);
  ASSERT_EQ(plan.verdicts.size(), 3u);
  EXPECT_EQ(plan.verdicts[0].decision, Decision::kLaunch);
  EXPECT_EQ(plan.verdicts[0].state, JobState::kLaunched);
  EXPECT_EQ(plan.verdicts[0].history, "constraints hold: launching");
  for (size_t i : {1u, 2u}) {
    EXPECT_EQ(plan.verdicts[i].decision, Decision::kWait);
    EXPECT_EQ(plan.verdicts[i].state, JobState::kPendingConstraint);
    EXPECT_NE(plan.verdicts[i].reason.find("max_concurrent_runs"), std::string::npos) << plan.verdicts[i].reason;
    EXPECT_EQ(plan.verdicts[i].next_check_at, kNow + kRunEndRecheck) << "woken by a run's end, re-checked at most then";
  }
  EXPECT_EQ(plan.counters.schedules[7], (ScheduleRunCounter{1, kNow}));
  EXPECT_EQ(plan.counters.launches[7], std::vector<TimePoint>{kNow});
}

// A concurrency group shared by two schedules: its count holds across them.
TEST(CheckPlanTest, AGroupCountHoldsAcrossSchedules) {
  const json group = {{"concurrency_group", {{"name", "heavy"}, {"max", 2}}}};
  const Schedule a = Parse({{"name", "a"}, {"constraints", group}});
  const Schedule b = Parse({{"name", "b"}, {"constraints", group}});
  CheckCounters counters;
  counters.groups["heavy"] = 1;
  CheckPlan plan = PlanChecks({Due(1, 1), Due(2, 2), Due(3, 1)}, {{1, {1, &a}}, {2, {1, &b}}}, counters, kNow);
  EXPECT_EQ(plan.verdicts[0].decision, Decision::kLaunch);
  EXPECT_EQ(plan.verdicts[1].decision, Decision::kWait);
  EXPECT_EQ(plan.verdicts[2].decision, Decision::kWait);
  EXPECT_EQ(plan.counters.groups["heavy"], 2);
}

// A job of a schedule deleted, suspended or updated since it opened is discarded unchecked.
TEST(CheckPlanTest, AJobOfAScheduleGoneOrChangedIsDiscarded) {
  const Schedule s = Parse({{"name", "s"}});
  DueJob old = Due(2, 7);
  old.version = 0;
  CheckPlan plan = PlanChecks({Due(1, 8), old}, {{7, {1, &s}}}, {}, kNow);
  EXPECT_EQ(plan.verdicts[0].decision, Decision::kDiscard);
  EXPECT_EQ(plan.verdicts[0].reason, "schedule deleted or suspended");
  EXPECT_FALSE(plan.verdicts[0].checked);
  EXPECT_EQ(plan.verdicts[1].reason, "schedule updated");
  EXPECT_EQ(plan.verdicts[1].history, "discarded: schedule updated");
  EXPECT_TRUE(plan.counters.schedules.empty());
}

// cancel_oldest: a launch at the limit cancels the schedule's oldest stored run (its slot freed,
// the launch takes it); a second job in the same batch would need a run launched by this batch,
// which is not stored yet: it waits a second.
TEST(CheckPlanTest, CancelOldestCancelsOnlyStoredRuns) {
  const Schedule s =
      Parse({{"name", "o"}, {"constraints", {{"max_concurrent_runs", {{"max", 1}, {"on_unmet", "cancel_oldest"}}}}}});
  CheckCounters counters;
  counters.schedules[7] = {1, kNow - std::chrono::hours(1)};
  CheckPlan plan = PlanChecks({Due(1, 7), Due(2, 7)}, {{7, {1, &s}}}, counters, kNow);
  EXPECT_EQ(plan.verdicts[0].decision, Decision::kLaunch);
  EXPECT_EQ(plan.verdicts[0].cancel_oldest, 1);
  EXPECT_EQ(plan.verdicts[1].decision, Decision::kWait);
  EXPECT_EQ(plan.verdicts[1].cancel_oldest, 0);
  EXPECT_EQ(plan.verdicts[1].next_check_at, kNow + std::chrono::seconds(1));
  EXPECT_EQ(plan.verdicts[1].reason,
            "max_concurrent_runs: a run launched by this check holds the slot (cancel_oldest)");
  EXPECT_EQ(plan.counters.schedules[7].active, 1) << "one cancelled, one launched";
}

// A wait whose reason did not change writes no history entry; a job started with --force
// launches whatever its constraints say, and says so.
TEST(CheckPlanTest, HistoryOnlyForAChangeAndForcedLaunchesSaySo) {
  const Schedule s = Parse({{"name", "w"}, {"constraints", {{"max_concurrent_runs", 1}}}});
  CheckCounters counters;
  counters.schedules[7] = {1, kNow - std::chrono::minutes(2)};
  const std::map<int64_t, CheckedSchedule> schedules{{7, {1, &s}}};
  CheckPlan first = PlanChecks({Due(1, 7)}, schedules, counters, kNow);
  ASSERT_EQ(first.verdicts[0].decision, Decision::kWait);
  ASSERT_TRUE(first.verdicts[0].history.has_value());
  CheckPlan again = PlanChecks({Due(1, 7, first.verdicts[0].reason)}, schedules, counters, kNow);
  EXPECT_FALSE(again.verdicts[0].history.has_value());
  CheckPlan forced = PlanChecks({Due(2, 7, kForcedByHand)}, schedules, counters, kNow);
  EXPECT_EQ(forced.verdicts[0].decision, Decision::kLaunch);
  EXPECT_TRUE(forced.verdicts[0].forced);
  EXPECT_EQ(forced.verdicts[0].history, "launched by hand with --force: constraints not applied");
  EXPECT_EQ(forced.counters.schedules[7].active, 2);
}

// A job still collecting (trigger incomplete) that waits stays pending_trigger.
TEST(CheckPlanTest, AnIncompleteTriggerWaitsCollecting) {
  const Schedule s = Parse({{"name", "c"}, {"timeout", {{"after", "1h"}, {"action", "discard"}}}});
  DueJob d = Due(1, 7);
  d.state = JobState::kPendingTrigger;
  d.trigger_complete = false;
  d.ready_at.reset();
  CheckPlan plan = PlanChecks({d}, {{7, {1, &s}}}, {}, kNow);
  EXPECT_EQ(plan.verdicts[0].decision, Decision::kWait);
  EXPECT_EQ(plan.verdicts[0].state, JobState::kPendingTrigger);
  EXPECT_EQ(plan.verdicts[0].next_check_at, d.opened_at + std::chrono::hours(1)) << "checked again at its timeout";
}

}  // namespace
}  // namespace trigd
