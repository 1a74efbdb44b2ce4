// The audit (schema/026): who changed what and when, one row per change. The store's writes
// of the operator's verbs (apply, delete, suspend, resume in admin.h; start, cancel, rerun,
// backfill in operate.h) each write their row in the transaction of the change, so a change
// rolled back leaves no row and a committed one always has one (docs/adr/0215). This is the
// read side, for `trigctl audit list` and GET /api/v1/audit. Each call opens its own
// connection and is one transaction.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "common/status.h"
#include "common/time.h"

namespace trigd {

// Who asks: the audit's `actor`, also named in the histories of the jobs and runs it changes.
// "token:NAME" through the API, "os:USER@HOST" for trigctl straight to PostgreSQL
// (docs/adr/0216). Never empty.
struct Actor {
  std::string who;
};

// What an audit row records: one enum, one name each (the column's text).
enum class AuditAction { kApply, kDelete, kSuspend, kResume, kStart, kCancel, kRerun, kBackfill };
const char* AuditActionName(AuditAction a);
std::optional<AuditAction> AuditActionFromName(std::string_view name);

// The filters of `audit list`: rows at or after `since`, of one actor (exact), of one namespace.
struct AuditQuery {
  std::optional<TimePoint> since;
  std::optional<std::string> actor;
  std::optional<std::string> namespace_name;
  size_t limit = 100;
};

// Newest first, at most `limit`: [{seq, at, actor, action, namespace, schedule, run_id,
// detail}]. Read through the index of the first filter given (audit_by_actor,
// audit_by_namespace, audit_by_at), else backwards through the primary key.
Result<nlohmann::json> QueryAudit(const std::string& pg, const AuditQuery& query);

}  // namespace trigd
