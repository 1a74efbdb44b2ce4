// SPEC §11: custom events (envelope, routing through the reverse index with `where` values),
// the event leaf, the partition leaf's `match` glob, and templated program arguments.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/arg_template.h"
#include "core/envelope.h"
#include "core/event_router.h"
#include "core/glob.h"
#include "core/launch_request.h"
#include "core/schedule_index.h"
#include "core/schedule_parser.h"
#include "core/trigger_eval.h"

namespace trigd {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using json = nlohmann::json;

std::string Custom(const std::string& id, const std::string& name, const std::string& key, const std::string& attrs) {
  return R"({"id":")" + id + R"(","type":"custom","time":"2026-11-22T10:00:00Z","payload":{"name":")" + name +
         R"(","key":")" + key + R"(","attrs":)" + attrs + "}}";
}

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

std::vector<std::string> Keys(const Schedule& s) {
  std::vector<std::string> keys;
  for (const Trigger* leaf : TriggerLeaves(s.trigger)) keys.push_back(LeafEventKey(*leaf, s.id()));
  return keys;
}

TEST(CustomEnvelope, ParsesNameKeyAndAttrs) {
  Result<Event> e = ParseEnvelope(Custom("c-1", "model.published", "fraud-v7", R"({"stage":"prod"})"));
  ASSERT_TRUE(e.ok()) << e.status().message();
  EXPECT_EQ(e->type, EventType::kCustom);
  EXPECT_EQ(e->custom.name, "model.published");
  EXPECT_EQ(e->custom.key, "fraud-v7");
  EXPECT_EQ(e->EventKey(), "custom:model.published");
  EXPECT_EQ(e->payload["attrs"]["stage"], "prod");
}

TEST(CustomEnvelope, KeyDefaultsToTheEventId) {
  Result<Event> e =
      ParseEnvelope(R"({"id":"c-9","type":"custom","time":"2026-11-22T10:00:00Z","payload":{"name":"file.landed"}})");
  ASSERT_TRUE(e.ok()) << e.status().message();
  EXPECT_EQ(e->custom.key, "c-9");
}

TEST(CustomEnvelope, RefusesWithTheFieldAndReason) {
  DeadLetterReason reason{};
  Result<Event> no_name = ParseEnvelope(
      R"({"id":"c","type":"custom","time":"2026-11-22T10:00:00Z","payload":{"key":"k"}})", kMaxEventBytes, &reason);
  ASSERT_FALSE(no_name.ok());
  EXPECT_EQ(reason, DeadLetterReason::kMissingField);
  EXPECT_THAT(no_name.status().message(), HasSubstr("payload.name is required"));
  Result<Event> bad_attrs = ParseEnvelope(Custom("c", "n", "k", "[1]"), kMaxEventBytes, &reason);
  ASSERT_FALSE(bad_attrs.ok());
  EXPECT_EQ(reason, DeadLetterReason::kBadField);
  EXPECT_THAT(bad_attrs.status().message(), HasSubstr("payload.attrs: expected an object, got array"));
  Result<Event> bad_key =
      ParseEnvelope(R"({"id":"c","type":"custom","time":"2026-11-22T10:00:00Z","payload":{"name":"n","key":7}})",
                    kMaxEventBytes, &reason);
  ASSERT_FALSE(bad_key.ok());
  EXPECT_THAT(bad_key.status().message(), HasSubstr("payload.key: expected a string"));
}

TEST(Glob, StarQuestionAndLiterals) {
  EXPECT_TRUE(GlobMatch("dt=*/h=0?", "dt=2026-11-22/h=05"));
  EXPECT_FALSE(GlobMatch("dt=*/h=0?", "dt=2026-11-22/h=15"));
  EXPECT_FALSE(GlobMatch("dt=*/h=0?", "dt=2026-11-22/h=0"));
  EXPECT_TRUE(GlobMatch("*", ""));
  EXPECT_TRUE(GlobMatch("a*b*c", "a-b-x-c"));
  EXPECT_FALSE(GlobMatch("a*b*c", "a-b-x-d"));
  EXPECT_TRUE(GlobMatch("exact", "exact"));
  EXPECT_FALSE(GlobMatch("exact", "exactly"));
  // No exponential backtracking on a pattern of many stars against a long non-match.
  EXPECT_FALSE(GlobMatch("*a*a*a*a*a*a*a*a*a*a*b", std::string(10000, 'a')));
}

