// SPEC §11: quiet periods on partition and event leaves, and the silence leaf. Both complete by
// the clock: SettleTimedLeaves at the leaf's deadline, which NextLeafDeadline gives the store
// (and the replay) to wake the job at.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/accumulator.h"
#include "core/constraint_checker.h"
#include "core/envelope.h"
#include "core/schedule_parser.h"
#include "core/trigger_eval.h"

namespace trigd {
namespace {

using std::chrono::minutes;
using std::chrono::seconds;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

TimePoint At(const char* text) { return *ParseTime(text); }

Schedule Parse(const std::string& text) {
  std::vector<ParsedSchedule> parsed = ParseScheduleFile(text);
  EXPECT_EQ(parsed.size(), 1u);
  std::string errors;
  for (const ScheduleError& e : parsed.at(0).errors) errors += e.ToString() + "\n";
  EXPECT_TRUE(parsed.at(0).ok()) << errors;
  return parsed.at(0).schedule;
}

std::vector<std::string> Errors(const std::string& text) {
  std::vector<std::string> out;
  for (const ParsedSchedule& p : ParseScheduleFile(text)) {
    for (const ScheduleError& e : p.errors) out.push_back(e.ToString());
  }
  return out;
}

Event Partition(const std::string& dataset, const std::string& partition) {
  Event e;
  e.id = dataset + "/" + partition;
  e.type = EventType::kPartition;
  e.partition = {dataset, {partition}, std::nullopt};
  return e;
}

Event Custom(const std::string& name, const std::string& key) {
  Event e;
  e.id = name + "/" + key;
  e.type = EventType::kCustom;
  e.custom.name = name;
  e.custom.key = key;
  e.payload = {{"name", name}, {"key", key}};
  return e;
}

// --- parser -----------------------------------------------------------------------------------

TEST(QuietParse, PartitionAndEventLeavesTakeQuiet) {
  Schedule s = Parse(R"({"name": "q", "program": {"name": "p"}, "trigger": {"all": [
    {"partition": {"dataset": "d", "count": 2, "quiet": "10m"}},
    {"event": {"name": "e", "quiet": "90s"}}]}})");
  EXPECT_EQ(s.trigger.children[0].partition.quiet, Millis(minutes(10)));
  EXPECT_EQ(s.trigger.children[1].event.quiet, Millis(seconds(90)));
}

TEST(QuietParse, SilenceLeafOnDatasetOrEvent) {
  Schedule d = Parse(R"({"name": "s", "program": {"name": "p"},
    "trigger": {"silence": {"dataset": "sales.raw", "for": "2h"}}})");
  EXPECT_EQ(d.trigger.kind, TriggerKind::kSilence);
  EXPECT_EQ(d.trigger.silence.dataset, "sales.raw");
  EXPECT_EQ(d.trigger.silence.after, Millis(std::chrono::hours(2)));
  EXPECT_EQ(LeafEventKey(d.trigger, d.id()), "partition:sales.raw");
  Schedule e = Parse(R"({"name": "s", "program": {"name": "p"},
    "trigger": {"silence": {"event": "model.published", "for": "30m"}}})");
  EXPECT_EQ(LeafEventKey(e.trigger, e.id()), "custom:model.published");
}

TEST(QuietParse, BadValuesNameTheirFieldPath) {
  EXPECT_THAT(Errors(R"({"name": "q", "program": {"name": "p"}, "trigger": {"any": [
    {"partition": {"dataset": "d", "quiet": "0s"}},
    {"event": {"name": "e", "quiet": 10}},
    {"silence": {"dataset": "d"}},
    {"silence": {"dataset": "d", "event": "e", "for": "1h"}},
    {"silence": {"for": "1h"}},
    {"silence": {"dataset": "d", "for": "soon"}},
    {"silence": {"event": "a?b", "for": "1h", "quiet": "1m"}}]}})"),
              ElementsAre("trigger.any[0].partition.quiet: must be longer than 0, got \"0s\"",
                          "trigger.any[1].event.quiet: expected a duration such as \"10m\", got number",
                          "trigger.any[2].silence.for: required",
                          "trigger.any[3].silence: dataset and event are exclusive: give one of them",
                          "trigger.any[4].silence: one of dataset and event is required",
                          HasSubstr("trigger.any[5].silence.for: invalid duration \"soon\""),
                          HasSubstr("trigger.any[6].silence.event: invalid event name"),
                          HasSubstr("trigger.any[6].silence.quiet: unknown field")));
}

// --- quiet ------------------------------------------------------------------------------------

