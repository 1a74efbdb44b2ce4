#include "core/constraint_checker.h"

#include <gtest/gtest.h>

#include <string>
#include <string_view>

namespace trigd {
namespace {

using std::chrono::hours;
using std::chrono::minutes;

TimePoint At(std::string_view text) { return ParseTime(text).value(); }

constexpr Millis kMs{1};
constexpr Millis kDay = hours(24);

TimeWindow Window(std::string_view start, std::string_view end, std::string timezone,
                  OnUnmet on_unmet = OnUnmet::kWait) {
  TimeWindow window;
  window.start_minute = ParseTimeOfDay(start).value();
  window.end_minute = ParseTimeOfDay(end).value();
  window.timezone = std::move(timezone);
  window.on_unmet = on_unmet;
  return window;
}

Schedule Named() {
  Schedule schedule;
  schedule.name = "sales-rollup";
  return schedule;
}

JobFacts Job(TimePoint opened_at, std::optional<TimePoint> ready_at) { return JobFacts{opened_at, ready_at}; }

const ConstraintCheck* Find(const CheckOutcome& outcome, std::string_view constraint) {
  for (const ConstraintCheck& check : outcome.checks) {
    if (check.constraint == constraint) return &check;
  }
  return nullptr;
}

// --- names ---

TEST(ConstraintCheckerTest, NamesResultsAndDecisionsAsTheCliShowsThem) {
  EXPECT_STREQ(ConstraintResultName(ConstraintResult::kSatisfied), "satisfied");
  EXPECT_STREQ(ConstraintResultName(ConstraintResult::kWait), "wait");
  EXPECT_STREQ(ConstraintResultName(ConstraintResult::kSkip), "skip");
  EXPECT_STREQ(DecisionName(Decision::kLaunch), "launch");
  EXPECT_STREQ(DecisionName(Decision::kWait), "wait");
  EXPECT_STREQ(DecisionName(Decision::kDiscard), "discard");
}

// --- no constraints ---

TEST(ConstraintCheckerTest, JobWithoutConstraintsLaunchesAsSoonAsTriggerCompletes) {
  TimePoint now = At("2026-11-22T10:00:00Z");
  CheckOutcome outcome = CheckJob(Named(), Job(now, now), true, RunFacts{}, now);
  EXPECT_EQ(outcome.decision, Decision::kLaunch);
  EXPECT_FALSE(outcome.forced);
  EXPECT_TRUE(outcome.checks.empty());
  EXPECT_FALSE(outcome.next_check_at.has_value());
  EXPECT_EQ(outcome.reason, "trigger complete; no constraints");
}

// --- trigger ---

TEST(ConstraintCheckerTest, IncompleteTriggerWaitsForAnEventWithoutCheckingConstraints) {
  Schedule schedule = Named();
  schedule.constraints.max_concurrent_runs = 1;
  TimePoint now = At("2026-11-22T10:00:00Z");
  RunFacts runs;
  runs.active_runs = 1;
  CheckOutcome outcome = CheckJob(schedule, Job(now, std::nullopt), false, runs, now);
  EXPECT_EQ(outcome.decision, Decision::kWait);
  ASSERT_EQ(outcome.checks.size(), 1u);
  EXPECT_EQ(outcome.checks[0].constraint, "trigger");
  EXPECT_EQ(outcome.checks[0].result, ConstraintResult::kWait);
  EXPECT_FALSE(outcome.next_check_at.has_value());
  EXPECT_EQ(outcome.reason, "trigger incomplete");
}

// --- delay ---

TEST(ConstraintCheckerTest, DelayHoldsJobUntilDelayPasses) {
  Schedule schedule = Named();
  schedule.constraints.delay = minutes(10);
  TimePoint ready = At("2026-11-22T10:00:00Z");
  CheckOutcome outcome = CheckJob(schedule, Job(ready - hours(1), ready), true, RunFacts{}, ready + minutes(10) - kMs);
  EXPECT_EQ(outcome.decision, Decision::kWait);
  EXPECT_EQ(outcome.next_check_at, At("2026-11-22T10:10:00Z"));
  const ConstraintCheck* delay = Find(outcome, "delay");
  ASSERT_NE(delay, nullptr);
  EXPECT_EQ(delay->result, ConstraintResult::kWait);
  EXPECT_EQ(delay->next_check_at, At("2026-11-22T10:10:00Z"));
  EXPECT_EQ(delay->reason, "ready at 2026-11-22T10:00:00Z; 10m delay until 2026-11-22T10:10:00Z");
}

TEST(ConstraintCheckerTest, DelayHoldsExactlyWhenItEnds) {
  Schedule schedule = Named();
  schedule.constraints.delay = minutes(10);
  TimePoint ready = At("2026-11-22T10:00:00Z");
  CheckOutcome outcome = CheckJob(schedule, Job(ready, ready), true, RunFacts{}, ready + minutes(10));
  EXPECT_EQ(outcome.decision, Decision::kLaunch);
  EXPECT_EQ(Find(outcome, "delay")->result, ConstraintResult::kSatisfied);
  EXPECT_EQ(outcome.reason, "trigger complete; all 1 constraint holds");
}

TEST(ConstraintCheckerTest, DelayCountsFromReadyNotFromOpening) {
  Schedule schedule = Named();
  schedule.constraints.delay = minutes(10);
  TimePoint opened = At("2026-11-22T09:00:00Z");
  TimePoint ready = At("2026-11-22T10:00:00Z");
  CheckOutcome outcome = CheckJob(schedule, Job(opened, ready), true, RunFacts{}, At("2026-11-22T10:05:00Z"));
  EXPECT_EQ(outcome.decision, Decision::kWait);
  EXPECT_EQ(outcome.next_check_at, At("2026-11-22T10:10:00Z"));
}

TEST(ConstraintCheckerTest, DelayCountsFromOpeningWhenReadyAtIsUnset) {
  Schedule schedule = Named();
  schedule.constraints.delay = minutes(10);
  TimePoint opened = At("2026-11-22T09:55:00Z");
  CheckOutcome outcome = CheckJob(schedule, Job(opened, std::nullopt), true, RunFacts{}, At("2026-11-22T10:00:00Z"));
  EXPECT_EQ(outcome.decision, Decision::kWait);
  EXPECT_EQ(outcome.next_check_at, At("2026-11-22T10:05:00Z"));
}

// --- time window: plain days ---

TEST(TimeWindowTest, StartIsInclusiveAndEndExclusive) {
  TimeWindow window = Window("09:00", "17:00", "UTC");
  EXPECT_FALSE(InsideWindow(window, At("2026-11-22T09:00:00Z") - kMs));
  EXPECT_TRUE(InsideWindow(window, At("2026-11-22T09:00:00Z")));
  EXPECT_TRUE(InsideWindow(window, At("2026-11-22T17:00:00Z") - kMs));
  EXPECT_FALSE(InsideWindow(window, At("2026-11-22T17:00:00Z")));
}

TEST(TimeWindowTest, WindowAcrossMidnightHoldsOnBothSides) {
  TimeWindow window = Window("22:00", "06:00", "UTC");
  EXPECT_FALSE(InsideWindow(window, At("2026-11-22T22:00:00Z") - kMs));
  EXPECT_TRUE(InsideWindow(window, At("2026-11-22T22:00:00Z")));
  EXPECT_TRUE(InsideWindow(window, At("2026-11-22T23:59:59.999Z")));
  EXPECT_TRUE(InsideWindow(window, At("2026-11-23T00:00:00Z")));
  EXPECT_TRUE(InsideWindow(window, At("2026-11-23T06:00:00Z") - kMs));
  EXPECT_FALSE(InsideWindow(window, At("2026-11-23T06:00:00Z")));
  EXPECT_FALSE(InsideWindow(window, At("2026-11-23T12:00:00Z")));
}

TEST(TimeWindowTest, HandBuiltWindowFromAndToTheSameTimeIsTheWholeDay) {
  TimeWindow window = Window("00:00", "00:00", "Europe/Berlin");
  EXPECT_TRUE(InsideWindow(window, At("2026-11-22T23:00:00Z")));
  EXPECT_TRUE(InsideWindow(window, At("2026-11-22T12:34:56Z")));
}

TEST(TimeWindowTest, NextOpeningIsNowWhenInside) {
  TimeWindow window = Window("22:00", "06:00", "UTC");
  TimePoint now = At("2026-11-23T03:17:00.250Z");
  EXPECT_EQ(NextWindowOpening(window, now), now);
}

TEST(TimeWindowTest, NextOpeningIsTodaysStartBeforeTheWindow) {
  EXPECT_EQ(NextWindowOpening(Window("09:00", "17:00", "UTC"), At("2026-11-22T08:59:59Z")), At("2026-11-22T09:00:00Z"));
  EXPECT_EQ(NextWindowOpening(Window("22:00", "06:00", "UTC"), At("2026-11-22T06:00:00Z")), At("2026-11-22T22:00:00Z"));
}

TEST(TimeWindowTest, NextOpeningIsTomorrowsStartAfterTheWindow) {
  EXPECT_EQ(NextWindowOpening(Window("09:00", "17:00", "UTC"), At("2026-11-22T17:00:00Z")), At("2026-11-23T09:00:00Z"));
}

TEST(TimeWindowTest, BerlinWindowOpensAtLocalStartInUtc) {
  TimeWindow window = Window("22:00", "06:00", "Europe/Berlin");
  // Winter: CET is UTC+1, so 22:00 local is 21:00Z and 06:00 local is 05:00Z.
  EXPECT_EQ(NextWindowOpening(window, At("2026-11-22T10:00:00Z")), At("2026-11-22T21:00:00Z"));
  EXPECT_FALSE(InsideWindow(window, At("2026-11-22T21:00:00Z") - kMs));
  EXPECT_TRUE(InsideWindow(window, At("2026-11-22T21:00:00Z")));
  EXPECT_TRUE(InsideWindow(window, At("2026-11-23T05:00:00Z") - kMs));
  EXPECT_FALSE(InsideWindow(window, At("2026-11-23T05:00:00Z")));
}

TEST(TimeWindowTest, NewYorkStartOnThePreviousUtcDateIsFound) {
  // 19:30 EST on 2026-11-21 is 00:30Z on 2026-11-22; the window opens at 20:00 EST = 01:00Z.
  TimeWindow window = Window("20:00", "21:00", "America/New_York");
  EXPECT_EQ(NextWindowOpening(window, At("2026-11-22T00:30:00Z")), At("2026-11-22T01:00:00Z"));
}

// --- time window: clock changes ---

TEST(TimeWindowTest, BerlinSpringForwardOpensSkippedStartAtFirstValidInstant) {
  // 2026-03-29: at 01:00Z Berlin goes from 02:00 CET to 03:00 CEST; 02:30 never happens.
  TimeWindow window = Window("02:30", "04:00", "Europe/Berlin");
  EXPECT_EQ(NextWindowOpening(window, At("2026-03-29T00:00:00Z")), At("2026-03-29T01:00:00Z"));
  EXPECT_FALSE(InsideWindow(window, At("2026-03-29T01:00:00Z") - kMs));
  EXPECT_TRUE(InsideWindow(window, At("2026-03-29T01:00:00Z")));
  // 04:00 CEST is 02:00Z.
  EXPECT_TRUE(InsideWindow(window, At("2026-03-29T02:00:00Z") - kMs));
  EXPECT_FALSE(InsideWindow(window, At("2026-03-29T02:00:00Z")));
}

TEST(TimeWindowTest, BerlinSpringForwardSwallowsWindowInsideTheSkippedHour) {
  // 02:00-02:30 does not exist on 2026-03-29; the next opening is 02:00 CEST on 03-30.
  TimeWindow window = Window("02:00", "02:30", "Europe/Berlin");
  EXPECT_EQ(NextWindowOpening(window, At("2026-03-28T23:00:00Z")), At("2026-03-30T00:00:00Z"));
}

TEST(TimeWindowTest, BerlinSpringForwardCutsWindowShortAtTheJump) {
  // 01:00-03:00 local: opens 01:00 CET (00:00Z) and closes when the clock jumps to 03:00.
  TimeWindow window = Window("01:00", "03:00", "Europe/Berlin");
  EXPECT_TRUE(InsideWindow(window, At("2026-03-29T00:00:00Z")));
  EXPECT_TRUE(InsideWindow(window, At("2026-03-29T01:00:00Z") - kMs));
  EXPECT_FALSE(InsideWindow(window, At("2026-03-29T01:00:00Z")));
}

TEST(TimeWindowTest, BerlinFallBackKeepsWindowOpenThroughTheRepeatedHour) {
  // 2026-10-25: at 01:00Z Berlin goes from 03:00 CEST back to 02:00 CET, so 02:00-03:00 local
  // lasts two hours: 00:00Z to 02:00Z.
  TimeWindow window = Window("02:00", "03:00", "Europe/Berlin");
  EXPECT_EQ(NextWindowOpening(window, At("2026-10-24T23:00:00Z")), At("2026-10-25T00:00:00Z"));
  EXPECT_TRUE(InsideWindow(window, At("2026-10-25T00:30:00Z")));
  EXPECT_TRUE(InsideWindow(window, At("2026-10-25T01:30:00Z")));
  EXPECT_TRUE(InsideWindow(window, At("2026-10-25T02:00:00Z") - kMs));
  EXPECT_FALSE(InsideWindow(window, At("2026-10-25T02:00:00Z")));
}

TEST(TimeWindowTest, BerlinFallBackOpensRepeatedStartTwice) {
  // 02:30-02:45 local happens at 00:30Z (CEST) and again at 01:30Z (CET).
  TimeWindow window = Window("02:30", "02:45", "Europe/Berlin");
  EXPECT_EQ(NextWindowOpening(window, At("2026-10-25T00:00:00Z")), At("2026-10-25T00:30:00Z"));
  EXPECT_FALSE(InsideWindow(window, At("2026-10-25T00:45:00Z")));
  EXPECT_EQ(NextWindowOpening(window, At("2026-10-25T00:45:00Z")), At("2026-10-25T01:30:00Z"));
}

TEST(TimeWindowTest, BerlinFallBackReentersWindowWhenTheClockGoesBack) {
  // 01:00-02:30 local: closes at 02:30 CEST (00:30Z); the clock going back to 02:00 CET at
  // 01:00Z puts it inside again without passing the start time.
  TimeWindow window = Window("01:00", "02:30", "Europe/Berlin");
  EXPECT_FALSE(InsideWindow(window, At("2026-10-25T00:30:00Z")));
  EXPECT_EQ(NextWindowOpening(window, At("2026-10-25T00:30:00Z")), At("2026-10-25T01:00:00Z"));
  EXPECT_TRUE(InsideWindow(window, At("2026-10-25T01:30:00Z") - kMs));
  EXPECT_FALSE(InsideWindow(window, At("2026-10-25T01:30:00Z")));
}

TEST(TimeWindowTest, NewYorkSpringForwardOpensSkippedStartAtFirstValidInstant) {
  // 2026-03-08: at 07:00Z New York goes from 02:00 EST to 03:00 EDT.
  TimeWindow window = Window("02:30", "03:30", "America/New_York");
  EXPECT_EQ(NextWindowOpening(window, At("2026-03-08T05:00:00Z")), At("2026-03-08T07:00:00Z"));
  EXPECT_TRUE(InsideWindow(window, At("2026-03-08T07:30:00Z") - kMs));
  EXPECT_FALSE(InsideWindow(window, At("2026-03-08T07:30:00Z")));
  // The next day the window has its full hour again: 02:30 EDT is 06:30Z.
  EXPECT_EQ(NextWindowOpening(window, At("2026-03-08T07:30:00Z")), At("2026-03-09T06:30:00Z"));
}

TEST(TimeWindowTest, NewYorkFallBackOpensRepeatedStartTwice) {
  // 2026-11-01: at 06:00Z New York goes from 02:00 EDT back to 01:00 EST; 01:30-02:00 local
  // happens at 05:30Z and again at 06:30Z.
  TimeWindow window = Window("01:30", "02:00", "America/New_York");
  EXPECT_EQ(NextWindowOpening(window, At("2026-11-01T04:00:00Z")), At("2026-11-01T05:30:00Z"));
  EXPECT_TRUE(InsideWindow(window, At("2026-11-01T06:00:00Z") - kMs));
  EXPECT_FALSE(InsideWindow(window, At("2026-11-01T06:00:00Z")));
  EXPECT_EQ(NextWindowOpening(window, At("2026-11-01T06:00:00Z")), At("2026-11-01T06:30:00Z"));
  EXPECT_FALSE(InsideWindow(window, At("2026-11-01T07:00:00Z")));
}

// --- time window in CheckJob ---

TEST(ConstraintCheckerTest, OutsideWindowWaitsUntilItOpensWithLocalTimesInReason) {
  Schedule schedule = Named();
  schedule.constraints.time_window = Window("22:00", "06:00", "Europe/Berlin");
  TimePoint now = At("2026-11-22T10:00:00Z");
  CheckOutcome outcome = CheckJob(schedule, Job(now, now), true, RunFacts{}, now);
  EXPECT_EQ(outcome.decision, Decision::kWait);
  EXPECT_EQ(outcome.next_check_at, At("2026-11-22T21:00:00Z"));
  const ConstraintCheck* window = Find(outcome, "time_window");
  ASSERT_NE(window, nullptr);
  EXPECT_EQ(window->result, ConstraintResult::kWait);
  EXPECT_EQ(window->reason,
            "outside window 22:00-06:00 Europe/Berlin; opens "
            "2026-11-22T21:00:00Z (local 22:00)");
  EXPECT_EQ(outcome.reason,
            "waiting for time_window (outside window 22:00-06:00 Europe/Berlin; "
            "opens 2026-11-22T21:00:00Z (local 22:00)); next check 2026-11-22T21:00:00Z");
}

// The stored reason leaves out the local time now ("(local 14:34)"), which would give a job
// waiting for a window a history entry every minute, and the 50 kept would push out its first
// ones. The reason stays the same from check to check while nothing changes.
TEST(ConstraintCheckerTest, AWindowWaitsReasonStaysTheSameFromCheckToCheck) {
  Schedule schedule = Named();
  schedule.constraints.time_window = Window("03:00", "04:00", "Asia/Kathmandu");
  schedule.constraints.max_concurrent_runs = 1;
  RunFacts runs;
  runs.active_runs = 1;
  TimePoint opened = At("2026-11-22T10:00:00Z");
  CheckOutcome first = CheckJob(schedule, Job(opened, opened), true, runs, opened);
  ASSERT_EQ(first.decision, Decision::kWait);
  for (Millis later : {Millis(std::chrono::seconds(30)), Millis(minutes(1)), Millis(minutes(61)), Millis(hours(10))}) {
    CheckOutcome again = CheckJob(schedule, Job(opened, opened), true, runs, opened + later);
    EXPECT_EQ(again.reason, first.reason) << FormatDuration(later);
    EXPECT_EQ(Find(again, "time_window")->reason, Find(first, "time_window")->reason);
  }
  // The local time now is still there for `jobs why` to show live.
  EXPECT_EQ(LocalClock("Asia/Kathmandu", opened), "15:45");
}

TEST(ConstraintCheckerTest, InsideWindowLaunchesAtItsFirstInstant) {
  Schedule schedule = Named();
  schedule.constraints.time_window = Window("22:00", "06:00", "Europe/Berlin");
  TimePoint now = At("2026-11-22T21:00:00Z");
  CheckOutcome outcome = CheckJob(schedule, Job(now, now), true, RunFacts{}, now);
  EXPECT_EQ(outcome.decision, Decision::kLaunch);
  EXPECT_EQ(Find(outcome, "time_window")->reason, "inside window 22:00-06:00 Europe/Berlin (local 22:00)");
}

TEST(ConstraintCheckerTest, OutsideWindowWithSkipDiscardsTheJob) {
  Schedule schedule = Named();
  schedule.constraints.time_window = Window("22:00", "06:00", "UTC", OnUnmet::kSkip);
  TimePoint now = At("2026-11-22T06:00:00Z");
  CheckOutcome outcome = CheckJob(schedule, Job(now, now), true, RunFacts{}, now);
  EXPECT_EQ(outcome.decision, Decision::kDiscard);
  EXPECT_EQ(Find(outcome, "time_window")->result, ConstraintResult::kSkip);
  EXPECT_EQ(outcome.reason.rfind("time_window unmet with on_unmet skip: outside window", 0), 0u) << outcome.reason;
}

// --- min_since_last_run ---

TEST(ConstraintCheckerTest, MinSinceLastRunHoldsWithoutAPreviousRun) {
  Schedule schedule = Named();
  schedule.constraints.min_since_last_run = MinSinceLastRun{hours(4), OnUnmet::kWait};
  TimePoint now = At("2026-11-22T10:00:00Z");
  CheckOutcome outcome = CheckJob(schedule, Job(now, now), true, RunFacts{}, now);
  EXPECT_EQ(outcome.decision, Decision::kLaunch);
  EXPECT_EQ(Find(outcome, "min_since_last_run")->reason, "no previous run");
}

TEST(ConstraintCheckerTest, MinSinceLastRunWaitsUntilDurationHasPassed) {
  Schedule schedule = Named();
  schedule.constraints.min_since_last_run = MinSinceLastRun{hours(4), OnUnmet::kWait};
  RunFacts runs;
  runs.last_launch = At("2026-11-22T08:00:00Z");
  TimePoint now = At("2026-11-22T12:00:00Z") - kMs;
  CheckOutcome outcome = CheckJob(schedule, Job(now, now), true, runs, now);
  EXPECT_EQ(outcome.decision, Decision::kWait);
  EXPECT_EQ(outcome.next_check_at, At("2026-11-22T12:00:00Z"));
  const ConstraintCheck* check = Find(outcome, "min_since_last_run");
  EXPECT_EQ(check->result, ConstraintResult::kWait);
  EXPECT_EQ(check->reason, "last run 2026-11-22T08:00:00Z; 4h must pass (until 2026-11-22T12:00:00Z)");
}

TEST(ConstraintCheckerTest, MinSinceLastRunHoldsExactlyAtTheBoundary) {
  Schedule schedule = Named();
  schedule.constraints.min_since_last_run = MinSinceLastRun{hours(4), OnUnmet::kWait};
  RunFacts runs;
  runs.last_launch = At("2026-11-22T08:00:00Z");
  TimePoint now = At("2026-11-22T12:00:00Z");
  CheckOutcome outcome = CheckJob(schedule, Job(now, now), true, runs, now);
  EXPECT_EQ(outcome.decision, Decision::kLaunch);
  EXPECT_EQ(Find(outcome, "min_since_last_run")->reason, "last run 2026-11-22T08:00:00Z; 4h passed");
}

TEST(ConstraintCheckerTest, MinSinceLastRunWithSkipDiscardsTheJob) {
  Schedule schedule = Named();
  schedule.constraints.min_since_last_run = MinSinceLastRun{hours(4), OnUnmet::kSkip};
  RunFacts runs;
  runs.last_launch = At("2026-11-22T08:00:00Z");
  TimePoint now = At("2026-11-22T09:00:00Z");
  CheckOutcome outcome = CheckJob(schedule, Job(now, now), true, runs, now);
  EXPECT_EQ(outcome.decision, Decision::kDiscard);
  EXPECT_EQ(Find(outcome, "min_since_last_run")->result, ConstraintResult::kSkip);
}

// --- max_runs_per ---

RunFacts LaunchesAt(std::initializer_list<std::string_view> times) {
  RunFacts runs;
  for (std::string_view t : times) runs.launches_in_period.push_back(At(t));
  return runs;
}

TEST(ConstraintCheckerTest, MaxRunsPerHoldsBelowTheCount) {
  Schedule schedule = Named();
  schedule.constraints.max_runs_per = MaxRunsPer{6, kDay, OnUnmet::kWait};
  RunFacts runs = LaunchesAt({"2026-11-22T01:00:00Z", "2026-11-22T05:00:00Z"});
  TimePoint now = At("2026-11-22T10:00:00Z");
  CheckOutcome outcome = CheckJob(schedule, Job(now, now), true, runs, now);
  EXPECT_EQ(outcome.decision, Decision::kLaunch);
  EXPECT_EQ(Find(outcome, "max_runs_per")->reason, "2 of 6 runs in 1d");
}

TEST(ConstraintCheckerTest, MaxRunsPerWaitsUntilTheOldestLaunchAgesOut) {
  Schedule schedule = Named();
  schedule.constraints.max_runs_per = MaxRunsPer{6, kDay, OnUnmet::kWait};
  // Given in no particular order, as the header allows.
  RunFacts runs = LaunchesAt({"2026-11-22T08:00:00Z", "2026-11-22T01:00:00Z", "2026-11-22T09:00:00Z",
                              "2026-11-22T03:00:00Z", "2026-11-22T05:00:00Z", "2026-11-22T07:00:00Z"});
  TimePoint now = At("2026-11-22T10:00:00Z");
  CheckOutcome outcome = CheckJob(schedule, Job(now, now), true, runs, now);
  EXPECT_EQ(outcome.decision, Decision::kWait);
  EXPECT_EQ(outcome.next_check_at, At("2026-11-23T01:00:00Z"));
  const ConstraintCheck* check = Find(outcome, "max_runs_per");
  EXPECT_EQ(check->result, ConstraintResult::kWait);
  EXPECT_EQ(check->reason, "6 of 6 runs in 1d; next slot 2026-11-23T01:00:00Z");
}

TEST(ConstraintCheckerTest, MaxRunsPerFreesASlotExactlyWhenALaunchIsOnePeriodOld) {
  Schedule schedule = Named();
  schedule.constraints.max_runs_per = MaxRunsPer{2, hours(1), OnUnmet::kWait};
  RunFacts runs = LaunchesAt({"2026-11-22T09:00:00Z", "2026-11-22T09:30:00Z"});
  TimePoint slot = At("2026-11-22T10:00:00Z");
  CheckOutcome before = CheckJob(schedule, Job(slot, slot), true, runs, slot - kMs);
  EXPECT_EQ(before.decision, Decision::kWait);
  EXPECT_EQ(before.next_check_at, slot);
  CheckOutcome at = CheckJob(schedule, Job(slot, slot), true, runs, slot);
  EXPECT_EQ(at.decision, Decision::kLaunch);
  EXPECT_EQ(Find(at, "max_runs_per")->reason, "1 of 2 runs in 1h");
}

TEST(ConstraintCheckerTest, MaxRunsPerAfterALoweredCountWaitsForEnoughLaunchesToAgeOut) {
  // Four launches in the period (the count was lowered) but only three allowed: a slot frees
  // when two are left, i.e. when the second oldest ages out, not the oldest.
  Schedule schedule = Named();
  schedule.constraints.max_runs_per = MaxRunsPer{3, kDay, OnUnmet::kWait};
  RunFacts runs =
      LaunchesAt({"2026-11-22T01:00:00Z", "2026-11-22T02:00:00Z", "2026-11-22T03:00:00Z", "2026-11-22T04:00:00Z"});
  TimePoint now = At("2026-11-22T10:00:00Z");
  CheckOutcome outcome = CheckJob(schedule, Job(now, now), true, runs, now);
  EXPECT_EQ(outcome.decision, Decision::kWait);
  EXPECT_EQ(outcome.next_check_at, At("2026-11-23T02:00:00Z"));
}

TEST(ConstraintCheckerTest, MaxRunsPerWithSkipDiscardsTheJob) {
  Schedule schedule = Named();
  schedule.constraints.max_runs_per = MaxRunsPer{1, kDay, OnUnmet::kSkip};
  RunFacts runs = LaunchesAt({"2026-11-22T01:00:00Z"});
  TimePoint now = At("2026-11-22T10:00:00Z");
  CheckOutcome outcome = CheckJob(schedule, Job(now, now), true, runs, now);
  EXPECT_EQ(outcome.decision, Decision::kDiscard);
  EXPECT_EQ(Find(outcome, "max_runs_per")->result, ConstraintResult::kSkip);
}

// --- max_concurrent_runs and concurrency_group ---

TEST(ConstraintCheckerTest, MaxConcurrentRunsWaitsForARunToEnd) {
  Schedule schedule = Named();
  schedule.constraints.max_concurrent_runs = 1;
  RunFacts runs;
  runs.active_runs = 1;
  TimePoint now = At("2026-11-22T10:00:00Z");
  CheckOutcome outcome = CheckJob(schedule, Job(now, now), true, runs, now);
  EXPECT_EQ(outcome.decision, Decision::kWait);
  EXPECT_FALSE(outcome.next_check_at.has_value());
  const ConstraintCheck* check = Find(outcome, "max_concurrent_runs");
  EXPECT_EQ(check->result, ConstraintResult::kWait);
  EXPECT_EQ(check->reason, "1 of 1 runs active");
  EXPECT_FALSE(check->next_check_at.has_value());
  EXPECT_EQ(outcome.reason,
            "waiting for max_concurrent_runs (1 of 1 runs active); next check when a run ends (re-checked every 30s)");
}

// With a timeout, the wait's next check is not the deadline alone: `jobs why` says that a run's
// end wakes the job, and the checker re-checks it after 30 s, as it does without a timeout.
TEST(ConstraintCheckerTest, AConcurrencyWaitWithATimeoutStillWakesOnARunsEnd) {
  Schedule schedule = Named();
  schedule.constraints.max_concurrent_runs = 1;
  schedule.timeout = Timeout{std::chrono::minutes(10), TimeoutAction::kRun};
  RunFacts runs;
  runs.active_runs = 1;
  TimePoint now = At("2026-11-22T10:00:00Z");
  CheckOutcome outcome = CheckJob(schedule, Job(now, now), true, runs, now);
  EXPECT_EQ(outcome.decision, Decision::kWait);
  EXPECT_TRUE(outcome.wakes_on_run_end);
  EXPECT_EQ(outcome.next_check_at, At("2026-11-22T10:10:00Z"));
  EXPECT_EQ(outcome.reason,
            "waiting for max_concurrent_runs (1 of 1 runs active); next check when a run ends, or at "
            "2026-11-22T10:10:00Z (timeout: run) (re-checked every 30s)");
  // A wait on a clock alone is not woken by a run's end.
  Schedule delayed = Named();
  delayed.constraints.delay = std::chrono::minutes(5);
  EXPECT_FALSE(CheckJob(delayed, Job(now, now), true, RunFacts{}, now).wakes_on_run_end);
}

TEST(ConstraintCheckerTest, MaxConcurrentRunsHoldsBelowTheMax) {
  Schedule schedule = Named();
  schedule.constraints.max_concurrent_runs = 2;
  RunFacts runs;
  runs.active_runs = 1;
  TimePoint now = At("2026-11-22T10:00:00Z");
  CheckOutcome outcome = CheckJob(schedule, Job(now, now), true, runs, now);
  EXPECT_EQ(outcome.decision, Decision::kLaunch);
  EXPECT_EQ(Find(outcome, "max_concurrent_runs")->reason, "1 of 2 runs active");
}

TEST(ConstraintCheckerTest, ConcurrencyGroupWaitsWhenTheGroupIsFull) {
  Schedule schedule = Named();
  schedule.constraints.concurrency_group = ConcurrencyGroup{"heavy", 3, OnUnmet::kWait};
  RunFacts runs;
  runs.group_active_runs = 3;
  TimePoint now = At("2026-11-22T10:00:00Z");
  CheckOutcome outcome = CheckJob(schedule, Job(now, now), true, runs, now);
  EXPECT_EQ(outcome.decision, Decision::kWait);
  EXPECT_FALSE(outcome.next_check_at.has_value());
  EXPECT_EQ(Find(outcome, "concurrency_group")->reason, "3 of 3 runs active in group heavy");
}

TEST(ConstraintCheckerTest, ConcurrencyGroupHoldsBelowTheMaxWhateverThisScheduleRuns) {
  Schedule schedule = Named();
  schedule.constraints.concurrency_group = ConcurrencyGroup{"heavy", 3, OnUnmet::kWait};
  RunFacts runs;
  runs.active_runs = 5;
  runs.group_active_runs = 2;
  TimePoint now = At("2026-11-22T10:00:00Z");
  EXPECT_EQ(CheckJob(schedule, Job(now, now), true, runs, now).decision, Decision::kLaunch);
}

TEST(ConstraintCheckerTest, ConcurrencyGroupWithSkipDiscardsTheJob) {
  Schedule schedule = Named();
  schedule.constraints.concurrency_group = ConcurrencyGroup{"heavy", 3, OnUnmet::kSkip};
  RunFacts runs;
  runs.group_active_runs = 3;
  TimePoint now = At("2026-11-22T10:00:00Z");
  CheckOutcome outcome = CheckJob(schedule, Job(now, now), true, runs, now);
  EXPECT_EQ(outcome.decision, Decision::kDiscard);
  EXPECT_EQ(outcome.reason, "concurrency_group unmet with on_unmet skip: 3 of 3 runs active in group heavy");
}

// --- timeout ---

Schedule WithTimeout(TimeoutAction action) {
  Schedule schedule = Named();
  schedule.timeout = Timeout{hours(6), action};
  return schedule;
}

TEST(ConstraintCheckerTest, TimeoutNotYetReachedIsRecordedWithItsExpiry) {
  Schedule schedule = WithTimeout(TimeoutAction::kDiscard);
  TimePoint opened = At("2026-11-22T04:00:00Z");
  CheckOutcome outcome = CheckJob(schedule, Job(opened, opened), true, RunFacts{}, At("2026-11-22T09:59:59.999Z"));
  EXPECT_EQ(outcome.decision, Decision::kLaunch);
  EXPECT_FALSE(outcome.forced);
  ASSERT_EQ(outcome.checks.size(), 1u);
  EXPECT_EQ(outcome.checks[0].constraint, "timeout");
  EXPECT_EQ(outcome.checks[0].result, ConstraintResult::kSatisfied);
  EXPECT_EQ(outcome.checks[0].reason, "expires at 2026-11-22T10:00:00Z; then the job is discarded (action discard)");
  EXPECT_EQ(outcome.reason, "trigger complete; no constraints");
}

// `[ok] timeout: expires at T` says what happens at T, and "next check ..., or at T" says T is
// the timeout, so it does not read as a chance to launch when T is the discard.
TEST(ConstraintCheckerTest, ATimeoutAheadSaysWhatItWillDoAndTheNextCheckSaysItIsTheTimeout) {
  TimePoint opened = At("2026-11-22T04:00:00Z");
  TimePoint now = At("2026-11-22T05:00:00Z");
  Schedule run = WithTimeout(TimeoutAction::kRun);
  run.constraints.time_window = Window("22:00", "23:00", "UTC");
  CheckOutcome outcome = CheckJob(run, Job(opened, opened), true, RunFacts{}, now);
  EXPECT_EQ(Find(outcome, "timeout")->reason,
            "expires at 2026-11-22T10:00:00Z; then it launches regardless of its constraints and "
            "trigger (action run)");
  EXPECT_EQ(outcome.next_check_at, At("2026-11-22T10:00:00Z"));
  EXPECT_EQ(outcome.reason,
            "waiting for time_window (outside window 22:00-23:00 UTC; opens 2026-11-22T22:00:00Z "
            "(local 22:00)); next check 2026-11-22T10:00:00Z (timeout: run)");

  Schedule discard = WithTimeout(TimeoutAction::kDiscard);
  discard.constraints.concurrency_group = ConcurrencyGroup{"heavy", 1, OnUnmet::kWait};
  RunFacts runs;
  runs.group_active_runs = 1;
  outcome = CheckJob(discard, Job(opened, opened), true, runs, now);
  EXPECT_EQ(outcome.reason,
            "waiting for concurrency_group (1 of 1 runs active in group heavy); next check when a "
            "run ends, or at 2026-11-22T10:00:00Z (timeout: discard) (re-checked every 30s)");
  // A time before the deadline is not the timeout's.
  discard.constraints.delay = hours(1);
  outcome = CheckJob(discard, Job(opened, now), true, runs, now);
  EXPECT_EQ(outcome.next_check_at, At("2026-11-22T06:00:00Z"));
  EXPECT_EQ(outcome.reason.find("timeout:"), std::string::npos) << outcome.reason;
}

TEST(ConstraintCheckerTest, IncompleteTriggerWaitsUntilTheTimeout) {
  Schedule schedule = WithTimeout(TimeoutAction::kDiscard);
  TimePoint opened = At("2026-11-22T04:00:00Z");
  CheckOutcome outcome = CheckJob(schedule, Job(opened, std::nullopt), false, RunFacts{}, At("2026-11-22T05:00:00Z"));
  EXPECT_EQ(outcome.decision, Decision::kWait);
  EXPECT_EQ(outcome.next_check_at, At("2026-11-22T10:00:00Z"));
  const ConstraintCheck* trigger = Find(outcome, "trigger");
  ASSERT_NE(trigger, nullptr);
  EXPECT_EQ(trigger->result, ConstraintResult::kWait);
  EXPECT_EQ(trigger->next_check_at, At("2026-11-22T10:00:00Z"));
  EXPECT_EQ(outcome.reason, "trigger incomplete; times out at 2026-11-22T10:00:00Z (action discard)");
}

TEST(ConstraintCheckerTest, TimeoutDiscardsAnOpenJobExactlyAtTheDeadline) {
  Schedule schedule = WithTimeout(TimeoutAction::kDiscard);
  TimePoint opened = At("2026-11-22T04:00:00Z");
  CheckOutcome outcome = CheckJob(schedule, Job(opened, std::nullopt), false, RunFacts{}, At("2026-11-22T10:00:00Z"));
  EXPECT_EQ(outcome.decision, Decision::kDiscard);
  EXPECT_FALSE(outcome.forced);
  EXPECT_EQ(Find(outcome, "timeout")->result, ConstraintResult::kSkip);
  EXPECT_EQ(outcome.reason, "timed out at 2026-11-22T10:00:00Z (6h after opening); action discard");
}

TEST(ConstraintCheckerTest, TimeoutDiscardsAWaitingJob) {
  Schedule schedule = WithTimeout(TimeoutAction::kDiscard);
  schedule.constraints.max_concurrent_runs = 1;
  RunFacts runs;
  runs.active_runs = 1;
  TimePoint opened = At("2026-11-22T04:00:00Z");
  CheckOutcome outcome = CheckJob(schedule, Job(opened, opened), true, runs, At("2026-11-22T11:00:00Z"));
  EXPECT_EQ(outcome.decision, Decision::kDiscard);
  // The constraint is still shown, so `jobs why` tells what kept the job waiting.
  EXPECT_EQ(Find(outcome, "max_concurrent_runs")->result, ConstraintResult::kWait);
}

TEST(ConstraintCheckerTest, TimeoutWithRunForcesLaunchDespiteIncompleteTrigger) {
  Schedule schedule = WithTimeout(TimeoutAction::kRun);
  TimePoint opened = At("2026-11-22T04:00:00Z");
  CheckOutcome outcome = CheckJob(schedule, Job(opened, std::nullopt), false, RunFacts{}, At("2026-11-22T10:00:00Z"));
  EXPECT_EQ(outcome.decision, Decision::kLaunch);
  EXPECT_TRUE(outcome.forced);
  EXPECT_EQ(Find(outcome, "timeout")->result, ConstraintResult::kSatisfied);
  EXPECT_EQ(Find(outcome, "trigger")->result, ConstraintResult::kWait);
  EXPECT_EQ(outcome.reason,
            "timed out at 2026-11-22T10:00:00Z (6h after opening); action run launches "
            "regardless of trigger and constraints");
}

TEST(ConstraintCheckerTest, TimeoutWithRunForcesLaunchDespiteUnmetConstraints) {
  Schedule schedule = WithTimeout(TimeoutAction::kRun);
  schedule.constraints.max_concurrent_runs = 1;
  schedule.constraints.min_since_last_run = MinSinceLastRun{hours(24), OnUnmet::kSkip};
  RunFacts runs;
  runs.active_runs = 1;
  runs.last_launch = At("2026-11-22T09:00:00Z");
  TimePoint opened = At("2026-11-22T04:00:00Z");
  CheckOutcome outcome = CheckJob(schedule, Job(opened, opened), true, runs, At("2026-11-22T10:30:00Z"));
  EXPECT_EQ(outcome.decision, Decision::kLaunch);
  EXPECT_TRUE(outcome.forced);
  EXPECT_EQ(Find(outcome, "max_concurrent_runs")->result, ConstraintResult::kWait);
  EXPECT_EQ(Find(outcome, "min_since_last_run")->result, ConstraintResult::kSkip);
}

TEST(ConstraintCheckerTest, TimeoutWithRunDoesNotForceBeforeTheDeadline) {
  Schedule schedule = WithTimeout(TimeoutAction::kRun);
  TimePoint opened = At("2026-11-22T04:00:00Z");
  CheckOutcome outcome =
      CheckJob(schedule, Job(opened, std::nullopt), false, RunFacts{}, At("2026-11-22T10:00:00Z") - kMs);
  EXPECT_EQ(outcome.decision, Decision::kWait);
  EXPECT_FALSE(outcome.forced);
  EXPECT_EQ(outcome.next_check_at, At("2026-11-22T10:00:00Z"));
}

TEST(ConstraintCheckerTest, TimeoutDeadlineBoundsTheNextCheck) {
  Schedule schedule = WithTimeout(TimeoutAction::kDiscard);
  schedule.constraints.time_window = Window("22:00", "06:00", "UTC");
  schedule.constraints.max_concurrent_runs = 1;
  RunFacts runs;
  runs.active_runs = 1;
  TimePoint opened = At("2026-11-22T07:00:00Z");
  CheckOutcome outcome = CheckJob(schedule, Job(opened, opened), true, runs, At("2026-11-22T08:00:00Z"));
  EXPECT_EQ(outcome.decision, Decision::kWait);
  // The window opens at 22:00 but the job expires at 13:00: the caller must look then.
  EXPECT_EQ(outcome.next_check_at, At("2026-11-22T13:00:00Z"));
}

TEST(ConstraintCheckerTest, TimeoutDeadlineWakesAJobOtherwiseWaitingForARunToEnd) {
  Schedule schedule = WithTimeout(TimeoutAction::kRun);
  schedule.constraints.max_concurrent_runs = 1;
  RunFacts runs;
  runs.active_runs = 1;
  TimePoint opened = At("2026-11-22T07:00:00Z");
  CheckOutcome outcome = CheckJob(schedule, Job(opened, opened), true, runs, At("2026-11-22T08:00:00Z"));
  EXPECT_EQ(outcome.decision, Decision::kWait);
  EXPECT_EQ(outcome.next_check_at, At("2026-11-22T13:00:00Z"));
}

// --- all constraints together ---

// Every constraint of SPEC §4's example. In Berlin winter (UTC+1) on 2026-11-22: the delay ends
// at 20:40Z, the window opens at 21:00Z, 4h since the last run pass at 22:00Z, and the oldest of
// six launches in the last day ages out at 22:30Z.
Schedule EveryConstraint() {
  Schedule schedule = Named();
  schedule.constraints.max_concurrent_runs = 1;
  schedule.constraints.concurrency_group = ConcurrencyGroup{"heavy", 3, OnUnmet::kWait};
  schedule.constraints.delay = minutes(10);
  schedule.constraints.time_window = Window("22:00", "06:00", "Europe/Berlin");
  schedule.constraints.min_since_last_run = MinSinceLastRun{hours(4), OnUnmet::kWait};
  schedule.constraints.max_runs_per = MaxRunsPer{6, kDay, OnUnmet::kWait};
  return schedule;
}

RunFacts EveryConstraintRuns() {
  RunFacts runs = LaunchesAt({"2026-11-21T22:30:00Z", "2026-11-22T02:00:00Z", "2026-11-22T04:00:00Z",
                              "2026-11-22T08:00:00Z", "2026-11-22T12:00:00Z", "2026-11-22T18:00:00Z"});
  runs.last_launch = At("2026-11-22T18:00:00Z");
  runs.group_active_runs = 2;
  return runs;
}

JobFacts EveryConstraintJob() { return Job(At("2026-11-22T20:00:00Z"), At("2026-11-22T20:30:00Z")); }

TEST(ConstraintCheckerTest, EveryConstraintIsEvaluatedAndReportedInOrder) {
  CheckOutcome outcome =
      CheckJob(EveryConstraint(), EveryConstraintJob(), true, EveryConstraintRuns(), At("2026-11-22T20:35:00Z"));
  ASSERT_EQ(outcome.checks.size(), 6u);
  EXPECT_EQ(outcome.checks[0].constraint, "max_concurrent_runs");
  EXPECT_EQ(outcome.checks[1].constraint, "concurrency_group");
  EXPECT_EQ(outcome.checks[2].constraint, "delay");
  EXPECT_EQ(outcome.checks[3].constraint, "time_window");
  EXPECT_EQ(outcome.checks[4].constraint, "min_since_last_run");
  EXPECT_EQ(outcome.checks[5].constraint, "max_runs_per");
  EXPECT_EQ(outcome.checks[0].result, ConstraintResult::kSatisfied);
  EXPECT_EQ(outcome.checks[1].result, ConstraintResult::kSatisfied);
  for (size_t i = 2; i < 6; ++i) {
    EXPECT_EQ(outcome.checks[i].result, ConstraintResult::kWait) << outcome.checks[i].constraint;
  }
}

TEST(ConstraintCheckerTest, AllConstraintsNextCheckIsTheEarliestWaitingOne) {
  Schedule schedule = EveryConstraint();
  JobFacts job = EveryConstraintJob();
  RunFacts runs = EveryConstraintRuns();
  struct Step {
    const char* now;
    const char* next_check_at;
  };
  // Each step releases one constraint; the job waits on the next earliest one.
  const Step steps[] = {
      {"2026-11-22T20:35:00Z", "2026-11-22T20:40:00Z"},
      {"2026-11-22T20:40:00Z", "2026-11-22T21:00:00Z"},
      {"2026-11-22T21:00:00Z", "2026-11-22T22:00:00Z"},
      {"2026-11-22T22:00:00Z", "2026-11-22T22:30:00Z"},
  };
  for (const Step& step : steps) {
    CheckOutcome outcome = CheckJob(schedule, job, true, runs, At(step.now));
    EXPECT_EQ(outcome.decision, Decision::kWait) << step.now;
    EXPECT_EQ(outcome.next_check_at, At(step.next_check_at)) << step.now;
  }
}

TEST(ConstraintCheckerTest, AllConstraintsLaunchOnlyWhenEveryOneHoldsAtOnce) {
  Schedule schedule = EveryConstraint();
  JobFacts job = EveryConstraintJob();
  RunFacts runs = EveryConstraintRuns();
  TimePoint all_hold = At("2026-11-22T22:30:00Z");
  EXPECT_EQ(CheckJob(schedule, job, true, runs, all_hold - kMs).decision, Decision::kWait);
  CheckOutcome outcome = CheckJob(schedule, job, true, runs, all_hold);
  EXPECT_EQ(outcome.decision, Decision::kLaunch);
  EXPECT_EQ(outcome.reason, "trigger complete; all 6 constraints hold");

  // One more active run in the group: everything else holds, so only a run ending can wake it.
  runs.group_active_runs = 3;
  outcome = CheckJob(schedule, job, true, runs, all_hold);
  EXPECT_EQ(outcome.decision, Decision::kWait);
  EXPECT_FALSE(outcome.next_check_at.has_value());

  // By the time the group frees up the window has closed (06:00 Berlin is 05:00Z).
  runs.group_active_runs = 2;
  outcome = CheckJob(schedule, job, true, runs, At("2026-11-23T05:00:00Z"));
  EXPECT_EQ(outcome.decision, Decision::kWait);
  EXPECT_EQ(outcome.next_check_at, At("2026-11-23T21:00:00Z"));
}

TEST(ConstraintCheckerTest, TimedWaitIsCheckedBeforeARunEndWhenBothWait) {
  Schedule schedule = Named();
  schedule.constraints.max_concurrent_runs = 1;
  schedule.constraints.delay = minutes(10);
  RunFacts runs;
  runs.active_runs = 1;
  TimePoint ready = At("2026-11-22T10:00:00Z");
  CheckOutcome outcome = CheckJob(schedule, Job(ready, ready), true, runs, ready);
  EXPECT_EQ(outcome.decision, Decision::kWait);
  EXPECT_EQ(outcome.next_check_at, At("2026-11-22T10:10:00Z"));
  EXPECT_EQ(outcome.reason,
            "waiting for max_concurrent_runs (1 of 1 runs active); delay (ready at "
            "2026-11-22T10:00:00Z; 10m delay until 2026-11-22T10:10:00Z); next check when a run ends, "
            "or at 2026-11-22T10:10:00Z (re-checked every 30s)");
  EXPECT_TRUE(outcome.wakes_on_run_end);
}

TEST(ConstraintCheckerTest, SkipBeatsWaitAndDiscardsTheJob) {
  Schedule schedule = Named();
  schedule.constraints.max_concurrent_runs = 1;
  schedule.constraints.delay = minutes(10);
  schedule.constraints.max_runs_per = MaxRunsPer{1, kDay, OnUnmet::kSkip};
  RunFacts runs = LaunchesAt({"2026-11-22T09:00:00Z"});
  runs.active_runs = 1;
  TimePoint ready = At("2026-11-22T10:00:00Z");
  CheckOutcome outcome = CheckJob(schedule, Job(ready, ready), true, runs, ready);
  EXPECT_EQ(outcome.decision, Decision::kDiscard);
  EXPECT_FALSE(outcome.next_check_at.has_value());
  EXPECT_EQ(outcome.reason,
            "max_runs_per unmet with on_unmet skip: 1 of 1 runs in 1d; next slot "
            "2026-11-23T09:00:00Z");
  EXPECT_EQ(outcome.checks.size(), 3u);
}

TEST(ConstraintCheckerTest, SkipConstraintThatHoldsDoesNotDiscard) {
  Schedule schedule = Named();
  schedule.constraints.time_window = Window("09:00", "17:00", "UTC", OnUnmet::kSkip);
  schedule.constraints.delay = minutes(10);
  TimePoint ready = At("2026-11-22T10:00:00Z");
  CheckOutcome outcome = CheckJob(schedule, Job(ready, ready), true, RunFacts{}, ready);
  EXPECT_EQ(outcome.decision, Decision::kWait);
  EXPECT_EQ(outcome.next_check_at, At("2026-11-22T10:10:00Z"));
}

// max_concurrent_runs {"on_unmet": ...}: skip discards the job at the limit; cancel_oldest
// launches and names how many of the oldest runs to cancel; wait (the number form) waits.
TEST(ConstraintCheckerTest, OverlapPolicies) {
  const TimePoint now = At("2026-11-27T10:00:00Z");
  Schedule s = Named();
  s.constraints.max_concurrent_runs = 2;
  RunFacts full;
  full.active_runs = 2;
  EXPECT_EQ(CheckJob(s, Job(now, now), true, full, now).decision, Decision::kWait);
  s.constraints.on_overlap = OverlapPolicy::kSkip;
  EXPECT_EQ(CheckJob(s, Job(now, now), true, full, now).decision, Decision::kDiscard);
  s.constraints.on_overlap = OverlapPolicy::kCancelOldest;
  CheckOutcome o = CheckJob(s, Job(now, now), true, full, now);
  EXPECT_EQ(o.decision, Decision::kLaunch);
  EXPECT_EQ(o.cancel_oldest, 1);
  RunFacts room;
  room.active_runs = 1;
  EXPECT_EQ(CheckJob(s, Job(now, now), true, room, now).cancel_oldest, 0);
  // Another constraint that waits keeps the job waiting, and nothing is cancelled.
  s.constraints.delay = minutes(5);
  o = CheckJob(s, Job(now, now), true, full, now);
  EXPECT_EQ(o.decision, Decision::kWait);
  EXPECT_EQ(o.cancel_oldest, 0);
}

// A job started by hand with --force launches whatever its constraints say.
TEST(ConstraintCheckerTest, ForcedManualJobIgnoresConstraints) {
  const TimePoint now = At("2026-11-27T10:00:00Z");
  Schedule s = Named();
  s.constraints.max_concurrent_runs = 1;
  RunFacts full;
  full.active_runs = 1;
  JobFacts job = Job(now, now);
  EXPECT_EQ(CheckJob(s, job, true, full, now).decision, Decision::kWait);
  job.force = true;
  CheckOutcome o = CheckJob(s, job, true, full, now);
  EXPECT_EQ(o.decision, Decision::kLaunch);
  EXPECT_TRUE(o.forced);
}

// Outside its active period a schedule's jobs are discarded, as a suspend discards them.
TEST(ConstraintCheckerTest, OutsideTheActivePeriodJobsAreDiscarded) {
  Schedule s = Named();
  s.active = ActivePeriod{At("2026-12-01T00:00:00Z"), At("2027-01-01T00:00:00Z")};
  const TimePoint inside = At("2026-12-15T00:00:00Z");
  EXPECT_EQ(CheckJob(s, Job(inside, inside), true, {}, inside).decision, Decision::kLaunch);
  const TimePoint after = At("2027-01-01T00:00:00Z");
  CheckOutcome o = CheckJob(s, Job(inside, inside), true, {}, after);
  EXPECT_EQ(o.decision, Decision::kDiscard);
  EXPECT_EQ(o.reason, "schedule outside its active period (it ended at 2027-01-01T00:00:00Z)");
}

}  // namespace
}  // namespace trigd
