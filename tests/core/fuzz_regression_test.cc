// Inputs that tools/fuzz found breaking the envelope and schedule parsers, each kept as a test
// (the same inputs are in tests/fuzz/corpus, which fuzz_smoke replays under the sanitizers).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/envelope.h"
#include "core/envelope_agreement.h"
#include "core/schedule_parser.h"

namespace trigd {
namespace {

// The fuzz-found envelopes also go through the ingest fast path, which must agree.
Result<Event> Parse(std::string_view bytes) {
  EXPECT_EQ(ScanDisagreement(bytes), "") << bytes;
  return ParseEnvelope(bytes);
}

std::string Program(const std::string& time) {
  return R"({"id": "e-1", "type": "program", "time": ")" + time +
         R"(", "payload": {"program": "p", "run_id": "r", "status": "killed"}})";
}

std::string Tick(const std::string& fire_time) {
  return R"({"id": "e-1", "type": "tick", "time": "2026-11-22T10:00:00Z", )"
         R"("payload": {"schedule": "a/b", "fire_time": ")" +
         fire_time + R"("}})";
}

// An offset can carry 9999-12-31 into year 10000 (or 0000-01-01 into year -1): accepted, trigd
// would write its time back as "10000-01-01T23:58:59.999Z", which no RFC 3339 parser (its own
// included) accepts.
TEST(EnvelopeFuzzRegressionTest, TimeThatAnOffsetCarriesOutOfYears0000To9999IsRefused) {
  for (const char* time : {"9999-12-31T23:59:59.999-23:59", "9999-12-31T23:59:00-00:01", "0000-01-01T00:30:00+01:00",
                           "0000-01-01T00:00:00.000+00:01"}) {
    Result<Event> event = Parse(Program(time));
    ASSERT_FALSE(event.ok()) << time;
    EXPECT_EQ(event.status().message(), std::string("bad_field: time: invalid time \"") + time +
                                            "\": expected RFC 3339, e.g. 2026-11-22T10:00:00Z");
  }
  DeadLetterReason reason{};
  Result<Event> tick = ParseEnvelope(Tick("9999-12-31T23:59:59.999-00:01"), kMaxEventBytes, &reason);
  ASSERT_FALSE(tick.ok());
  EXPECT_EQ(reason, DeadLetterReason::kBadField);
}

TEST(EnvelopeFuzzRegressionTest, FirstAndLastInstantOfYears0000To9999RoundTrip) {
  for (const char* time :
       {"0000-01-01T00:00:00Z", "9999-12-31T23:59:59.999Z", "0001-01-01T00:30:00+01:00", "9999-12-31T22:59:59-01:00"}) {
    Result<Event> event = Parse(Program(time));
    ASSERT_TRUE(event.ok()) << time << ": " << event.status().message();
    Result<Event> again = Parse(EnvelopeToJson(*event).dump());
    ASSERT_TRUE(again.ok()) << time << ": " << again.status().message();
    EXPECT_EQ(again->time, event->time) << time;
  }
}

// A number beyond a double made nlohmann's parser throw out_of_range, which ParseScheduleFile
// did not catch: trigctl apply died with "terminate called" instead of naming the problem. It is
// named as out of range, where it is.
TEST(ScheduleFuzzRegressionTest, NumberBeyondADoubleIsAJsonErrorNotAnException) {
  const std::string text = R"({"name": "s", "program": {"name": "p"}, "priority": 1e400,
                               "trigger": {"partition": {"dataset": "d"}}})";
  std::vector<ParsedSchedule> parsed;
  ASSERT_NO_THROW(parsed = ParseScheduleFile(text));
  ASSERT_EQ(parsed.size(), 1u);
  ASSERT_EQ(parsed[0].errors.size(), 1u);
  EXPECT_EQ(parsed[0].errors[0].ToString(), "priority: number 1e400 is out of range (beyond a double)");
}

TEST(ScheduleFuzzRegressionTest, NumberBeyondADoubleInsideAnArrayOfDocuments) {
  std::vector<ParsedSchedule> parsed;
  ASSERT_NO_THROW(parsed = ParseScheduleFile(R"([{"name": "s"}, -1e999])"));
  ASSERT_EQ(parsed.size(), 1u);
  ASSERT_EQ(parsed[0].errors.size(), 1u);
  EXPECT_EQ(parsed[0].errors[0].ToString(), "[1]: number -1e999 is out of range (beyond a double)");
}

std::string WithArgsNested(int depth) {
  return R"({"name": "s", "program": {"name": "p", "args": {"x": )" + std::string(depth, '[') +
         std::string(depth, ']') + R"(}}, "trigger": {"partition": {"dataset": "d"}}})";
}

// program.args is copied into the Schedule, and copying a JSON value recurses: args nested
// 10,000 deep overflowed the stack (trigctl apply crashed with SIGSEGV).
TEST(ScheduleFuzzRegressionTest, DocumentNestedDeeperThan128LevelsIsOneJsonError) {
  for (int depth : {126, 10'000, 1'000'000}) {
    std::vector<ParsedSchedule> parsed = ParseScheduleFile(WithArgsNested(depth));
    ASSERT_EQ(parsed.size(), 1u);
    ASSERT_EQ(parsed[0].errors.size(), 1u) << depth;
    EXPECT_EQ(parsed[0].errors[0].path, "");
    EXPECT_EQ(parsed[0].errors[0].reason.rfind(
                  R"(invalid JSON: nested deeper than 128 levels at "program.args.x[0][0][0])", 0),
              0u)
        << parsed[0].errors[0].reason;
  }
  std::vector<ParsedSchedule> in_array =
      ParseScheduleFile("[{}, " + std::string(200, '[') + std::string(200, ']') + "]");
  ASSERT_EQ(in_array.size(), 1u);
  ASSERT_EQ(in_array[0].errors.size(), 1u);
  EXPECT_EQ(in_array[0].errors[0].reason.rfind(R"(invalid JSON: nested deeper than 128 levels at "[1][0][0])", 0), 0u)
      << in_array[0].errors[0].reason;
}

TEST(ScheduleFuzzRegressionTest, ArgsNestedToTheLimitAreKeptAndRoundTrip) {
  // The document, program and args are three levels; x may be 125 arrays deep.
  std::vector<ParsedSchedule> parsed = ParseScheduleFile(WithArgsNested(125));
  ASSERT_EQ(parsed.size(), 1u);
  ASSERT_TRUE(parsed[0].ok()) << parsed[0].errors[0].ToString();
  ParsedSchedule again = ParseSchedule(ScheduleToJson(parsed[0].schedule));
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again.schedule, parsed[0].schedule);
}

}  // namespace
}  // namespace trigd
