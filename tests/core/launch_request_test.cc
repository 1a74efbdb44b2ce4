#include "core/launch_request.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace trigd {
namespace {

LaunchRequest Sample() {
  Program p;
  p.name = "sales.rollup";
  p.args = {{"mode", "full"}};
  p.target = "spark";
  return {ProgramJson(p),
          "0190d5f2-0000-7000-8000-000000000001",
          "default/sales-rollup",
          3,
          R"([{"id":"b7c1","payload":{"dataset":"sales","partition":"dt=2026-11-22"},"type":"partition"}])",
          false};
}

TimePoint At(int64_t ms) { return TimePoint(Millis(ms)); }

// The stored text: the fields every attempt shares, no attempt's own.
TEST(LaunchRequestTest, TemplateGolden) {
  EXPECT_EQ(
      LaunchRequestTemplate(Sample()),
      R"({"program":{"args":{"mode":"full"},"name":"sales.rollup","target":"spark"},)"
      R"("run_id":"0190d5f2-0000-7000-8000-000000000001","schedule":"default/sales-rollup","schedule_version":3,)"
      R"("triggered_by":[{"id":"b7c1","payload":{"dataset":"sales","partition":"dt=2026-11-22"},"type":"partition"}]})");
}

// What a worker receives: the attempt's fields first, byte for byte the layout trigd published
// before the fields became columns.
TEST(LaunchRequestTest, RenderedGolden) {
  // 2026-11-22T10:00:04Z; heartbeat_timeout 2m, under the queued timeout: start_by is 10m later.
  const LaunchAttempt a{1, std::chrono::minutes(2), At(1795341604000)};
  EXPECT_EQ(
      RenderLaunchRequest(LaunchRequestTemplate(Sample()), a),
      R"({"attempt":1,"heartbeat_timeout":"2m","launched_at":"2026-11-22T10:00:04Z",)"
      R"("start_by":"2026-11-22T10:10:04Z",)"
      R"("program":{"args":{"mode":"full"},"name":"sales.rollup","target":"spark"},)"
      R"("run_id":"0190d5f2-0000-7000-8000-000000000001","schedule":"default/sales-rollup","schedule_version":3,)"
      R"("triggered_by":[{"id":"b7c1","payload":{"dataset":"sales","partition":"dt=2026-11-22"},"type":"partition"}]})");
}

// A retry renders the same template with its own attempt: only those fields differ.
TEST(LaunchRequestTest, RetryChangesOnlyTheAttemptFields) {
  const std::string t = LaunchRequestTemplate(Sample());
  const auto first = nlohmann::json::parse(RenderLaunchRequest(t, {1, std::chrono::minutes(20), At(1795341604000)}));
  auto second = nlohmann::json::parse(RenderLaunchRequest(t, {2, std::chrono::minutes(20), At(1795341664123)}));
  EXPECT_EQ(second["attempt"], 2);
  EXPECT_EQ(second["launched_at"], "2026-11-22T10:01:04.123Z");
  // heartbeat_timeout 20m, over the queued timeout: start_by is launched_at + 20m.
  EXPECT_EQ(second["start_by"], "2026-11-22T10:21:04.123Z");
  EXPECT_EQ(first["start_by"], "2026-11-22T10:20:04Z");
  second["attempt"] = first["attempt"];
  second["launched_at"] = first["launched_at"];
  second["start_by"] = first["start_by"];
  EXPECT_EQ(second, first);
}

TEST(LaunchRequestTest, TruncatedTriggeredBySaysSo) {
  LaunchRequest r = Sample();
  r.triggered_by_json = R"([{"id":"e9"}])";
  r.triggered_by_truncated = true;
  const auto j = nlohmann::json::parse(RenderLaunchRequest(LaunchRequestTemplate(r), {1, Millis(1000), At(0)}));
  EXPECT_EQ(j["triggered_by_truncated"], true);
  EXPECT_EQ(j["triggered_by"].size(), 1u);
  EXPECT_EQ(j["start_by"], "1970-01-01T00:10:00Z");
}

// A template PostgreSQL rendered from jsonb (runs migrated by schema/016: a space after each
// ':' and ','), and an empty one, still make one valid object.
TEST(LaunchRequestTest, RendersJsonbTemplatesAndEmptyOnes) {
  const LaunchAttempt a{3, Millis(60000), At(1000)};
  const auto j = nlohmann::json::parse(RenderLaunchRequest(R"({"run_id": "r1", "schedule_version": 2})", a));
  EXPECT_EQ(j["run_id"], "r1");
  EXPECT_EQ(j["attempt"], 3);
  EXPECT_EQ(j["heartbeat_timeout"], "1m");
  EXPECT_EQ(
      RenderLaunchRequest("{}", a),
      R"({"attempt":3,"heartbeat_timeout":"1m","launched_at":"1970-01-01T00:00:01Z","start_by":"1970-01-01T00:10:01Z"})");
  EXPECT_EQ(RenderLaunchRequest("{ }", a), RenderLaunchRequest("{}", a));
}

// The attempt's fields stay within the room the size check leaves for them.
TEST(LaunchRequestTest, AttemptFieldsFitTheirRoom) {
  const LaunchAttempt a{2147483647, std::chrono::hours(24 * 3650), At(253402300799999)};
  EXPECT_LE(RenderLaunchRequest("{}", a).size(), kLaunchAttemptFieldsBytes);
}

}  // namespace
}  // namespace trigd
