#include "store/admin.h"

#include <functional>
#include <map>
#include <set>

#include <pqxx/pqxx>

#include "common/check.h"
#include "core/accumulator.h"
#include "core/cron.h"
#include "core/envelope.h"
#include "core/launch_request.h"
#include "core/operate.h"
#include "core/run_lifecycle.h"
#include "core/schedule_parser.h"
#include "core/trigger_eval.h"
#include "model/job.h"
#include "store/audit_internal.h"
#include "store/pg_internal.h"
#include "store/pg_store.h"
#include "store/sql_array.h"

namespace trigd {

using nlohmann::json;
using pg_internal::ApplyInTransaction;
using pg_internal::CheckApplicable;
using pg_internal::DbNow;
using pg_internal::FromMillis;
using pg_internal::Guard;
using pg_internal::Sql;
using pg_internal::SqlArray;
using pg_internal::SqlIn;
using pg_internal::ToMillis;

namespace {

// on_update: reevaluate (SPEC §11). The collecting job of `schedule` (its new version) has its
// triggering events applied again to a fresh state of the new trigger: it completes at once
// (pending_constraint, due now) or goes on collecting with what the new trigger counts. A job
// already waiting on its constraints keeps waiting (its trigger was complete; a job never goes
// back to collecting, model/job.h). Its history says which.
// Quiet and silence leaves take the update's instant as their events' arrival: their periods
// count from the update.
template <class Tx>
void ReevaluateJobs(Tx& tx, int64_t schedule_id, const Schedule& schedule, TimePoint now) {
  const pqxx::result rows = tx.exec_params(
      "SELECT id, triggered_by::text, " TRIGD_MS("opened_at") " FROM jobs WHERE schedule_id = $1 AND state = " +
          Sql(JobState::kPendingTrigger) + " FOR UPDATE",
      schedule_id);
  for (const auto& r : rows) {
    const json events = json::parse(r[1].as<std::string>(), nullptr, false);
    TriggerState state = NewTriggerState(schedule.trigger);
    if (events.is_array()) {
      for (const json& e : events) {
        if (!e.is_object()) continue;
        // The stored {id, type, payload} as an envelope again (its time is not kept: now).
        json envelope = {{"id", e.value("id", "")},
                         {"type", e.value("type", "")},
                         {"time", "2000-01-01T00:00:00Z"},
                         {"payload", e.value("payload", json::object())}};
        Result<Event> event = ParseEnvelope(envelope.dump(-1, ' ', false, json::error_handler_t::replace));
        if (event.ok()) ApplyEvent(schedule.trigger, schedule.id(), *event, state, now);
      }
    }
    const bool complete = IsComplete(schedule.trigger, state);
    const std::optional<TimePoint> wake =
        complete ? std::nullopt : CollectingJobWake(schedule, state, FromMillis(r[2].as<int64_t>()));
    const std::string what = complete ? "reevaluated: trigger complete under the new version"
                                      : "reevaluated: collecting under the new version";
    tx.exec_params(
        "UPDATE jobs SET trigger_state = $2::jsonb, state = $3, ready_at = CASE WHEN $4 THEN now() END, "
        "next_check_at = CASE WHEN $4 THEN now() ELSE to_timestamp($6::bigint / 1000.0) END, "
        "history = trigd_append_history(history, jsonb_build_array(jsonb_build_object('at', " TRIGD_NOW_TEXT
        ", 'what', $5::text))) WHERE id = $1",
        r[0].as<int64_t>(), TriggerStateToJson(state).dump(),
        std::string(JobStateName(complete ? JobState::kPendingConstraint : JobState::kPendingTrigger)), complete, what,
        wake ? std::optional<int64_t>(ToMillis(*wake)) : std::nullopt);
  }
}

// A schedule with a silence leaf (SPEC §11) counts its silence from its apply or resume, not
// from a first arrival: its collecting job is armed now (one opened, or the one kept by
// on_update keep/reevaluate), due at the silence's end, when the checker completes it; each
// arrival re-arms it through the ingest (docs/adr/0131-silence-armed-job.md).
void ArmSilenceJob(pqxx::work& tx, int64_t id, const Schedule& s, TimePoint now) {
  if (!HasSilence(s.trigger)) return;
  const pqxx::result open =
      tx.exec_params("SELECT id, trigger_state::text, " TRIGD_MS(
                         "opened_at") " FROM jobs WHERE schedule_id = $1 AND lineage = '' AND state = " +
                         Sql(JobState::kPendingTrigger) + " FOR UPDATE",
                     id);
  const std::string at = FormatTime(now);
  if (!open.empty()) {
    TriggerState state = TriggerStateFromJson(json::parse(open[0][1].as<std::string>(), nullptr, false));
    ArmSilence(s.trigger, state, now);
    const std::optional<TimePoint> wake = CollectingJobWake(s, state, FromMillis(open[0][2].as<int64_t>()));
    tx.exec_params(
        "UPDATE jobs SET trigger_state = $2::jsonb, next_check_at = to_timestamp($3::bigint / 1000.0) WHERE id = $1",
        open[0][0].as<int64_t>(), TriggerStateToJson(state).dump(),
        wake ? std::optional<int64_t>(ToMillis(*wake)) : std::nullopt);
    return;
  }
  TriggerState state = NewTriggerState(s.trigger);
  ArmSilence(s.trigger, state, now);
  const std::optional<TimePoint> wake = CollectingJobWake(s, state, now);
  const json history = json::array({{{"at", at}, {"what", "opened: silence armed"}}});
  tx.exec_params(
      "INSERT INTO jobs (schedule_id, schedule_name, schedule_version, state, priority, trigger_state, triggered_by, "
      "history, opened_at, next_check_at, concurrency_group) "
      "SELECT id, name, version, " +
          Sql(JobState::kPendingTrigger) +
          ", $2, $3::jsonb, '[]'::jsonb, $4::jsonb, to_timestamp($5::bigint / 1000.0), "
          "to_timestamp($6::bigint / 1000.0), concurrency_group FROM schedules WHERE id = $1",
      id, static_cast<int>(s.priority), TriggerStateToJson(state).dump(), history.dump(), ToMillis(now),
      wake ? std::optional<int64_t>(ToMillis(*wake)) : std::nullopt);
}

// Schedule changes are serialized so that the change log's sequence order is its commit order:
// a running trigd follows it by sequence and must never skip a change committed late.
void LockChangeLog(pqxx::work& tx) { tx.exec("LOCK TABLE schedule_changes IN EXCLUSIVE MODE"); }

// `jobs_discarded` and `runs_killed`: for trigd's counters (PgStore::TakeChangeCounts).
void LogChange(pqxx::work& tx, int64_t id, int64_t jobs_discarded = 0, int64_t runs_killed = 0) {
  tx.exec_params("INSERT INTO schedule_changes (schedule_id, jobs_discarded, runs_killed) VALUES ($1, $2, $3)", id,
                 jobs_discarded, runs_killed);
}

// (Re)starts a schedule's time trigger on resume: fire times count from now. A cron trigger
// keeps what it decided before (its fire times do not depend on the anchor): everything up to
// now counts as decided, the fire times of the suspension as not fired, so a producer's tick
// for a fire time trigd produced before the suspension stays a duplicate and one for a fire
// time of the suspension is a backfill (PgStore::CheckProducerTicks). An `every` trigger's fire
// times are anchored at the resume, so it starts afresh.
void ResetTimeTrigger(pqxx::work& tx, int64_t id, const Schedule& s, TimePoint now) {
  std::vector<const Trigger*> leaves = TriggerLeaves(s.trigger);
  for (size_t i = 0; i < leaves.size(); ++i) {
    if (leaves[i]->kind != TriggerKind::kTime) continue;
    std::optional<TimePoint> next = NextActiveFireTime(leaves[i]->time, s.active, now, now);
    tx.exec_params(
        "INSERT INTO time_triggers (schedule_id, anchor, last_fire_time, next_fire_at, leaf) "
        "VALUES ($1, to_timestamp($2::bigint / 1000.0), NULL, coalesce(to_timestamp($3::bigint / 1000.0), 'infinity'), "
        "$4) "
        "ON CONFLICT (schedule_id) DO UPDATE SET "
        "anchor = CASE WHEN $5 THEN time_triggers.anchor ELSE EXCLUDED.anchor END, "
        "last_fire_time = CASE WHEN $5 THEN EXCLUDED.anchor END, "
        "not_fired = CASE WHEN $5 THEN time_triggers.not_fired + tstzmultirange(tstzrange(least(coalesce("
        "time_triggers.last_fire_time, time_triggers.anchor), EXCLUDED.anchor), EXCLUDED.anchor, '(]')) ELSE '{}' END, "
        "next_fire_at = EXCLUDED.next_fire_at, leaf = EXCLUDED.leaf",
        id, ToMillis(now), next ? std::optional<int64_t>(ToMillis(*next)) : std::nullopt, static_cast<int>(i),
        leaves[i]->time.cron.has_value());
    return;  // one time leaf drives a schedule's ticks (docs/adr/0025-parser-limits.md)
  }
  tx.exec_params("DELETE FROM time_triggers WHERE schedule_id = $1", id);
}

// Returns how many it discarded.
int64_t DiscardOpenJobs(pqxx::work& tx, int64_t id, const std::string& reason) {
  return tx
      .exec_params(
          "UPDATE jobs SET state=" + Sql(JobState::kDiscarded) +
              ", discard_reason=$2, finished_at=now(), next_check_at=NULL, "
              "history = trigd_append_history(history, jsonb_build_array(jsonb_build_object('at', " TRIGD_NOW_TEXT
              ", "
              "'what', 'discarded: ' || $2::text))) "
              "WHERE schedule_id=$1 AND state IN " +
              SqlIn(JobState::kPendingTrigger, JobState::kPendingConstraint),
          id, reason)
      .affected_rows();
}

// How many times a change runs when PostgreSQL aborts it (a deadlock or a serialization failure).
constexpr int kChangeAttempts = 5;

// Runs a change's transaction (f, through Guard), again when it is aborted. A change locks its
// schedules, then their open jobs and time triggers; a transaction that holds a job or a trigger
// and then locks its schedule can meet it in a deadlock, which PostgreSQL breaks after
// deadlock_timeout by aborting the transaction whose check finds it, often the change. (The
// engine's checks and ticks lock no schedule row: ADR 0177.) The engine reruns its own
// transactions; a user's apply or suspend must not fail on it either.
template <class F>
auto RunChange(F&& f) -> decltype(f()) {
  for (int attempt = 1;; ++attempt) {
    auto r = Guard(f);
    if (r.ok() || r.status().code() != StatusCode::kAborted || attempt == kChangeAttempts) return r;
  }
}

}  // namespace

namespace {

// A stored schedule that an apply names.
struct CurrentSchedule {
  int64_t id;
  int version;
  std::string hash;
  bool active;       // its state now
  bool doc_enabled;  // its stored document's `enabled`
};

// What one apply writes: the outcome of each document, the rows of the new and changed ones.
struct ApplyPlan {
  std::vector<ApplyOutcome> out;
  std::vector<bool> active;     // each schedule's state after the apply
  std::vector<size_t> changed;  // indices into the documents
  json inserts = json::array(), updates = json::array();
};

// The named schedules, locked, and the versions their deleted names reached (schema/013).
std::map<std::string, CurrentSchedule> LockCurrent(pqxx::work& tx, const json& names,
                                                   std::map<std::string, int>& deleted_versions) {
  std::map<std::string, CurrentSchedule> current;
  for (const auto& r : tx.exec_params(
           "SELECT name, id, version, doc_hash, state = 'active', coalesce((document->>'enabled')::boolean, true) "
           "FROM schedules WHERE name IN (SELECT jsonb_array_elements_text($1::jsonb)) ORDER BY id FOR UPDATE",
           names.dump())) {
    current[r[0].as<std::string>()] = {r[1].as<int64_t>(), r[2].as<int>(), r[3].as<std::string>(), r[4].as<bool>(),
                                       r[5].as<bool>()};
  }
  for (const auto& r : tx.exec_params("SELECT name, version FROM deleted_schedule_versions WHERE name IN (SELECT "
                                      "jsonb_array_elements_text($1::jsonb))",
                                      names.dump())) {
    deleted_versions[r[0].as<std::string>()] = r[1].as<int>();
  }
  return current;
}

// Decides each document's version and state and the rows to insert or update; a document equal
// to the stored one (same hash) changes nothing.
ApplyPlan PlanApply(const std::vector<Schedule>& schedules, const std::vector<std::string>& texts,
                    const std::vector<std::string>& hashes, const std::map<std::string, CurrentSchedule>& current,
                    const std::map<std::string, int>& deleted_versions) {
  ApplyPlan plan;
  plan.out.resize(schedules.size());
  plan.active.resize(schedules.size());
  for (size_t i = 0; i < schedules.size(); ++i) {
    const Schedule& s = schedules[i];
    const std::string name = s.id().value();
    auto it = current.find(name);
    // A schedule's state after this apply: a document's `enabled` decides when the schedule is
    // new and when `enabled` changes; otherwise an update keeps the state `trigctl schedules
    // suspend|resume` gave it (as Airflow keeps a paused DAG paused across edits of its file).
    const bool keep = it != current.end() && it->second.doc_enabled == s.enabled;
    plan.active[i] = keep ? it->second.active : s.enabled;
    if (it != current.end() && it->second.hash == hashes[i]) {
      plan.out[i] = {name, it->second.version, false};
      continue;
    }
    plan.changed.push_back(i);
    json row = {{"name", name},
                {"hash", hashes[i]},
                {"document", texts[i]},
                {"state", plan.active[i] ? "active" : "suspended"},
                {"grp", s.constraints.concurrency_group ? json(s.constraints.concurrency_group->name) : json()},
                {"run_timeout_ms", s.run_timeout ? json(s.run_timeout->count()) : json()}};
    if (it == current.end()) {
      // A name deleted before starts after the version it had.
      auto deleted = deleted_versions.find(name);
      const int version = deleted == deleted_versions.end() ? 1 : deleted->second + 1;
      plan.out[i] = {name, version, true};
      row["version"] = version;
      plan.inserts.push_back(std::move(row));
    } else {
      plan.out[i] = {name, it->second.version + 1, true};
      row["id"] = it->second.id;
      row["index"] = i;
      row["version"] = it->second.version + 1;
      plan.updates.push_back(std::move(row));
    }
  }
  return plan;
}

std::string BigintArray(const std::vector<int64_t>& ids) {
  std::string list = "{";
  for (int64_t id : ids) list += (list.size() > 1 ? "," : "") + std::to_string(id);
  return list + "}";
}

// The updated schedules' pending jobs, by each one's on_update (SPEC §11): `discard` (the
// default) discards them; `keep` and `reevaluate` move them to the new version, with a history
// entry each. Their leaves are dropped, to be written again. Returns the jobs discarded.
int64_t ApplyUpdates(pqxx::work& tx, const std::vector<Schedule>& schedules, const json& updates,
                     const std::map<std::string, int64_t>& ids, TimePoint now) {
  std::vector<int64_t> discarded_of, all;
  json kept = json::array();
  std::vector<size_t> reevaluated;  // indices into `schedules`
  for (const auto& u : updates) {
    const size_t i = u["index"].get<size_t>();
    all.push_back(u["id"].get<int64_t>());
    if (schedules[i].on_update == OnUpdate::kDiscard) {
      discarded_of.push_back(u["id"].get<int64_t>());
    } else {
      kept.push_back({{"id", u["id"]}, {"version", u["version"]}});
      if (schedules[i].on_update == OnUpdate::kReevaluate) reevaluated.push_back(i);
    }
  }
  if (!kept.empty()) {
    tx.exec_params(
        // A job waiting on its constraints is checked again at once, under the new ones.
        "UPDATE jobs j SET schedule_version = x.version, "
        "next_check_at = CASE WHEN j.state = " +
            Sql(JobState::kPendingConstraint) +
            " THEN now() ELSE j.next_check_at END, history = trigd_append_history(j.history, "
            "jsonb_build_array(jsonb_build_object('at', " TRIGD_NOW_TEXT
            ", 'what', 'kept: schedule updated to v' || x.version))) "
            "FROM jsonb_to_recordset($1::jsonb) AS x(id bigint, version int) "
            "WHERE j.schedule_id = x.id AND j.state IN " +
            SqlIn(JobState::kPendingTrigger, JobState::kPendingConstraint),
        kept.dump());
  }
  for (size_t i : reevaluated) ReevaluateJobs(tx, ids.at(schedules[i].id().value()), schedules[i], now);
  const int64_t discarded =
      tx.exec_params("UPDATE jobs SET state=" + Sql(JobState::kDiscarded) +
                         ", discard_reason='schedule updated', finished_at=now(), "
                         "next_check_at=NULL, history = trigd_append_history(history, jsonb_build_array("
                         "jsonb_build_object('at', " TRIGD_NOW_TEXT
                         ", 'what', 'discarded: schedule updated'))) "
                         "WHERE schedule_id = ANY($1::bigint[]) AND state IN " +
                         SqlIn(JobState::kPendingTrigger, JobState::kPendingConstraint),
                     BigintArray(discarded_of))
          .affected_rows();
  tx.exec_params("DELETE FROM schedule_triggers WHERE schedule_id = ANY($1::bigint[])", BigintArray(all));
  tx.exec_params("DELETE FROM time_triggers WHERE schedule_id = ANY($1::bigint[])", BigintArray(all));
  return discarded;
}

// The reverse index's rows and the time triggers' next fire times of the changed schedules,
// and a silence leaf's job armed for each active one.
void WriteLeaves(pqxx::work& tx, const std::vector<Schedule>& schedules, const ApplyPlan& plan,
                 const std::map<std::string, int64_t>& ids, TimePoint now) {
  json triggers = json::array(), ticks = json::array();
  for (size_t i : plan.changed) {
    const Schedule& s = schedules[i];
    int64_t id = ids.at(s.id().value());
    std::vector<const Trigger*> leaves = TriggerLeaves(s.trigger);
    for (size_t l = 0; l < leaves.size(); ++l) {
      triggers.push_back({{"id", id}, {"leaf", l}, {"key", LeafEventKey(*leaves[l], s.id())}});
      if (leaves[l]->kind == TriggerKind::kTime) {
        // Fire times count from now (one time leaf per schedule: the parser refuses more); a
        // suspended schedule has none until it is resumed (ResetTimeTrigger).
        std::optional<TimePoint> next =
            plan.active[i] ? NextActiveFireTime(leaves[l]->time, s.active, now, now) : std::nullopt;
        ticks.push_back({{"id", id}, {"leaf", l}, {"next", next ? json(ToMillis(*next)) : json()}});
      }
    }
  }
  tx.exec_params(
      "INSERT INTO schedule_triggers (schedule_id, leaf, event_key) SELECT id, leaf, key "
      "FROM jsonb_to_recordset($1::jsonb) AS x(id bigint, leaf int, key text)",
      triggers.dump());
  if (!ticks.empty()) {
    tx.exec_params(
        "INSERT INTO time_triggers (schedule_id, anchor, last_fire_time, next_fire_at, leaf) "
        "SELECT id, to_timestamp($2::bigint / 1000.0), NULL, "
        "coalesce(to_timestamp(next / 1000.0), 'infinity'), leaf "
        "FROM jsonb_to_recordset($1::jsonb) AS x(id bigint, leaf int, next bigint)",
        ticks.dump(), ToMillis(now));
  }
  for (size_t i : plan.changed) {
    if (plan.active[i]) ArmSilenceJob(tx, ids.at(schedules[i].id().value()), schedules[i], now);
  }
}

// The audit rows of an apply: each new or changed schedule with its version, the version before
// (null for a new one) and the dotted paths of the fields that changed (DiffDocuments; values
// are left out, so an argument's secret stays in the document alone). Reads the documents
// being replaced: call it before they are updated.
json ApplyAuditRows(pqxx::work& tx, const std::vector<std::string>& texts, const ApplyPlan& plan,
                    const std::map<std::string, CurrentSchedule>& current) {
  std::map<int64_t, json> before;
  if (!plan.updates.empty()) {
    std::vector<int64_t> ids;
    for (const auto& u : plan.updates) ids.push_back(u["id"].get<int64_t>());
    for (const auto& r :
         tx.exec_params("SELECT id, document::text FROM schedules WHERE id = ANY($1::bigint[])", BigintArray(ids))) {
      before[r[0].as<int64_t>()] = json::parse(r[1].as<std::string>());
    }
  }
  json rows = json::array();
  for (size_t i : plan.changed) {
    const std::string& name = plan.out[i].name;
    json detail = {{"version", plan.out[i].version}, {"from_version", nullptr}};
    auto it = current.find(name);
    if (it != current.end()) {
      detail["from_version"] = it->second.version;
      json fields = json::array();
      auto old = before.find(it->second.id);
      if (old != before.end()) {
        for (const FieldChange& c : DiffDocuments(old->second, json::parse(texts[i]))) fields.push_back(c.path);
      }
      detail["fields"] = std::move(fields);
    }
    rows.push_back({{"schedule", name}, {"detail", std::move(detail)}});
  }
  return rows;
}

}  // namespace

namespace pg_internal {

Status CheckApplicable(const std::vector<Schedule>& schedules) {
  // A launch request that cannot be published would fail its run (docs/adr/0057).
  for (const Schedule& s : schedules) {
    if (Status fits = CheckLaunchRequestFits(s); !fits.ok()) return Invalid(s.id().value() + ": " + fits.message());
  }
  return Status();
}

std::vector<ApplyOutcome> ApplyInTransaction(pqxx::work& tx, const std::vector<Schedule>& schedules,
                                             const Actor& actor) {
  LockChangeLog(tx);
  TimePoint now = DbNow(tx);
  // Set-based, a fixed number of statements whatever the number of schedules: a folder of
  // 10,000 documents applies in about a second.
  json names = json::array();
  std::vector<std::string> texts, hashes;
  for (const Schedule& s : schedules) {
    names.push_back(s.id().value());
    texts.push_back(ScheduleToJson(s).dump());
    hashes.push_back(std::to_string(std::hash<std::string>()(texts.back())));
  }
  std::map<std::string, int> deleted_versions;
  const std::map<std::string, CurrentSchedule> current = LockCurrent(tx, names, deleted_versions);
  ApplyPlan plan = PlanApply(schedules, texts, hashes, current, deleted_versions);
  if (plan.changed.empty()) return plan.out;
  const json audit = ApplyAuditRows(tx, texts, plan, current);
  std::map<std::string, int64_t> ids;
  for (const auto& [name, cur] : current) ids[name] = cur.id;
  SqlArray created;
  if (!plan.inserts.empty()) {
    for (const auto& r : tx.exec_params(
             "INSERT INTO schedules (name, version, doc_hash, document, state, concurrency_group, run_timeout_ms) "
             "SELECT name, version, hash, document::jsonb, state, grp, run_timeout_ms FROM "
             "jsonb_to_recordset($1::jsonb) "
             "AS x(name text, version int, hash text, document text, state text, grp text, run_timeout_ms bigint) "
             "RETURNING name, id",
             plan.inserts.dump())) {
      ids[r[0].as<std::string>()] = r[1].as<int64_t>();
      created.AddInt(r[1].as<int64_t>());
    }
    // The run counters of a new schedule exist from its creation on: the checker that first
    // launches it only locks and updates them (no insert on the launch path; docs/adr/0174).
    tx.exec_params(
        "INSERT INTO schedule_runtime (schedule_id) SELECT unnest($1::bigint[]) ORDER BY 1 ON CONFLICT DO NOTHING",
        created.Take());
  }
  int64_t discarded = 0;  // open and waiting jobs of the updated schedules
  if (!plan.updates.empty()) {
    tx.exec_params(
        "UPDATE schedules s SET version = x.version, doc_hash = x.hash, document = x.document::jsonb, "
        "state = x.state, concurrency_group = x.grp, run_timeout_ms = x.run_timeout_ms, updated_at = now() "
        "FROM jsonb_to_recordset($1::jsonb) AS x(id bigint, version int, name text, hash text, document text, "
        "state text, grp text, run_timeout_ms bigint) WHERE s.id = x.id",
        plan.updates.dump());
    discarded = ApplyUpdates(tx, schedules, plan.updates, ids, now);
  }
  WriteLeaves(tx, schedules, plan, ids, now);
  // Each new document is kept by version (schema/027) for the console's versions and diffs.
  json versions = plan.inserts;
  versions.insert(versions.end(), plan.updates.begin(), plan.updates.end());
  tx.exec_params(
      "INSERT INTO schedule_versions (name, version, document) SELECT name, version, document::jsonb "
      "FROM jsonb_to_recordset($1::jsonb) AS x(name text, version int, document text) ON CONFLICT DO NOTHING",
      versions.dump());
  json changes = json::array();
  for (size_t i : plan.changed) changes.push_back(ids.at(schedules[i].id().value()));
  // The discards are counted once, on the first change row.
  tx.exec_params(
      "INSERT INTO schedule_changes (schedule_id, jobs_discarded) SELECT value::bigint, "
      "CASE WHEN ordinality = 1 THEN $2 ELSE 0 END FROM jsonb_array_elements_text($1::jsonb) WITH ORDINALITY",
      changes.dump(), discarded);
  audit_internal::RecordEach(tx, actor, AuditAction::kApply, audit);
  tx.exec("NOTIFY trigd_schedules");
  return plan.out;
}

}  // namespace pg_internal

Result<std::vector<ApplyOutcome>> ApplySchedules(const std::string& pg, const std::vector<Schedule>& schedules,
                                                 const Actor& actor) {
  if (Status st = CheckApplicable(schedules); !st.ok()) return st;
  auto conn = pg_internal::Connect(pg);
  if (!conn.ok()) return conn.status();
  return RunChange([&]() -> Result<std::vector<ApplyOutcome>> {
    pqxx::work tx(**conn);
    std::vector<ApplyOutcome> out = ApplyInTransaction(tx, schedules, actor);
    tx.commit();
    return out;
  });
}

Status ChangeSchedule(const std::string& pg, const std::string& topic_prefix, const std::string& name,
                      ScheduleAction action, const Actor& actor, bool* changed) {
  auto conn = pg_internal::Connect(pg);
  if (!conn.ok()) return conn.status();
  if (changed) *changed = false;
  Result<int> r = RunChange([&]() -> Result<int> {
    pqxx::work tx(**conn);
    LockChangeLog(tx);
    auto row =
        tx.exec_params("SELECT id, document::text, state, version FROM schedules WHERE name = $1 FOR UPDATE", name);
    if (row.empty()) return NotFound("no schedule named " + name);
    int64_t id = row[0][0].as<int64_t>();
    // Resuming an active schedule (Airflow's unpause of an unpaused DAG) is a no-op: it keeps
    // the open job and the time trigger's phase.
    const std::string state = row[0][2].as<std::string>();
    if ((action == ScheduleAction::kResume && state == "active") ||
        (action == ScheduleAction::kSuspend && state == "suspended")) {
      tx.commit();
      return 0;
    }
    if (changed) *changed = true;
    const char* reason = action == ScheduleAction::kDelete    ? "schedule deleted"
                         : action == ScheduleAction::kSuspend ? "schedule suspended"
                                                              : "schedule resumed";
    // The job rows are locked here; a checker holding one finishes first, then sees this.
    int64_t discarded = DiscardOpenJobs(tx, id, reason), killed = 0;
    if (action == ScheduleAction::kDelete) {
      // Killed runs free their slots in the schedule's and their groups' run counters.
      std::vector<EndedRun> ended;
      auto release = [&](const pqxx::field& group) {
        ended.push_back({id, group.is_null() ? std::nullopt : std::optional<std::string>(group.as<std::string>())});
      };
      // Launch requests decided but not yet published are withdrawn: nothing of a deleted
      // schedule launches afterwards. (A request the relay is publishing right now holds its
      // row lock; this waits for it, and that launch happened before the delete.)
      std::set<int64_t> withdrawn;
      for (const auto& w : tx.exec_params(
               "DELETE FROM outbox o USING jobs j WHERE o.job_id = j.id AND j.schedule_id = $1 RETURNING j.id", id)) {
        int64_t job = w[0].as<int64_t>();
        withdrawn.insert(job);
        ++discarded;
        tx.exec_params(
            "UPDATE jobs SET state=" + Sql(JobState::kDiscarded) +
                ", discard_reason='schedule deleted', finished_at=now(), "
                "history = trigd_append_history(history, jsonb_build_array(jsonb_build_object('at', " TRIGD_NOW_TEXT
                ", "
                "'what', 'discarded: schedule deleted before its launch request was published'))) WHERE id=$1",
            job);
      }
      // Which of its runs end is core's OnScheduleDeleted (docs/adr/0020-delete-kills-and-announces.md):
      // one waiting for its next attempt (its retry policy is gone with the document) or launched
      // with its request withdrawn above is killed; one a worker may have taken goes on, and its
      // failure is final (PgStore::RetryFailedAttempt, SweepRuns). The rows are locked as read
      // (the schedule row's lock above keeps new runs out), so each decision holds for the state
      // it was made on.
      SqlArray doomed;
      for (const auto& r : tx.exec_params("SELECT run_id, state, job_id FROM runs WHERE schedule_id=$1 AND state IN " +
                                              SqlIn(RunState::kLaunched, RunState::kRunning, RunState::kRetryWait) +
                                              " ORDER BY run_id FOR UPDATE",
                                          id)) {
        const bool published = r[2].is_null() || !withdrawn.count(r[2].as<int64_t>());
        const std::optional<RunTransition> t = OnScheduleDeleted(pg_internal::RunStateOf(r[1]), published);
        if (!t) continue;
        TRIGD_CHECK(t->next == RunState::kKilled && t->program_event && t->control_message);
        doomed.AddText(r[0].as<std::string>());
      }
      const pqxx::result killed_runs =
          tx.exec_params("UPDATE runs SET " + pg_internal::KilledByDeleteSet() +
                             "WHERE run_id = ANY($1::text[]) " TRIGD_KILLED_BY_DELETE_RETURNING,
                         doomed.Take());
      for (const auto& run : killed_runs) release(run[0]);
      pg_internal::KillByDeleteEvents(tx, TopicNames(topic_prefix), killed_runs);
      killed = static_cast<int64_t>(ended.size());
      pg_internal::DecrementRunCounters(tx, ended);
      // Its version goes on counting if the name is applied again (schema/013; the greatest: a
      // name deleted and applied again before schema/013 restarted at 1). Its id too, so that
      // the name's lists (trigctl jobs|runs list --schedule) still find the jobs and runs of
      // this incarnation once the name is applied again under a new id.
      tx.exec_params(
          "INSERT INTO deleted_schedule_versions (name, version, ids) SELECT name, version, ARRAY[id] "
          "FROM schedules WHERE id=$1 ON CONFLICT (name) DO UPDATE SET "
          "version = greatest(deleted_schedule_versions.version, excluded.version), "
          "ids = deleted_schedule_versions.ids || excluded.ids",
          id);
      tx.exec_params("DELETE FROM schedules WHERE id=$1", id);
    } else {
      tx.exec_params("UPDATE schedules SET state=$2, updated_at=now() WHERE id=$1", id,
                     std::string(action == ScheduleAction::kSuspend ? "suspended" : "active"));
      if (action == ScheduleAction::kSuspend) {
        // Out of the due range while suspended, so the checkers' look every 100 ms does not
        // find it due again and again; resuming counts fire times from then (ResetTimeTrigger).
        tx.exec_params("UPDATE time_triggers SET next_fire_at = 'infinity' WHERE schedule_id = $1", id);
      }
      if (action == ScheduleAction::kResume) {
        ParsedSchedule parsed = ParseSchedule(json::parse(row[0][1].as<std::string>()));
        if (parsed.ok()) {
          const TimePoint now = DbNow(tx);
          ResetTimeTrigger(tx, id, parsed.schedule, now);
          ArmSilenceJob(tx, id, parsed.schedule, now);
        }
      }
    }
    LogChange(tx, id, discarded, killed);
    json detail = {{"version", row[0][3].as<int>()}, {"jobs_discarded", discarded}};
    if (action == ScheduleAction::kDelete) detail["runs_killed"] = killed;
    audit_internal::Record(tx, actor,
                           action == ScheduleAction::kDelete    ? AuditAction::kDelete
                           : action == ScheduleAction::kSuspend ? AuditAction::kSuspend
                                                                : AuditAction::kResume,
                           name, std::nullopt, detail);
    tx.exec("NOTIFY trigd_schedules");
    tx.commit();
    return 0;
  });
  return r.status();
}

}  // namespace trigd
