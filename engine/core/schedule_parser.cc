#include "core/schedule_parser.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <span>
#include <type_traits>
#include <utility>

#include "common/time.h"
#include "core/arg_template.h"
#include "core/cron.h"
#include "core/document_reader.h"
#include "core/schedule_names.h"

namespace trigd {
namespace {

using namespace schedule_names;
using namespace document_reader;

// Dataset names and patterns at most (a partition event's key holds the dataset).
constexpr size_t kMaxDatasetLength = 256;
// An event leaf's `where` conditions at most: each is checked for every event of its name.
constexpr size_t kMaxWhereConditions = 16;
// "Any depth" in SPEC §4 in practice: real conditions are a few levels deep, and the cap keeps
// the recursive walk far from exhausting the stack on a hostile document.
constexpr int kMaxTriggerDepth = 32;

// Known fields of each object, in the order SPEC §4 lists them.
constexpr std::string_view kScheduleFields[] = {
    "namespace",         "name",    "program",     "trigger", "constraints", "timeout", "priority", "retry",
    "heartbeat_timeout", "enabled", "run_timeout", "active",  "on_update"};
constexpr std::string_view kProgramFields[] = {"name", "args", "target"};
constexpr std::string_view kTriggerKinds[] = {"time", "partition", "program", "all", "any", "event", "silence"};
constexpr std::string_view kTimeTriggerFields[] = {"cron", "every", "timezone", "catchup", "catchup_window"};
constexpr std::string_view kPartitionTriggerFields[] = {"dataset", "count", "min_bytes", "match", "quiet"};
constexpr std::string_view kEventTriggerFields[] = {"name", "where", "count", "quiet"};
constexpr std::string_view kSilenceTriggerFields[] = {"dataset", "event", "for"};
constexpr std::string_view kProgramTriggerFields[] = {"name", "status", "count", "on_upstream_failure", "correlate"};
constexpr std::string_view kConstraintFields[] = {"max_concurrent_runs", "concurrency_group",  "delay",
                                                  "time_window",         "min_since_last_run", "max_runs_per"};
constexpr std::string_view kConcurrencyGroupFields[] = {"name", "max", "on_unmet"};
constexpr std::string_view kTimeWindowFields[] = {"start", "end", "timezone", "on_unmet"};
constexpr std::string_view kMinSinceLastRunFields[] = {"duration", "on_unmet"};
constexpr std::string_view kMaxRunsPerFields[] = {"count", "period", "on_unmet"};
constexpr std::string_view kTimeoutFields[] = {"after", "action"};
constexpr std::string_view kRetryFields[] = {"max_attempts", "backoff", "max_backoff", "jitter"};
constexpr std::string_view kMaxConcurrentRunsFields[] = {"max", "on_unmet"};
constexpr std::string_view kActiveFields[] = {"from", "until"};

// Walks one schedule document and fills a Schedule, appending every problem to `errors`.
// Json is nlohmann::json (keys sorted, so known fields are visited in SPEC order) or
// nlohmann::ordered_json (parsed from text: fields are visited in document order).
// Within an object, problems of its fields come first, then those of the object as a whole
// (a missing required field, two trigger kinds, max_backoff < backoff): the reader meets them
// where they would fix them.
template <class Json>
class DocumentParser : FieldReader<Json> {
  using Reader = FieldReader<Json>;
  using Reader::Error;
  using Reader::ExpectObject;
  using Reader::Fields;
  using Reader::ReadBool;
  using Reader::ReadDuration;
  using Reader::ReadEnum;
  using Reader::ReadIdentifier;
  using Reader::ReadInteger;
  using Reader::ReadString;
  using Reader::ReadTimeOfDay;
  using Reader::ReadTimeZone;
  using Reader::RefuseNul;
  using Reader::Required;
  using Reader::UnknownField;

 public:
  explicit DocumentParser(std::vector<ScheduleError>& errors) : Reader(errors) {}