TEST(Quiet, CompletesAfterTheLastArrivalPlusThePeriod) {
  Schedule s = Parse(R"({"name": "q", "program": {"name": "p"},
    "trigger": {"partition": {"dataset": "d", "count": 2, "quiet": "10m"}}})");
  TriggerState st = NewTriggerState(s.trigger);
  const TimePoint t0 = At("2026-11-22T10:00:00Z");
  ApplyEvent(s.trigger, s.id(), Partition("d", "a"), st, t0);
  // Count not reached: no deadline, only an arrival moves it.
  EXPECT_EQ(NextLeafDeadline(s.trigger, st), std::nullopt);
  ApplyEvent(s.trigger, s.id(), Partition("d", "b"), st, t0 + minutes(1));
  EXPECT_FALSE(IsComplete(s.trigger, st));
  EXPECT_EQ(NextLeafDeadline(s.trigger, st), t0 + minutes(11));
  // An arrival inside the period (even a re-sent partition) restarts it.
  EXPECT_TRUE(ApplyEvent(s.trigger, s.id(), Partition("d", "b"), st, t0 + minutes(5)).changed);
  EXPECT_EQ(NextLeafDeadline(s.trigger, st), t0 + minutes(15));
  EXPECT_THAT(DescribeLeafDeadline(s.trigger, st),
              "trigger: quiet until 2026-11-22T10:15:00Z, last arrival at 2026-11-22T10:05:00Z");
  EXPECT_FALSE(SettleTimedLeaves(s.trigger, st, t0 + minutes(15) - Millis(1)));
  EXPECT_FALSE(IsComplete(s.trigger, st));
  EXPECT_TRUE(SettleTimedLeaves(s.trigger, st, t0 + minutes(15)));
  EXPECT_TRUE(IsComplete(s.trigger, st));
  EXPECT_EQ(NextLeafDeadline(s.trigger, st), std::nullopt);
}

TEST(Quiet, AloneCompletesAfterOneArrivalAndThePeriod) {
  Schedule s = Parse(R"({"name": "q", "program": {"name": "p"},
    "trigger": {"event": {"name": "feature.refreshed", "quiet": "5s"}}})");
  TriggerState st = NewTriggerState(s.trigger);
  const TimePoint t0 = At("2026-11-22T10:00:00Z");
  ApplyEvent(s.trigger, s.id(), Custom("feature.refreshed", "k1"), st, t0);
  ApplyEvent(s.trigger, s.id(), Custom("feature.refreshed", "k1"), st, t0 + seconds(3));
  EXPECT_EQ(NextLeafDeadline(s.trigger, st), t0 + seconds(8));
  EXPECT_THAT(DescribeProgress(s.trigger, st)[0].detail, HasSubstr("quiet until 2026-11-22T10:00:08Z"));
}

TEST(Quiet, AnArrivalAfterTheDeadlineFindsTheLeafComplete) {
  Schedule s = Parse(R"({"name": "q", "program": {"name": "p"}, "trigger": {"all": [
    {"partition": {"dataset": "d", "quiet": "1m"}}, {"program": {"name": "up"}}]}})");
  TriggerState st = NewTriggerState(s.trigger);
  const TimePoint t0 = At("2026-11-22T10:00:00Z");
  ApplyEvent(s.trigger, s.id(), Partition("d", "a"), st, t0);
  // The checker settles it at the deadline without storing it; a late arrival settles it too,
  // and does not restart the period of a leaf already complete.
  ApplyEvent(s.trigger, s.id(), Partition("d", "b"), st, t0 + minutes(2));
  EXPECT_TRUE(st.leaves[0].satisfied);
  EXPECT_EQ(st.leaves[0].last_arrival, t0);
}

TEST(Quiet, StateRoundTripsThroughJson) {
  Schedule s = Parse(R"({"name": "q", "program": {"name": "p"},
    "trigger": {"partition": {"dataset": "d", "quiet": "1m"}}})");
  TriggerState st = NewTriggerState(s.trigger);
  ApplyEvent(s.trigger, s.id(), Partition("d", "a"), st, At("2026-11-22T10:00:00.250Z"));
  EXPECT_EQ(TriggerStateFromJson(TriggerStateToJson(st)), st);
}

