#include "core/schedule_parser.h"
#include "source_paths.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <random>
#include <sstream>
#include <string>
#include <vector>

namespace trigd {
namespace {

using nlohmann::json;

std::vector<std::string> ErrorLines(const ParsedSchedule& parsed) {
  std::vector<std::string> lines;
  for (const ScheduleError& e : parsed.errors) lines.push_back(e.ToString());
  return lines;
}

std::vector<std::string> ErrorLines(const std::vector<ParsedSchedule>& parsed) {
  std::vector<std::string> lines;
  for (const ParsedSchedule& p : parsed) {
    for (const ScheduleError& e : p.errors) lines.push_back(e.ToString());
  }
  return lines;
}

// A valid document to which a test adds or overrides one thing.
json Base() {
  return json{{"name", "s"}, {"program", {{"name", "p"}}}, {"trigger", {{"partition", {{"dataset", "d"}}}}}};
}

ParsedSchedule ParseText(std::string_view text) {
  std::vector<ParsedSchedule> parsed = ParseScheduleFile(text);
  EXPECT_EQ(parsed.size(), 1u);
  return parsed.empty() ? ParsedSchedule{} : parsed.front();
}

// ---------------------------------------------------------------------------------------------
// Golden documents: tests/core/golden/schedules/NAME.json with NAME.expected. When every
// document of a file is valid, NAME.expected is the canonical JSON (ScheduleToJson, dump(2); a
// JSON array when the file holds an array); otherwise it is every error, one per line, in the
// order ParseScheduleFile reports them.
//
// To regenerate after an intended change:
//   TRIGD_UPDATE_GOLDEN=1 build/bin/core_test --gtest_filter='Schedules/GoldenScheduleTest.*'
// then read every changed .expected by eye before committing: they are the spec.

std::filesystem::path GoldenDir() { return std::filesystem::path(TRIGD_SOURCE_DIR) / "tests/core/golden/schedules"; }

std::vector<std::string> GoldenCases() {
  std::vector<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(GoldenDir())) {
    if (entry.path().extension() == ".json") names.push_back(entry.path().stem().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

std::string ReadFile(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

bool StartsWithArray(std::string_view text) {
  for (char c : text) {
    if (!std::isspace(static_cast<unsigned char>(c))) return c == '[';
  }
  return false;
}

std::string RenderGolden(std::string_view text) {
  std::vector<ParsedSchedule> parsed = ParseScheduleFile(text);
  std::string errors;
  for (const std::string& line : ErrorLines(parsed)) errors += line + "\n";
  if (!errors.empty()) return errors;
  json canonical = json::array();
  for (const ParsedSchedule& p : parsed) canonical.push_back(ScheduleToJson(p.schedule));
  if (!StartsWithArray(text)) canonical = canonical.at(0);
  return canonical.dump(2) + "\n";
}

class GoldenScheduleTest : public ::testing::TestWithParam<std::string> {};

TEST_P(GoldenScheduleTest, MatchesExpectedFile) {
  std::filesystem::path input = GoldenDir() / (GetParam() + ".json");
  std::filesystem::path expected_path = GoldenDir() / (GetParam() + ".expected");
  std::string text = ReadFile(input);
  std::string actual = RenderGolden(text);

  const char* update = std::getenv("TRIGD_UPDATE_GOLDEN");
  if (update != nullptr && std::string(update) == "1") {
    std::ofstream(expected_path, std::ios::binary) << actual;
    return;
  }
  ASSERT_TRUE(std::filesystem::exists(expected_path))
      << expected_path << " is missing; create it with TRIGD_UPDATE_GOLDEN=1 and review it";
  EXPECT_EQ(actual, ReadFile(expected_path)) << "golden file " << input;

  // The name says what the file is meant to show; a valid_ file that fails (or the reverse)
  // means the file no longer tests what it claims.
  bool valid = ErrorLines(ParseScheduleFile(text)).empty();
  EXPECT_EQ(valid, GetParam().rfind("valid_", 0) == 0) << GetParam();

  // Every valid golden document survives the canonical round trip unchanged.
  for (const ParsedSchedule& p : ParseScheduleFile(text)) {
    if (!p.ok()) continue;
    json canonical = ScheduleToJson(p.schedule);
    ParsedSchedule again = ParseSchedule(canonical);
    ASSERT_TRUE(again.ok()) << ::testing::PrintToString(ErrorLines(again));
    EXPECT_EQ(again.schedule, p.schedule);
    EXPECT_EQ(ScheduleToJson(again.schedule), canonical);
  }
}

INSTANTIATE_TEST_SUITE_P(Schedules, GoldenScheduleTest, ::testing::ValuesIn(GoldenCases()),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           std::string name = info.param;
                           for (char& c : name) {
                             if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
                           }
                           return name;
                         });

TEST(GoldenScheduleFolderTest, HoldsEnoughCasesAndNoStrayExpectedFiles) {
  std::vector<std::string> cases = GoldenCases();
  EXPECT_GE(cases.size(), 45u);
  for (const auto& entry : std::filesystem::directory_iterator(GoldenDir())) {
    if (entry.path().extension() != ".expected") continue;
    EXPECT_TRUE(std::filesystem::exists(GoldenDir() / (entry.path().stem().string() + ".json")))
        << entry.path() << " has no .json";
  }
}

// ---------------------------------------------------------------------------------------------
// The schedules users copy from tools/examples must stay valid.

std::vector<std::filesystem::path> ExampleFiles() {
  std::vector<std::filesystem::path> files;
  std::filesystem::path dir = std::filesystem::path(TRIGD_SOURCE_DIR) / "tools/examples";
  for (const auto& entry : std::filesystem::recursive_directory_iterator(dir)) {
    if (entry.path().extension() == ".json") files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  return files;
}

Schedule ParseExample(const std::string& relative) {
  std::vector<ParsedSchedule> parsed =
      ParseScheduleFile(ReadFile(std::filesystem::path(TRIGD_SOURCE_DIR) / "tools/examples" / relative));
  EXPECT_EQ(parsed.size(), 1u) << relative;
  if (parsed.empty()) return {};
  EXPECT_TRUE(parsed[0].ok()) << relative << ": " << ::testing::PrintToString(ErrorLines(parsed[0]));
  return parsed[0].schedule;
}

TEST(ScheduleExamplesTest, EveryExampleScheduleIsValid) {
  std::vector<std::filesystem::path> files = ExampleFiles();
  EXPECT_GE(files.size(), 6u);
  for (const std::filesystem::path& file : files) {
    std::vector<ParsedSchedule> parsed = ParseScheduleFile(ReadFile(file));
    EXPECT_FALSE(parsed.empty()) << file;
    EXPECT_EQ(ErrorLines(parsed), std::vector<std::string>{}) << file;
  }
}

TEST(ScheduleExamplesTest, NightlyFeaturesFiresAtFiveBerlinTimeCatchingUpTheLatest) {
  Schedule s = ParseExample("nightly-features.json");
  ASSERT_EQ(s.trigger.kind, TriggerKind::kTime);
  EXPECT_EQ(s.trigger.time.cron, "0 5 * * *");
  EXPECT_EQ(s.trigger.time.timezone, "Europe/Berlin");
  EXPECT_EQ(s.trigger.time.catchup, CatchupPolicy::kLatest);
}

TEST(ScheduleExamplesTest, DagExampleChainsThreeProgramsThatDiscardOnUpstreamFailure) {
  Schedule a = ParseExample("dag/a-extract.json");
  Schedule b = ParseExample("dag/b-transform.json");
  Schedule c = ParseExample("dag/c-load.json");
  EXPECT_EQ(a.trigger.kind, TriggerKind::kPartition);
  for (const auto& [upstream, downstream] : {std::pair{&a, &b}, std::pair{&b, &c}}) {
    ASSERT_EQ(downstream->trigger.kind, TriggerKind::kProgram) << downstream->name;
    EXPECT_EQ(downstream->trigger.program.program, upstream->program.name) << downstream->name;
    EXPECT_EQ(downstream->trigger.program.on_upstream_failure, UpstreamFailurePolicy::kDiscard);
  }
}

TEST(ScheduleExamplesTest, SalesRollupIsTheSpecExample) {
  Schedule s = ParseExample("sales-rollup.json");
  EXPECT_EQ(s.id().value(), "default/sales-rollup");
  EXPECT_EQ(s.program.target, "spark");
  ASSERT_EQ(s.trigger.children.size(), 2u);
  EXPECT_EQ(s.constraints.time_window->start_minute, 22 * 60);
  EXPECT_EQ(s.retry.max_attempts, 3);
}

// ---------------------------------------------------------------------------------------------
// Focused cases.

TEST(ScheduleParserTest, MessagesNamePathAndReasonAsDocumented) {
  json cron = Base();
  cron["trigger"] = {{"time", {{"cron", "0 25 * * *"}}}};
  EXPECT_EQ(ErrorLines(ParseSchedule(cron)),
            std::vector<std::string>{"trigger.time.cron: field 2 (hour) out of range: 25"});
  // A cron that never fires is refused, and an `every` under a second too (it would launch
  // about 10 times a second: due times are looked for every 100 ms).
  cron["trigger"] = {{"time", {{"cron", "0 0 30 2 *"}}}};
  EXPECT_EQ(ErrorLines(ParseSchedule(cron)),
            std::vector<std::string>{"trigger.time.cron: never fires: no date matches \"0 0 30 2 *\""});
  cron["trigger"] = {{"time", {{"cron", "0 0 29 2 *"}}}};  // leap years only: fires
  EXPECT_TRUE(ParseSchedule(cron).ok());
  cron["trigger"] = {{"time", {{"every", "100ms"}}}};
  EXPECT_EQ(ErrorLines(ParseSchedule(cron)),
            std::vector<std::string>{"trigger.time.every: must be at least 1s, got 100ms"});
  cron["trigger"] = {{"time", {{"every", "1s"}}}};
  EXPECT_TRUE(ParseSchedule(cron).ok());
  // "1ms" (for "1m") would declare every run lost while its worker heartbeats.
  json heartbeat = Base();
  heartbeat["heartbeat_timeout"] = "1ms";
  EXPECT_EQ(ErrorLines(ParseSchedule(heartbeat)),
            std::vector<std::string>{"heartbeat_timeout: must be at least 1s, got 1ms"});
  heartbeat["heartbeat_timeout"] = "1s";
  EXPECT_TRUE(ParseSchedule(heartbeat).ok());

  json zone = Base();
  zone["constraints"] = {{"time_window", {{"start", "22:00"}, {"end", "06:00"}, {"timezone", "Europe/Berln"}}}};
  EXPECT_EQ(ErrorLines(ParseSchedule(zone)),
            std::vector<std::string>{"constraints.time_window.timezone: unknown time zone \"Europe/Berln\""});

  json typo = Base();
  typo["constraints"] = {{"max_concurent_runs", 1}};
  EXPECT_EQ(ErrorLines(ParseSchedule(typo)),
            std::vector<std::string>{"constraints.max_concurent_runs: unknown field (did you "
                                     "mean \"max_concurrent_runs\"?)"});

  json priority = Base();
  priority["priority"] = "high";
  EXPECT_EQ(ErrorLines(ParseSchedule(priority)), std::vector<std::string>{"priority: expected an integer, got string"});

  json program = Base();
  program["program"] = json::object();
  EXPECT_EQ(ErrorLines(ParseSchedule(program)), std::vector<std::string>{"program.name: required"});

  json status = Base();
  status["trigger"] = {
      {"all",
       {{{"partition", {{"dataset", "sales.raw"}}}}, {{"program", {{"name", "sales.ingest"}, {"status", {"done"}}}}}}}};
  EXPECT_EQ(ErrorLines(ParseSchedule(status)),
            std::vector<std::string>{"trigger.all[1].program.status: unknown status \"done\" "
                                     "(expected started, heartbeat, succeeded, failed or killed)"});
}

TEST(ScheduleParserTest, DefaultsFillEveryOmittedField) {
  json doc = Base();
  doc["trigger"] = {{"all", {{{"program", {{"name", "up"}}}}, {{"time", {{"every", "1h"}}}}}}};
  ParsedSchedule parsed = ParseSchedule(doc);
  ASSERT_TRUE(parsed.ok()) << ::testing::PrintToString(ErrorLines(parsed));
  const Schedule& s = parsed.schedule;
  EXPECT_EQ(s.namespace_name, "default");
  EXPECT_EQ(s.id().value(), "default/s");
  EXPECT_EQ(s.program.args, json::object());
  EXPECT_EQ(s.program.target, "default");
  EXPECT_EQ(s.constraints, Constraints{});
  EXPECT_FALSE(s.timeout.has_value());
  EXPECT_EQ(s.priority, 0);
  EXPECT_EQ(s.retry, RetryPolicy{});
  EXPECT_EQ(s.heartbeat_timeout, std::chrono::minutes(5));
  EXPECT_TRUE(s.enabled);
  ASSERT_EQ(s.trigger.children.size(), 2u);
  const ProgramTrigger& program = s.trigger.children[0].program;
  EXPECT_EQ(program.statuses, std::vector<ProgramStatus>{ProgramStatus::kSucceeded});
  EXPECT_EQ(program.count, 1);
  EXPECT_EQ(program.on_upstream_failure, UpstreamFailurePolicy::kWait);
  const TimeTrigger& time = s.trigger.children[1].time;
  EXPECT_EQ(time.timezone, "UTC");
  EXPECT_EQ(time.catchup, CatchupPolicy::kLatest);
  EXPECT_EQ(time.catchup_window, std::chrono::hours(24));
  EXPECT_FALSE(time.cron.has_value());
  EXPECT_EQ(time.every, std::chrono::hours(1));
}

TEST(ScheduleParserTest, FileTextReportsEveryProblemInDocumentOrder) {
  ParsedSchedule parsed = ParseText(R"({
    "trigger": {"partition": {"dataset": "d", "count": 0}},
    "priority": "high",
    "program": {"target": "UP"},
    "enabled": "no"
  })");
  EXPECT_EQ(ErrorLines(parsed), (std::vector<std::string>{
                                    "trigger.partition.count: must be at least 1, got 0",
                                    "priority: expected an integer, got string",
                                    "program.target: invalid target \"UP\": use 1 to 128 lowercase letters, digits, "
                                    "'.', '_' or '-'",
                                    "program.name: required",
                                    "enabled: expected a boolean, got string",
                                    "name: required",
                                }));
}

TEST(ScheduleParserTest, JsonValueHasNoDocumentOrderSoFieldsFollowSpecOrder) {
  // nlohmann::json sorts keys; errors then follow SPEC §4's field order, unknown fields last.
  json doc = {{"enabled", "no"}, {"aaa", 1}, {"priority", "high"}, {"name", "bad name"}};
  EXPECT_EQ(ErrorLines(ParseSchedule(doc)),
            (std::vector<std::string>{
                "name: invalid name \"bad name\": use 1 to 128 letters, digits, '.', '_' or '-'",
                "priority: expected an integer, got string",
                "enabled: expected a boolean, got string",
                "aaa: unknown field (expected one of: namespace, name, program, trigger, "
                "constraints, timeout, priority, retry, heartbeat_timeout, enabled, run_timeout, active, on_update)",
                "program: required",
                "trigger: required",
            }));
}

TEST(ScheduleParserTest, UnknownFieldSuggestsOnlyWithinTwoEdits) {
  json doc = Base();
  doc["nmae"] = "x";                    // transposition: one edit
  doc["retry"] = {{"max_atempts", 2}};  // one deletion
  doc["timeout"] = {{"after", "1h"}, {"acton", "run"}};
  doc["heartbeat"] = "1m";  // eight edits from heartbeat_timeout
  EXPECT_EQ(ErrorLines(ParseSchedule(doc)),
            (std::vector<std::string>{
                "timeout.acton: unknown field (did you mean \"action\"?)",
                "retry.max_atempts: unknown field (did you mean \"max_attempts\"?)",
                "heartbeat: unknown field (expected one of: namespace, name, program, trigger, "
                "constraints, timeout, priority, retry, heartbeat_timeout, enabled, run_timeout, active, on_update)",
                "nmae: unknown field (did you mean \"name\"?)",
            }));
}

TEST(ScheduleParserTest, ShortUnknownKeyIsNotCorrectedIntoAnyField) {
  json doc = Base();
  doc["constraints"] = {{"x", 1}};
  EXPECT_EQ(ErrorLines(ParseSchedule(doc)),
            std::vector<std::string>{"constraints.x: unknown field (expected one of: max_concurrent_runs, "
                                     "concurrency_group, delay, time_window, min_since_last_run, max_runs_per)"});
}

TEST(ScheduleParserTest, StatusGivenAsSingleStringIsRefusedWithTheArrayForm) {
  json doc = Base();
  doc["trigger"] = {{"program", {{"name", "up"}, {"status", "failed"}}}};
  EXPECT_EQ(ErrorLines(ParseSchedule(doc)),
            std::vector<std::string>{"trigger.program.status: expected an array of statuses, "
                                     "e.g. [\"failed\"], got string"});
}

TEST(ScheduleParserTest, StatusesKeepTheirOrder) {
  json doc = Base();
  doc["trigger"] = {{"program", {{"name", "up"}, {"status", {"killed", "started", "failed"}}}}};
  ParsedSchedule parsed = ParseSchedule(doc);
  ASSERT_TRUE(parsed.ok());
  EXPECT_EQ(parsed.schedule.trigger.program.statuses,
            (std::vector<ProgramStatus>{ProgramStatus::kKilled, ProgramStatus::kStarted, ProgramStatus::kFailed}));
}

TEST(ScheduleParserTest, SyntaxErrorNamesLineColumnAndByte) {
  std::vector<ParsedSchedule> parsed = ParseScheduleFile("{\n  \"name\": \"x\",\n}");
  ASSERT_EQ(parsed.size(), 1u);
  ASSERT_EQ(parsed[0].errors.size(), 1u);
  EXPECT_EQ(parsed[0].errors[0].path, "");
  EXPECT_EQ(parsed[0].errors[0].reason,
            "invalid JSON at line 3, column 1 (byte 18): syntax error while parsing object key - "
            "unexpected '}'; expected string literal");

  std::vector<ParsedSchedule> empty = ParseScheduleFile("");
  ASSERT_EQ(empty.size(), 1u);
  EXPECT_FALSE(empty[0].ok());
}

TEST(ScheduleParserTest, ArrayErrorsArePrefixedWithTheDocumentIndex) {
  std::vector<ParsedSchedule> parsed = ParseScheduleFile(R"([
    {"name": "a", "program": {"name": "p"}, "trigger": {"partition": {"dataset": "d"}}},
    {"name": "b", "program": {"name": "p"}},
    7
  ])");
  ASSERT_EQ(parsed.size(), 3u);
  EXPECT_TRUE(parsed[0].ok());
  EXPECT_EQ(parsed[0].schedule.name, "a");
  EXPECT_EQ(ErrorLines(parsed[1]), std::vector<std::string>{"[1].trigger: required"});
  EXPECT_EQ(ErrorLines(parsed[2]), std::vector<std::string>{"[2]: expected a schedule object, got number"});
}

TEST(ScheduleParserTest, EmptyArrayHoldsNoSchedules) { EXPECT_TRUE(ParseScheduleFile(" [ ] ").empty()); }

TEST(ScheduleParserTest, TopLevelScalarIsRefused) {
  EXPECT_EQ(ErrorLines(ParseScheduleFile("\"x\"")),
            std::vector<std::string>{"expected a schedule object or an array of them, got string"});
}

TEST(ScheduleParserTest, RepeatedKeyIsReportedWithItsPathInsteadOfLastOneWinning) {
  std::vector<ParsedSchedule> parsed = ParseScheduleFile(R"([
    {"name": "a", "program": {"name": "p"}, "trigger": {"partition": {"dataset": "d"}}},
    {"name": "b", "program": {"name": "p"},
     "trigger": {"any": [{"program": {"name": "x"}},
                         {"partition": {"dataset": "d", "count": 1, "count": 2}}]},
     "enabled": true, "enabled": false}
  ])");
  ASSERT_EQ(parsed.size(), 2u);
  EXPECT_TRUE(parsed[0].ok());
  EXPECT_EQ(ErrorLines(parsed[1]), (std::vector<std::string>{"[1].trigger.any[1].partition.count: duplicate field",
                                                             "[1].enabled: duplicate field"}));
}

TEST(ScheduleParserTest, SameScheduleTwiceInOneFileIsRefused) {
  std::vector<ParsedSchedule> parsed = ParseScheduleFile(R"([
    {"name": "a", "program": {"name": "p"}, "trigger": {"partition": {"dataset": "d"}}},
    {"namespace": "other", "name": "a", "program": {"name": "p"},
     "trigger": {"partition": {"dataset": "d"}}},
    {"namespace": "default", "name": "a", "program": {"name": "q"},
     "trigger": {"partition": {"dataset": "e"}}}
  ])");
  ASSERT_EQ(parsed.size(), 3u);
  EXPECT_TRUE(parsed[0].ok());
  EXPECT_TRUE(parsed[1].ok());
  EXPECT_EQ(ErrorLines(parsed[2]), std::vector<std::string>{"[2].name: schedule \"default/a\" also appears at [0]"});
}

TEST(ScheduleParserTest, BackoffAboveDefaultCapRaisesTheCapWhenMaxBackoffIsOmitted) {
  json doc = Base();
  doc["retry"] = {{"max_attempts", 4}, {"backoff", "2h"}};
  ParsedSchedule parsed = ParseSchedule(doc);
  ASSERT_TRUE(parsed.ok());
  EXPECT_EQ(parsed.schedule.retry.backoff, std::chrono::hours(2));
  EXPECT_EQ(parsed.schedule.retry.max_backoff, std::chrono::hours(2));

  doc["retry"]["max_backoff"] = "1h";
  EXPECT_EQ(ErrorLines(ParseSchedule(doc)),
            std::vector<std::string>{"retry.max_backoff: must be at least backoff (2h), got 1h"});
}

TEST(ScheduleParserTest, MaxBackoffEqualToBackoffIsAccepted) {
  json doc = Base();
  doc["retry"] = {{"backoff", "5m"}, {"max_backoff", "300s"}};
  EXPECT_TRUE(ParseSchedule(doc).ok());
}

TEST(ScheduleParserTest, HugeDurationIsRefusedWithoutOverflowing) {
  json doc = Base();
  doc["heartbeat_timeout"] = "999999999999d999999999999d";
  EXPECT_EQ(ErrorLines(ParseSchedule(doc)),
            std::vector<std::string>{"heartbeat_timeout: duration "
                                     "\"999999999999d999999999999d\" is longer than the "
                                     "maximum of 3650d"});
  doc["heartbeat_timeout"] = "3650d";
  EXPECT_TRUE(ParseSchedule(doc).ok());
}

// Each integer field has one range (model/schedule.h), that of the column it is stored in:
// retry.max_attempts 2147483648, accepted, would fail every ingest transaction that reached the
// schedule on runs.max_attempts (integer), stalling all data partitions
// (docs/adr/0050-one-range-per-numeric-schedule-field.md).
TEST(ScheduleParserTest, IssueReproductionMaxAttemptsBeyondItsColumnIsRefused) {
  std::vector<ParsedSchedule> parsed =
      ParseScheduleFile(R"({"name":"r","program":{"name":"x"},"trigger":{"partition":{"dataset":"x.ds"}},)"
                        R"("retry":{"max_attempts":2147483648,"backoff":"1m","max_backoff":"1h"}})");
  EXPECT_EQ(ErrorLines(parsed),
            std::vector<std::string>{"retry.max_attempts: must be at most 2147483647, got 2147483648"});
}

struct IntegerField {
  const char* path;  // as the parser names it
  IntegerRange range;
  json pointer_doc;  // Base() with the field set to null, to be filled
  std::string pointer;
};

std::vector<IntegerField> IntegerFields() {
  json group = Base();
  group["constraints"] = {{"concurrency_group", {{"name", "g"}, {"max", nullptr}}}};
  json runs_per = Base();
  runs_per["constraints"] = {{"max_runs_per", {{"count", nullptr}, {"period", "1h"}}}};
  json program = Base();
  program["trigger"] = {{"program", {{"name", "up"}, {"count", nullptr}}}};
  return {
      {"priority", kPriorityRange, Base(), "/priority"},
      {"retry.max_attempts", kMaxAttemptsRange, Base(), "/retry/max_attempts"},
      {"trigger.partition.count", kTriggerCountRange, Base(), "/trigger/partition/count"},
      {"trigger.partition.min_bytes", kMinBytesRange, Base(), "/trigger/partition/min_bytes"},
      {"trigger.program.count", kTriggerCountRange, program, "/trigger/program/count"},
      {"constraints.max_concurrent_runs", kConcurrencyRange, Base(), "/constraints/max_concurrent_runs"},
      {"constraints.concurrency_group.max", kConcurrencyRange, group, "/constraints/concurrency_group/max"},
      {"constraints.max_runs_per.count", kMaxRunsPerCountRange, runs_per, "/constraints/max_runs_per/count"},
  };
}

TEST(ScheduleParserTest, EveryIntegerFieldTakesItsRangeAndRefusesOneBeyondNamingFieldAndLimit) {
  for (const IntegerField& f : IntegerFields()) {
    for (int64_t value : {f.range.min, f.range.max}) {
      json doc = f.pointer_doc;
      doc[json::json_pointer(f.pointer)] = value;
      ParsedSchedule p = ParseText(doc.dump());
      EXPECT_TRUE(p.ok()) << f.path << " " << value << ": " << (p.errors.empty() ? "" : p.errors[0].ToString());
    }
    // One beyond each end; past int64 as unsigned when the range ends there.
    json above = f.pointer_doc;
    if (f.range.max == std::numeric_limits<int64_t>::max()) {
      above[json::json_pointer(f.pointer)] = static_cast<uint64_t>(f.range.max) + 1;
    } else {
      above[json::json_pointer(f.pointer)] = f.range.max + 1;
    }
    const std::string got_above = above[json::json_pointer(f.pointer)].dump();
    const std::string stated_max =
        f.range.min < 0 ? "must be between " + std::to_string(f.range.min) + " and " + std::to_string(f.range.max)
                        : "must be at most " + std::to_string(f.range.max);
    EXPECT_EQ(ErrorLines(ParseText(above.dump())),
              std::vector<std::string>{std::string(f.path) + ": " + stated_max + ", got " + got_above});
    json below = f.pointer_doc;
    below[json::json_pointer(f.pointer)] = f.range.min - 1;
    const std::string stated_min = f.range.min < 0 ? stated_max : "must be at least " + std::to_string(f.range.min);
    EXPECT_EQ(
        ErrorLines(ParseText(below.dump())),
        std::vector<std::string>{std::string(f.path) + ": " + stated_min + ", got " + std::to_string(f.range.min - 1)});
  }
}

TEST(ScheduleParserTest, IntegerRangesFitTheColumnsTheyAreStoredIn) {
  // int4 columns: jobs.priority, runs.max_attempts and runs.attempt, active_runs.
  for (IntegerRange r :
       {kPriorityRange, kMaxAttemptsRange, kTriggerCountRange, kConcurrencyRange, kMaxRunsPerCountRange}) {
    EXPECT_GE(r.min, std::numeric_limits<int32_t>::min());
    EXPECT_LE(r.max, std::numeric_limits<int32_t>::max());
  }
  EXPECT_EQ(kMaxAttemptsRange.max, 2147483647);
}

// A number beyond a double is valid JSON: said as out of range at its path, not as a JSON error.
TEST(ScheduleParserTest, NumberBeyondADoubleIsOutOfRangeAtItsPath) {
  EXPECT_EQ(ErrorLines(ParseText(R"({"name": "s", "program": {"name": "p"},
                                     "trigger": {"partition": {"dataset": "d", "min_bytes": 1e400}}})")),
            std::vector<std::string>{"trigger.partition.min_bytes: number 1e400 is out of range (beyond a double)"});
  EXPECT_EQ(ErrorLines(ParseScheduleFile(R"({"name": "s", "program": {"name": "p", "args": {"a": [0, 1, -1e999]}}})")),
            std::vector<std::string>{"program.args.a[2]: number -1e999 is out of range (beyond a double)"});
}

// nlohmann takes a NUL byte for the end of its input.
TEST(ScheduleParserTest, NulByteAfterTheDocumentIsRefused) {
  const std::string doc = Base().dump();
  EXPECT_EQ(ErrorLines(ParseScheduleFile(doc + std::string(1, '\0') + "garbage")),
            std::vector<std::string>{"invalid JSON at byte " + std::to_string(doc.size()) +
                                     ": a NUL byte (JSON text cannot contain one)"});
}

// "." and ".." read as paths and say nothing of what they name.
TEST(ScheduleParserTest, IdentifiersMadeOnlyOfDotsAreRefused) {
  for (const char* dots : {".", "..", "..."}) {
    json doc = Base();
    doc["name"] = dots;
    doc["namespace"] = dots;
    doc["program"] = {{"name", dots}, {"target", dots}};
    doc["constraints"] = {{"concurrency_group", {{"name", dots}}}};
    const std::string why = std::string(" \"") + dots + "\": must not be only dots";
    EXPECT_EQ(
        ErrorLines(ParseSchedule(doc)),
        (std::vector<std::string>{"namespace: invalid namespace" + why, "name: invalid name" + why,
                                  "program.name: invalid program name" + why, "program.target: invalid target" + why,
                                  "constraints.concurrency_group.name: invalid group name" + why}));
    EXPECT_EQ(CheckTarget(dots).message(), "invalid target" + why);
  }
  json doc = Base();
  doc["name"] = ".a.";
  EXPECT_TRUE(ParseSchedule(doc).ok());
}

TEST(ScheduleParserTest, SecondTimeTriggerIsRefusedBecauseTicksCannotTellThemApart) {
  json doc = Base();
  doc["trigger"] = {{"all", {{{"time", {{"cron", "0 5 * * *"}}}}, {{"any", {{{"time", {{"every", "1h"}}}}}}}}}};
  EXPECT_EQ(ErrorLines(ParseSchedule(doc)),
            std::vector<std::string>{"trigger.all[1].any[0].time: a schedule has at most one "
                                     "time trigger (the first is trigger.all[0].time)"});
}

json NestedAll(int levels) {
  json trigger = {{"partition", {{"dataset", "d"}}}};
  for (int i = 0; i < levels; ++i) trigger = {{"all", json::array({trigger})}};
  return trigger;
}

TEST(ScheduleParserTest, CompositesNestTo32LevelsAndNoDeeper) {
  json doc = Base();
  doc["trigger"] = NestedAll(31);  // 31 composites + the leaf = 32 levels
  ParsedSchedule parsed = ParseSchedule(doc);
  ASSERT_TRUE(parsed.ok()) << ::testing::PrintToString(ErrorLines(parsed));
  EXPECT_EQ(TriggerLeaves(parsed.schedule.trigger).size(), 1u);

  doc["trigger"] = NestedAll(32);
  std::vector<std::string> errors = ErrorLines(ParseSchedule(doc));
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_NE(errors[0].find(": triggers are nested more than 32 levels deep"), std::string::npos) << errors[0];
}

TEST(ScheduleParserTest, LeavesAreNumberedInDocumentOrder) {
  ParsedSchedule parsed = ParseText(R"({
    "name": "s", "program": {"name": "p"},
    "trigger": {"any": [
      {"all": [{"partition": {"dataset": "first"}}, {"program": {"name": "second"}}]},
      {"partition": {"dataset": "third"}}
    ]}
  })");
  ASSERT_TRUE(parsed.ok());
  std::vector<const Trigger*> leaves = TriggerLeaves(parsed.schedule.trigger);
  ASSERT_EQ(leaves.size(), 3u);
  EXPECT_EQ(leaves[0]->partition.dataset, "first");
  EXPECT_EQ(leaves[1]->program.program, "second");
  EXPECT_EQ(leaves[2]->partition.dataset, "third");
}