  Schedule Parse(const Json& document) {
    Schedule s;
    if (!document.is_object()) {
      Error("", std::string("expected a schedule object, got ") + document.type_name());
      return s;
    }
    RefuseNul(document, "");
    for (const auto& [key, value] : Fields(document, kScheduleFields)) {
      std::string path(key);
      if (key == "namespace") {
        if (auto v = ReadIdentifier(*value, path, "namespace", false)) s.namespace_name = *v;
      } else if (key == "name") {
        if (auto v = ReadIdentifier(*value, path, "name", false)) s.name = *v;
      } else if (key == "program") {
        ParseProgram(*value, path, s.program);
      } else if (key == "trigger") {
        ParseTrigger(*value, path, 1, s.trigger);
        if (IsCorrelated(s.trigger)) CheckCorrelatedLeaves(s.trigger, path);
      } else if (key == "constraints") {
        ParseConstraints(*value, path, s.constraints);
      } else if (key == "timeout") {
        s.timeout.emplace();
        ParseTimeout(*value, path, *s.timeout);
      } else if (key == "priority") {
        if (auto v = ReadInteger(*value, path, kPriorityRange)) s.priority = *v;
      } else if (key == "retry") {
        ParseRetry(*value, path, s.retry);
      } else if (key == "heartbeat_timeout") {
        if (auto v = ReadDuration(*value, path, /*allow_zero=*/false)) {
          // Runs are swept every 500 ms and the reference worker heartbeats every third of the
          // timeout, at least every 500 ms: "1ms" (a typo for "1m") would declare every run lost
          // while its worker heartbeats (docs/adr/0025-parser-limits.md).
          if (*v < std::chrono::seconds(1)) {
            Error(path, "must be at least 1s, got " + FormatDuration(*v));
          } else {
            s.heartbeat_timeout = *v;
          }
        }
      } else if (key == "enabled") {
        if (auto v = ReadBool(*value, path)) s.enabled = *v;
      } else if (key == "run_timeout") {
        // The sweep that enforces it runs every 500 ms; under a second is a typo ("1ms" for "1m").
        if (auto v = ReadDuration(*value, path, /*allow_zero=*/false)) {
          if (*v < std::chrono::seconds(1)) {
            Error(path, "must be at least 1s, got " + FormatDuration(*v));
          } else {
            s.run_timeout = *v;
          }
        }
      } else if (key == "active") {
        ParseActive(*value, path, s.active.emplace());
      } else if (key == "on_update") {
        if (auto v = ReadEnum(*value, path, "on_update", kOnUpdatePolicies)) s.on_update = *v;
      } else {
        UnknownField(key, path, kScheduleFields);
      }
    }
    Required(document, "", "name");
    Required(document, "", "program");
    Required(document, "", "trigger");
    return s;
  }

 private:
  void ParseProgram(const Json& value, const std::string& path, Program& out) {
    if (!ExpectObject(value, path)) return;
    for (const auto& [key, field] : Fields(value, kProgramFields)) {
      std::string p = FieldPath(path, key);
      if (key == "name") {
        if (auto v = ReadIdentifier(*field, p, "program name", false)) out.name = *v;
      } else if (key == "args") {
        if (ExpectObject(*field, p)) {
          out.args = nlohmann::json(*field);
          for (TemplateProblem& problem : CheckArgTemplates(out.args, p)) {
            Error(std::move(problem.path), std::move(problem.reason));
          }
        }
      } else if (key == "target") {
        // The target names a Kafka topic (trigd.launch.<target>), hence lowercase only.
        if (auto v = ReadIdentifier(*field, p, "target", true)) out.target = *v;
      } else {
        UnknownField(key, p, kProgramFields);
      }
    }
    Required(value, path, "name");
  }

  void ParseTrigger(const Json& value, const std::string& path, int depth, Trigger& out) {
    if (!ExpectObject(value, path)) return;
    if (depth > kMaxTriggerDepth) {
      Error(path, "triggers are nested more than " + std::to_string(kMaxTriggerDepth) + " levels deep");
      return;
    }
    std::vector<std::string_view> kinds;
    for (const auto& [key, field] : Fields(value, kTriggerKinds)) {
      std::string p = FieldPath(path, key);
      // A second kind is still checked, so its problems show in the same pass; only the
      // first fills `out`.
      Trigger scratch;
      Trigger& target = kinds.empty() ? out : scratch;
      if (key == "time") {
        target.kind = TriggerKind::kTime;
        ParseTimeTrigger(*field, p, target.time);
      } else if (key == "partition") {
        target.kind = TriggerKind::kPartition;
        ParsePartitionTrigger(*field, p, target.partition);
      } else if (key == "program") {
        target.kind = TriggerKind::kProgram;
        ParseProgramTrigger(*field, p, target.program);
      } else if (key == "all" || key == "any") {
        target.kind = key == "all" ? TriggerKind::kAll : TriggerKind::kAny;
        ParseComposite(*field, p, depth, target.children);
      } else if (key == "event") {
        target.kind = TriggerKind::kEvent;
        ParseEventTrigger(*field, p, target.event);
      } else if (key == "silence") {
        target.kind = TriggerKind::kSilence;
        ParseSilenceTrigger(*field, p, target.silence);
      } else {
        UnknownField(key, p, kTriggerKinds);
        continue;
      }
      kinds.push_back(key);
    }
    if (kinds.size() > 1) {
      Error(path, "a trigger has exactly one of time, partition, program, event, silence, all or any, got " +
                      JoinAlternatives(kinds, "and"));
    } else if (value.empty()) {
      Error(path, "expected one of time, partition, program, event, silence, all or any");
    }
  }

