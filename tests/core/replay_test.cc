// Replay: schedule documents over hand-made streams of envelopes, in event time, through the
// core's own routing, accumulation and constraint checks.
#include "core/replay.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "core/schedule_parser.h"

namespace trigd {
namespace {

using nlohmann::json;

const TimePoint kFrom = TimePoint(Millis(1795305600000));  // 2026-11-22T00:00:00Z
constexpr Millis kMinute = std::chrono::minutes(1);

Schedule Doc(json doc) {
  ParsedSchedule p = ParseSchedule(doc);
  EXPECT_TRUE(p.ok()) << (p.errors.empty() ? "" : p.errors[0].ToString());
  return p.schedule;
}

Schedule Simple(const std::string& name, json trigger, json constraints = json::object()) {
  json doc = {{"name", name}, {"program", {{"name", name + ".prog"}}}, {"trigger", std::move(trigger)}};
  if (!constraints.empty()) doc["constraints"] = std::move(constraints);
  return Doc(doc);
}

std::string Partition(const std::string& id, TimePoint t, const std::string& dataset, const std::string& partition) {
  return json{{"id", id},
              {"type", "partition"},
              {"time", FormatTime(t)},
              {"payload", {{"dataset", dataset}, {"partitions", {partition}}}}}
      .dump();
}

std::string Program(const std::string& id, TimePoint t, const std::string& program, const std::string& run,
                    const std::string& status) {
  return json{{"id", id},
              {"type", "program"},
              {"time", FormatTime(t)},
              {"payload", {{"program", program}, {"run_id", run}, {"status", status}, {"attempt", 1}}}}
      .dump();
}

ReplayResult Replayed(std::vector<Schedule> schedules, const std::vector<std::string>& stream, TimePoint to,
                      std::optional<Millis> run_duration = Millis(0)) {
  ReplayOptions options;
  options.from = kFrom;
  options.to = to;
  options.run_duration = run_duration;
  Replay replay(std::move(schedules), options);
  std::vector<std::string_view> views(stream.begin(), stream.end());
  for (const ReplayMessage& m : replay.Order(views)) replay.Feed(views[m.index], m);
  ReplayResult r = replay.Finish();
  DecodeTimeline(r);
  return r;
}

// Everything a replay says, as one text: counters, each schedule's timeline and launches.
std::string Dump(const ReplayResult& r) {
  std::string out = std::to_string(r.messages) + " " + std::to_string(r.matched) + " " + std::to_string(r.duplicates) +
                    " " + std::to_string(r.invalid) + " " + std::to_string(r.fire_times) + "\n";
  for (const ReplaySchedule& s : r.schedules) {
    out += s.name + " " + std::to_string(s.jobs) + " " + std::to_string(s.discarded) + " " +
           std::to_string(s.open_at_end) + " " + std::to_string(s.waiting_at_end) + "\n";
    for (const ReplayStep& st : s.timeline) {
      out += FormatTime(st.at) + " " + std::to_string(st.job) + " " + st.what + "|" + st.event + "|" + st.detail + "\n";
    }
    for (const ReplayLaunch& l : s.launches) {
      out += "launch " + std::to_string(l.job) + " " + FormatTime(l.at) + " " + FormatTime(l.ends_at);
      for (const TriggeringEvent& e : l.triggered_by) out += " " + e.id + "/" + e.type;
      out += "\n";
    }
  }
  return out;
}

std::vector<std::string> Ids(const ReplayLaunch& l) {
  std::vector<std::string> out;
  for (const auto& e : l.triggered_by) out.push_back(e.id);
  return out;
}

std::vector<std::string> Whats(const ReplaySchedule& s) {
  std::vector<std::string> out;
  for (const auto& step : s.timeline) out.push_back(step.what);
  return out;
}

TEST(ReplayTest, CountsPartitionsAndLaunchesWithTheTriggeringEvents) {
  std::vector<std::string> stream;
  for (int i = 0; i < 9; ++i) {
    stream.push_back(Partition("e" + std::to_string(i), kFrom + i * kMinute, "sales.raw", "h=" + std::to_string(i)));
  }
  stream.push_back(Partition("other", kFrom + kMinute, "other.ds", "x"));
  ReplayResult r = Replayed({Simple("rollup", {{"partition", {{"dataset", "sales.raw"}, {"count", 4}}}})}, stream,
                            kFrom + std::chrono::hours(1));
  ASSERT_EQ(r.schedules.size(), 1u);
  const ReplaySchedule& s = r.schedules[0];
  ASSERT_EQ(s.launches.size(), 2u);
  EXPECT_EQ(Ids(s.launches[0]), (std::vector<std::string>{"e0", "e1", "e2", "e3"}));
  EXPECT_EQ(Ids(s.launches[1]), (std::vector<std::string>{"e4", "e5", "e6", "e7"}));
  EXPECT_EQ(s.launches[0].at, kFrom + 3 * kMinute);
  EXPECT_EQ(s.open_at_end, 1);  // e8 opened a third job
  EXPECT_EQ(r.messages, 10);
  EXPECT_EQ(r.matched, 9);
  EXPECT_EQ(Whats(s)[0], "opened");
  EXPECT_EQ(Whats(s)[1], "event counted");
  EXPECT_TRUE(std::any_of(s.timeline.begin(), s.timeline.end(), [](const ReplayStep& step) {
    return step.what == "trigger complete" && step.at == kFrom + 3 * kMinute && step.job == 1;
  }));
}

TEST(ReplayTest, EventsAreTakenInEventTimeOrderAndDuplicatesCountOnce) {
  // Given out of order, with a re-sent event: the program leaf counts e1 once.
  std::vector<std::string> stream = {
      Program("e2", kFrom + 2 * kMinute, "up", "r2", "succeeded"),
      Program("e1", kFrom + kMinute, "up", "r1", "succeeded"),
      Program("e1", kFrom + 3 * kMinute, "up", "r1", "succeeded"),
  };
  ReplayResult r =
      Replayed({Simple("down", {{"program", {{"name", "up"}, {"count", 2}}}})}, stream, kFrom + kMinute * 10);
  ASSERT_EQ(r.schedules[0].launches.size(), 1u);
  EXPECT_EQ(Ids(r.schedules[0].launches[0]), (std::vector<std::string>{"e1", "e2"}));
  EXPECT_EQ(r.duplicates, 1);
}

TEST(ReplayTest, MaxConcurrentRunsWaitsForTheSimulatedRunToEnd) {
  std::vector<std::string> stream = {Partition("a", kFrom + kMinute, "d", "1"),
                                     Partition("b", kFrom + 2 * kMinute, "d", "2")};
  ReplayResult r = Replayed({Simple("s", {{"partition", {{"dataset", "d"}}}}, {{"max_concurrent_runs", 1}})}, stream,
                            kFrom + std::chrono::hours(1), std::chrono::minutes(10));
  const ReplaySchedule& s = r.schedules[0];
  ASSERT_EQ(s.launches.size(), 2u);
  EXPECT_EQ(s.launches[0].at, kFrom + kMinute);
  // The second waits for the first run (10 minutes) to end.
  EXPECT_EQ(s.launches[1].at, kFrom + 11 * kMinute);
  EXPECT_NE(std::find(Whats(s).begin(), Whats(s).end(), "wait"), Whats(s).end());
}

TEST(ReplayTest, RecordedDurationsModelTheRunsWhenNoDurationIsGiven) {
  std::vector<std::string> stream = {
      Program("s1", kFrom, "s.prog", "r1", "started"),
      Program("o1", kFrom + 5 * kMinute, "s.prog", "r1", "succeeded"),
      Partition("a", kFrom + kMinute, "d", "1"),
      Partition("b", kFrom + 2 * kMinute, "d", "2"),
  };
  std::vector<std::string_view> views(stream.begin(), stream.end());
  auto durations = RecordedRunDurations(views);
  ASSERT_EQ(durations["s.prog"], (std::vector<Millis>{5 * kMinute}));
  ReplayOptions options;
  options.from = kFrom;
  options.to = kFrom + std::chrono::hours(1);
  options.recorded_durations = durations;
  Replay replay({Simple("s", {{"partition", {{"dataset", "d"}}}}, {{"max_concurrent_runs", 1}})}, options);
  for (size_t i : SortByEventTime(views)) replay.Feed(views[i]);
  ReplayResult r = replay.Finish();
  ASSERT_EQ(r.schedules[0].launches.size(), 2u);
  EXPECT_EQ(r.schedules[0].launches[0].ends_at, kFrom + 6 * kMinute);
  EXPECT_EQ(r.schedules[0].launches[1].at, kFrom + 6 * kMinute);
}

TEST(ReplayTest, DelayAndTimeWindowWaitInEventTime) {
  std::vector<std::string> stream = {Partition("a", kFrom + kMinute, "d", "1")};
  ReplayResult r = Replayed({Simple("delayed", {{"partition", {{"dataset", "d"}}}}, {{"delay", "10m"}}),
                             Simple("windowed", {{"partition", {{"dataset", "d"}}}},
                                    {{"time_window", {{"start", "02:00"}, {"end", "03:00"}, {"timezone", "UTC"}}}})},
                            stream, kFrom + std::chrono::hours(4));
  ASSERT_EQ(r.schedules[0].launches.size(), 1u);
  EXPECT_EQ(r.schedules[0].launches[0].at, kFrom + 11 * kMinute);
  ASSERT_EQ(r.schedules[1].launches.size(), 1u);
  EXPECT_EQ(r.schedules[1].launches[0].at, kFrom + std::chrono::hours(2));
}

TEST(ReplayTest, AWaitBeyondTheRangeIsLeftWaiting) {
  std::vector<std::string> stream = {Partition("a", kFrom + kMinute, "d", "1")};
  ReplayResult r =
      Replayed({Simple("s", {{"partition", {{"dataset", "d"}}}}, {{"delay", "1h"}})}, stream, kFrom + 30 * kMinute);
  EXPECT_TRUE(r.schedules[0].launches.empty());
  EXPECT_EQ(r.schedules[0].waiting_at_end, 1);
}

TEST(ReplayTest, TimeTriggersFireInTheRangeWithoutTicksOnTheLog) {
  ReplayResult r = Replayed({Simple("hourly", {{"time", {{"cron", "0 * * * *"}}}})}, {}, kFrom + std::chrono::hours(3));
  // 01:00, 02:00, 03:00 (the range is (from, to]).
  ASSERT_EQ(r.schedules[0].launches.size(), 3u);
  EXPECT_EQ(r.schedules[0].launches[0].at, kFrom + std::chrono::hours(1));
  EXPECT_EQ(Ids(r.schedules[0].launches[0]), (std::vector<std::string>{"tick:default/hourly:2026-11-22T01:00:00Z"}));
  EXPECT_EQ(r.fire_times, 3);
}

TEST(ReplayTest, MaxRunsPerAndMinSinceLastRunCountSimulatedLaunches) {
  std::vector<std::string> stream;
  for (int i = 0; i < 5; ++i)
    stream.push_back(Partition("e" + std::to_string(i), kFrom + i * kMinute, "d", std::to_string(i)));
  ReplayResult r = Replayed({Simple("capped", {{"partition", {{"dataset", "d"}}}},
                                    {{"max_runs_per", {{"count", 2}, {"period", "1d"}, {"on_unmet", "skip"}}}}),
                             Simple("spaced", {{"partition", {{"dataset", "d"}}}},
                                    {{"min_since_last_run", {{"duration", "2m"}, {"on_unmet", "skip"}}}})},
                            stream, kFrom + std::chrono::hours(1));
  EXPECT_EQ(r.schedules[0].launches.size(), 2u);
  EXPECT_EQ(r.schedules[0].discarded, 3);
  // 00:00 launches, 00:01 skipped, 00:02 launches, 00:03 skipped, 00:04 launches.
  EXPECT_EQ(r.schedules[1].launches.size(), 3u);
}

TEST(ReplayTest, UpstreamFailureDiscardsAndTravelsDownTheReplayedDag) {
  json down1 = {{"name", "b"},
                {"program", {{"name", "b.prog"}}},
                {"trigger",
                 {{"all",
                   {{{"partition", {{"dataset", "d"}}}},
                    {{"program", {{"name", "a.prog"}, {"on_upstream_failure", "discard"}}}}}}}}};
  json down2 = {{"name", "c"},
                {"program", {{"name", "c.prog"}}},
                {"trigger", {{"program", {{"name", "b.prog"}, {"on_upstream_failure", "discard"}}}}}};
  std::vector<std::string> stream = {Partition("p", kFrom + kMinute, "d", "1"),
                                     Program("f", kFrom + 2 * kMinute, "a.prog", "r", "failed")};
  ReplayResult r = Replayed({Doc(down1), Doc(down2)}, stream, kFrom + std::chrono::hours(1));
  EXPECT_TRUE(r.schedules[0].launches.empty());
  EXPECT_EQ(r.schedules[0].discarded, 1);
  EXPECT_EQ(r.schedules[0].timeline.back().what, "discard");
  // b's killed event (upstream_failed) reached c, which had no job: nothing to discard.
  EXPECT_EQ(r.schedules[1].jobs, 0);
  EXPECT_GE(r.matched, 3);
}

TEST(ReplayTest, TimeoutDiscardsAnOpenJob) {
  json doc = {{"name", "t"},
              {"program", {{"name", "t.prog"}}},
              {"trigger", {{"partition", {{"dataset", "d"}, {"count", 3}}}}},
              {"timeout", {{"after", "10m"}, {"action", "discard"}}}};
  ReplayResult r = Replayed({Doc(doc)}, {Partition("a", kFrom + kMinute, "d", "1")}, kFrom + std::chrono::hours(1));
  EXPECT_TRUE(r.schedules[0].launches.empty());
  EXPECT_EQ(r.schedules[0].discarded, 1);
  EXPECT_EQ(r.schedules[0].timeline.back().at, kFrom + 11 * kMinute);
  EXPECT_EQ(r.schedules[0].open_at_end, 0);
}

TEST(ReplayTest, InvalidEnvelopesAndDisabledSchedulesChangeNothing) {
  json doc = {{"name", "off"},
              {"program", {{"name", "p"}}},
              {"trigger", {{"partition", {{"dataset", "d"}}}}},
              {"enabled", false}};
  ReplayResult r = Replayed({Doc(doc)}, {"{not json", Partition("a", kFrom, "d", "1")}, kFrom + kMinute);
  EXPECT_EQ(r.invalid, 1);
  EXPECT_EQ(r.schedules[0].jobs, 0);
  EXPECT_FALSE(r.schedules[0].enabled);
}

// Quiet periods and silence (SPEC §11) complete by the clock, at their deadline in event time,
// as the store's checker completes them at the job's due time.
TEST(ReplayTest, QuietPeriodLaunchesAtTheLastArrivalPlusThePeriod) {
  std::vector<std::string> stream = {
      Partition("q1", kFrom + kMinute, "sales.raw", "h=1"), Partition("q2", kFrom + 2 * kMinute, "sales.raw", "h=2"),
      Partition("q3", kFrom + 8 * kMinute, "sales.raw", "h=3"),  // inside the quiet period: restarts it
      Partition("q4", kFrom + 30 * kMinute, "sales.raw", "h=4")};
  ReplayResult r =
      Replayed({Simple("settled", {{"partition", {{"dataset", "sales.raw"}, {"count", 2}, {"quiet", "10m"}}}})}, stream,
               kFrom + 60 * kMinute);
  const ReplaySchedule& s = r.schedules[0];
  ASSERT_EQ(s.launches.size(), 1u);
  EXPECT_EQ(s.launches[0].at, kFrom + 18 * kMinute);
  EXPECT_EQ(Ids(s.launches[0]), (std::vector<std::string>{"q1", "q2", "q3"}));
  // The next job has one partition of 2: no quiet period runs, still collecting at the end.
  EXPECT_EQ(s.open_at_end, 1);
}

TEST(ReplayTest, SilenceArmedAtFromAndReArmedByArrivals) {
  std::vector<std::string> stream = {Partition("f1", kFrom + 30 * kMinute, "feed.raw", "h=1"),
                                     Partition("f2", kFrom + 200 * kMinute, "feed.raw", "h=2")};
  ReplayResult r = Replayed({Simple("silent", {{"silence", {{"dataset", "feed.raw"}, {"for", "1h"}}}})}, stream,
                            kFrom + 400 * kMinute);
  const ReplaySchedule& s = r.schedules[0];
  // Armed at `from`, re-armed at 00:30: fires at 01:30. Nothing armed until f2 at 03:20: fires
  // at 04:20. Once per silence.
  ASSERT_EQ(s.launches.size(), 2u);
  EXPECT_EQ(s.launches[0].at, kFrom + 90 * kMinute);
  EXPECT_EQ(s.launches[1].at, kFrom + 260 * kMinute);
  EXPECT_EQ(s.open_at_end, 0);
  EXPECT_EQ(Whats(s).front(), "opened");
}

// Order scans each message once and keeps what routing reads; feeding its messages gives what
// feeding the bytes in SortByEventTime's order gives (each routed by RouteEvent), for every kind
// of message: matched, unmatched, a run report, own and producer ticks, a custom event, an
// envelope the scanner is not sure of, invalid ones, duplicates, out of order.
TEST(ReplayTest, OrderedMessagesReplayAsTheBytesDo) {
  const std::vector<Schedule> docs = {
      Simple("count", {{"partition", {{"dataset", "d"}, {"count", 2}}}}, {{"max_concurrent_runs", 1}}),
      Simple("down", {{"program", {{"name", "up"}, {"on_upstream_failure", "discard"}}}}, {{"delay", "3m"}}),
      Simple("both", {{"all", {{{"partition", {{"dataset", "d"}}}}, {{"program", {{"name", "up"}}}}}}}),
      Simple("custom", {{"event", {{"name", "model.pub"}}}}), Simple("hourly", {{"time", {{"cron", "30 * * * *"}}}})};
  std::vector<std::string> stream;
  for (int i = 0; i < 60; ++i) {
    const TimePoint t = kFrom + i * kMinute - (i % 7 == 3 ? 5 * kMinute : Millis(0));
    const std::string id = "e" + std::to_string(i % 16 == 8 ? i - 8 : i);  // a re-sent partition
    switch (i % 8) {
      case 0: stream.push_back(Partition(id, t, "d", "h=" + std::to_string(i))); break;
      case 1: stream.push_back(Partition(id, t, "nobody", "h=1")); break;
      case 2: stream.push_back(Program(id, t, "up", "r" + std::to_string(i), i % 3 ? "succeeded" : "failed")); break;
      case 3: stream.push_back(Program(id, t, "count.prog", "r" + std::to_string(i), "started")); break;
      case 4:
        stream.push_back(json{{"id", OwnTickId("default/hourly", FormatTime(t))},
                              {"type", "time"},
                              {"time", FormatTime(t)},
                              {"payload", {{"schedule", "default/hourly"}, {"fire_time", FormatTime(t)}}}}
                             .dump());
        break;
      case 5:
        stream.push_back(
            json{{"id", id}, {"type", "custom"}, {"time", FormatTime(t)}, {"payload", {{"name", "model.pub"}}}}.dump());
        break;
      case 6:  // an escaped id: the scanner is not sure, the parser reads it
        stream.push_back(R"({"id":"e)" + id + R"(","type":"partition","time":")" + FormatTime(t) +
                         R"(","payload":{"dataset":"d","partitions":["x"]}})");
        break;
      default: stream.push_back(i % 16 == 7 ? "{not json" : R"({"id":"x","type":"partition"})"); break;
    }
  }
  std::vector<std::string_view> views(stream.begin(), stream.end());
  ReplayOptions options;
  options.from = kFrom;
  options.to = kFrom + std::chrono::hours(2);
  options.run_duration = 4 * kMinute;
  Replay by_bytes(docs, options);
  for (size_t i : SortByEventTime(views)) by_bytes.Feed(views[i]);
  ReplayResult a = by_bytes.Finish();
  DecodeTimeline(a);
  Replay ordered(docs, options);
  const std::vector<ReplayMessage> order = ordered.Order(views);
  std::vector<size_t> indexes;
  for (const ReplayMessage& m : order) indexes.push_back(m.index);
  EXPECT_EQ(indexes, SortByEventTime(views));
  for (const ReplayMessage& m : order) ordered.Feed(views[m.index], m);
  ReplayResult b = ordered.Finish();
  DecodeTimeline(b);
  EXPECT_GT(a.invalid, 0);
  EXPECT_GT(a.duplicates, 0);
  EXPECT_GT(a.schedules[0].launches.size(), 0u);
  EXPECT_GT(a.schedules[3].launches.size(), 0u);
  EXPECT_EQ(Dump(a), Dump(b));
}

}  // namespace
}  // namespace trigd