TEST(EventLeaf, ParsesWhereAndRoundTrips) {
  Schedule s = Parse(R"({"name":"promote","program":{"name":"deploy"},
    "trigger":{"event":{"name":"model.published","where":{"attrs.stage":"prod","attrs.region":{"in":["eu","us"]}},
                        "count":2}}})");
  ASSERT_EQ(s.trigger.kind, TriggerKind::kEvent);
  EXPECT_EQ(s.trigger.event.count, 2);
  ASSERT_EQ(s.trigger.event.where.size(), 2u);
  EXPECT_EQ(s.trigger.event.where[0].path, "attrs.region");  // sorted by path
  EXPECT_TRUE(s.trigger.event.where[0].in);
  EXPECT_THAT(Keys(s), ElementsAre(R"(custom:model.published?attrs.region=["eu","us"])"));
  ParsedSchedule again = ParseSchedule(ScheduleToJson(s));
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again.schedule, s);
}

TEST(EventLeaf, RefusesBadWhereWithItsPath) {
  EXPECT_THAT(
      Errors(R"({"name":"x","program":{"name":"p"},
    "trigger":{"event":{"name":"a?b","where":{"attrs..x":1,"attrs.y":[1],"attrs.z":{"in":[]},"attrs.w":{"in":[{}]}}}}})"),
      ElementsAre("trigger.event.name: invalid event name \"a?b\": must not contain \"?\"",
                  "trigger.event.where.attrs..x: invalid path \"attrs..x\": expected dotted field names such "
                  "as \"attrs.stage\"",
                  "trigger.event.where.attrs.y: expected a string, number, boolean or {\"in\": [...]}, got array",
                  "trigger.event.where.attrs.z.in: expected a non-empty array of JSON scalars",
                  "trigger.event.where.attrs.w.in[0]: expected a string, number or boolean, got object"));
  EXPECT_THAT(Errors(R"({"name":"x","program":{"name":"p"},"trigger":{"event":{"count":0}}})"),
              ElementsAre("trigger.event.count: must be at least 1, got 0", "trigger.event.name: required"));
}

TEST(EventLeaf, CountsDistinctKeysThatPassWhere) {
  Schedule s = Parse(R"({"name":"promote","program":{"name":"deploy"},
    "trigger":{"event":{"name":"model.published","where":{"attrs.stage":"prod","attrs.v":{"in":[1,2]}},"count":2}}})");
  TriggerState state = NewTriggerState(s.trigger);
  int id = 0;
  auto apply = [&](const std::string& key, const std::string& attrs, const std::string& name = "model.published") {
    Result<Event> e = ParseEnvelope(Custom("id-" + std::to_string(++id), name, key, attrs));
    EXPECT_TRUE(e.ok());
    return ApplyEvent(s.trigger, s.id(), *e, state).changed;
  };
  EXPECT_FALSE(apply("a", R"({"stage":"dev","v":1})"));        // where does not match
  EXPECT_FALSE(apply("a", R"({"stage":"prod","v":3})"));       // not in the list
  EXPECT_FALSE(apply("a", R"({"stage":"prod"})"));             // path missing
  EXPECT_FALSE(apply("a", R"({"stage":"prod","v":1})", "x"));  // another name
  EXPECT_TRUE(apply("a", R"({"stage":"prod","v":1.0})"));      // 1.0 == 1
  EXPECT_FALSE(apply("a", R"({"stage":"prod","v":2})"));       // same key again
  EXPECT_FALSE(IsComplete(s.trigger, state));
  EXPECT_TRUE(apply("b", R"({"stage":"prod","v":2})"));
  EXPECT_TRUE(IsComplete(s.trigger, state));
  EXPECT_EQ(DescribeProgress(s.trigger, state).at(0).detail, "2 of 2 distinct keys of model.published (where)");
}

