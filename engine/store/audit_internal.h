// Writing audit rows (store/audit.h), for the store's own transactions only.
#pragma once

#include <optional>
#include <string>

#include <nlohmann/json.hpp>
#include <pqxx/pqxx>

#include "store/audit.h"

namespace trigd::audit_internal {

// One row in `tx`, the transaction of the change it records: `schedule` (namespace/name), the
// run a cancel or rerun names, what changed. The time is the transaction's (now()).
void Record(pqxx::transaction_base& tx, const Actor& actor, AuditAction action, const std::string& schedule,
            const std::optional<std::string>& run_id, const nlohmann::json& detail);

// One row per element of `rows` ([{schedule, detail}]), in one statement: an apply of many
// schedules.
void RecordEach(pqxx::transaction_base& tx, const Actor& actor, AuditAction action, const nlohmann::json& rows);

}  // namespace trigd::audit_internal
