// Accumulate: how a batch of events opens, fills, completes and discards jobs, and the history
// entries it writes for each (JSON text, read back here with a JSON parser).
#include "core/accumulator.h"

#include <gtest/gtest.h>

#include <memory>
#include <set>
#include <string>
#include <vector>

#include "core/envelope.h"
#include "core/schedule_parser.h"
#include "core/trigger_eval.h"

namespace trigd {
namespace {

using nlohmann::json;

const TimePoint kNow = TimePoint(Millis(1795305600250));  // 2026-11-22T00:00:00.250Z

ScheduleView View(int64_t id, int version, json trigger) {
  ParsedSchedule p = ParseSchedule({{"namespace", "default"},
                                    {"name", "s" + std::to_string(id)},
                                    {"program", {{"name", "p" + std::to_string(id)}}},
                                    {"trigger", std::move(trigger)}});
  EXPECT_TRUE(p.ok());
  return {id, version, std::make_shared<const Schedule>(std::move(p.schedule))};
}

Event Partition(std::string id, std::string dataset, std::string partition) {
  Event e;
  e.id = std::move(id);
  e.type = EventType::kPartition;
  e.partition = {std::move(dataset), {std::move(partition)}, std::nullopt};
  e.payload = {{"dataset", e.partition.dataset}, {"partitions", e.partition.partitions}};
  return e;
}

Event Failed(std::string id, std::string program, std::string run_id) {
  Event e;
  e.id = std::move(id);
  e.type = EventType::kProgram;
  e.program.program = std::move(program);
  e.program.run_id = std::move(run_id);
  e.program.status = ProgramStatus::kFailed;
  return e;
}

std::vector<json> History(const OpenJob& job) {
  std::vector<json> out;
  for (const std::string& entry : job.history) out.push_back(json::parse(entry));
  return out;
}

TEST(AccumulatorTest, AnEventThatSatisfiesTheTriggerOpensACompleteJob) {
  std::map<int64_t, ScheduleView> schedules = {{1, View(1, 3, {{"partition", {{"dataset", "d"}}}})}};
  Event e = Partition("e1", "d", "p1");
  Accumulation acc = Accumulate({{&e, {1}}}, schedules, {}, kNow);
  ASSERT_EQ(acc.jobs.size(), 1u);
  const OpenJob& job = acc.jobs[0];
  EXPECT_EQ(job.id, 0);  // new, not stored yet
  EXPECT_EQ(job.schedule_id, 1);
  EXPECT_EQ(job.schedule_version, 3);
  EXPECT_TRUE(job.complete);
  EXPECT_EQ(job.opened_at, kNow);
  ASSERT_EQ(job.triggered_by.size(), 1u);
  EXPECT_EQ(job.triggered_by[0].id, "e1");
  EXPECT_EQ(acc.applied, std::vector<bool>{true});
  std::vector<json> h = History(job);
  ASSERT_EQ(h.size(), 3u);
  EXPECT_EQ(h[0], json({{"at", "2026-11-22T00:00:00.250Z"}, {"what", "opened"}, {"event", "e1"}}));
  EXPECT_EQ(h[1]["what"], "event counted");
  EXPECT_EQ(h[1]["event"], "e1");
  ASSERT_TRUE(h[1]["leaves"].is_array());
  ASSERT_EQ(h[1]["leaves"].size(), 1u);
  EXPECT_EQ(h[2], json({{"at", "2026-11-22T00:00:00.250Z"}, {"what", "trigger complete"}}));
}

TEST(AccumulatorTest, APartialTriggerKeepsOneOpenJobAcrossEventsAndCompletesIt) {
  std::map<int64_t, ScheduleView> schedules = {{1, View(1, 1, {{"partition", {{"dataset", "d"}, {"count", 2}}}})}};
  Event a = Partition("e1", "d", "p1"), again = Partition("e2", "d", "p1"), b = Partition("e3", "d", "p2"),
        c = Partition("e4", "d", "p3");
  Accumulation acc = Accumulate({{&a, {1}}, {&again, {1}}, {&b, {1}}, {&c, {1}}}, schedules, {}, kNow);
  // p1, p1 again (not counted twice), p2 completes the first job; p3 opens the next one.
  ASSERT_EQ(acc.jobs.size(), 2u);
  EXPECT_TRUE(acc.jobs[0].complete);
  EXPECT_EQ(acc.jobs[0].triggered_by.size(), 2u);
  EXPECT_FALSE(acc.jobs[1].complete);
  EXPECT_EQ(acc.jobs[1].triggered_by.size(), 1u);
  EXPECT_EQ(acc.applied, (std::vector<bool>{true, false, true, true}));
  std::vector<json> h = History(acc.jobs[0]);
  ASSERT_EQ(h.size(), 4u);  // opened, counted, counted, complete
  EXPECT_EQ(h[2]["event"], "e3");
  EXPECT_EQ(h[3]["what"], "trigger complete");
}

TEST(AccumulatorTest, AStoredJobOfAnOlderVersionIsDiscardedAndCountingStartsAfresh) {
  std::map<int64_t, ScheduleView> schedules = {{1, View(1, 2, {{"partition", {{"dataset", "d"}, {"count", 2}}}})}};
  OpenJob stored;
  stored.id = 42;
  stored.schedule_id = 1;
  stored.schedule_version = 1;
  stored.state = NewTriggerState(schedules.at(1).schedule->trigger);
  Event e = Partition("e1", "d", "p1");
  Accumulation acc = Accumulate({{&e, {1}}}, schedules, {stored}, kNow);
  ASSERT_EQ(acc.jobs.size(), 2u);
  EXPECT_EQ(acc.jobs[0].id, 42);
  EXPECT_TRUE(acc.jobs[0].discarded);
  EXPECT_EQ(acc.jobs[0].discard_reason, "schedule updated");
  EXPECT_EQ(History(acc.jobs[0]),
            std::vector<json>({{{"at", "2026-11-22T00:00:00.250Z"}, {"what", "discarded: schedule updated"}}}));
  EXPECT_EQ(acc.jobs[1].id, 0);
  EXPECT_EQ(acc.jobs[1].schedule_version, 2);
  EXPECT_FALSE(acc.jobs[1].complete);
}

TEST(AccumulatorTest, AnUpstreamFailureDiscardsTheOpenJobAndIsPublishedDownTheDag) {
  std::map<int64_t, ScheduleView> schedules = {
      {1, View(1, 1,
               {{"all",
                 {{{"program", {{"name", "up"}, {"on_upstream_failure", "discard"}}}},
                  {{"partition", {{"dataset", "d"}}}}}}})}};
  Event part = Partition("e1", "d", "p1");
  Event failed = Failed("f1", "up", "r-1");
  Accumulation acc = Accumulate({{&part, {1}}, {&failed, {1}}}, schedules, {}, kNow);
  ASSERT_EQ(acc.jobs.size(), 1u);
  EXPECT_TRUE(acc.jobs[0].discarded);
  EXPECT_EQ(acc.jobs[0].discard_reason, "upstream_failed");
  std::vector<json> h = History(acc.jobs[0]);
  ASSERT_FALSE(h.empty());
  EXPECT_EQ(h.back(), json({{"at", "2026-11-22T00:00:00.250Z"},
                            {"what", "discarded: upstream failed"},
                            {"event", "f1"},
                            {"program", "up"},
                            {"status", "failed"}}));
  ASSERT_EQ(acc.published.size(), 1u);
  EXPECT_EQ(acc.published[0].program.program, "p1");
  EXPECT_EQ(acc.published[0].program.status, ProgramStatus::kKilled);
}

// The replay takes the history as records (HistoryForm::kRecords) and writes text only for what
// it prints: each record written by HistoryText is the entry the store writes, byte for byte,
// for every kind (opened, counted with several leaves, complete, discarded by an update and by
// an upstream failure).
TEST(AccumulatorTest, HistoryRecordsWriteTheSameTextAsTheTextForm) {
  std::map<int64_t, ScheduleView> schedules = {
      {1,
       View(1, 1,
            {{"all",
              {{{"program", {{"name", "up"}, {"on_upstream_failure", "discard"}}}},
               {{"partition", {{"dataset", "d"}, {"count", 2}, {"quiet", "5m"}}}},
               {{"any", {{{"partition", {{"dataset", "d"}, {"min_bytes", 10}}}}, {{"time", {{"every", "1h"}}}}}}}}}})},
      {2, View(2, 1, {{"partition", {{"dataset", "d"}, {"count", 2}}}})},
      {3, View(3, 2, {{"partition", {{"dataset", "d"}}}})}};
  OpenJob stale;  // of version 1 of schedule 3: discarded by the update
  stale.id = 9;
  stale.schedule_id = 3;
  stale.schedule_version = 1;
  stale.state = NewTriggerState(schedules.at(3).schedule->trigger);
  Event p1 = Partition("e1", "d", "p1");
  Event p2 = Partition("e\"2", "d", "p2");  // an id that JSON escapes
  Event failed = Failed("f1", "up", "r-1");
  const std::vector<AccumulateInput> in = {{&p1, {1, 2, 3}}, {&p2, {1, 2, 3}}, {&failed, {1}}};
  Accumulation text = Accumulate(in, schedules, {stale}, kNow);
  Accumulation records = Accumulate(in, schedules, {stale}, kNow, HistoryForm::kRecords);
  ASSERT_EQ(text.jobs.size(), records.jobs.size());
  const std::string at = FormatTime(kNow);
  size_t entries = 0;
  for (size_t i = 0; i < text.jobs.size(); ++i) {
    EXPECT_TRUE(records.jobs[i].history.empty());
    const Trigger& trigger = schedules.at(text.jobs[i].schedule_id).schedule->trigger;
    std::vector<std::string> written;
    for (const HistoryRecord& r : records.jobs[i].history_records) written.push_back(HistoryText(r, trigger, at));
    EXPECT_EQ(written, text.jobs[i].history) << i;
    entries += written.size();
  }
  EXPECT_GE(entries, 9u);
  // Every kind of entry was written.
  std::set<std::string> whats;
  for (const OpenJob& job : text.jobs) {
    for (const json& h : History(job)) whats.insert(h.at("what").get<std::string>());
  }
  EXPECT_EQ(whats, (std::set<std::string>{"opened", "event counted", "trigger complete", "discarded: schedule updated",
                                          "discarded: upstream failed"}));
}

TEST(AccumulatorTest, EventsOfSchedulesNotLoadedChangeNothing) {
  std::map<int64_t, ScheduleView> schedules = {{1, View(1, 1, {{"partition", {{"dataset", "d"}}}})}};
  Event e = Partition("e1", "d", "p1");
  Accumulation acc = Accumulate({{&e, {7}}}, schedules, {}, kNow);  // schedule 7: deleted or suspended
  EXPECT_TRUE(acc.jobs.empty());
  EXPECT_EQ(acc.applied, std::vector<bool>{false});
}

// trigd's own killed event must be a valid envelope: ingestion reads it back from
// events.program to carry the failure further down the DAG. It had an empty run id, which the
// envelope refuses, so the failure stopped one level below the failed node.
TEST(UpstreamFailedEventTest, ParsesBackAsAKilledProgramEventForTheNextLevel) {
  ParsedSchedule parsed = ParseSchedule(nlohmann::json::parse(R"({
      "namespace": "dag", "name": "p7", "program": {"name": "dag.p7"},
      "trigger": {"program": {"name": "dag.p4", "on_upstream_failure": "discard"}}})"));
  ASSERT_TRUE(parsed.ok());
  Event killed =
      UpstreamFailedEvent(parsed.schedule, Failed("w-1", "dag.p4", "r-4"), TimePoint(Millis(1'700'000'000'000)));

  Result<Event> back = ParseEnvelope(EnvelopeToJson(killed).dump());
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->EventKey(), "program:dag.p7");
  EXPECT_EQ(back->program.status, ProgramStatus::kKilled);
  EXPECT_EQ(back->program.run_id, killed.id);
  EXPECT_EQ(back->payload["reason"], "upstream_failed");
}

// The id names the schedule and the root failure only: prefixing each level's schedule would
// pass the 1 KiB id limit at about 16 schedules (the failure would stop there as a dead letter),
// a join would double the events per failure, and a cycle would go on until the id was too long
// (docs/adr/0009-upstream-failure-id.md).
TEST(UpstreamFailedEventTest, TheIdNamesTheScheduleAndTheRootFailureAtAnyDepth) {
  auto schedule = [](const std::string& name, const std::string& upstream) {
    ParsedSchedule parsed = ParseSchedule(
        nlohmann::json{{"namespace", "analytics"},
                       {"name", name},
                       {"program", {{"name", name}}},
                       {"trigger", {{"program", {{"name", upstream}, {"on_upstream_failure", "discard"}}}}}});
    EXPECT_TRUE(parsed.ok());
    return parsed.schedule;
  };
  const TimePoint now(Millis(1'700'000'000'000));
  Event failed = Failed("w-1", "stage-00", "r-0");
  Event e = failed;
  for (int level = 1; level <= 40; ++level) {
    const std::string name = "customer-orders-stage-" + std::to_string(level) + "-aggregation";
    e = UpstreamFailedEvent(schedule(name, e.program.program), e, now);
    EXPECT_EQ(e.id, "upstream_failed:analytics/" + name + ":w-1");
    ASSERT_TRUE(ParseEnvelope(EnvelopeToJson(e).dump()).ok()) << "level " << level;
  }
  // A join: both paths give the node the same event; a cycle: a schedule's own event read back.
  Schedule join = schedule("join", "x");
  Event via_b = UpstreamFailedEvent(schedule("b", "a"), failed, now);
  Event via_c = UpstreamFailedEvent(schedule("c", "a"), failed, now);
  EXPECT_EQ(UpstreamFailedEvent(join, via_b, now).id, UpstreamFailedEvent(join, via_c, now).id);
  Schedule self = schedule("self", "self");
  Event once = UpstreamFailedEvent(self, failed, now);
  EXPECT_EQ(UpstreamFailedEvent(self, once, now).id, once.id);
  // A root too long to repeat in an id is named by its hash.
  Event long_root = Failed(std::string(kMaxEventIdBytes, 'r'), "a", "r-1");
  Event hashed = UpstreamFailedEvent(join, long_root, now);
  EXPECT_LE(hashed.id.size(), kMaxEventIdBytes);
  EXPECT_EQ(hashed.id, UpstreamFailedEvent(join, UpstreamFailedEvent(schedule("b", "a"), long_root, now), now).id);
  EXPECT_NE(hashed.id, UpstreamFailedEvent(join, Failed(std::string(kMaxEventIdBytes, 's'), "a", "r-1"), now).id);
}

// The replay's form (ADRs 0159, 0160): schedules read by position, triggered_by without the
// payload; every job, history record and flag as the store's map form writes them.
TEST(AccumulatorTest, SchedulesByPositionAndNoPayloadGiveTheSameJobs) {
  std::map<int64_t, ScheduleView> by_id = {{1, View(1, 1, {{"partition", {{"dataset", "d"}, {"count", 2}}}})},
                                           {3, View(3, 1, {{"partition", {{"dataset", "d"}}}})}};
  std::vector<const ScheduleView*> by_position = {&by_id.at(1), nullptr, &by_id.at(3)};
  Event e1 = Partition("e1", "d", "p1");
  Event e2 = Partition("e2", "d", "p2");
  // Schedule 2 is not active, 4 is past the end: both ignored, as ids missing from the map.
  std::vector<AccumulateInput> in = {{&e1, {1, 2, 3, 4}}, {&e2, {1, 2, 3, 4}}};
  Accumulation map_form = Accumulate(in, by_id, {}, kNow, HistoryForm::kRecords);
  for (AccumulateInput& i : in) i.payload = false;
  Accumulation position_form = Accumulate(in, by_position, {}, kNow, HistoryForm::kRecords);
  ASSERT_EQ(map_form.jobs.size(), 3u);
  ASSERT_EQ(position_form.jobs.size(), map_form.jobs.size());
  EXPECT_EQ(position_form.applied, map_form.applied);
  for (size_t i = 0; i < map_form.jobs.size(); ++i) {
    const OpenJob& a = map_form.jobs[i];
    const OpenJob& b = position_form.jobs[i];
    EXPECT_EQ(b.schedule_id, a.schedule_id);
    EXPECT_EQ(b.state, a.state);
    EXPECT_EQ(b.complete, a.complete);
    ASSERT_EQ(b.history_records.size(), a.history_records.size());
    for (size_t h = 0; h < a.history_records.size(); ++h) {
      EXPECT_EQ(HistoryText(b.history_records[h], by_id.at(b.schedule_id).schedule->trigger, "t"),
                HistoryText(a.history_records[h], by_id.at(a.schedule_id).schedule->trigger, "t"));
    }
    ASSERT_EQ(b.triggered_by.size(), a.triggered_by.size());
    for (size_t t = 0; t < a.triggered_by.size(); ++t) {
      EXPECT_EQ(b.triggered_by[t].id, a.triggered_by[t].id);
      EXPECT_EQ(b.triggered_by[t].type, a.triggered_by[t].type);
      EXPECT_FALSE(a.triggered_by[t].Payload().is_null());
      EXPECT_TRUE(b.triggered_by[t].Payload().is_null());
    }
  }
}

}  // namespace
}  // namespace trigd