TEST(Quiet, AccumulateStampsArrivalsWithItsClockAndTheStoreWakesAtTheDeadline) {
  auto s = std::make_shared<const Schedule>(Parse(R"({"name": "q", "program": {"name": "p"},
    "timeout": {"after": "1h"}, "trigger": {"partition": {"dataset": "d", "quiet": "10s"}}})"));
  std::map<int64_t, ScheduleView> views{{1, {1, 1, s}}};
  Event e = Partition("d", "a");
  e.time = At("2020-01-01T00:00:00Z");  // the producer's clock does not count; the ingest's does
  const TimePoint now = At("2026-11-22T10:00:00Z");
  Accumulation acc = Accumulate({{&e, {1}}}, views, {}, now);
  ASSERT_EQ(acc.jobs.size(), 1u);
  EXPECT_FALSE(acc.jobs[0].complete);
  EXPECT_EQ(CollectingJobWake(*s, acc.jobs[0].state, acc.jobs[0].opened_at), now + seconds(10));
}

TEST(Quiet, CheckJobWaitsUntilTheDeadlineAndSaysWhy) {
  Schedule s = Parse(R"({"name": "q", "program": {"name": "p"}, "timeout": {"after": "1h"},
    "trigger": {"partition": {"dataset": "d", "quiet": "10m"}}})");
  const TimePoint t0 = At("2026-11-22T10:00:00Z");
  JobFacts job{t0, std::nullopt};
  job.trigger_wakes_at = t0 + minutes(10);
  job.trigger_wait = "trigger: quiet until 2026-11-22T10:10:00Z, last arrival at 2026-11-22T10:00:00Z";
  CheckOutcome out = CheckJob(s, job, false, RunFacts{}, t0 + minutes(1));
  EXPECT_EQ(out.decision, Decision::kWait);
  EXPECT_EQ(out.next_check_at, t0 + minutes(10));
  EXPECT_THAT(out.reason, HasSubstr("trigger incomplete: trigger: quiet until 2026-11-22T10:10:00Z"));
}

// --- silence ----------------------------------------------------------------------------------

TEST(Silence, ArmedAtApplyFiresAfterTheSilence) {
  Schedule s = Parse(R"({"name": "s", "program": {"name": "p"},
    "trigger": {"silence": {"dataset": "sales.raw", "for": "2h"}}})");
  TriggerState st = NewTriggerState(s.trigger);
  const TimePoint applied = At("2026-11-22T10:00:00Z");
  EXPECT_TRUE(ArmSilence(s.trigger, st, applied));
  EXPECT_EQ(NextLeafDeadline(s.trigger, st), applied + std::chrono::hours(2));
  EXPECT_EQ(DescribeLeafDeadline(s.trigger, st),
            "trigger: silent since 2026-11-22T10:00:00Z, fires at 2026-11-22T12:00:00Z");
  // Each arrival re-arms it; other datasets do not.
  EXPECT_TRUE(ApplyEvent(s.trigger, s.id(), Partition("sales.raw", "a"), st, applied + minutes(90)).changed);
  EXPECT_FALSE(ApplyEvent(s.trigger, s.id(), Partition("other", "a"), st, applied + minutes(100)).changed);
  EXPECT_EQ(NextLeafDeadline(s.trigger, st), applied + minutes(210));
  EXPECT_FALSE(SettleTimedLeaves(s.trigger, st, applied + minutes(209)));
  EXPECT_TRUE(SettleTimedLeaves(s.trigger, st, applied + minutes(210)));
  EXPECT_TRUE(IsComplete(s.trigger, st));
  EXPECT_THAT(DescribeProgress(s.trigger, st)[0].detail, HasSubstr("fired at 2026-11-22T13:30:00Z"));
}

TEST(Silence, OncePerSilenceTheNextArrivalOpensTheNextJob) {
  auto s = std::make_shared<const Schedule>(Parse(R"({"name": "s", "program": {"name": "p"},
    "trigger": {"silence": {"event": "heartbeat", "for": "1m"}}})"));
  std::map<int64_t, ScheduleView> views{{1, {1, 1, s}}};
  Event e = Custom("heartbeat", "k");
  const TimePoint now = At("2026-11-22T10:00:00Z");
  Accumulation acc = Accumulate({{&e, {1}}}, views, {}, now);
  ASSERT_EQ(acc.jobs.size(), 1u);
  EXPECT_FALSE(acc.jobs[0].complete);
  EXPECT_EQ(CollectingJobWake(*s, acc.jobs[0].state, now), now + minutes(1));
  // A schedule without silence arms nothing.
  Schedule plain = Parse(R"({"name": "x", "program": {"name": "p"}, "trigger": {"partition": {"dataset": "d"}}})");
  TriggerState st = NewTriggerState(plain.trigger);
  EXPECT_FALSE(ArmSilence(plain.trigger, st, now));
  EXPECT_EQ(st, NewTriggerState(plain.trigger));
}

}  // namespace
}  // namespace trigd