  // A correlated trigger counts every event in the job of the event's lineage; a partition,
  // a tick or an uncorrelated program event has no lineage to be counted in, so a trigger with
  // a correlated leaf holds only correlated program leaves (docs/adr/0115-correlated-joins.md).
  void CheckCorrelatedLeaves(const Trigger& t, const std::string& path) {
    if (t.kind == TriggerKind::kAll || t.kind == TriggerKind::kAny) {
      for (size_t i = 0; i < t.children.size(); ++i) {
        CheckCorrelatedLeaves(t.children[i], ElementPath(FieldPath(path, TriggerKindName(t.kind)), i));
      }
    } else if (t.kind != TriggerKind::kProgram) {
      Error(FieldPath(path, TriggerKindName(t.kind)),
            "a trigger with a correlated program leaf holds only program leaves with \"correlate\": true");
    } else if (!t.program.correlate) {
      Error(FieldPath(path, "program.correlate"),
            "must be true: another program leaf of this trigger is correlated, and a join counts per lineage only "
            "when all its leaves do");
    }
  }

  void ParseComposite(const Json& value, const std::string& path, int depth, std::vector<Trigger>& children) {
    if (!value.is_array()) {
      Error(path, std::string("expected an array of triggers, got ") + value.type_name());
      return;
    }
    if (value.empty()) {
      Error(path, "must not be empty");
      return;
    }
    for (size_t i = 0; i < value.size(); ++i) {
      children.emplace_back();
      ParseTrigger(value[i], ElementPath(path, i), depth + 1, children.back());
    }
  }

  void ParseTimeTrigger(const Json& value, const std::string& path, TimeTrigger& out) {
    if (!ExpectObject(value, path)) return;
    for (const auto& [key, field] : Fields(value, kTimeTriggerFields)) {
      std::string p = FieldPath(path, key);
      if (key == "cron") {
        if (auto text = ReadString(*field, p)) {
          Result<CronExpr> cron = CronExpr::Parse(*text);
          // A fixed instant, so that a document is valid or not whenever it is applied; any
          // expression that fires at all fires within the 5 years Next looks at (29 February too).
          if (cron.ok() && !cron->Next(TimePoint(Millis(1'767'225'600'000)), "UTC")) {  // 2026-01-01
            Error(p, "never fires: no date matches \"" + *text + "\"");
          } else if (cron.ok()) {
            out.cron = *text;
          } else {
            Error(p, cron.status().message());
          }
        }
      } else if (key == "every") {
        if (auto v = ReadDuration(*field, p, /*allow_zero=*/false)) {
          // Due fire times are looked for every 100 ms: "100ms" launched about 10 a second and
          // skipped the rest without a word.
          if (*v < std::chrono::seconds(1)) {
            Error(p, "must be at least 1s, got " + FormatDuration(*v));
          } else {
            out.every = *v;
          }
        }
      } else if (key == "timezone") {
        if (auto v = ReadTimeZone(*field, p)) out.timezone = *v;
      } else if (key == "catchup") {
        if (auto v = ReadEnum(*field, p, "catchup", kCatchupPolicies)) out.catchup = *v;
      } else if (key == "catchup_window") {
        if (auto v = ReadDuration(*field, p, /*allow_zero=*/false)) out.catchup_window = *v;
      } else {
        UnknownField(key, p, kTimeTriggerFields);
      }
    }
    bool has_cron = value.contains("cron");
    bool has_every = value.contains("every");
    if (!has_cron && !has_every) Error(path, "one of cron and every is required");
    if (has_cron && has_every) Error(path, "cron and every are exclusive: give one of them");
    // Ticks carry only the schedule and the fire time (SPEC §3), so two time leaves of one
    // schedule could not be told apart.
    if (first_time_trigger_path_) {
      Error(path, "a schedule has at most one time trigger (the first is " + *first_time_trigger_path_ + ")");
    } else {
      first_time_trigger_path_ = path;
    }
  }

