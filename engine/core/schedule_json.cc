// A Schedule as its canonical document (SPEC §4): every field, defaults written out except
// where noted, so that equal schedules have equal text and version.
#include <utility>

#include <nlohmann/json.hpp>

#include "common/time.h"
#include "core/schedule_names.h"
#include "core/schedule_parser.h"

namespace trigd {

using namespace schedule_names;

namespace {

nlohmann::json TriggerToJson(const Trigger& t) {
  nlohmann::json j;
  switch (t.kind) {
    case TriggerKind::kTime: {
      nlohmann::json time;
      if (t.time.cron) time["cron"] = *t.time.cron;
      if (t.time.every) time["every"] = FormatDuration(*t.time.every);
      time["timezone"] = t.time.timezone;
      time["catchup"] = NameOf(kCatchupPolicies, t.time.catchup);
      time["catchup_window"] = FormatDuration(t.time.catchup_window);
      j["time"] = std::move(time);
      break;
    }
    case TriggerKind::kPartition: {
      // count and min_bytes stay absent when unset: "only min_bytes" differs from "count 1".
      nlohmann::json partition;
      partition["dataset"] = t.partition.dataset;
      if (t.partition.count) partition["count"] = *t.partition.count;
      if (t.partition.min_bytes) partition["min_bytes"] = *t.partition.min_bytes;
      if (t.partition.match) partition["match"] = *t.partition.match;
      if (t.partition.quiet) partition["quiet"] = FormatDuration(*t.partition.quiet);
      j["partition"] = std::move(partition);
      break;
    }
    case TriggerKind::kEvent: {
      nlohmann::json event;
      event["name"] = t.event.name;
      if (!t.event.where.empty()) {
        nlohmann::json where = nlohmann::json::object();
        for (const WhereCondition& c : t.event.where) {
          if (c.in) {
            where[c.path] = {{"in", c.values}};
          } else {
            where[c.path] = c.values.front();
          }
        }
        event["where"] = std::move(where);
      }
      event["count"] = t.event.count;
      if (t.event.quiet) event["quiet"] = FormatDuration(*t.event.quiet);
      j["event"] = std::move(event);
      break;
    }
    case TriggerKind::kSilence: {
      nlohmann::json silence;
      if (t.silence.dataset) silence["dataset"] = *t.silence.dataset;
      if (t.silence.event) silence["event"] = *t.silence.event;
      silence["for"] = FormatDuration(t.silence.after);
      j["silence"] = std::move(silence);
      break;
    }
    case TriggerKind::kProgram: {
      nlohmann::json program;
      program["name"] = t.program.program;
      nlohmann::json statuses = nlohmann::json::array();
      for (ProgramStatus s : t.program.statuses) statuses.push_back(ProgramStatusName(s));
      program["status"] = std::move(statuses);
      program["count"] = t.program.count;
      program["on_upstream_failure"] = NameOf(kUpstreamFailurePolicies, t.program.on_upstream_failure);
      // Absent unless set, so that documents without it keep their canonical form.
      if (t.program.correlate) program["correlate"] = true;
      j["program"] = std::move(program);
      break;
    }
    case TriggerKind::kAll:
    case TriggerKind::kAny: {
      nlohmann::json children = nlohmann::json::array();
      for (const Trigger& c : t.children) children.push_back(TriggerToJson(c));
      j[TriggerKindName(t.kind)] = std::move(children);
      break;
    }
  }
  return j;
}

}  // namespace

nlohmann::json ScheduleToJson(const Schedule& s) {
  nlohmann::json j;
  j["namespace"] = s.namespace_name;
  j["name"] = s.name;
  j["program"] = {{"name", s.program.name}, {"args", s.program.args}, {"target", s.program.target}};
  j["trigger"] = TriggerToJson(s.trigger);

  nlohmann::json constraints = nlohmann::json::object();
  const Constraints& c = s.constraints;
  // The number form for the default policy, so that documents applied before the object form
  // existed keep their canonical text (and version) (docs/adr/0110-operate-fields.md).
  if (c.max_concurrent_runs) {
    if (c.on_overlap == OverlapPolicy::kWait) {
      constraints["max_concurrent_runs"] = *c.max_concurrent_runs;
    } else {
      constraints["max_concurrent_runs"] = {{"max", *c.max_concurrent_runs},
                                            {"on_unmet", NameOf(kOverlapPolicies, c.on_overlap)}};
    }
  }
  if (c.concurrency_group) {
    constraints["concurrency_group"] = {{"name", c.concurrency_group->name},
                                        {"max", c.concurrency_group->max},
                                        {"on_unmet", NameOf(kOnUnmetPolicies, c.concurrency_group->on_unmet)}};
  }
  if (c.delay) constraints["delay"] = FormatDuration(*c.delay);
  if (c.time_window) {
    constraints["time_window"] = {{"start", FormatTimeOfDay(c.time_window->start_minute)},
                                  {"end", FormatTimeOfDay(c.time_window->end_minute)},
                                  {"timezone", c.time_window->timezone},
                                  {"on_unmet", NameOf(kOnUnmetPolicies, c.time_window->on_unmet)}};
  }
  if (c.min_since_last_run) {
    constraints["min_since_last_run"] = {{"duration", FormatDuration(c.min_since_last_run->duration)},
                                         {"on_unmet", NameOf(kOnUnmetPolicies, c.min_since_last_run->on_unmet)}};
  }
  if (c.max_runs_per) {
    constraints["max_runs_per"] = {{"count", c.max_runs_per->count},
                                   {"period", FormatDuration(c.max_runs_per->period)},
                                   {"on_unmet", NameOf(kOnUnmetPolicies, c.max_runs_per->on_unmet)}};
  }
  j["constraints"] = std::move(constraints);

  if (s.timeout) {
    j["timeout"] = {{"after", FormatDuration(s.timeout->after)},
                    {"action", NameOf(kTimeoutActions, s.timeout->action)}};
  }
  j["priority"] = s.priority;
  j["retry"] = {{"max_attempts", s.retry.max_attempts},
                {"backoff", FormatDuration(s.retry.backoff)},
                {"max_backoff", FormatDuration(s.retry.max_backoff)}};
  // Fields of SPEC §9 appear only when set or not at their default, for the same reason as the
  // number form of max_concurrent_runs.
  if (s.retry.jitter_percent != kDefaultJitterPercent)
    j["retry"]["jitter"] = std::to_string(s.retry.jitter_percent) + "%";
  j["heartbeat_timeout"] = FormatDuration(s.heartbeat_timeout);
  j["enabled"] = s.enabled;
  if (s.run_timeout) j["run_timeout"] = FormatDuration(*s.run_timeout);
  if (s.active) {
    nlohmann::json active = nlohmann::json::object();
    if (s.active->from) active["from"] = FormatTime(*s.active->from);
    if (s.active->until) active["until"] = FormatTime(*s.active->until);
    j["active"] = std::move(active);
  }
  // Absent when the default, so documents from before the field keep their canonical text.
  if (s.on_update != OnUpdate::kDiscard) j["on_update"] = NameOf(kOnUpdatePolicies, s.on_update);
  return j;
}

}  // namespace trigd
