#include "store/audit.h"

#include <pqxx/pqxx>

#include "common/check.h"
#include "store/audit_internal.h"
#include "store/pg_internal.h"

namespace trigd {

using nlohmann::json;
using pg_internal::Guard;
using pg_internal::ToMillis;

namespace {

constexpr AuditAction kAuditActions[] = {AuditAction::kApply,  AuditAction::kDelete,  AuditAction::kSuspend,
                                         AuditAction::kResume, AuditAction::kStart,   AuditAction::kCancel,
                                         AuditAction::kRerun,  AuditAction::kBackfill};

}  // namespace

const char* AuditActionName(AuditAction a) {
  switch (a) {
    case AuditAction::kApply: return "apply";
    case AuditAction::kDelete: return "delete";
    case AuditAction::kSuspend: return "suspend";
    case AuditAction::kResume: return "resume";
    case AuditAction::kStart: return "start";
    case AuditAction::kCancel: return "cancel";
    case AuditAction::kRerun: return "rerun";
    case AuditAction::kBackfill: return "backfill";
  }
  TRIGD_FAIL("an AuditAction without a name");
}

std::optional<AuditAction> AuditActionFromName(std::string_view name) {
  for (AuditAction a : kAuditActions) {
    if (name == AuditActionName(a)) return a;
  }
  return std::nullopt;
}

Result<json> QueryAudit(const std::string& pg, const AuditQuery& query) {
  auto conn = pg_internal::Connect(pg);
  if (!conn.ok()) return conn.status();
  return Guard([&]() -> Result<json> {
    pqxx::read_transaction tx(**conn);
    std::vector<std::optional<std::string>> params;
    std::string where;
    // `condition` with "$" for its parameter.
    auto add = [&](const std::string& condition, std::string value) {
      params.push_back(std::move(value));
      const size_t at = condition.find('$');
      where += (where.empty() ? " WHERE " : " AND ") + condition.substr(0, at + 1) + std::to_string(params.size()) +
               condition.substr(at + 1);
    };
    if (query.actor) add("actor = $", *query.actor);
    if (query.namespace_name) add("namespace = $", *query.namespace_name);
    if (query.since) add("at >= to_timestamp($::bigint / 1000.0)", std::to_string(ToMillis(*query.since)));
    const std::string sql =
        "SELECT coalesce(json_agg(q ORDER BY q.seq DESC), '[]'::json)::text FROM (SELECT seq, at, actor, action, "
        "namespace, schedule, run_id, detail FROM audit" +
        where + " ORDER BY seq DESC LIMIT " + std::to_string(query.limit) + ") q";
    auto r = tx.exec_params(sql, pqxx::prepare::make_dynamic_params(params));
    return json::parse(r[0][0].as<std::string>());
  });
}

namespace audit_internal {

void RecordEach(pqxx::transaction_base& tx, const Actor& actor, AuditAction action, const json& rows) {
  TRIGD_CHECK_MSG(!actor.who.empty(), "a change without its actor");
  if (rows.empty()) return;
  tx.exec_params(
      "INSERT INTO audit (actor, action, namespace, schedule, run_id, detail) "
      "SELECT $1, $2, split_part(e.v->>'schedule', '/', 1), e.v->>'schedule', e.v->>'run_id', "
      "coalesce(e.v->'detail', '{}'::jsonb) FROM jsonb_array_elements($3::jsonb) WITH ORDINALITY AS e(v, n) "
      "ORDER BY e.n",
      actor.who, std::string(AuditActionName(action)), rows.dump());
}

void Record(pqxx::transaction_base& tx, const Actor& actor, AuditAction action, const std::string& schedule,
            const std::optional<std::string>& run_id, const json& detail) {
  json row = {{"schedule", schedule}, {"detail", detail}};
  if (run_id) row["run_id"] = *run_id;
  RecordEach(tx, actor, action, json::array({std::move(row)}));
}

}  // namespace audit_internal

}  // namespace trigd
