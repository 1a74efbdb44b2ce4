// The control topic (<prefix>control, topics/topics.json): what trigd tells every worker about
// run attempts it ended itself, so that a worker never starts one (docs/adr/0060). Each message
// is written to the outbox in the transaction that ends the attempt, keyed by run id. A worker
// must not start the attempt a message names, nor an earlier attempt of that run; a later one
// (a retry) runs. Only engine/store includes this.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>
#include <pqxx/pqxx>

#include "common/time.h"
#include "common/topic_names.h"
#include "core/launch_request.h"

namespace trigd::pg_internal {

using trigd::kQueuedTimeout;
using trigd::StartWindow;

// The start_by of a runs row's current attempt, as epoch milliseconds (SQL): its
// attempt_launched_at plus StartWindow(heartbeat_timeout_ms), as RenderLaunchRequest writes it
// into the request (core/launch_request.h). NULL for a finished run migrated from before
// schema/016 (such a run is never ended again).
#define TRIGD_QUEUED_TIMEOUT_MS "600000"  // kQueuedTimeout, for SQL text
static_assert(kQueuedTimeout == std::chrono::milliseconds(600000), "TRIGD_QUEUED_TIMEOUT_MS is kQueuedTimeout");
#define TRIGD_RUN_START_BY_MS                                         \
  "(floor(extract(epoch from attempt_launched_at) * 1000)::bigint + " \
  "greatest(heartbeat_timeout_ms, " TRIGD_QUEUED_TIMEOUT_MS "))"

// A run attempt trigd ended: lost (another attempt follows, `final` false) or failed as lost,
// killed by a schedule delete. `cancel` (trigctl runs cancel) is to come with the same fields.
struct AttemptEnded {
  std::string run_id;
  int64_t attempt = 0;
  std::string status;                   // lost, failed, killed: the attempt's outcome in trigd's books
  std::string reason;                   // lost, schedule_deleted
  bool final = true;                    // the run has ended: no attempt follows
  std::optional<std::string> start_by;  // the ended attempt's start deadline, from its request
};

// The message's text: {"type":"attempt_ended","run_id","attempt","status","reason","final",
// "start_by" (when known),"time"}. A worker may forget it once start_by is past (its own
// deadline check then refuses the attempt).
inline std::string ControlMessage(const AttemptEnded& a, TimePoint now) {
  nlohmann::json m = {{"type", "attempt_ended"}, {"run_id", a.run_id}, {"attempt", a.attempt},   {"status", a.status},
                      {"reason", a.reason},      {"final", a.final},   {"time", FormatTime(now)}};
  if (a.start_by) m["start_by"] = *a.start_by;
  return m.dump();
}

// Writes the control message of `a` to the outbox in `tx` (the control topic, key run id).
inline void AddControlMessage(pqxx::transaction_base& tx, const TopicNames& topics, const AttemptEnded& a,
                              TimePoint now) {
  tx.exec_params("INSERT INTO outbox (topic, key, payload) VALUES ($1, $2, $3)", topics.control, a.run_id,
                 ControlMessage(a, now));
}

// The start_by column of a result row (TRIGD_RUN_START_BY_MS), if any, as the request says it.
inline std::optional<std::string> StartByField(const pqxx::field& f) {
  if (f.is_null()) return std::nullopt;
  return FormatTime(TimePoint(Millis(f.as<int64_t>())));
}

}  // namespace trigd::pg_internal