  void ParsePartitionTrigger(const Json& value, const std::string& path, PartitionTrigger& out) {
    if (!ExpectObject(value, path)) return;
    for (const auto& [key, field] : Fields(value, kPartitionTriggerFields)) {
      std::string p = FieldPath(path, key);
      if (key == "dataset") {
        if (auto v = ReadString(*field, p)) {
          if (v->empty()) {
            Error(p, "must not be empty");
          } else if (v->size() > kMaxDatasetLength) {
            Error(p, "must be at most " + std::to_string(kMaxDatasetLength) + " characters");
          } else {
            out.dataset = *v;
          }
        }
      } else if (key == "count") {
        if (auto v = ReadInteger(*field, p, kTriggerCountRange)) out.count = *v;
      } else if (key == "min_bytes") {
        if (auto v = ReadInteger(*field, p, kMinBytesRange)) out.min_bytes = *v;
      } else if (key == "quiet") {
        if (auto v = ReadDuration(*field, p, /*allow_zero=*/false)) out.quiet = *v;
      } else if (key == "match") {
        if (auto v = ReadString(*field, p)) {
          if (v->empty()) {
            Error(p, "must not be empty (a glob such as \"dt=*/h=0?\")");
          } else if (v->size() > kMaxDatasetLength) {
            Error(p, "must be at most " + std::to_string(kMaxDatasetLength) + " characters");
          } else {
            out.match = *v;
          }
        }
      } else {
        UnknownField(key, p, kPartitionTriggerFields);
      }
    }
    Required(value, path, "dataset");
  }

  // The custom event name is a Kafka key and an index key: the rules of a dataset name, and no
  // "?" (it separates the name from a `where` path in the index key, CustomEventKey).
  void ParseEventTrigger(const Json& value, const std::string& path, EventTrigger& out) {
    if (!ExpectObject(value, path)) return;
    for (const auto& [key, field] : Fields(value, kEventTriggerFields)) {
      std::string p = FieldPath(path, key);
      if (key == "name") {
        if (auto v = ReadString(*field, p)) {
          if (v->empty()) {
            Error(p, "must not be empty");
          } else if (v->size() > kMaxDatasetLength) {
            Error(p, "must be at most " + std::to_string(kMaxDatasetLength) + " characters");
          } else if (v->find('?') != std::string::npos) {
            Error(p, "invalid event name " + Quote(*v) + ": must not contain \"?\"");
          } else {
            out.name = *v;
          }
        }
      } else if (key == "where") {
        ParseWhere(*field, p, out.where);
      } else if (key == "count") {
        if (auto v = ReadInteger(*field, p, kTriggerCountRange)) out.count = *v;
      } else if (key == "quiet") {
        if (auto v = ReadDuration(*field, p, /*allow_zero=*/false)) out.quiet = *v;
      } else {
        UnknownField(key, p, kEventTriggerFields);
      }
    }
    Required(value, path, "name");
  }

  // {"dataset": "sales.raw", "for": "2h"} or {"event": "model.published", "for": "2h"}: the
  // names follow the rules of a partition leaf's dataset and an event leaf's name.
  void ParseSilenceTrigger(const Json& value, const std::string& path, SilenceTrigger& out) {
    if (!ExpectObject(value, path)) return;
    for (const auto& [key, field] : Fields(value, kSilenceTriggerFields)) {
      std::string p = FieldPath(path, key);
      if (key == "dataset" || key == "event") {
        if (auto v = ReadString(*field, p)) {
          if (v->empty()) {
            Error(p, "must not be empty");
          } else if (v->size() > kMaxDatasetLength) {
            Error(p, "must be at most " + std::to_string(kMaxDatasetLength) + " characters");
          } else if (key == "event" && v->find('?') != std::string::npos) {
            Error(p, "invalid event name " + Quote(*v) + ": must not contain \"?\"");
          } else {
            (key == "dataset" ? out.dataset : out.event) = *v;
          }
        }
      } else if (key == "for") {
        if (auto v = ReadDuration(*field, p, /*allow_zero=*/false)) out.after = *v;
      } else {
        UnknownField(key, p, kSilenceTriggerFields);
      }
    }
    const bool has_dataset = value.contains("dataset");
    const bool has_event = value.contains("event");
    if (!has_dataset && !has_event) Error(path, "one of dataset and event is required");
    if (has_dataset && has_event) Error(path, "dataset and event are exclusive: give one of them");
    Required(value, path, "for");
  }