TEST(PartitionLeaf, MatchCountsOnlyMatchingPartitions) {
  Schedule s = Parse(R"({"name":"hourly","program":{"name":"p"},
    "trigger":{"partition":{"dataset":"sales.raw","count":2,"match":"dt=*/h=0?"}}})");
  EXPECT_EQ(s.trigger.partition.match, "dt=*/h=0?");
  TriggerState state = NewTriggerState(s.trigger);
  Event e;
  e.type = EventType::kPartition;
  e.partition.dataset = "sales.raw";
  e.partition.partitions = {"dt=1/h=15", "dt=1/h=16"};
  EXPECT_FALSE(ApplyEvent(s.trigger, s.id(), e, state).changed);
  e.partition.partitions = {"dt=1/h=01", "dt=1/h=17", "dt=1/h=02"};
  EXPECT_TRUE(ApplyEvent(s.trigger, s.id(), e, state).changed);
  EXPECT_EQ(state.leaves[0].count, 2);
  EXPECT_TRUE(IsComplete(s.trigger, state));
  ParsedSchedule again = ParseSchedule(ScheduleToJson(s));
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again.schedule, s);
}

TEST(CustomIndex, RoutesByNameAndFirstWhereValue) {
  ScheduleIndex index;
  index.Put(1, {"custom:model.published"});
  index.Put(2, {R"(custom:model.published?attrs.stage=["prod"])"});
  index.Put(3, {R"(custom:model.published?attrs.stage=["dev","test"])", "partition:x"});
  index.Put(4, {R"(custom:other?attrs.stage=["prod"])"});
  index.Put(5, {R"(custom:model.published?attrs.n=[1])"});
  auto route = [&](const std::string& attrs) {
    std::string key;
    RoutedEvent r = RouteEvent(Custom("c", "model.published", "k", attrs), index, key);
    return std::vector<int64_t>(r.schedules.begin(), r.schedules.end());
  };
  EXPECT_THAT(route(R"({"stage":"prod"})"), ElementsAre(1, 2));
  EXPECT_THAT(route(R"({"stage":"test"})"), ElementsAre(1, 3));
  EXPECT_THAT(route(R"({"stage":"prod","n":1.0})"), ElementsAre(1, 2, 5));
  EXPECT_THAT(route(R"({"stage":{"nested":1}})"), ElementsAre(1));
  // A replaced schedule's paths and values are counted down; a removed one is gone.
  index.Put(2, {R"(custom:model.published?attrs.tier=["gold"])"});
  EXPECT_THAT(route(R"({"stage":"prod","tier":"gold"})"), ElementsAre(1, 2));
  index.Remove(1);
  index.Remove(2);
  EXPECT_THAT(route(R"({"stage":"prod","tier":"gold"})"), IsEmpty());
  std::string key;
  EXPECT_EQ(RouteEvent(Custom("c", "nobody", "k", "{}"), index, key).kind, RoutedEvent::Kind::kNoMatch);
}

TEST(ArgTemplate, RefusesUnknownPlaceholdersWithTheirPath) {
  EXPECT_THAT(
      Errors(
          R"({"name":"x","program":{"name":"p","args":{"cmd":"run {{partition}}","files":["ok {{keys}}","{{ run_id"]}},
    "trigger":{"partition":{"dataset":"d"}}})"),
      ElementsAre(HasSubstr("program.args.cmd: unknown placeholder \"{{partition}}\" (expected one of: run_id"),
                  "program.args.files[1]: unclosed placeholder at character 0 (\"{{\" without \"}}\")"));
  // fire_time without a time leaf is allowed (it renders empty).
  Parse(R"({"name":"x","program":{"name":"p","args":{"cmd":"{{fire_time}} {{ partitions }}"}},
    "trigger":{"partition":{"dataset":"d"}}})");
}

