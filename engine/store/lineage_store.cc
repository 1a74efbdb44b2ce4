#include "store/lineage_store.h"

#include <algorithm>
#include <set>
#include <unordered_map>

#include "model/job.h"
#include "model/run.h"
#include "store/pg_internal.h"
#include "store/sql_array.h"

namespace trigd::pg_internal {

using nlohmann::json;

void FillReportLineages(pqxx::transaction_base& tx, std::vector<AccumulateInput>& inputs, std::deque<Event>& filled) {
  SqlArray run_ids;
  std::vector<size_t> lacking;
  for (size_t k = 0; k < inputs.size(); ++k) {
    const Event& e = *inputs[k].event;
    if (e.type != EventType::kProgram || !e.program.lineage.empty() || e.program.run_id.empty()) continue;
    lacking.push_back(k);
    run_ids.AddText(e.program.run_id);
  }
  if (lacking.empty()) return;
  std::unordered_map<std::string, std::string> lineage_of;
  for (const auto& r : tx.exec_params(
           "SELECT run_id, lineage FROM runs WHERE run_id = ANY($1::text[]) AND lineage IS NOT NULL", run_ids.Take())) {
    lineage_of.emplace(r[0].as<std::string>(), r[1].as<std::string>());
  }
  for (size_t k : lacking) {
    auto l = lineage_of.find(inputs[k].event->program.run_id);
    if (l == lineage_of.end()) continue;
    Event& copy = filled.emplace_back(*inputs[k].event);
    copy.program.lineage = l->second;
    if (copy.payload.is_object()) copy.payload["lineage"] = l->second;
    inputs[k].event = &copy;
  }
}

bool LockCorrelatedLineages(pqxx::transaction_base& tx, const std::vector<AccumulateInput>& inputs,
                            const std::map<int64_t, ScheduleView>& schedules) {
  const std::set<int64_t> correlated = CorrelatedSchedules(schedules);
  if (correlated.empty()) return false;
  std::set<std::string> keys;  // ordered: every transaction takes the locks in one order
  for (const AccumulateInput& in : inputs) {
    if (in.event->type != EventType::kProgram) continue;
    for (int64_t sid : in.schedule_ids) {
      if (correlated.contains(sid)) keys.insert(std::to_string(sid) + ":" + EventLineage(in.event->program));
    }
  }
  if (keys.empty()) return true;
  SqlArray a;
  for (const std::string& k : keys) a.AddText(k);
  tx.exec_params(
      "SELECT pg_advisory_xact_lock(hashtextextended('trigd.lineage:' || k, 0)) "
      "FROM unnest($1::text[]) WITH ORDINALITY AS x(k, n) ORDER BY n",
      a.Take());
  return true;
}

std::set<int64_t> CorrelatedSchedules(const std::map<int64_t, ScheduleView>& schedules) {
  std::set<int64_t> out;
  for (const auto& [id, view] : schedules) {
    if (view.schedule && IsCorrelated(view.schedule->trigger)) out.insert(id);
  }
  return out;
}

std::vector<OpenJob> LoadOpenJobs(pqxx::transaction_base& tx, const std::set<int64_t>& schedule_ids) {
  std::vector<OpenJob> out;
  if (schedule_ids.empty()) return out;
  SqlArray ids;
  for (int64_t id : schedule_ids) ids.AddInt(id);
  for (const auto& r :
       tx.exec_params("SELECT id, schedule_version, schedule_id, trigger_state::text, triggered_by::text, " TRIGD_MS(
                          "opened_at") ", lineage FROM jobs WHERE schedule_id = ANY($1::bigint[]) AND state = " +
                          Sql(JobState::kPendingTrigger) + " ORDER BY id FOR UPDATE",
                      ids.Take())) {
    out.push_back(OpenJobFromRow(r));
  }
  return out;
}

OpenJob OpenJobFromRow(const pqxx::row& r) {
  OpenJob job;
  job.id = r[0].as<int64_t>();
  job.schedule_version = r[1].as<int>();
  job.schedule_id = r[2].as<int64_t>();
  job.state = TriggerStateFromJson(json::parse(r[3].c_str()));
  for (const auto& t : json::parse(r[4].c_str())) {
    job.triggered_by.push_back(
        {t.value("id", ""), t.value("type", ""), std::make_shared<const json>(t.value("payload", json()))});
  }
  job.opened_at = FromMillis(r[5].as<int64_t>());
  job.lineage = r[6].as<std::string>();
  return job;
}

FailedLineageSet LoadFailedLineages(pqxx::transaction_base& tx, const std::map<int64_t, ScheduleView>& schedules) {
  FailedLineageSet out;
  SqlArray ids;
  for (int64_t id : CorrelatedSchedules(schedules)) ids.AddInt(id);
  if (ids.empty()) return out;
  for (const auto& r : tx.exec_params("SELECT schedule_id, lineage FROM failed_lineages WHERE schedule_id = "
                                      "ANY($1::bigint[]) AND expires_at > now()",
                                      ids.Take())) {
    out.emplace(r[0].as<int64_t>(), r[1].as<std::string>());
  }
  return out;
}

void StoreFailedLineages(pqxx::transaction_base& tx, const std::vector<FailedLineage>& failed) {
  if (failed.empty()) return;
  SqlArray sid, lineage, expires;
  for (const FailedLineage& f : failed) {
    sid.AddInt(f.schedule_id);
    lineage.AddText(f.lineage);
    expires.AddInt(ToMillis(f.expires_at));
  }
  tx.exec_params(
      "INSERT INTO failed_lineages (schedule_id, lineage, expires_at) "
      "SELECT s, l, to_timestamp(max(e) / 1000.0) FROM unnest($1::bigint[], $2::text[], $3::bigint[]) AS x(s, l, e) "
      "GROUP BY s, l ORDER BY s, l "
      "ON CONFLICT (schedule_id, lineage) DO UPDATE SET expires_at = greatest(failed_lineages.expires_at, "
      "EXCLUDED.expires_at)",
      sid.Take(), lineage.Take(), expires.Take());
}

std::string ProspectiveLineage(const OpenJob& job) {
  if (!job.lineage.empty()) return job.lineage;
  json by = json::array();
  for (const TriggeringEvent& t : job.triggered_by) {
    if (t.type == "program") by.push_back({{"type", t.type}, {"payload", t.Payload()}});
  }
  if (by.empty()) return {};
  return DecideRunLineage("", by, "").lineage;
}

RunLineage LaunchLineage(const std::string& triggered_by_json, const std::string& run_id) {
  if (triggered_by_json.find("\"program\"") == std::string::npos) return {run_id, {}};
  return DecideRunLineage("", json::parse(triggered_by_json, nullptr, false), run_id);
}

std::map<std::string, int> EndLineages(pqxx::transaction_base& tx, const std::vector<std::string>& ended_run_ids,
                                       const std::vector<std::string>& lineages,
                                       const std::vector<int64_t>& discarded_job_ids) {
  std::map<std::string, int> out;
  if (ended_run_ids.empty() && lineages.empty() && discarded_job_ids.empty()) return out;
  SqlArray ids, named, jobs;
  for (const std::string& r : ended_run_ids) ids.AddText(r);
  for (const std::string& l : lineages) named.AddText(l);
  for (int64_t j : discarded_job_ids) jobs.AddInt(j);
  const std::string active_runs = SqlIn(RunState::kLaunched, RunState::kRunning, RunState::kRetryWait);
  const std::string bad_runs = SqlIn(RunState::kFailed, RunState::kKilled);
  const std::string open_jobs = SqlIn(JobState::kPendingTrigger, JobState::kPendingConstraint);
  for (const auto& r : tx.exec_params(
           "WITH ended AS (SELECT lineage FROM runs WHERE run_id = ANY($1::text[]) AND lineage IS NOT NULL "
           "UNION SELECT unnest($2::text[]) "
           "UNION SELECT lineage FROM jobs WHERE id = ANY($3::bigint[]) AND lineage <> ''), "
           "over AS (SELECT e.lineage, CASE WHEN EXISTS (SELECT 1 FROM runs r WHERE r.lineage = e.lineage AND r.state "
           "IN " +
               bad_runs +
               ") THEN 'failed' ELSE 'succeeded' END AS outcome FROM ended e "
               "WHERE NOT EXISTS (SELECT 1 FROM runs r WHERE r.lineage = e.lineage AND r.state IN " +
               active_runs +
               ") AND NOT EXISTS (SELECT 1 FROM jobs j WHERE j.lineage = e.lineage AND j.lineage <> '' AND j.state "
               "IN " +
               open_jobs +
               ")) "
               "UPDATE lineages l SET ended_at = now(), outcome = o.outcome FROM over o "
               "WHERE l.id = o.lineage AND l.ended_at IS NULL RETURNING o.outcome",
           ids.Take(), named.Take(), jobs.Take())) {
    ++out[r[0].as<std::string>()];
  }
  return out;
}

}  // namespace trigd::pg_internal
