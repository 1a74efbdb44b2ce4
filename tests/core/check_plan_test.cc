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
  d.trigger = TriggerState{{LeafState{}}};  // no partition yet
  d.ready_at.reset();
  CheckPlan plan = PlanChecks({d}, {{7, {1, &s}}}, {}, kNow);
  EXPECT_EQ(plan.verdicts[0].decision, Decision::kWait);
  EXPECT_EQ(plan.verdicts[0].state, JobState::kPendingTrigger);
  EXPECT_EQ(plan.verdicts[0].next_check_at, d.opened_at + std::chrono::hours(1)) << "checked again at its timeout";
}

// A silence leaf 10 minutes long, armed at `armed`.
DueJob Silent(int64_t id, TimePoint armed) {
  DueJob d = Due(id, 9);
  d.state = JobState::kPendingTrigger;
  d.ready_at.reset();
  LeafState leaf;
  leaf.last_arrival = armed;
  d.trigger = TriggerState{{leaf}};
  return d;
}

Schedule SilenceSchedule() {
  json doc = {{"name", "quiet"}, {"program", {{"name", "p"}}}};
  doc["trigger"] = {{"silence", {{"dataset", "d"}, {"for", "10m"}}}};
  ParsedSchedule p = ParseSchedule(doc);
  EXPECT_TRUE(p.ok()) << doc.dump();
  return p.schedule;
}

// A silence over by the clock completes the trigger in the check that is due for it: the job is
// ready now (no ready_at before), its history says which wait ended, and it launches. One still
// silent waits collecting, due again at the silence's end.
TEST(CheckPlanTest, TheClockCompletesASilenceAndTheJobIsReadyNow) {
  const Schedule s = SilenceSchedule();
  const std::map<int64_t, CheckedSchedule> schedules{{9, {1, &s}}};
  CheckPlan plan = PlanChecks({Silent(1, kNow - std::chrono::minutes(11)), Silent(2, kNow - std::chrono::minutes(4))},
                              schedules, {}, kNow);
  const JobVerdict& over = plan.verdicts[0];
  EXPECT_EQ(over.decision, Decision::kLaunch);
  EXPECT_TRUE(over.ready_now);
  ASSERT_TRUE(over.completed_by.has_value());
  EXPECT_NE(over.completed_by->find("silent since"), std::string::npos) << *over.completed_by;
  const JobVerdict& silent = plan.verdicts[1];
  EXPECT_EQ(silent.decision, Decision::kWait);
  EXPECT_EQ(silent.state, JobState::kPendingTrigger);
  EXPECT_FALSE(silent.ready_now);
  EXPECT_FALSE(silent.completed_by.has_value());
  EXPECT_EQ(silent.next_check_at, kNow + std::chrono::minutes(6)) << "woken at the silence's end";
  // A job ready before (its timeout ran it while collecting, say) keeps its ready_at.
  DueJob ready = Silent(3, kNow - std::chrono::minutes(11));
  ready.ready_at = kNow - std::chrono::minutes(1);
  EXPECT_FALSE(PlanChecks({ready}, schedules, {}, kNow).verdicts[0].ready_now);
}

// Runs that ended before the check free their slots in the counters held, never below zero;
// counters not held are left to the store.
TEST(CheckPlanTest, EndedRunsFreeTheirSlots) {
  CheckCounters c;
  c.schedules[7] = {2, kNow};
  c.groups["g"] = 1;
  c.FreeEnded({{7, 1}, {8, 1}}, {{"g", 3}, {"h", 1}});
  EXPECT_EQ(c.schedules[7].active, 1);
  EXPECT_EQ(c.groups["g"], 0);
  EXPECT_FALSE(c.schedules.count(8));
  EXPECT_FALSE(c.groups.count("h"));
}

// cancel_oldest's victims free the schedule's slots, and their groups' when held here; a victim
// of a group not held (the schedule's group changed since it launched) is returned for the store
// to decrement.
TEST(CheckPlanTest, CancelledRunsFreeTheGroupsHeldAndReturnTheOthers) {
  const Schedule s = Parse({{"name", "o"},
                            {"constraints",
                             {{"max_concurrent_runs", {{"max", 1}, {"on_unmet", "cancel_oldest"}}},
                              {"concurrency_group", {{"name", "new"}, {"max", 5}}}}}});
  CheckCounters counters;
  counters.schedules[7] = {3, kNow - std::chrono::hours(1)};
  counters.groups["new"] = 1;
  counters.groups["other"] = 4;  // held for another schedule of the batch
  const std::map<int64_t, CheckedSchedule> schedules{{7, {1, &s}}};
  CheckPlanner planner(schedules, counters, kNow);
  const DueJob job = Due(1, 7);
  JobVerdict v = planner.Decide(job);
  ASSERT_EQ(v.decision, Decision::kLaunch);
  ASSERT_EQ(v.cancel_oldest, 3);
  std::map<std::string, int> not_held = planner.Apply(job, v, {std::string("old"), std::string("other"), std::nullopt});
  EXPECT_EQ(not_held, (std::map<std::string, int>{{"old", 1}}));
  EXPECT_EQ(counters.schedules[7].active, 1) << "three ended, one launched";
  EXPECT_EQ(counters.groups["new"], 2);
  EXPECT_EQ(counters.groups["other"], 3);
}

// What cancel_oldest does to each run it ends, and the history text naming the job.
TEST(CheckPlanTest, CancelOldestKillsForOverlap) {
  const OverlapCancel how = CancelOldestRun(42);
  EXPECT_EQ(how.state, RunState::kKilled);
  EXPECT_EQ(how.reason, "overlap");
  EXPECT_EQ(how.what, "cancelled by max_concurrent_runs on_unmet cancel_oldest for job 42");
}

}  // namespace
}  // namespace trigd