  // {"attrs.stage": "prod", "attrs.region": {"in": ["eu", "us"]}}: dotted payload paths to a
  // JSON scalar, or to {"in": [scalars]}.
  void ParseWhere(const Json& value, const std::string& path, std::vector<WhereCondition>& out) {
    if (!ExpectObject(value, path)) return;
    for (auto it = value.begin(); it != value.end(); ++it) {
      const std::string& key = it.key();
      const std::string p = FieldPath(path, key);
      const Json& v = it.value();
      if (key.empty() || key.front() == '.' || key.back() == '.' || key.find("..") != std::string::npos ||
          key.find_first_of("?=") != std::string::npos) {
        Error(p, "invalid path " + Quote(key) + ": expected dotted field names such as \"attrs.stage\"");
        continue;
      }
      WhereCondition c;
      c.path = key;
      if (v.is_object()) {
        auto in = v.find("in");
        if (in == v.end() || v.size() != 1) {
          Error(p, "expected a JSON scalar or {\"in\": [...]}");
          continue;
        }
        if (!in->is_array() || in->empty()) {
          Error(FieldPath(p, "in"), "expected a non-empty array of JSON scalars");
          continue;
        }
        c.in = true;
        bool ok = true;
        for (size_t i = 0; i < in->size(); ++i) {
          const Json& e = (*in)[i];
          if (e.is_structured() || e.is_null()) {
            Error(ElementPath(FieldPath(p, "in"), i),
                  std::string("expected a string, number or boolean, got ") + e.type_name());
            ok = false;
          } else {
            c.values.push_back(nlohmann::json(e));
          }
        }
        if (!ok) continue;
      } else if (v.is_array() || v.is_null()) {
        Error(p, std::string("expected a string, number, boolean or {\"in\": [...]}, got ") + v.type_name());
        continue;
      } else {
        c.values.push_back(nlohmann::json(v));
      }
      out.push_back(std::move(c));
    }
    if (value.size() > kMaxWhereConditions) {
      Error(path,
            "at most " + std::to_string(kMaxWhereConditions) + " conditions, got " + std::to_string(value.size()));
    }
    std::sort(out.begin(), out.end(), [](const WhereCondition& a, const WhereCondition& b) { return a.path < b.path; });
  }

  void ParseProgramTrigger(const Json& value, const std::string& path, ProgramTrigger& out) {
    if (!ExpectObject(value, path)) return;
    for (const auto& [key, field] : Fields(value, kProgramTriggerFields)) {
      std::string p = FieldPath(path, key);
      if (key == "name") {
        if (auto v = ReadIdentifier(*field, p, "program name", false)) out.program = *v;
      } else if (key == "status") {
        ReadStatuses(*field, p, out.statuses);
      } else if (key == "count") {
        if (auto v = ReadInteger(*field, p, kTriggerCountRange)) out.count = *v;
      } else if (key == "on_upstream_failure") {
        if (auto v = ReadEnum(*field, p, "on_upstream_failure", kUpstreamFailurePolicies)) {
          out.on_upstream_failure = *v;
        }
      } else if (key == "correlate") {
        if (auto v = ReadBool(*field, p)) out.correlate = *v;
      } else {
        UnknownField(key, p, kProgramTriggerFields);
      }
    }
    Required(value, path, "name");
  }

  // Problems of single statuses are reported at the array's path, as in SPEC §4's
  // `trigger.all[1].program.status: unknown status "done"`.
  void ReadStatuses(const Json& value, const std::string& path, std::vector<ProgramStatus>& out) {
    if (value.is_string()) {
      std::string given = value.template get<std::string>();
      Error(path, "expected an array of statuses, e.g. [" + Quote(given) + "], got string");
      return;
    }
    if (!value.is_array()) {
      Error(path, std::string("expected an array of statuses, got ") + value.type_name());
      return;
    }
    if (value.empty()) {
      Error(path, "must not be empty");
      return;
    }
    std::vector<ProgramStatus> statuses;
    bool ok = true;
    for (const Json& element : value) {
      if (!element.is_string()) {
        Error(path, std::string("expected status names, got ") + element.type_name());
        ok = false;
        continue;
      }
      std::string name = element.template get<std::string>();
      std::optional<ProgramStatus> status = ProgramStatusFromName(name);
      if (!status) {
        // Same shape as the other enums' messages; SPEC's example is its prefix.
        Error(path, "unknown status " + Quote(name) + " (expected started, heartbeat, succeeded, failed or killed)");
        ok = false;
      } else if (std::find(statuses.begin(), statuses.end(), *status) != statuses.end()) {
        Error(path, "duplicate status " + Quote(name));
        ok = false;
      } else {
        statuses.push_back(*status);
      }
    }
    if (ok) out = std::move(statuses);
  }

