#include "store/recorded_runs.h"

#include <nlohmann/json.hpp>

#include "store/pg_internal.h"

namespace trigd {

Result<std::vector<RecordedRun>> QueryRecordedRuns(const std::string& pg, const std::string& name, TimePoint from,
                                                   TimePoint to) {
  auto conn = pg_internal::Connect(pg);
  if (!conn.ok()) return conn.status();
  return pg_internal::Guard([&]() -> Result<std::vector<RecordedRun>> {
    pqxx::read_transaction tx(**conn);
    std::vector<RecordedRun> out;
    for (const auto& r : tx.exec_params(
             "SELECT run_id, " TRIGD_MS("launched_at") ", " TRIGD_MS(
                 "finished_at") ", state, request FROM runs "
                                "WHERE schedule_name = $1 AND launched_at >= to_timestamp($2::bigint / 1000.0) "
                                "AND launched_at <= to_timestamp($3::bigint / 1000.0) ORDER BY launched_at, run_id",
             name, pg_internal::ToMillis(from), pg_internal::ToMillis(to))) {
      RecordedRun run;
      run.run_id = r[0].as<std::string>();
      run.launched_at = pg_internal::FromMillis(r[1].as<int64_t>());
      if (!r[2].is_null()) run.finished_at = pg_internal::FromMillis(r[2].as<int64_t>());
      run.state = r[3].as<std::string>();
      nlohmann::json request = nlohmann::json::parse(r[4].as<std::string>(), nullptr, false);
      if (request.is_object() && request.contains("triggered_by") && request["triggered_by"].is_array()) {
        for (const auto& e : request["triggered_by"]) {
          if (e.is_object() && e.contains("id") && e["id"].is_string()) run.triggered_by.push_back(e["id"]);
        }
      }
      out.push_back(std::move(run));
    }
    return out;
  });
}

}  // namespace trigd
