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

namespace trigd::pg_internal {

// How long a launched run may wait for a worker to start it before it counts as lost (Airflow's
// task_queued_timeout): a backlog or a worker rebalance is not a lost run.
inline constexpr Millis kQueuedTimeout = std::chrono::minutes(10);

// How long after its launch an attempt may still be started: past it the sweep already counts
// the attempt lost (a queued attempt is lost after the greater of heartbeat_timeout and the
// queued timeout of silence since its launch; SweepRuns). Launch requests carry launched_at plus
// this as `start_by` (docs/adr/0060).
inline Millis StartWindow(Millis heartbeat_timeout) { return std::max(heartbeat_timeout, kQueuedTimeout); }

// The same deadline for a request written by SQL (a retry): now() plus the window, as trigd
// writes times (TRIGD_NOW_TEXT's format). Needs the runs row's heartbeat_timeout_ms.
#define TRIGD_QUEUED_TIMEOUT_MS "600000"  // kQueuedTimeout, for SQL text
static_assert(kQueuedTimeout == std::chrono::milliseconds(600000), "TRIGD_QUEUED_TIMEOUT_MS is kQueuedTimeout");
#define TRIGD_START_BY_TEXT                                                                                    \
  "to_char((now() + make_interval(secs => greatest(heartbeat_timeout_ms, " TRIGD_QUEUED_TIMEOUT_MS ") / 1000.0)) " \
  "AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"')"

// The `start_by` of a runs row's stored request (as trigd writes it, or rendered from jsonb with
// a space after the colon); NULL for a request written before requests had one.
#define TRIGD_REQUEST_START_BY "substring(request from '\"start_by\": ?\"([^\"]*)\"')"

// A run attempt trigd ended: lost (another attempt follows, `final` false) or failed as lost,
// killed by a schedule delete. `cancel` (trigctl runs cancel) is to come with the same fields.
struct AttemptEnded {
  std::string run_id;
  int64_t attempt = 0;
  std::string status;  // lost, failed, killed: the attempt's outcome in trigd's books
  std::string reason;  // lost, schedule_deleted
  bool final = true;   // the run has ended: no attempt follows
  std::optional<std::string> start_by;  // the ended attempt's start deadline, from its request
};

// The message's text: {"type":"attempt_ended","run_id","attempt","status","reason","final",
// "start_by" (when known),"time"}. A worker may forget it once start_by is past (its own
// deadline check then refuses the attempt).
inline std::string ControlMessage(const AttemptEnded& a, TimePoint now) {
  nlohmann::json m = {{"type", "attempt_ended"}, {"run_id", a.run_id}, {"attempt", a.attempt},
                      {"status", a.status},      {"reason", a.reason}, {"final", a.final},
                      {"time", FormatTime(now)}};
  if (a.start_by) m["start_by"] = *a.start_by;
  return m.dump();
}

// Writes the control message of `a` to the outbox in `tx` (the control topic, key run id).
inline void AddControlMessage(pqxx::transaction_base& tx, const TopicNames& topics, const AttemptEnded& a,
                              TimePoint now) {
  tx.exec_params("INSERT INTO outbox (topic, key, payload) VALUES ($1, $2, $3)", topics.control, a.run_id,
                 ControlMessage(a, now));
}

// The start_by column of a result row (TRIGD_REQUEST_START_BY), if any.
inline std::optional<std::string> StartByField(const pqxx::field& f) {
  if (f.is_null()) return std::nullopt;
  return f.as<std::string>();
}

}  // namespace trigd::pg_internal
