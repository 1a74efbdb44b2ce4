#include <gtest/gtest.h>

#include "core/accumulator.h"
#include "core/envelope.h"
#include "core/schedule_parser.h"

namespace trigd {
namespace {

// trigd's own killed event must be a valid envelope: ingestion reads it back from
// events.program to carry the failure further down the DAG. It had an empty run id, which the
// envelope refuses, so the failure stopped one level below the failed node.
TEST(UpstreamFailedEventTest, ParsesBackAsAKilledProgramEventForTheNextLevel) {
  ParsedSchedule parsed = ParseSchedule(nlohmann::json::parse(R"({
      "namespace": "dag", "name": "p7", "program": {"name": "dag.p7"},
      "trigger": {"program": {"name": "dag.p4", "on_upstream_failure": "discard"}}})"));
  ASSERT_TRUE(parsed.ok());
  Event failed;
  failed.id = "w-1";
  failed.type = EventType::kProgram;
  failed.program.program = "dag.p4";
  failed.program.run_id = "r-4";
  failed.program.status = ProgramStatus::kFailed;
  Event killed = UpstreamFailedEvent(parsed.schedule, failed, TimePoint(Millis(1'700'000'000'000)));

  Result<Event> back = ParseEnvelope(EnvelopeToJson(killed).dump());
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->EventKey(), "program:dag.p7");
  EXPECT_EQ(back->program.status, ProgramStatus::kKilled);
  EXPECT_EQ(back->program.run_id, killed.id);
  EXPECT_EQ(back->payload["reason"], "upstream_failed");
}

}  // namespace
}  // namespace trigd
