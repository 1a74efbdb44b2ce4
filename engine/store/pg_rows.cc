// Row decoding and the writes several PgStore steps share: schedules read and parsed, the
// launch request's parts, COPY, run counters freed and waiting jobs woken.
#include "store/pg_store_parts.h"

#include <pqxx/tablewriter>

namespace trigd::pg_internal {

using nlohmann::json;

// The wait before attempt `attempt` + 1: core's RetryBackoff, with this thread's random draw.
Millis RetryWait(const RetryPolicy& retry, int64_t attempt) {
  static thread_local std::mt19937_64 rng(std::random_device{}());
  return RetryBackoff(retry, attempt, std::uniform_real_distribution<double>(0.0, 1.0)(rng));
}

// The time trigger a time_triggers row names (its leaf, in TriggerLeaves' numbering); null when
// the schedule's definition has no time leaf there (a row older than the definition read).
const TimeTrigger* TimeLeaf(const Schedule& s, int leaf) {
  std::vector<const Trigger*> leaves = TriggerLeaves(s.trigger);
  if (leaf < 0 || static_cast<size_t>(leaf) >= leaves.size() || leaves[leaf]->kind != TriggerKind::kTime)
    return nullptr;
  return &leaves[leaf]->time;
}

// Entries already written as JSON, as one JSON array.
std::string JsonArray(const std::vector<std::string>& entries) {
  JsonArrayText a;
  for (const std::string& e : entries) a.Raw(e);
  return a.Take();
}

// A job's triggering events as stored (and carried into its launch request), into out.
void TriggeredByJson(const std::vector<TriggeringEvent>& events, std::string& out) {
  out = "[";
  for (size_t i = 0; i < events.size(); ++i) {
    if (i > 0) out += ',';
    out += "{\"id\":";
    AppendJsonString(out, events[i].id);
    out += ",\"payload\":";
    out += events[i].Payload().dump();
    out += ",\"type\":";
    AppendJsonString(out, events[i].type);
    out += '}';
  }
  out += ']';
}

// COPY of `rows` into `table`, sent in one piece: pqxx 6.4's stream_to takes a tuple per row
// and copies and escapes each field into strings of its own (a third of trigd's CPU on the
// ingest path); tablewriter::write_raw_line passes a buffer through, and COPY takes any number
// of lines per piece of data. Errors (a unique violation) surface here, as of an INSERT.
void CopyIn(pqxx::transaction_base& tx, const std::string& table, const std::vector<std::string>& columns,
            const CopyRows& rows) {
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
  pqxx::tablewriter copy(tx, table, columns.begin(), columns.end());
#pragma GCC diagnostic pop
  copy.write_raw_line(rows.text());
  copy.complete();
}

bool IsFinal(ProgramStatus s) {
  return s == ProgramStatus::kSucceeded || s == ProgramStatus::kFailed || s == ProgramStatus::kKilled;
}

// The schedules of `versions` (id, version: active, read in this transaction), from the cache
// or, for those not in it at that version, from their documents.
std::map<int64_t, ScheduleView> ResolveSchedules(pqxx::transaction_base& tx, ScheduleCache& cache,
                                                 const std::vector<std::pair<int64_t, int>>& versions) {
  std::map<int64_t, ScheduleView> out;
  std::vector<int64_t> misses;
  for (const auto& [id, version] : versions) {
    if (auto s = cache.Find(id, version)) {
      out[id] = {id, version, s};
    } else {
      misses.push_back(id);
    }
  }
  if (!misses.empty()) {
    for (const auto& r : tx.exec_params("SELECT id, version, document::text FROM schedules "
                                        "WHERE id = ANY($1::bigint[])",
                                        IntArray(misses))) {
      int64_t id = r[0].as<int64_t>();
      int version = r[1].as<int>();
      if (auto s = cache.Get(id, version, r[2].as<std::string>())) out[id] = {id, version, s};
    }
  }
  return out;
}

// Loads the schedules of the jobs a checker holds (active only), parsing documents not in the
// cache. No lock on the schedules: every change that could make a held job's decision wrong (an
// update, whatever its on_update, a suspend, a delete) first updates every open and waiting
// job of the schedule, so it waits for this transaction's job locks and then finds the job
// decided; one that committed before the claim was seen by it (the job discarded or moved to the
// new version) and by this later statement. A share lock per schedule cost a WAL record and a
// dirtied page each (docs/adr/0177-checker-reads-schedules-without-share-locks.md).
std::map<int64_t, ScheduleView> LoadSchedules(pqxx::transaction_base& tx, ScheduleCache& cache,
                                              const std::set<int64_t>& ids) {
  if (ids.empty()) return {};
  std::vector<std::pair<int64_t, int>> versions;
  for (const auto& r : tx.exec_prepared("schedule_versions", IntArray(ids))) {
    versions.emplace_back(r[0].as<int64_t>(), r[1].as<int>());
  }
  return ResolveSchedules(tx, cache, versions);
}

// Decrements the run counters of ended runs: schedules first, then groups, each in sorted
// order, the order the checker locks them in.
void DecrementCounters(pqxx::transaction_base& tx, const EndedRuns& e) {
  for (const auto& [id, n] : e.per_schedule) {
    tx.exec_params("UPDATE schedule_runtime SET active_runs = greatest(active_runs - $2, 0) WHERE schedule_id = $1", id,
                   n);
  }
  for (const auto& [name, n] : e.per_group) {
    tx.exec_params("UPDATE group_runtime SET active_runs = greatest(active_runs - $2, 0) WHERE name = $1", name, n);
  }
}

void DecrementRunCounters(pqxx::transaction_base& tx, const std::vector<EndedRun>& ended) {
  DecrementCounters(tx, EndedRuns(ended));
}

// Makes the waiting jobs of ended runs' schedules and groups due now (those not due already, nor
// in `claimed`, which the caller decides itself). Waiting jobs another transaction holds right
// now are skipped, so this never waits; that is safe only once the caller holds the counter rows
// of the ended runs: a checker holding such a job then either committed first (and the job is
// free here) or is queued behind those locks and will see the freed slots. Woken before the
// counters were locked (to let the fast path's claim take them), a job held by another
// instance's check that had read the counters full would be skipped and written back to wait
// 30 s while the slot stayed free: the fast path wakes again after.
void WakeWaitingJobs(pqxx::transaction_base& tx, const EndedRuns& e, const std::vector<int64_t>& claimed) {
  std::vector<int64_t> ids;
  for (const auto& [id, n] : e.per_schedule) ids.push_back(id);
  json groups = json::array();
  for (const auto& [name, n] : e.per_group) groups.push_back(name);
  tx.exec_params(
      "UPDATE jobs SET next_check_at = now() WHERE id IN (SELECT id FROM jobs WHERE state = " +
          Sql(JobState::kPendingConstraint) +
          " "
          "AND next_check_at > now() AND id <> ALL($3::bigint[]) "
          "AND (schedule_id = ANY($1::bigint[]) OR concurrency_group IN (SELECT jsonb_array_elements_text($2::jsonb))) "
          "FOR UPDATE SKIP LOCKED)",
      IntArray(ids), groups.dump(), IntArray(claimed));
}

// Frees the slots of ended runs and wakes the jobs waiting on them, in a transaction that
// locks no other counter row afterwards (the run sweep; ingest without the fast path). One
// that goes on to check jobs leaves the decrement to CheckJobs (CheckFilter::ended), which
// takes every counter lock in one order: releasing first and then locking the checked jobs'
// counters would take schedules and groups twice, out of order, and deadlock with the checkers
// (docs/adr/0015-run-counter-lock-order.md).
void ReleaseRuns(pqxx::transaction_base& tx, const std::vector<EndedRun>& ended) {
  if (ended.empty()) return;
  const EndedRuns e(ended);
  DecrementCounters(tx, e);
  WakeWaitingJobs(tx, e);
}

}  // namespace trigd::pg_internal