  void ParseConstraints(const Json& value, const std::string& path, Constraints& out) {
    if (!ExpectObject(value, path)) return;
    for (const auto& [key, field] : Fields(value, kConstraintFields)) {
      std::string p = FieldPath(path, key);
      if (key == "max_concurrent_runs") {
        ParseMaxConcurrentRuns(*field, p, out);
      } else if (key == "concurrency_group") {
        ParseConcurrencyGroup(*field, p, out.concurrency_group.emplace());
      } else if (key == "delay") {
        // A zero delay is harmless and lets a generated document state "no delay".
        if (auto v = ReadDuration(*field, p, /*allow_zero=*/true)) out.delay = *v;
      } else if (key == "time_window") {
        ParseTimeWindow(*field, p, out.time_window.emplace());
      } else if (key == "min_since_last_run") {
        ParseMinSinceLastRun(*field, p, out.min_since_last_run.emplace());
      } else if (key == "max_runs_per") {
        ParseMaxRunsPer(*field, p, out.max_runs_per.emplace());
      } else {
        UnknownField(key, p, kConstraintFields);
      }
    }
  }

  // A number (wait for a slot) or {"max": N, "on_unmet": "wait|skip|cancel_oldest"}.
  void ParseMaxConcurrentRuns(const Json& value, const std::string& path, Constraints& out) {
    if (value.is_number()) {
      if (auto v = ReadInteger(value, path, kConcurrencyRange)) out.max_concurrent_runs = *v;
      return;
    }
    if (!value.is_object()) {
      Error(path, std::string("expected an integer or an object {\"max\", \"on_unmet\"}, got ") + value.type_name());
      return;
    }
    for (const auto& [key, field] : Fields(value, kMaxConcurrentRunsFields)) {
      std::string p = FieldPath(path, key);
      if (key == "max") {
        if (auto v = ReadInteger(*field, p, kConcurrencyRange)) out.max_concurrent_runs = *v;
      } else if (key == "on_unmet") {
        if (auto v = ReadEnum(*field, p, "on_unmet", kOverlapPolicies)) out.on_overlap = *v;
      } else {
        UnknownField(key, p, kMaxConcurrentRunsFields);
      }
    }
    Required(value, path, "max");
  }

  // {"from": RFC 3339, "until": RFC 3339}, either optional; until after from.
  void ParseActive(const Json& value, const std::string& path, ActivePeriod& out) {
    if (!ExpectObject(value, path)) return;
    for (const auto& [key, field] : Fields(value, kActiveFields)) {
      std::string p = FieldPath(path, key);
      if (key == "from" || key == "until") {
        auto text = ReadString(*field, p);
        if (!text) continue;
        Result<TimePoint> t = ParseTime(*text);
        if (!t.ok()) {
          Error(p, "invalid time " + Quote(*text) + ": expected RFC 3339 such as \"2026-12-01T00:00:00Z\"");
          continue;
        }
        (key == "from" ? out.from : out.until) = *t;
      } else {
        UnknownField(key, p, kActiveFields);
      }
    }
    if (out.from && out.until && *out.until <= *out.from) {
      Error(FieldPath(path, "until"),
            "must be after from (" + FormatTime(*out.from) + "), got " + FormatTime(*out.until));
    }
  }

  // "10%": a whole percentage from 0 to 100.
  std::optional<int64_t> ReadPercent(const Json& value, const std::string& path) {
    auto s = ReadString(value, path);
    if (!s) return std::nullopt;
    const std::string& t = *s;
    bool shape = t.size() >= 2 && t.size() <= 4 && t.back() == '%' && std::all_of(t.begin(), t.end() - 1, [](char c) {
                   return std::isdigit(static_cast<unsigned char>(c));
                 });
    int64_t n = shape ? std::stoll(t.substr(0, t.size() - 1)) : -1;
    if (!shape || n > 100) {
      Error(path, "invalid percentage " + Quote(t) + ": expected a whole percentage from \"0%\" to \"100%\"");
      return std::nullopt;
    }
    return n;
  }