TEST(ArgTemplate, RendersFromTheTriggeringEvents) {
  Schedule s = Parse(R"({"namespace":"ns","name":"x","program":{"name":"p","args":{
      "cmd":"load {{partitions}} of {{datasets}}","n":3,"deep":{"list":["{{run_id}}/{{attempt}}","{{keys}}"]},
      "when":"{{fire_time}} {{fire_date}} {{schedule}}"}},
    "trigger":{"all":[{"partition":{"dataset":"b"}},{"time":{"cron":"0 23 * * *","timezone":"Europe/Berlin"}}]}})");
  EXPECT_TRUE(HasArgTemplates(s.program.args));
  EXPECT_FALSE(HasArgTemplates(json{{"cmd", "echo {not a placeholder}"}}));
  json triggered_by = json::parse(R"([
    {"id":"1","type":"partition","payload":{"dataset":"b","partitions":["h=2","h=1"]}},
    {"id":"2","type":"partition","payload":{"dataset":"a","partitions":["h=1"]}},
    {"id":"3","type":"custom","payload":{"name":"n","key":"k2"}},
    {"id":"4","type":"custom","payload":{"name":"n","key":"k1"}},
    {"id":"5","type":"tick","payload":{"schedule":"ns/x","fire_time":"2026-11-22T23:30:00Z"}}])");
  json rendered = RenderArgs(s.program.args, JobTemplateValues(s, "run-1", triggered_by));
  EXPECT_EQ(rendered["cmd"], "load h=1 h=2 of a b");
  EXPECT_EQ(rendered["n"], 3);
  EXPECT_EQ(rendered["deep"]["list"], json::array({"run-1/1", "k1 k2"}));
  // 23:30 UTC is the next day in Berlin.
  EXPECT_EQ(rendered["when"], "2026-11-22T23:30:00Z 2026-11-23 ns/x");
  // Without a tick, fire_time and fire_date render empty.
  EXPECT_EQ(RenderArgs(json{{"w", "[{{fire_time}}]"}}, JobTemplateValues(s, "r", json::array()))["w"], "[]");
  // The stored schedule keeps the template.
  EXPECT_EQ(s.program.args["cmd"], "load {{partitions}} of {{datasets}}");
}

TEST(ArgTemplate, RenderProgramGivesTheRequestsProgramAndPlaceholders) {
  Schedule s = Parse(
      R"({"namespace":"ns","name":"x","program":{"name":"p","args":{"command":"echo {{partitions}} in {{lineage}}"},
    "target":"spark"},"trigger":{"partition":{"dataset":"d"}}})");
  RenderedProgram r = RenderProgram(
      s, "run-7", "lin-3", R"([{"id":"1","type":"partition","payload":{"dataset":"d","partitions":["b","a"]}}])");
  EXPECT_EQ(json::parse(r.program_json),
            json::parse(R"({"name":"p","args":{"command":"echo 'a' 'b' in 'lin-3'"},"target":"spark"})"));
  json placeholders = json::parse(r.placeholders_json);
  EXPECT_EQ(placeholders["partitions"], "a b");
  EXPECT_EQ(placeholders["run_id"], "run-7");
  EXPECT_EQ(placeholders["lineage"], "lin-3");
  EXPECT_EQ(placeholders["attempt"], "1");
  EXPECT_EQ(placeholders["fire_time"], "");
  // The request carries the values in front of its other fields.
  LaunchRequest req{r.program_json, "run-7", "ns/x", 1, "[]", false, r.placeholders_json};
  EXPECT_EQ(json::parse(LaunchRequestTemplate(req))["placeholders"]["datasets"], "d");
  req.placeholders_json.clear();
  EXPECT_FALSE(json::parse(LaunchRequestTemplate(req)).contains("placeholders"));
}

}  // namespace
}  // namespace trigd
