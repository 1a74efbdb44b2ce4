// The trigd engine: three loops (ingest, checker, relay) on their own threads and PostgreSQL
// connections; ingest commits on a fourth thread and connection (IngestCommitter).
// - ingest: consumes the event topics, maps events through the reverse index, and applies
//   each batch to jobs in one transaction with the consumed positions;
// - checker: checks due jobs' constraints and launches them (run + outbox row), produces time
//   ticks, detects lost runs and schedules retries, refreshes the job gauges;
// - relay: publishes the outbox to Kafka and deletes rows once the broker confirmed them.
// Loops wake each other after a commit, so an event reaches its launch without waiting for a
// poll interval. Any number of trigd processes can run against the same database and group.
#pragma once

#include <atomic>

#include "app/config.h"
#include "common/status.h"

namespace trigd {

// Runs until `stop` becomes true. Returns non-ok on a fatal error.
Status RunEngine(const Config& config, const std::atomic<bool>& stop);

}  // namespace trigd
