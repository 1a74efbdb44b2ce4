// The read side of trigctl and the API: lists (jobs, runs, schedules) and single rows as JSON
// built by PostgreSQL, and the facts `jobs why` explains. The writes are in admin.cc.
#include <functional>

#include <pqxx/pqxx>

#include "core/schedule_parser.h"
#include "model/job.h"
#include "store/admin.h"
#include "store/pg_internal.h"

// A schedule's time trigger's next fire time, for `schedules list` and `show` (none while
// suspended, or without a time trigger): a cron or every schedule has no job to ask `jobs why`
// about before its first tick. For rows of schedules aliased s.
#define TRIGD_NEXT_FIRE_AT                                                                   \
  "(SELECT CASE WHEN isfinite(t.next_fire_at) THEN t.next_fire_at END FROM time_triggers t " \
  "WHERE t.schedule_id = s.id) AS next_fire_at"

namespace trigd {

using nlohmann::json;
using pg_internal::DbNow;
using pg_internal::FromMillis;
using pg_internal::Guard;
using pg_internal::Sql;

namespace {

// The rows of `st` as one JSON array, built by PostgreSQL itself.
json RowsJson(pqxx::transaction_base& tx, const ListStatement& st) {
  pqxx::result r = tx.exec_params("SELECT coalesce(json_agg(q), '[]'::json)::text FROM (" + st.sql + ") q",
                                  pqxx::prepare::make_dynamic_params(st.params));
  return json::parse(r[0][0].as<std::string>());
}

Result<nlohmann::json> QueryJson(const std::string& pg, const std::string& sql,
                                 const std::vector<std::optional<std::string>>& params) {
  auto conn = pg_internal::Connect(pg);
  if (!conn.ok()) return conn.status();
  return Guard([&]() -> Result<nlohmann::json> {
    pqxx::read_transaction tx(**conn);
    return RowsJson(tx, {sql, params});
  });
}

// A list, of one schedule name's rows when `schedule` is given: the ids the name has had (the
// current schedule's and those its deletes recorded, schema/013) are read first, as a
// PostgreSQL array, and `make` builds the statement for them. One statement reads both tables,
// so a delete committing meanwhile is seen whole or not at all: the id is in one or the other.
Result<nlohmann::json> QueryList(const std::string& pg, const std::optional<std::string>& schedule,
                                 const std::function<ListStatement(const std::optional<std::string>&)>& make) {
  auto conn = pg_internal::Connect(pg);
  if (!conn.ok()) return conn.status();
  return Guard([&]() -> Result<nlohmann::json> {
    pqxx::read_transaction tx(**conn);
    std::optional<std::string> ids;
    if (schedule) {
      auto r = tx.exec_params(
          "SELECT array(SELECT id FROM schedules WHERE name = $1 UNION "
          "SELECT unnest(ids) FROM deleted_schedule_versions WHERE name = $1 ORDER BY 1)::text, "
          "EXISTS (SELECT 1 FROM schedules WHERE name = $1) OR "
          "EXISTS (SELECT 1 FROM deleted_schedule_versions WHERE name = $1)",
          *schedule);
      if (!r[0][1].as<bool>()) return NotFound("no schedule named " + *schedule);
      ids = r[0][0].as<std::string>();
    }
    return RowsJson(tx, make(ids));
  });
}

}  // namespace

// A job's last checker decision (`waiting for …`) is shown while it is pending; once launched
// or discarded the checker writes none, so the last one would read as still current ("state:
// launched, last_decision: waiting for time_window"). Its history keeps it.
namespace {
Result<nlohmann::json> WithoutStaleDecisions(Result<nlohmann::json> rows) {
  if (!rows.ok()) return rows;
  for (nlohmann::json& job : *rows) {
    const std::string state = job.value("state", "");
    if (state != JobStateName(JobState::kPendingTrigger) && state != JobStateName(JobState::kPendingConstraint)) {
      job["last_decision"] = nullptr;
    }
  }
  return rows;
}
}  // namespace

ListStatement JobsListStatement(const std::optional<std::string>& state, const std::optional<std::string>& schedule_ids,
                                size_t limit) {
  const std::string n = std::to_string(limit);
  const std::string columns =
      "id, schedule_name, schedule_version, state, priority, opened_at, ready_at, next_check_at, finished_at, "
      "discard_reason, last_decision";
  ListStatement st;
  std::string state_is;
  if (state) {
    st.params.push_back(state);
    state_is = "state = $1";
  }
  std::string newest;
  if (schedule_ids) {
    // Each id's newest through jobs_by_schedule (schedule_id, id), backwards; then the newest of
    // those. (`schedule_id = ANY(ids) ORDER BY id DESC` would read every job of the ids and sort.)
    st.params.push_back(schedule_ids);
    newest = "SELECT x.* FROM unnest($" + std::to_string(st.params.size()) +
             "::bigint[]) AS s(id) CROSS JOIN LATERAL ("
             "SELECT " +
             columns + " FROM jobs WHERE schedule_id = s.id" + (state ? " AND " + state_is : "") +
             " ORDER BY id DESC LIMIT " + n + ") x ORDER BY x.id DESC LIMIT " + n;
  } else {
    // Backwards through the primary key; a pending state through its partial index.
    newest = "SELECT " + columns + " FROM jobs" + (state ? " WHERE " + state_is : "") + " ORDER BY id DESC LIMIT " + n;
  }
  // The run of each of those (runs_job_id_key), once they are chosen.
  st.sql =
      "SELECT j.id, j.schedule_name AS schedule, j.schedule_version AS version, j.state, j.priority, "
      "j.opened_at, j.ready_at, j.next_check_at, j.finished_at, j.discard_reason, j.last_decision, r.run_id "
      "FROM (" +
      newest + ") j LEFT JOIN runs r ON r.job_id = j.id ORDER BY j.id DESC";
  return st;
}

ListStatement RunsListStatement(const std::optional<std::string>& schedule_ids, size_t limit) {
  const std::string n = std::to_string(limit);
  const std::string columns =
      "run_id, job_id, schedule_name AS schedule, program, target, state, attempt, launched_at, last_seen_at, "
      "finished_at, reason, attempt_launched_at, attempt_started_at, worker";
  ListStatement st;
  if (schedule_ids) {
    // Each id's newest through runs_by_schedule_time (schedule_id, launched_at), backwards.
    st.params.push_back(schedule_ids);
    st.sql = "SELECT x.* FROM unnest($1::bigint[]) AS s(id) CROSS JOIN LATERAL (SELECT " + columns +
             " FROM runs WHERE schedule_id = s.id ORDER BY launched_at DESC, run_id DESC LIMIT " + n +
             ") x ORDER BY x.launched_at DESC, x.run_id DESC LIMIT " + n;
  } else {
    // The newest by run id, backwards through the primary key: a UUIDv7, whose first 48 bits are
    // the time of the run's first launch, which is what launched_at holds (a retry changes
    // neither). `ORDER BY launched_at DESC` had no index to follow: a scan and a sort of every
    // run ever launched. The ids' times are trigd's clocks, launched_at the database's: the
    // chosen rows are shown in launched_at order, so the column reads newest first.
    st.sql = "SELECT * FROM (SELECT " + columns + " FROM runs ORDER BY run_id DESC LIMIT " + n +
             ") x ORDER BY launched_at DESC, run_id DESC";
  }
  return st;
}

ListStatement SchedulesListStatement(std::optional<size_t> limit) {
  // Open jobs counted through the partial indexes of each pending state (jobs_one_open,
  // jobs_waiting_by_schedule): `state IN (both)` went through jobs_by_schedule, every job the
  // schedule ever had.
  return {
      "SELECT s.name, s.version, s.state, s.updated_at, "
      "(SELECT count(*) FROM jobs j WHERE j.schedule_id = s.id AND j.state = " +
          Sql(JobState::kPendingTrigger) +
          ") + "
          "(SELECT count(*) FROM jobs j WHERE j.schedule_id = s.id AND j.state = " +
          Sql(JobState::kPendingConstraint) +
          ") AS open_jobs, "
          // Active runs: the schedule's run counter, the number its constraints are decided
          // with (runs has no index by schedule over active runs: docs/adr/0095).
          "coalesce((SELECT rt.active_runs FROM schedule_runtime rt WHERE rt.schedule_id = s.id), 0) "
          "AS active_runs, " TRIGD_NEXT_FIRE_AT " FROM schedules s ORDER BY s.name" +
          (limit ? " LIMIT " + std::to_string(*limit) : std::string()),
      {}};
}

Result<nlohmann::json> QueryJobs(const std::string& pg, const std::optional<std::string>& state,
                                 const std::optional<std::string>& schedule, size_t limit) {
  return WithoutStaleDecisions(QueryList(
      pg, schedule, [&](const std::optional<std::string>& ids) { return JobsListStatement(state, ids, limit); }));
}

Result<nlohmann::json> QueryJob(const std::string& pg, int64_t id) {
  return WithoutStaleDecisions(QueryJson(pg,
                                         "SELECT j.*, r.run_id, r.state AS run_state FROM jobs j "
                                         "LEFT JOIN runs r ON r.job_id = j.id WHERE j.id = $1::bigint",
                                         {std::to_string(id)}));
}

Result<nlohmann::json> QueryRuns(const std::string& pg, const std::optional<std::string>& schedule, size_t limit) {
  return QueryList(pg, schedule, [&](const std::optional<std::string>& ids) { return RunsListStatement(ids, limit); });
}

Result<nlohmann::json> QueryRun(const std::string& pg, const std::string& run_id) {
  // How it started: by hand, who (runs start or rerun: the job's started_by; a job opened
  // before schema/026, the manual entry of its triggered_by); and its reruns both ways.
  return QueryJson(pg,
                   "SELECT r.*, "
                   "coalesce(j.started_by, (SELECT e->'payload'->>'by' FROM jsonb_array_elements(j.triggered_by) e "
                   "WHERE e->>'type' = 'manual' LIMIT 1)) AS started_by_hand, "
                   "j.rerun_of, (SELECT coalesce(json_agg(r2.run_id ORDER BY j2.id), '[]'::json) FROM jobs j2 "
                   "JOIN runs r2 ON r2.job_id = j2.id WHERE j2.rerun_of = r.run_id) AS reruns "
                   "FROM runs r LEFT JOIN jobs j ON j.id = r.job_id WHERE r.run_id = $1",
                   {run_id});
}

Result<nlohmann::json> QuerySchedules(const std::string& pg, std::optional<size_t> limit) {
  const ListStatement st = SchedulesListStatement(limit);
  return QueryJson(pg, st.sql, st.params);
}

Result<nlohmann::json> QuerySchedule(const std::string& pg, const std::string& name) {
  return QueryJson(pg,
                   "SELECT s.name, s.version, s.state, "
                   // Inside its active period (SPEC §9) now; outside it the schedule acts as suspended.
                   "coalesce((s.document->'active'->>'from')::timestamptz <= now(), true) AND "
                   "coalesce(now() < (s.document->'active'->>'until')::timestamptz, true) AS active_now, "
                   "s.created_at, s.updated_at, " TRIGD_NEXT_FIRE_AT
                   ", s.document "
                   "FROM schedules s WHERE s.name = $1",
                   {name});
}

Result<nlohmann::json> QueryScheduleVersions(const std::string& pg, const std::string& name, size_t limit) {
  auto r = QueryJson(pg,
                     "SELECT version, applied_at, document FROM schedule_versions WHERE name = $1 "
                     "ORDER BY version DESC LIMIT " +
                         std::to_string(limit),
                     {name});
  if (r.ok() && r->empty()) return NotFound("no schedule named " + name);
  return r;
}

Result<nlohmann::json> QueryScheduleGraphRows(const std::string& pg) {
  // Open jobs through the partial indexes of each pending state, as the schedules list counts
  // them; the last run through runs_by_schedule_time, read backwards.
  return QueryJson(pg,
                   "SELECT s.name, s.state, s.document, "
                   "(SELECT count(*) FROM jobs j WHERE j.schedule_id = s.id AND j.state = " +
                       Sql(JobState::kPendingTrigger) +
                       ") + (SELECT count(*) FROM jobs j WHERE j.schedule_id = s.id AND j.state = " +
                       Sql(JobState::kPendingConstraint) +
                       ") AS open_jobs, "
                       "(SELECT r.state FROM runs r WHERE r.schedule_id = s.id ORDER BY r.launched_at DESC LIMIT 1) "
                       "AS last_run_state FROM schedules s ORDER BY s.name",
                   {});
}

Result<nlohmann::json> QueryOffsets(const std::string& pg) {
  return QueryJson(pg,
                   "SELECT group_id AS group, topic, partition, next_offset, updated_at FROM consumer_offsets "
                   "ORDER BY group_id, topic, partition",
                   {});
}

Status SetOffsets(const std::string& pg, const std::string& group,
                  const std::vector<std::tuple<std::string, int, int64_t>>& offsets) {
  auto conn = pg_internal::Connect(pg);
  if (!conn.ok()) return conn.status();
  Result<int> r = Guard([&]() -> Result<int> {
    pqxx::work tx(**conn);
    for (const auto& [topic, partition, next] : offsets) {
      tx.exec_params(
          "INSERT INTO consumer_offsets (group_id, topic, partition, next_offset) VALUES ($1, $2, $3, $4) "
          "ON CONFLICT (group_id, topic, partition) DO UPDATE SET next_offset = EXCLUDED.next_offset, updated_at = "
          "now()",
          group, topic, partition, next);
    }
    tx.commit();
    return 0;
  });
  return r.ok() ? Status() : r.status();
}

Result<JobInspection> InspectJob(const std::string& pg, int64_t id) {
  auto conn = pg_internal::Connect(pg);
  if (!conn.ok()) return conn.status();
  return Guard([&]() -> Result<JobInspection> {
    pqxx::work tx(**conn);
    JobInspection out;
    out.now = DbNow(tx);
    auto j = tx.exec_params(
        "SELECT coalesce(json_agg(q), '[]'::json)::text FROM (SELECT j.*, r.run_id, r.state AS run_state, "
        TRIGD_MS("j.opened_at") " AS opened_at_ms, " TRIGD_MS("j.ready_at") " AS ready_at_ms, "
        TRIGD_MS("j.next_check_at") " AS next_check_at_ms, "
        "EXISTS (SELECT 1 FROM outbox o WHERE o.job_id = j.id) AS request_unpublished FROM jobs j LEFT JOIN runs r ON r.job_id = j.id "
        "WHERE j.id = $1) q", id);
    json rows = json::parse(j[0][0].as<std::string>());
    if (rows.empty()) return NotFound("no job " + std::to_string(id));
    out.job = rows[0];
    int64_t sid = out.job["schedule_id"].get<int64_t>();
    int version = out.job["schedule_version"].get<int>();
    auto s = tx.exec_params("SELECT version, state, document::text, concurrency_group FROM schedules WHERE id=$1", sid);
    if (s.empty()) {
      out.schedule_state = "deleted";
      return out;
    }
    out.schedule_state = s[0][1].as<std::string>();
    if (s[0][0].as<int>() != version) {
      out.schedule_state = "updated (now v" + std::to_string(s[0][0].as<int>()) + ")";
      return out;
    }
    ParsedSchedule parsed = ParseSchedule(json::parse(s[0][2].as<std::string>()));
    if (parsed.ok()) out.schedule = parsed.schedule;
    // Its next fire time, for `jobs why` to show beside a time branch still waiting for its tick.
    auto tt = tx.exec_params("SELECT leaf, CASE WHEN isfinite(next_fire_at) THEN " TRIGD_MS(
                                 "next_fire_at") " END FROM time_triggers WHERE schedule_id=$1",
                             sid);
    if (!tt.empty()) {
      out.time_trigger = JobInspection::TimeTriggerRow{tt[0][0].as<int>(), std::nullopt};
      if (!tt[0][1].is_null()) out.time_trigger->next_fire_at = FromMillis(tt[0][1].as<int64_t>());
    }
    auto rt = tx.exec_params(
        "SELECT active_runs, " TRIGD_MS("last_launch_at") " FROM schedule_runtime WHERE schedule_id=$1", sid);
    if (!rt.empty()) {
      out.facts.active_runs = rt[0][0].as<int64_t>();
      if (!rt[0][1].is_null()) out.facts.last_launch = FromMillis(rt[0][1].as<int64_t>());
    }
    if (!s[0][3].is_null()) {
      auto g = tx.exec_params("SELECT active_runs FROM group_runtime WHERE name=$1", s[0][3].as<std::string>());
      if (!g.empty()) out.facts.group_active_runs = g[0][0].as<int64_t>();
    }
    if (out.schedule && out.schedule->constraints.max_runs_per) {
      for (const auto& r : tx.exec_params(
               "SELECT " TRIGD_MS("launched_at") " FROM runs WHERE schedule_id=$1 AND "
                                                 "launched_at > now() - make_interval(secs => $2::bigint / 1000.0)",
               sid, static_cast<int64_t>(out.schedule->constraints.max_runs_per->period.count()))) {
        out.facts.launches_in_period.push_back(FromMillis(r[0].as<int64_t>()));
      }
    }
    return out;
  });
}

}  // namespace trigd
