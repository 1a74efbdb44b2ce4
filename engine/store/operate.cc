#include "store/operate.h"

#include <pqxx/pqxx>

#include "core/constraint_checker.h"
#include "core/cron.h"
#include "core/run_lifecycle.h"
#include "core/schedule_parser.h"
#include "core/trigger_eval.h"
#include "model/event.h"
#include "model/job.h"
#include "store/audit_internal.h"
#include "store/control_message.h"
#include "store/pg_internal.h"
#include "store/pg_store.h"

namespace trigd {

using nlohmann::json;
using pg_internal::ApplyInTransaction;
using pg_internal::CheckApplicable;
using pg_internal::DbNow;
using pg_internal::FromMillis;
using pg_internal::Guard;
using pg_internal::Sql;
using pg_internal::SqlIn;

namespace {

json Times(const std::vector<TimePoint>& times) {
  json out = json::array();
  for (TimePoint t : times) out.push_back(FormatTime(t));
  return out;
}

// A schedule row read for an operator's verb.
struct ScheduleRow {
  int64_t id = 0;
  int version = 0;
  std::string state;
  std::optional<std::string> group;
  Schedule schedule;
};

// The schedule named `name`, its row share-locked when `lock` (a change waits for the verb).
Result<ScheduleRow> ReadSchedule(pqxx::transaction_base& tx, const std::string& name, bool lock) {
  auto r =
      tx.exec_params("SELECT id, version, state, document::text, concurrency_group FROM schedules WHERE name = $1" +
                         std::string(lock ? " FOR SHARE" : ""),
                     name);
  if (r.empty()) return NotFound("no schedule named " + name);
  ScheduleRow row;
  row.id = r[0][0].as<int64_t>();
  row.version = r[0][1].as<int>();
  row.state = r[0][2].as<std::string>();
  if (!r[0][4].is_null()) row.group = r[0][4].as<std::string>();
  ParsedSchedule parsed = ParseSchedule(json::parse(r[0][3].as<std::string>()));
  if (!parsed.ok()) return Internal("schedule " + name + ": stored document does not parse");
  row.schedule = std::move(parsed.schedule);
  return row;
}

// Opens a job of `s` whose trigger counts as complete, waiting on its constraints (none when
// `force`): the checker decides it at once.
Result<StartedJob> OpenCompleteJob(pqxx::work& tx, const ScheduleRow& s, const std::string& name,
                                   const std::string& triggered_by, bool force, const std::string& what,
                                   const std::optional<std::string>& rerun_of, const Actor& actor) {
  if (s.state != "active") {
    return FailedPrecondition("schedule " + name + " is " + s.state + ": resume it first (trigctl schedules resume " +
                              name + ")");
  }
  const TimePoint now = DbNow(tx);
  if (s.schedule.active && !s.schedule.active->Contains(now)) {
    return FailedPrecondition(
        "schedule " + name + " is outside its active period (" +
        (s.schedule.active->from ? FormatTime(*s.schedule.active->from) : std::string("...")) + " to " +
        (s.schedule.active->until ? FormatTime(*s.schedule.active->until) : std::string("...")) + ")");
  }
  TriggerState state = NewTriggerState(s.schedule.trigger);
  for (LeafState& leaf : state.leaves) leaf.satisfied = true;
  json history = json::array({{{"at", FormatTime(now)}, {"what", what}}});
  auto r = tx.exec_params(
      "INSERT INTO jobs (schedule_id, schedule_name, schedule_version, state, priority, trigger_state, triggered_by, "
      "history, opened_at, ready_at, next_check_at, concurrency_group, last_decision, rerun_of, started_by) "
      "VALUES ($1, $2, $3, " +
          Sql(JobState::kPendingConstraint) +
          ", $4, $5::jsonb, $6::jsonb, $7::jsonb, now(), now(), now(), $8, $9, $10, $11) RETURNING id",
      s.id, name, s.version, static_cast<int>(s.schedule.priority), TriggerStateToJson(state).dump(), triggered_by,
      history.dump(), s.group, force ? std::optional<std::string>(kForcedByHand) : std::nullopt, rerun_of, actor.who);
  StartedJob out;
  out.job_id = r[0][0].as<int64_t>();
  out.schedule = name;
  out.state = JobStateName(JobState::kPendingConstraint);
  out.rerun_of = rerun_of;
  return out;
}

// For trigd's counters (TakeOperatorActions).
void CountAction(pqxx::transaction_base& tx, const char* action, int64_t count = 1) {
  tx.exec_params("INSERT INTO operator_actions (action, count) VALUES ($1, $2)", std::string(action), count);
}

}  // namespace

json NextFireTimes::ToJson() const {
  json times_out = json::array();
  for (TimePoint t : times) times_out.push_back({{"utc", FormatTime(t)}, {"local", FormatLocalTime(t, timezone)}});
  return {{"schedule", schedule},
          {"state", state},
          {"active_now", active_now},
          {"timezone", timezone},
          {"fire_times", times_out}};
}

json DryRunEntry::ToJson() const {
  json d = json::array();
  for (const FieldChange& c : diff) d.push_back({{"path", c.path}, {"before", c.before}, {"after", c.after}});
  return {{"schedule", schedule},
          {"outcome", outcome},
          {"version", version},
          {"diff", d},
          {"jobs_discarded", jobs_discarded}};
}

json StartedJob::ToJson() const {
  json j = {{"job_id", job_id}, {"schedule", schedule}, {"state", state}};
  j["run_id"] = run_id ? json(*run_id) : json();
  if (rerun_of) j["rerun_of"] = *rerun_of;
  return j;
}

json CancelledRun::ToJson() const {
  return {{"run_id", run_id},   {"schedule", schedule}, {"previous_state", previous_state},
          {"attempt", attempt}, {"state", "killed"},    {"reason", "cancelled"},
          {"why", reason}};
}

json BackfillPlan::ToJson() const {
  return {{"schedule", schedule},          {"fire_times", Times(fire_times)},
          {"produced", fire_times.size()}, {"already_done", already_done},
          {"launched", launched},          {"waiting", waiting}};
}

Result<NextFireTimes> QueryNextFireTimes(const std::string& pg, const std::string& name, size_t count) {
  auto conn = pg_internal::Connect(pg);
  if (!conn.ok()) return conn.status();
  return Guard([&]() -> Result<NextFireTimes> {
    pqxx::read_transaction tx(**conn);
    auto s = ReadSchedule(tx, name, false);
    if (!s.ok()) return s.status();
    const TimeTrigger* t = ScheduleTimeTrigger(s->schedule);
    if (t == nullptr) return Invalid("schedule " + name + " has no time trigger: it has no fire times");
    NextFireTimes out;
    out.schedule = name;
    out.state = s->state;
    out.timezone = t->timezone;
    const TimePoint now = DbNow(tx);
    out.active_now = !s->schedule.active || s->schedule.active->Contains(now);
    TimePoint anchor = now;
    auto tt = tx.exec_params("SELECT " TRIGD_MS("anchor") " FROM time_triggers WHERE schedule_id = $1", s->id);
    if (!tt.empty()) anchor = FromMillis(tt[0][0].as<int64_t>());
    // A suspended schedule has none until it is resumed; the times it would have are shown all
    // the same, as Airflow shows a paused DAG's next run (the state says it is suspended).
    out.times = FireTimesBetween(s->schedule, anchor, now + Millis(1), now + kMaxDuration, count).times;
    return out;
  });
}

Result<std::vector<DryRunEntry>> DryRunApply(const std::string& pg, const std::vector<Schedule>& schedules) {
  // The apply's own path, checks and writes, rolled back at its end: a dry run accepts exactly
  // what an apply accepts (a document too large to launch, a value the database refuses).
  if (Status st = CheckApplicable(schedules); !st.ok()) return st;
  auto conn = pg_internal::Connect(pg);
  if (!conn.ok()) return conn.status();
  return Guard([&]() -> Result<std::vector<DryRunEntry>> {
    pqxx::work tx(**conn);
    std::vector<DryRunEntry> out;
    for (const Schedule& s : schedules) {
      DryRunEntry e;
      e.schedule = s.id().value();
      const json doc = ScheduleToJson(s);
      auto r = tx.exec_params(
          "SELECT s.version, s.document::text, (SELECT count(*) FROM jobs j WHERE j.schedule_id = s.id AND j.state "
          "IN " +
              SqlIn(JobState::kPendingTrigger, JobState::kPendingConstraint) + ") FROM schedules s WHERE s.name = $1",
          e.schedule);
      if (r.empty()) {
        auto deleted = tx.exec_params("SELECT version FROM deleted_schedule_versions WHERE name = $1", e.schedule);
        e.outcome = "new";
        e.version = deleted.empty() ? 1 : deleted[0][0].as<int>() + 1;
      } else {
        e.diff = DiffDocuments(json::parse(r[0][1].as<std::string>()), doc);
        e.outcome = e.diff.empty() ? "unchanged" : "changed";
        e.version = r[0][0].as<int>() + (e.diff.empty() ? 0 : 1);
        if (!e.diff.empty()) e.jobs_discarded = r[0][2].as<int64_t>();
      }
      out.push_back(std::move(e));
    }
    // Its audit rows go with the rest of the rolled-back transaction.
    ApplyInTransaction(tx, schedules, Actor{"dry-run"});
    tx.abort();
    return out;
  });
}

Result<StartedJob> StartRun(const std::string& pg, const std::string& name, const json& args, bool force,
                            const Actor& actor) {
  auto conn = pg_internal::Connect(pg);
  if (!conn.ok()) return conn.status();
  return Guard([&]() -> Result<StartedJob> {
    pqxx::work tx(**conn);
    auto s = ReadSchedule(tx, name, true);
    if (!s.ok()) return s.status();
    json payload = {{"by", actor.who}};
    if (args.is_object() && !args.empty()) payload["args"] = args;
    json triggered_by = json::array(
        {{{"id", "manual:" + pg_internal::NewRunId()}, {"type", "manual"}, {"payload", std::move(payload)}}});
    std::string what = "opened by hand (runs start) by " + actor.who + ": trigger counts as complete";
    if (args.is_object() && !args.empty()) what += "; args " + args.dump();
    if (force) what += "; --force: constraints not applied";
    auto out = OpenCompleteJob(tx, *s, name, triggered_by.dump(), force, what, std::nullopt, actor);
    if (!out.ok()) return out.status();
    json detail = {{"job_id", out->job_id}, {"version", s->version}, {"force", force}};
    if (args.is_object() && !args.empty()) detail["args"] = args;
    audit_internal::Record(tx, actor, AuditAction::kStart, name, std::nullopt, detail);
    CountAction(tx, "start");
    tx.commit();
    return out;
  });
}

Result<StartedJob> RerunRun(const std::string& pg, const std::string& run_id, bool force, const Actor& actor) {
  auto conn = pg_internal::Connect(pg);
  if (!conn.ok()) return conn.status();
  return Guard([&]() -> Result<StartedJob> {
    pqxx::work tx(**conn);
    auto r = tx.exec_params(
        "SELECT r.schedule_name, j.triggered_by::text FROM runs r JOIN jobs j ON j.id = r.job_id WHERE r.run_id = $1",
        run_id);
    if (r.empty()) return NotFound("no run " + run_id);
    const std::string name = r[0][0].as<std::string>();
    auto s = ReadSchedule(tx, name, true);
    if (!s.ok()) {
      if (s.status().code() == StatusCode::kNotFound) {
        return NotFound("run " + run_id + ": its schedule " + name + " no longer exists");
      }
      return s.status();
    }
    std::string what = "opened by hand (runs rerun " + run_id + ") by " + actor.who +
                       ": the same triggered_by, schedule v" + std::to_string(s->version);
    if (force) what += "; --force: constraints not applied";
    auto out = OpenCompleteJob(tx, *s, name, r[0][1].as<std::string>(), force, what, run_id, actor);
    if (!out.ok()) return out.status();
    audit_internal::Record(tx, actor, AuditAction::kRerun, name, run_id,
                           {{"job_id", out->job_id}, {"version", s->version}, {"force", force}});
    tx.exec_params(
        "UPDATE runs SET history = trigd_append_history(history, "
        "jsonb_build_array(jsonb_build_object('at', " TRIGD_NOW_TEXT ", 'what', $2::text))) WHERE run_id = $1",
        run_id, "rerun by " + actor.who + " as job " + std::to_string(out->job_id));
    CountAction(tx, "rerun");
    tx.commit();
    return out;
  });
}

Result<StartedJob> QueryStartedJob(const std::string& pg, int64_t job_id) {
  auto conn = pg_internal::Connect(pg);
  if (!conn.ok()) return conn.status();
  return Guard([&]() -> Result<StartedJob> {
    pqxx::read_transaction tx(**conn);
    auto r = tx.exec_params(
        "SELECT j.state, j.schedule_name, r.run_id, j.rerun_of, j.discard_reason FROM jobs j "
        "LEFT JOIN runs r ON r.job_id = j.id WHERE j.id = $1",
        job_id);
    if (r.empty()) return NotFound("no job " + std::to_string(job_id));
    StartedJob out;
    out.job_id = job_id;
    out.state = r[0][0].as<std::string>();
    out.schedule = r[0][1].as<std::string>();
    if (!r[0][2].is_null()) out.run_id = r[0][2].as<std::string>();
    if (!r[0][3].is_null()) out.rerun_of = r[0][3].as<std::string>();
    return out;
  });
}

Result<CancelledRun> CancelRun(const std::string& pg, const std::string& topic_prefix, const std::string& run_id,
                               const std::string& why, const Actor& actor) {
  auto conn = pg_internal::Connect(pg);
  if (!conn.ok()) return conn.status();
  return Guard([&]() -> Result<CancelledRun> {
    pqxx::work tx(**conn);
    auto r = tx.exec_params("SELECT state, schedule_name, schedule_id, job_id FROM runs WHERE run_id = $1 FOR UPDATE",
                            run_id);
    if (r.empty()) return NotFound("no run " + run_id);
    const RunState from = pg_internal::RunStateOf(r[0][0]);
    if (!OnCancel(from)) {
      return FailedPrecondition("run " + run_id + " has finished (" + RunStateName(from) +
                                "): there is nothing to cancel");
    }
    CancelledRun out;
    out.run_id = run_id;
    out.schedule = r[0][1].as<std::string>();
    out.previous_state = RunStateName(from);
    out.reason = why;
    // A launch request not yet published is withdrawn: no worker ever sees it.
    tx.exec_params("DELETE FROM outbox WHERE job_id = $1", r[0][3].as<int64_t>());
    json entry = {{"status", "killed"}, {"reason", "cancelled"}, {"by", actor.who}};
    if (!why.empty()) entry["why"] = why;
    auto ended = tx.exec_params("UPDATE runs SET state=" + Sql(RunState::kKilled) +
                                    ", reason='cancelled', finished_at=now(), next_attempt_at=NULL, "
                                    "history = trigd_append_history(history, jsonb_build_array($2::jsonb || "
                                    "jsonb_build_object('at', " TRIGD_NOW_TEXT
                                    ", 'attempt', attempt))) WHERE run_id = $1 "
                                    "RETURNING concurrency_group, " TRIGD_ENDED_RUN_COLUMNS,
                                run_id, entry.dump());
    out.attempt = ended[0][2].as<int64_t>();
    // trigd's own `killed` event (reason cancelled) for downstream triggers, and the control
    // message that stops the worker running it: both in the outbox, published by the relay.
    pg_internal::AnnounceEndedRuns(tx, TopicNames(topic_prefix), ended, 1, {"killed", "cancelled", "killed"});
    const int64_t schedule_id = r[0][2].as<int64_t>();
    std::optional<std::string> group;
    if (!ended[0][0].is_null()) group = ended[0][0].as<std::string>();
    pg_internal::DecrementRunCounters(tx, {EndedRun{schedule_id, group}});
    // The jobs waiting for the slot it held are checked now.
    tx.exec_params("UPDATE jobs SET next_check_at = now() WHERE id IN (SELECT id FROM jobs WHERE state = " +
                       Sql(JobState::kPendingConstraint) +
                       " AND next_check_at > now() AND (schedule_id = $1 OR concurrency_group = $2) FOR UPDATE SKIP "
                       "LOCKED)",
                   schedule_id, group);
    json detail = {{"previous_state", out.previous_state}, {"attempt", out.attempt}};
    if (!why.empty()) detail["why"] = why;
    audit_internal::Record(tx, actor, AuditAction::kCancel, out.schedule, run_id, detail);
    CountAction(tx, "cancel");
    tx.commit();
    return out;
  });
}

Result<BackfillPlan> PlanBackfill(const std::string& pg, const std::string& name, TimePoint from, TimePoint to,
                                  size_t max) {
  // Before anything is read: a backfill's plan and ticks are held in memory.
  if (max > kMaxBackfillFireTimes) {
    return Invalid("max (--max) must be at most " + std::to_string(kMaxBackfillFireTimes) +
                   " fire times per backfill, got " + std::to_string(max) + ": backfill a longer range in parts");
  }
  auto conn = pg_internal::Connect(pg);
  if (!conn.ok()) return conn.status();
  return Guard([&]() -> Result<BackfillPlan> {
    pqxx::read_transaction tx(**conn);
    auto s = ReadSchedule(tx, name, false);
    if (!s.ok()) return s.status();
    if (ScheduleTimeTrigger(s->schedule) == nullptr) {
      return Invalid("schedule " + name + " has no time trigger: there are no fire times to backfill");
    }
    if (to <= from) return Invalid("--to (" + FormatTime(to) + ") must be after --from (" + FormatTime(from) + ")");
    TimePoint anchor = from;
    auto tt = tx.exec_params("SELECT " TRIGD_MS("anchor") " FROM time_triggers WHERE schedule_id = $1", s->id);
    if (!tt.empty()) anchor = FromMillis(tt[0][0].as<int64_t>());
    // Counted before any is kept: a range over its limit is refused without building it.
    if (CountFireTimesBetween(s->schedule, anchor, from, to, max) > max) {
      return Invalid("the range holds more than " + std::to_string(max) + " fire times of schedule " + name +
                     " (--max N raises the limit)");
    }
    BackfillPlan out;
    out.schedule = name;
    out.fire_times = FireTimesBetween(s->schedule, anchor, from, to, max).times;
    json ids = json::array(), fires = json::array();
    for (TimePoint t : out.fire_times) {
      ids.push_back(OwnTickId(name, FormatTime(t)));
      fires.push_back(FormatTime(t));
    }
    // Decided before: ticked (the identity recorded), or produced by trigd itself (up to its last
    // fire time, and not among those it skipped).
    out.already_done =
        tx.exec_params(
              "SELECT count(*) FROM jsonb_array_elements_text($1::jsonb) WITH ORDINALITY AS f(fire, i) "
              "JOIN jsonb_array_elements_text($2::jsonb) WITH ORDINALITY AS d(id, k) ON i = k "
              "WHERE EXISTS (SELECT 1 FROM seen_events WHERE seen_events.id = d.id) OR EXISTS (SELECT 1 FROM "
              "time_triggers t WHERE t.schedule_id = $3 AND f.fire::timestamptz > t.anchor AND "
              "f.fire::timestamptz <= t.last_fire_time AND NOT t.not_fired @> f.fire::timestamptz)",
              fires.dump(), ids.dump(), s->id)[0][0]
            .as<int64_t>();
    auto progress = tx.exec_params(
        "SELECT j.state, count(DISTINCT e->'payload'->>'fire_time') FROM jobs j, jsonb_array_elements(j.triggered_by) "
        "e "
        "WHERE j.schedule_id = $1 AND e->>'type' = 'tick' AND "
        "(e->'payload'->>'fire_time')::timestamptz = ANY (SELECT x::timestamptz FROM "
        "jsonb_array_elements_text($2::jsonb) x) "
        "GROUP BY j.state",
        s->id, fires.dump());
    for (const auto& row : progress) {
      const std::string state = row[0].as<std::string>();
      if (state == JobStateName(JobState::kLaunched)) out.launched = row[1].as<int64_t>();
      if (state == JobStateName(JobState::kPendingConstraint)) out.waiting = row[1].as<int64_t>();
    }
    return out;
  });
}

Status RecordBackfill(const std::string& pg, const std::string& schedule, TimePoint from, TimePoint to, int64_t ticks,
                      const Actor& actor) {
  auto conn = pg_internal::Connect(pg);
  if (!conn.ok()) return conn.status();
  return Guard([&]() -> Result<int> {
           pqxx::work tx(**conn);
           CountAction(tx, "backfill_tick", ticks);
           audit_internal::Record(tx, actor, AuditAction::kBackfill, schedule, std::nullopt,
                                  {{"from", FormatTime(from)}, {"to", FormatTime(to)}, {"ticks", ticks}});
           tx.commit();
           return 0;
         })
      .status();
}

Result<std::map<std::string, int64_t>> TakeOperatorActions(pqxx::connection& c) {
  return Guard([&]() -> Result<std::map<std::string, int64_t>> {
    pqxx::work tx(c);
    std::map<std::string, int64_t> out;
    for (const auto& r :
         tx.exec("WITH t AS (DELETE FROM operator_actions WHERE seq IN (SELECT seq FROM operator_actions ORDER BY seq "
                 "LIMIT 1000 FOR UPDATE SKIP LOCKED) RETURNING action, count) "
                 "SELECT action, sum(count)::bigint FROM t GROUP BY action")) {
      out[r[0].as<std::string>()] = r[1].as<int64_t>();
    }
    tx.commit();
    return out;
  });
}

}  // namespace trigd