TEST(ScheduleParserTest, IntegralNumbersWrittenAsFloatsAreIntegers) {
  json doc = Base();
  doc["priority"] = 7.0;
  ParsedSchedule parsed = ParseSchedule(doc);
  ASSERT_TRUE(parsed.ok());
  EXPECT_EQ(parsed.schedule.priority, 7);

  doc["priority"] = 7.5;
  EXPECT_EQ(ErrorLines(ParseSchedule(doc)), std::vector<std::string>{"priority: expected an integer, got number 7.5"});
}

TEST(ScheduleParserTest, PartitionCountStaysUnsetWhenOnlyBytesAreGiven) {
  json doc = Base();
  doc["trigger"]["partition"]["min_bytes"] = 1024;
  ParsedSchedule parsed = ParseSchedule(doc);
  ASSERT_TRUE(parsed.ok());
  EXPECT_FALSE(parsed.schedule.trigger.partition.count.has_value());
  EXPECT_EQ(parsed.schedule.trigger.partition.min_bytes, 1024);
  EXPECT_FALSE(ScheduleToJson(parsed.schedule)["trigger"]["partition"].contains("count"));
}

TEST(ScheduleParserTest, LongValuesAreCutInMessages) {
  json doc = Base();
  doc["name"] = std::string(300, 'x') + " y";
  std::vector<std::string> errors = ErrorLines(ParseSchedule(doc));
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0],
            "name: invalid name \"" + std::string(80, 'x') + "...\": use 1 to 128 letters, digits, '.', '_' or '-'");
}