  void ParseConcurrencyGroup(const Json& value, const std::string& path, ConcurrencyGroup& out) {
    if (!ExpectObject(value, path)) return;
    for (const auto& [key, field] : Fields(value, kConcurrencyGroupFields)) {
      std::string p = FieldPath(path, key);
      if (key == "name") {
        if (auto v = ReadIdentifier(*field, p, "group name", false)) out.name = *v;
      } else if (key == "max") {
        if (auto v = ReadInteger(*field, p, kConcurrencyRange)) out.max = *v;
      } else if (key == "on_unmet") {
        if (auto v = ReadEnum(*field, p, "on_unmet", kOnUnmetPolicies)) out.on_unmet = *v;
      } else {
        UnknownField(key, p, kConcurrencyGroupFields);
      }
    }
    Required(value, path, "name");
  }

  void ParseTimeWindow(const Json& value, const std::string& path, TimeWindow& out) {
    if (!ExpectObject(value, path)) return;
    std::optional<int> start;
    std::optional<int> end;
    for (const auto& [key, field] : Fields(value, kTimeWindowFields)) {
      std::string p = FieldPath(path, key);
      if (key == "start") {
        start = ReadTimeOfDay(*field, p);
        if (start) out.start_minute = *start;
      } else if (key == "end") {
        end = ReadTimeOfDay(*field, p);
        if (end) out.end_minute = *end;
      } else if (key == "timezone") {
        if (auto v = ReadTimeZone(*field, p)) out.timezone = *v;
      } else if (key == "on_unmet") {
        if (auto v = ReadEnum(*field, p, "on_unmet", kOnUnmetPolicies)) out.on_unmet = *v;
      } else {
        UnknownField(key, p, kTimeWindowFields);
      }
    }
    Required(value, path, "start");
    Required(value, path, "end");
    // Equal ends could mean "never" or "always"; neither is worth a constraint, so ask.
    if (start && end && *start == *end) {
      Error(path, "start and end are both \"" + FormatTimeOfDay(*start) + "\": the window would be empty");
    }
  }

  void ParseMinSinceLastRun(const Json& value, const std::string& path, MinSinceLastRun& out) {
    if (!ExpectObject(value, path)) return;
    for (const auto& [key, field] : Fields(value, kMinSinceLastRunFields)) {
      std::string p = FieldPath(path, key);
      if (key == "duration") {
        if (auto v = ReadDuration(*field, p, /*allow_zero=*/false)) out.duration = *v;
      } else if (key == "on_unmet") {
        if (auto v = ReadEnum(*field, p, "on_unmet", kOnUnmetPolicies)) out.on_unmet = *v;
      } else {
        UnknownField(key, p, kMinSinceLastRunFields);
      }
    }
    Required(value, path, "duration");
  }

  void ParseMaxRunsPer(const Json& value, const std::string& path, MaxRunsPer& out) {
    if (!ExpectObject(value, path)) return;
    for (const auto& [key, field] : Fields(value, kMaxRunsPerFields)) {
      std::string p = FieldPath(path, key);
      if (key == "count") {
        if (auto v = ReadInteger(*field, p, kMaxRunsPerCountRange)) out.count = *v;
      } else if (key == "period") {
        if (auto v = ReadDuration(*field, p, /*allow_zero=*/false)) out.period = *v;
      } else if (key == "on_unmet") {
        if (auto v = ReadEnum(*field, p, "on_unmet", kOnUnmetPolicies)) out.on_unmet = *v;
      } else {
        UnknownField(key, p, kMaxRunsPerFields);
      }
    }
    Required(value, path, "count");
    Required(value, path, "period");
  }

  void ParseTimeout(const Json& value, const std::string& path, Timeout& out) {
    if (!ExpectObject(value, path)) return;
    for (const auto& [key, field] : Fields(value, kTimeoutFields)) {
      std::string p = FieldPath(path, key);
      if (key == "after") {
        if (auto v = ReadDuration(*field, p, /*allow_zero=*/false)) out.after = *v;
      } else if (key == "action") {
        if (auto v = ReadEnum(*field, p, "action", kTimeoutActions)) out.action = *v;
      } else {
        UnknownField(key, p, kTimeoutFields);
      }
    }
    Required(value, path, "after");
  }

