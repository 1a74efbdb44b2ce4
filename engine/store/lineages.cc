#include "store/lineages.h"

#include <pqxx/pqxx>

#include "model/job.h"
#include "model/run.h"
#include "store/pg_internal.h"

namespace trigd {

using nlohmann::json;
using pg_internal::Guard;
using pg_internal::SqlIn;

namespace {

json Rows(pqxx::transaction_base& tx, const std::string& sql, const std::vector<std::optional<std::string>>& params) {
  pqxx::result r = tx.exec_params("SELECT coalesce(json_agg(q), '[]'::json)::text FROM (" + sql + ") q",
                                  pqxx::prepare::make_dynamic_params(params));
  return json::parse(r[0][0].as<std::string>());
}

// Counts of the lineage whose id is the expression `id`, and its state (SPEC §10): running while
// a run or a job of it is active, then failed if a run of it failed or was killed.
std::string CountsAndState(const std::string& id) {
  // One aggregate over the lineage's runs (runs_by_lineage, index only): an aggregate is never
  // pulled up into the outer query, so the state's CASE does not repeat the counts.
  return "CROSS JOIN LATERAL (SELECT count(*) AS runs, count(*) FILTER (WHERE r.state IN " +
         SqlIn(RunState::kLaunched, RunState::kRunning, RunState::kRetryWait) +
         ") AS active_runs, count(*) FILTER (WHERE r.state IN " + SqlIn(RunState::kFailed, RunState::kKilled) +
         ") AS failed_runs, (SELECT count(*) FROM jobs j WHERE j.lineage = " + id +
         " AND j.lineage <> '' AND j.state IN " + SqlIn(JobState::kPendingTrigger, JobState::kPendingConstraint) +
         ") AS open_jobs FROM runs r WHERE r.lineage = " + id +
         ") c "
         "CROSS JOIN LATERAL (SELECT CASE WHEN c.active_runs + c.open_jobs > 0 THEN 'running' "
         "WHEN c.failed_runs > 0 THEN 'failed' ELSE 'succeeded' END AS state) st ";
}

}  // namespace

ListStatement LineagesListStatement(std::optional<LineageState> state, size_t limit) {
  ListStatement st;
  st.sql =
      "SELECT l.id AS lineage, st.state, l.started_at, c.runs, c.active_runs, c.failed_runs, c.open_jobs "
      "FROM lineages l " +
      CountsAndState("l.id") + (state ? "WHERE st.state = $1 " : "") + "ORDER BY l.id DESC LIMIT " +
      std::to_string(limit);
  if (state) st.params.push_back(LineageStateName(*state));
  return st;
}

Result<json> QueryLineages(const std::string& pg, std::optional<LineageState> state, size_t limit) {
  auto conn = pg_internal::Connect(pg);
  if (!conn.ok()) return conn.status();
  return Guard([&]() -> Result<json> {
    pqxx::read_transaction tx(**conn);
    const ListStatement st = LineagesListStatement(state, limit);
    return Rows(tx, st.sql, st.params);
  });
}

Result<json> QueryLineage(const std::string& pg, const std::string& id) {
  auto conn = pg_internal::Connect(pg);
  if (!conn.ok()) return conn.status();
  return Guard([&]() -> Result<json> {
    pqxx::read_transaction tx(**conn);
    // An id names a lineage, or a run whose lineage is shown.
    json head = Rows(tx,
                     "SELECT x.lineage, st.state, l.started_at, c.runs, c.active_runs, c.failed_runs, c.open_jobs "
                     "FROM (SELECT coalesce((SELECT lineage FROM runs WHERE run_id = $1), $1) AS lineage) x "
                     "LEFT JOIN lineages l ON l.id = x.lineage " +
                         CountsAndState("x.lineage"),
                     {id});
    if (head.empty() || (head[0]["started_at"].is_null() && head[0]["runs"] == 0)) {
      return NotFound("no lineage or run " + id);
    }
    json out = head[0];
    const std::string lineage = out["lineage"].get<std::string>();
    json rows = Rows(tx,
                     "SELECT run_id, schedule_name AS schedule, program, state, attempt, launched_at, finished_at, "
                     "reason, worker, attempt_started_at, lineages, request::jsonb -> 'triggered_by' AS triggered_by "
                     "FROM runs WHERE lineage = $1 ORDER BY launched_at, run_id",
                     {lineage});
    std::vector<LineageRun> runs;
    for (const json& r : rows) {
      LineageRun& run = runs.emplace_back();
      run.run_id = r["run_id"].get<std::string>();
      run.upstream = UpstreamRunIds(r["triggered_by"]);
    }
    json tree = json::array();
    for (const LineageTreeRow& row : LineageTree(runs)) {
      json r = rows[row.run];
      r.erase("triggered_by");
      r["upstream"] = runs[row.run].upstream;
      r["depth"] = row.depth;
      tree.push_back(std::move(r));
    }
    out["run_count"] = out["runs"];
    out["runs"] = std::move(tree);
    out["jobs"] = Rows(tx,
                       "SELECT id, schedule_name AS schedule, state, opened_at FROM jobs "
                       "WHERE lineage = $1 AND lineage <> '' AND state IN " +
                           SqlIn(JobState::kPendingTrigger, JobState::kPendingConstraint) + " ORDER BY id",
                       {lineage});
    return out;
  });
}

}  // namespace trigd
