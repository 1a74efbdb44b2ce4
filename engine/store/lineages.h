// Lineages for trigctl and the HTTP API (SPEC §10): the list and one lineage with its runs as a
// tree, as JSON values the caller prints or serves. Each call opens its own connection and reads
// in one transaction.
#pragma once

#include <cstddef>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "common/status.h"
#include "core/lineage.h"
#include "store/admin.h"

namespace trigd {

// Newest first, at most `limit`, of one state when `state` is set:
// [{lineage, state, started_at, runs, active_runs, failed_runs, open_jobs}].
Result<nlohmann::json> QueryLineages(const std::string& pg, std::optional<LineageState> state, size_t limit);

// One lineage, by its id or the id of any run of it: {lineage, state, started_at, run_count,
// active_runs, failed_runs, open_jobs, runs: [{run_id,
// schedule, program, state, attempt, launched_at, finished_at, reason, worker, lineages, upstream,
// depth}] in tree order (LineageTree), jobs: [{id, schedule, state}] still open or waiting}.
// kNotFound when neither a lineage nor a run has that id.
Result<nlohmann::json> QueryLineage(const std::string& pg, const std::string& id);

// The statement behind QueryLineages, for the test of its plan. It reads `lineages` backwards
// through its primary key and each lineage's runs and jobs through runs_by_lineage and
// jobs_active_by_lineage: never a scan of runs.
ListStatement LineagesListStatement(std::optional<LineageState> state, size_t limit);

}  // namespace trigd