  void ParseRetry(const Json& value, const std::string& path, RetryPolicy& out) {
    if (!ExpectObject(value, path)) return;
    std::optional<Millis> backoff;
    std::optional<Millis> max_backoff;
    for (const auto& [key, field] : Fields(value, kRetryFields)) {
      std::string p = FieldPath(path, key);
      if (key == "max_attempts") {
        if (auto v = ReadInteger(*field, p, kMaxAttemptsRange)) out.max_attempts = *v;
      } else if (key == "backoff") {
        backoff = ReadDuration(*field, p, /*allow_zero=*/false);
        if (backoff) out.backoff = *backoff;
      } else if (key == "max_backoff") {
        max_backoff = ReadDuration(*field, p, /*allow_zero=*/false);
        if (max_backoff) out.max_backoff = *max_backoff;
      } else if (key == "jitter") {
        if (auto v = ReadPercent(*field, p)) out.jitter_percent = *v;
      } else {
        UnknownField(key, p, kRetryFields);
      }
    }
    if (backoff && max_backoff && *max_backoff < *backoff) {
      Error(FieldPath(path, "max_backoff"),
            "must be at least backoff (" + FormatDuration(*backoff) + "), got " + FormatDuration(*max_backoff));
    }
    // A backoff above the default cap raises the cap rather than failing a document that
    // never mentioned max_backoff.
    if (backoff && !value.contains("max_backoff") && out.max_backoff < *backoff) {
      out.max_backoff = *backoff;
    }
  }

  std::optional<std::string> first_time_trigger_path_;
};

std::string PrefixPath(const std::string& prefix, const std::string& path) {
  if (prefix.empty()) return path;
  return path.empty() ? prefix : prefix + "." + path;
}

}  // namespace

ParsedSchedule ParseSchedule(const nlohmann::json& document) {
  ParsedSchedule parsed;
  parsed.schedule = DocumentParser<nlohmann::json>(parsed.errors).Parse(document);
  return parsed;
}

std::vector<ParsedSchedule> ParseScheduleFile(std::string_view text) {
  JsonText read = ReadJsonText(text);
  if (read.error) {
    ParsedSchedule failed;
    failed.errors.push_back(std::move(*read.error));
    return {std::move(failed)};
  }
  const OrderedJson& root = read.root;

  std::vector<const OrderedJson*> documents;
  std::vector<std::string> prefixes;
  if (root.is_array()) {
    for (size_t i = 0; i < root.size(); ++i) {
      documents.push_back(&root[i]);
      prefixes.push_back(ElementPath("", i));
    }
  } else if (root.is_object()) {
    documents.push_back(&root);
    prefixes.emplace_back();
  } else {
    ParsedSchedule failed;
    failed.errors.push_back(
        ScheduleError{"", std::string("expected a schedule object or an array of them, got ") + root.type_name()});
    return {std::move(failed)};
  }

  std::vector<ParsedSchedule> out(documents.size());
  for (auto& [document, error] : read.duplicates) out[document].errors.push_back(std::move(error));
  std::map<std::string, size_t> first_index_of;
  for (size_t i = 0; i < documents.size(); ++i) {
    std::vector<ScheduleError> errors;
    out[i].schedule = DocumentParser<OrderedJson>(errors).Parse(*documents[i]);
    for (ScheduleError& e : errors) {
      e.path = PrefixPath(prefixes[i], e.path);
      out[i].errors.push_back(std::move(e));
    }
    // Applying both would silently keep the later one; the name is only set when valid.
    if (out[i].schedule.name.empty()) continue;
    auto [it, inserted] = first_index_of.emplace(out[i].schedule.id().value(), i);
    if (!inserted) {
      out[i].errors.push_back(ScheduleError{
          PrefixPath(prefixes[i], "name"),
          "schedule " + Quote(out[i].schedule.id().value()) + " also appears at " + prefixes[it->second]});
    }
  }
  return out;
}

Status CheckTarget(std::string_view target) {
  std::string problem = IdentifierProblem(target, true);
  if (problem.empty()) return Status();
  return Invalid("invalid target \"" + std::string(target) + "\"" + problem);
}

Status CheckIdentifier(std::string_view what, std::string_view value) {
  std::string problem = IdentifierProblem(value, false);
  if (problem.empty()) return Status();
  return Invalid("invalid " + std::string(what) + " \"" + std::string(value) + "\"" + problem);
}

}  // namespace trigd
