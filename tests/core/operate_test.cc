#include "core/operate.h"

#include <gtest/gtest.h>

#include "core/schedule_parser.h"

namespace trigd {
namespace {

using nlohmann::json;

Schedule Parse(const json& doc) {
  ParsedSchedule p = ParseSchedule(doc);
  EXPECT_TRUE(p.ok()) << (p.errors.empty() ? "" : p.errors.front().ToString());
  return p.schedule;
}

TimePoint T(const char* text) { return *ParseTime(text); }

json Hourly() {
  return {{"name", "h"}, {"program", {{"name", "p"}}}, {"trigger", {{"time", {{"cron", "0 * * * *"}}}}}};
}

// [from, to): a fire time at `from` is in, one at `to` is out.
TEST(OperateTest, FireTimesBetweenIsHalfOpen) {
  FireTimes f = FireTimesBetween(Parse(Hourly()), T("2026-01-01T00:00:00Z"), T("2026-01-01T00:00:00Z"),
                                 T("2026-01-01T03:00:00Z"), 100);
  ASSERT_EQ(f.times.size(), 3u);
  EXPECT_EQ(f.times.front(), T("2026-01-01T00:00:00Z"));
  EXPECT_EQ(f.times.back(), T("2026-01-01T02:00:00Z"));
  EXPECT_FALSE(f.more);
}

TEST(OperateTest, FireTimesBetweenStopsAtMaxAndSaysMore) {
  FireTimes f = FireTimesBetween(Parse(Hourly()), T("2026-01-01T00:00:00Z"), T("2026-01-01T00:00:00Z"),
                                 T("2026-01-02T00:00:00Z"), 5);
  EXPECT_EQ(f.times.size(), 5u);
  EXPECT_TRUE(f.more);
}

// Outside the active period a schedule has no fire times.
TEST(OperateTest, FireTimesBetweenKeepsToTheActivePeriod) {
  json doc = Hourly();
  doc["active"] = {{"from", "2026-01-01T01:00:00Z"}, {"until", "2026-01-01T02:30:00Z"}};
  FireTimes f = FireTimesBetween(Parse(doc), T("2026-01-01T00:00:00Z"), T("2026-01-01T00:00:00Z"),
                                 T("2026-01-01T05:00:00Z"), 100);
  ASSERT_EQ(f.times.size(), 2u);
  EXPECT_EQ(f.times[0], T("2026-01-01T01:00:00Z"));
  EXPECT_EQ(f.times[1], T("2026-01-01T02:00:00Z"));
}

TEST(OperateTest, NoTimeTriggerNoFireTimes) {
  json doc = {{"name", "d"}, {"program", {{"name", "p"}}}, {"trigger", {{"partition", {{"dataset", "x"}}}}}};
  Schedule s = Parse(doc);
  EXPECT_EQ(ScheduleTimeTrigger(s), nullptr);
  EXPECT_TRUE(FireTimesBetween(s, T("2026-01-01T00:00:00Z"), T("2026-01-01T00:00:00Z"), T("2026-01-02T00:00:00Z"), 9)
                  .times.empty());
}

TEST(OperateTest, LocalTimeCarriesItsOffset) {
  EXPECT_EQ(FormatLocalTime(T("2026-11-27T05:00:00Z"), "Europe/Berlin"), "2026-11-27T06:00:00+01:00");
  EXPECT_EQ(FormatLocalTime(T("2026-07-01T05:00:00Z"), "Europe/Berlin"), "2026-07-01T07:00:00+02:00");
  EXPECT_EQ(FormatLocalTime(T("2026-07-01T05:00:00Z"), "UTC"), "2026-07-01T05:00:00+00:00");
}

TEST(OperateTest, MergeArgsKeyByKey) {
  EXPECT_EQ(MergeArgs({{"mode", "full"}, {"day", "x"}}, {{"mode", "delta"}, {"extra", 1}}),
            (json{{"mode", "delta"}, {"day", "x"}, {"extra", 1}}));
  EXPECT_EQ(MergeArgs({{"a", 1}}, json::object()), (json{{"a", 1}}));
}

TEST(OperateTest, ManualArgsAreTheManualEntrysOverride) {
  EXPECT_EQ(ManualArgs(R"([{"id":"manual:1","type":"manual","payload":{"by":"x","args":{"mode":"delta"}}}])"),
            (json{{"mode", "delta"}}));
  EXPECT_EQ(ManualArgs(R"([{"id":"manual:1","type":"manual","payload":{"by":"x"}}])"), std::nullopt);
  EXPECT_EQ(ManualArgs(R"([{"id":"e","type":"partition","payload":{"dataset":"manual"}}])"), std::nullopt);
}

TEST(OperateTest, DiffNamesEachChangedField) {
  json a = {{"retry", {{"backoff", "1m"}, {"max_attempts", 1}}}, {"priority", 0}, {"x", {1, 2}}};
  json b = {{"retry", {{"backoff", "5m"}, {"max_attempts", 1}}}, {"run_timeout", "2h"}, {"x", {1, 3}}};
  std::vector<FieldChange> d = DiffDocuments(a, b);
  ASSERT_EQ(d.size(), 4u);
  EXPECT_EQ(d[0].path, "priority");
  EXPECT_EQ(d[0].after, nullptr);
  EXPECT_EQ(d[1].path, "retry.backoff");
  EXPECT_EQ(d[1].before, "1m");
  EXPECT_EQ(d[1].after, "5m");
  EXPECT_EQ(d[2].path, "x[1]");
  EXPECT_EQ(d[3].path, "run_timeout");
  EXPECT_TRUE(DiffDocuments(a, a).empty());
}

TEST(OperateTest, JitterSpreadsWithinItsShare) {
  const Millis b = std::chrono::seconds(100);
  EXPECT_EQ(JitteredBackoff(b, 10, 0.0), std::chrono::seconds(90));
  EXPECT_EQ(JitteredBackoff(b, 10, 0.5), std::chrono::seconds(100));
  EXPECT_EQ(JitteredBackoff(b, 10, 1.0), std::chrono::seconds(110));
  EXPECT_EQ(JitteredBackoff(b, 0, 0.9), b);
  EXPECT_EQ(JitteredBackoff(b, 100, 0.0), Millis(0));
}

// The fields of SPEC §9 parse, and stay out of the canonical document at their defaults so that
// a document applied before them keeps its text and version.
TEST(OperateTest, OperateFieldsParseAndDefaultsStayImplicit) {
  json doc = Hourly();
  Schedule plain = Parse(doc);
  EXPECT_EQ(plain.retry.jitter_percent, 10);
  EXPECT_FALSE(plain.run_timeout);
  EXPECT_FALSE(plain.active);
  doc["constraints"] = {{"max_concurrent_runs", {{"max", 1}, {"on_unmet", "wait"}}}};
  doc["retry"] = {{"jitter", "10%"}};
  json canonical = ScheduleToJson(Parse(doc));
  EXPECT_EQ(canonical["constraints"]["max_concurrent_runs"], 1);
  EXPECT_FALSE(canonical["retry"].contains("jitter"));
  doc["constraints"]["max_concurrent_runs"]["on_unmet"] = "cancel_oldest";
  Schedule s = Parse(doc);
  EXPECT_EQ(s.constraints.on_overlap, OverlapPolicy::kCancelOldest);
  EXPECT_EQ(s.constraints.max_concurrent_runs, 1);
}

}  // namespace
}  // namespace trigd