TEST(ScheduleParserTest, WindowAcrossMidnightKeepsEndBeforeStart) {
  json doc = Base();
  doc["constraints"] = {{"time_window", {{"start", "22:00"}, {"end", "06:00"}}}};
  ParsedSchedule parsed = ParseSchedule(doc);
  ASSERT_TRUE(parsed.ok());
  const TimeWindow& window = *parsed.schedule.constraints.time_window;
  EXPECT_EQ(window.start_minute, 22 * 60);
  EXPECT_EQ(window.end_minute, 6 * 60);
  EXPECT_EQ(window.timezone, "UTC");
  EXPECT_EQ(window.on_unmet, OnUnmet::kWait);
}

// ---------------------------------------------------------------------------------------------
// Round-trip property: any valid schedule survives ScheduleToJson -> text -> ParseScheduleFile.

class RandomScheduleMaker {
 public:
  explicit RandomScheduleMaker(uint64_t seed) : rng_(seed) {}

  Schedule Make() {
    Schedule s;
    if (Chance()) s.namespace_name = Identifier(false);
    s.name = Identifier(false);
    s.program.name = Identifier(false);
    if (Chance()) s.program.args = {{"mode", Identifier(true)}, {"n", Int(0, 100)}};
    if (Chance()) s.program.target = Identifier(true);
    has_time_leaf_ = false;
    s.trigger = MakeTrigger(0);
    Constraints& c = s.constraints;
    if (Chance()) c.max_concurrent_runs = Int(1, 50);
    if (Chance()) {
      c.concurrency_group = ConcurrencyGroup{Identifier(false), Int(1, 9), OnUnmetValue()};
    }
    if (Chance()) c.delay = Millis(Int(0, 86'400'000));
    if (Chance()) {
      int start = static_cast<int>(Int(0, 1439));
      int end = static_cast<int>((start + Int(1, 1439)) % 1440);
      c.time_window = TimeWindow{start, end, Zone(), OnUnmetValue()};
    }
    if (Chance()) c.min_since_last_run = MinSinceLastRun{Duration(), OnUnmetValue()};
    if (Chance()) c.max_runs_per = MaxRunsPer{Int(1, 100), Duration(), OnUnmetValue()};
    if (Chance()) {
      s.timeout = Timeout{Duration(), Chance() ? TimeoutAction::kRun : TimeoutAction::kDiscard};
    }
    s.priority = Int(-1000, 1000);
    s.retry.max_attempts = Int(1, 10);
    s.retry.backoff = Duration();
    s.retry.max_backoff = s.retry.backoff + Millis(Int(0, 1'000'000'000));
    s.heartbeat_timeout = std::max<Millis>(Duration(), std::chrono::seconds(1));  // at least 1s
    s.enabled = Chance();
    return s;
  }

 private:
  Trigger MakeTrigger(int depth) {
    Trigger t;
    int64_t kind = Int(depth < 3 ? 0 : 2, 4);
    if (kind <= 1) {
      t.kind = kind == 0 ? TriggerKind::kAll : TriggerKind::kAny;
      int64_t n = Int(1, 3);
      for (int64_t i = 0; i < n; ++i) t.children.push_back(MakeTrigger(depth + 1));
    } else if (kind == 2 && !has_time_leaf_) {
      has_time_leaf_ = true;
      t.kind = TriggerKind::kTime;
      static const char* kCrons[] = {"0 5 * * *", "*/15 * * * *", "30 2 1 * *", "0 0 * * 1-5",
                                     "5,35 9-17 * jan-jun mon"};
      if (Chance()) {
        t.time.cron = kCrons[Int(0, 4)];
      } else {
        t.time.every = std::max<Millis>(Duration(), std::chrono::seconds(1));  // the parser's minimum
      }
      t.time.timezone = Zone();
      t.time.catchup = static_cast<CatchupPolicy>(Int(0, 2));
      t.time.catchup_window = Duration();
    } else if (kind == 3 || kind == 2) {
      t.kind = TriggerKind::kPartition;
      t.partition.dataset = Identifier(false) + "/" + Identifier(false);
      if (Chance()) t.partition.count = Int(1, 1000);
      if (Chance()) t.partition.min_bytes = Int(1, int64_t{1} << 40);
    } else {
      t.kind = TriggerKind::kProgram;
      t.program.program = Identifier(false);
      std::vector<ProgramStatus> all = {ProgramStatus::kStarted, ProgramStatus::kHeartbeat, ProgramStatus::kSucceeded,
                                        ProgramStatus::kFailed, ProgramStatus::kKilled};
      std::shuffle(all.begin(), all.end(), rng_);
      all.resize(static_cast<size_t>(Int(1, 5)));
      t.program.statuses = all;
      t.program.count = Int(1, 20);
      t.program.on_upstream_failure = Chance() ? UpstreamFailurePolicy::kDiscard : UpstreamFailurePolicy::kWait;
    }
    return t;
  }

  bool Chance() { return Int(0, 1) == 1; }
  int64_t Int(int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng_); }
  // Mixes round values (which format as "4h") with odd ones (which format as "1500ms").
  Millis Duration() {
    static const int64_t kUnits[] = {1, 1000, 60'000, 3'600'000, 86'400'000};
    return Millis(Int(1, 1000) * kUnits[Int(0, 4)]);
  }
  OnUnmet OnUnmetValue() { return Chance() ? OnUnmet::kSkip : OnUnmet::kWait; }
  std::string Zone() {
    static const char* kZones[] = {"UTC", "Europe/Berlin", "America/New_York", "Asia/Kolkata", "Australia/Lord_Howe"};
    return kZones[Int(0, 4)];
  }
  std::string Identifier(bool lowercase_only) {
    static const std::string kAll = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-";
    static const std::string kLower = "abcdefghijklmnopqrstuvwxyz0123456789._-";
    const std::string& alphabet = lowercase_only ? kLower : kAll;
    std::string out(static_cast<size_t>(Int(1, 24)), ' ');
    for (char& c : out) c = alphabet[static_cast<size_t>(Int(0, alphabet.size() - 1))];
    if (out.find_first_not_of('.') == std::string::npos) out.back() = '_';  // only dots: refused
    return out;
  }

  std::mt19937_64 rng_;
  bool has_time_leaf_ = false;
};

TEST(ScheduleParserTest, CanonicalJsonRoundTripsRandomSchedules) {
  RandomScheduleMaker maker(20261122);
  for (int i = 0; i < 500; ++i) {
    Schedule s = maker.Make();
    json canonical = ScheduleToJson(s);
    ParsedSchedule parsed = ParseSchedule(canonical);
    ASSERT_TRUE(parsed.ok()) << canonical.dump() << "\n" << ::testing::PrintToString(ErrorLines(parsed));
    ASSERT_EQ(parsed.schedule, s) << canonical.dump();
    ParsedSchedule from_text = ParseText(canonical.dump(2));
    ASSERT_TRUE(from_text.ok()) << canonical.dump();
    ASSERT_EQ(from_text.schedule, s) << canonical.dump();
    ASSERT_EQ(ScheduleToJson(parsed.schedule), canonical);
  }
}

TEST(ScheduleParserTest, CanonicalFormWritesDefaultsAndShortestDurations) {
  json doc = Base();
  doc["heartbeat_timeout"] = "120s";
  doc["constraints"] = {{"delay", "1h30m"}};
  ParsedSchedule parsed = ParseSchedule(doc);
  ASSERT_TRUE(parsed.ok());
  json canonical = ScheduleToJson(parsed.schedule);
  EXPECT_EQ(canonical["heartbeat_timeout"], "2m");
  EXPECT_EQ(canonical["constraints"]["delay"], "90m");
  EXPECT_EQ(canonical["namespace"], "default");
  EXPECT_EQ(canonical["program"]["target"], "default");
  EXPECT_EQ(canonical["program"]["args"], json::object());
  EXPECT_EQ(canonical["retry"], (json{{"max_attempts", 1}, {"backoff", "1m"}, {"max_backoff", "1h"}}));
  EXPECT_EQ(canonical["enabled"], true);
  EXPECT_EQ(canonical["priority"], 0);
  EXPECT_FALSE(canonical.contains("timeout"));
}

}  // namespace
}  // namespace trigd
