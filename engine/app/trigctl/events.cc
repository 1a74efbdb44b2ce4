// trigctl events emit partition | program | tick | custom: one event, validated as trigd validates it,
// produced to its topic.
#include <algorithm>
#include <cstdio>
#include <iostream>
#include <memory>
#include <random>

#include "app/trigctl/context.h"
#include "common/json_reader.h"
#include "common/time.h"
#include "common/topic_names.h"
#include "core/envelope.h"
#include "core/envelope_time.h"
#include "core/schedule_parser.h"
#include "log/kafka.h"
#include "log/topics.h"
#include "store/admin.h"

namespace trigctl {
namespace {

// An envelope of `type` with a fresh id and the time now; the payload is the caller's.
json NewEvent(const std::string& type) {
  static std::mt19937_64 rng(std::random_device{}());
  char id[40];
  std::snprintf(id, sizeof id, "cli-%016llx", static_cast<unsigned long long>(rng()));
  return {{"id", id}, {"type", type}, {"time", trigd::FormatTime(trigd::SystemClock::Get().Now())}};
}

// Validates `e` as trigd would and produces it to `topic` with `key`.
int Send(const Context& ctx, const json& e, const std::string& topic, const std::string& key) {
  // The same validation trigd applies: refuse here what trigd would dead-letter (the reason's
  // dead-letter code, "bad_field: ", is for the dead-letter topic, not for a person).
  trigd::DeadLetterReason reason{};
  if (auto parsed = trigd::ParseEnvelope(e.dump(), trigd::kMaxEventBytes, &reason); !parsed.ok()) {
    std::string why = parsed.status().message();
    const std::string code = std::string(trigd::DeadLetterReasonName(reason)) + ": ";
    if (why.rfind(code, 0) == 0) why.erase(0, code.size());
    return Refuse("events emit", why);
  }
  // The topic is looked up first: produced to a topic that does not exist (a wrong
  // --topic-prefix, or topics not created), a message waited 10 s for a delivery report that
  // never came and read as Kafka unreachable.
  auto missing = trigd::MissingTopics(ctx.config.kafka, {topic});
  if (!missing.ok()) return Fail(missing.status(), "events emit");
  if (!missing->empty()) return Refuse("events emit", trigd::NoSuchTopics(*missing, ctx.config.kafka));
  auto producer = trigd::Producer::Create(ctx.config.kafka);
  if (!producer.ok()) return Fail(producer.status(), "events emit");
  auto ok = (*producer)->ProduceAndWait({{topic, key, e.dump()}}, 10000);
  if (!ok[0]) {
    // The delivery report's reason (a topic deleted since the check above reads as unknown).
    std::cerr << "trigctl events emit: not delivered to " << topic << " at " << ctx.config.kafka.bootstrap << ": "
              << (*producer)->LastError() << "\n";
    return 2;
  }
  std::cout << (ctx.as_json ? e.dump() : "emitted " + e["id"].get<std::string>() + " on " + topic + ": " + e.dump())
            << "\n";
  return 0;
}

struct EmitFlags {
  std::string dataset, program, status, schedule;
  std::vector<std::string> partitions;
  std::optional<std::string> bytes, run_id, attempt, fire_time;
  std::string name;
  std::optional<std::string> key, attrs;
};

// A custom event (SPEC §11) on the data topic, keyed by its name.
int EmitCustom(const Context& ctx, const EmitFlags& f) {
  if (f.name.empty()) return ctx.Usage("needs NAME (what happened, e.g. model.published)");
  json e = NewEvent("custom");
  e["payload"] = {{"name", f.name}};
  if (f.key) e["payload"]["key"] = *f.key;
  if (f.attrs) {
    trigd::Result<json> read = trigd::ReadJson(*f.attrs);
    if (!read.ok()) return Refuse("events emit", "--attrs: " + read.status().message());
    json attrs = std::move(read).value();
    if (!attrs.is_object()) {
      return Refuse("events emit", "--attrs must be a JSON object, got \"" + *f.attrs + "\"");
    }
    e["payload"]["attrs"] = std::move(attrs);
  }
  return Send(ctx, e, trigd::TopicNames(ctx.config.topic_prefix).events_data, f.name);
}

int EmitPartition(const Context& ctx, const EmitFlags& f) {
  if (f.dataset.empty() || f.partitions.empty())
    return ctx.Usage("needs DATASET PARTITION... (one partition at least)");
  json e = NewEvent("partition");
  e["payload"] = {{"dataset", f.dataset}, {"partitions", f.partitions}};
  if (f.bytes) {
    auto n = ParseId(*f.bytes);
    if (!n || *n < 0) return Refuse("events emit", "--bytes must be a non-negative integer, got \"" + *f.bytes + "\"");
    e["payload"]["bytes"] = *n;
  }
  return Send(ctx, e, trigd::TopicNames(ctx.config.topic_prefix).events_data, f.dataset);
}

int EmitProgram(const Context& ctx, const EmitFlags& f) {
  if (f.program.empty() || f.status.empty()) {
    return ctx.Usage("needs PROGRAM STATUS (started, heartbeat, succeeded, failed or killed)");
  }
  json e = NewEvent("program");
  auto attempt = ParseId(f.attempt.value_or("1"));
  if (!attempt || *attempt < 1) return Refuse("events emit", "--attempt must be a positive integer");
  e["payload"] = {{"program", f.program},
                  {"run_id", f.run_id.value_or(e["id"].get<std::string>())},
                  {"status", f.status},
                  {"attempt", *attempt}};
  return Send(ctx, e, trigd::TopicNames(ctx.config.topic_prefix).events_program, f.program);
}

// A run of the schedule now, or of a given fire time (a backfill). A fire time has one identity
// (SPEC §5): one trigd already produced, or a second tick for one, changes nothing.
int EmitTick(const Context& ctx, const EmitFlags& f) {
  const std::string& schedule = f.schedule;
  if (schedule.empty()) return ctx.Usage("needs SCHEDULE (namespace/name)");
  json e = NewEvent("tick");
  std::string fire_time = f.fire_time.value_or(e["time"].get<std::string>());
  // As trigd reads an envelope's times: any RFC 3339 fraction (Python writes microseconds).
  auto parsed = trigd::ParseEnvelopeTime(fire_time);
  if (!parsed) {
    return Refuse("events emit",
                  "--fire-time: invalid time \"" + fire_time + "\": expected RFC 3339, e.g. 2026-11-22T10:00:00Z");
  }
  // trigd would count a tick that reaches no time trigger `no_match` and do nothing: say so
  // here instead of "emitted" (Airflow's `dags trigger` refuses an unknown DAG too).
  auto found = trigd::QuerySchedule(ctx.config.pg, schedule);
  if (!found.ok()) return Fail(found.status(), "events emit");
  std::string refused;
  if (found->empty()) {
    refused = "no schedule " + schedule;
  } else if ((*found)[0].value("state", "") != "active") {
    refused = "schedule " + schedule + " is " + (*found)[0].value("state", "") +
              ": trigd ignores its events (resume it first)";
  } else {
    trigd::ParsedSchedule s = trigd::ParseSchedule((*found)[0]["document"]);
    auto leaves = s.ok() ? trigd::TriggerLeaves(s.schedule.trigger) : std::vector<const trigd::Trigger*>{};
    if (std::none_of(leaves.begin(), leaves.end(),
                     [](const trigd::Trigger* t) { return t->kind == trigd::TriggerKind::kTime; })) {
      refused = "schedule " + schedule + " has no time trigger: a tick reaches nothing";
    }
  }
  if (!refused.empty()) return Refuse("events emit", refused);
  e["payload"] = {{"schedule", schedule}, {"fire_time", trigd::FormatTime(*parsed)}};
  return Send(ctx, e, trigd::TopicNames(ctx.config.topic_prefix).events_time, schedule);
}

}  // namespace

void AddEvents(CLI::App& root, Context& ctx) {
  CLI::App* events = Noun(root, "events", "events, as producers send them");
  CLI::App* emit = Noun(*events, "emit", "produce one event: partition, program, tick or custom");
  auto f = std::make_shared<EmitFlags>();
  // Each kind its own flags: a tick's typo (--bytes) is refused, not ignored.
  CLI::App* partition =
      ctx.Verb(*emit, "partition", "partitions of a dataset have landed", [&ctx, f] { return EmitPartition(ctx, *f); });
  partition->add_option("DATASET", f->dataset, "the dataset");
  partition->add_option("PARTITION", f->partitions, "one partition at least");
  trigd::FlagValue(partition->add_option("--bytes", f->bytes, "the partitions' size")->type_name("N"));
  CLI::App* program =
      ctx.Verb(*emit, "program", "a run report, as a worker sends it", [&ctx, f] { return EmitProgram(ctx, *f); });
  program->add_option("PROGRAM", f->program, "the program");
  program->add_option("STATUS", f->status, "started, heartbeat, succeeded, failed or killed");
  trigd::FlagValue(program->add_option("--run-id", f->run_id, "the run (default: the event id)")->type_name("ID"));
  trigd::FlagValue(program->add_option("--attempt", f->attempt, "the attempt (default 1)")->type_name("N"));
  CLI::App* tick = ctx.Verb(*emit, "tick", "a run of a schedule's time trigger now, or of fire time T (a backfill)",
                            [&ctx, f] { return EmitTick(ctx, *f); });
  tick->add_option("SCHEDULE", f->schedule, "namespace/name");
  trigd::FlagValue(
      tick->add_option("--fire-time", f->fire_time, "RFC 3339, e.g. 2026-11-22T10:00:00Z")->type_name("T"));
  CLI::App* custom = ctx.Verb(*emit, "custom", "something else happened (model.published, file.landed)",
                              [&ctx, f] { return EmitCustom(ctx, *f); });
  custom->add_option("NAME", f->name, "what happened");
  trigd::FlagValue(custom->add_option("--key", f->key, "which thing (default: the event id)")->type_name("K"));
  trigd::FlagValue(custom->add_option("--attrs", f->attrs, "a JSON object of attributes")->type_name("JSON"));
}

}  // namespace trigctl
