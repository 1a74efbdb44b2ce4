// `schedules backfill` whole, for trigctl and the HTTP API alike: the plan of [from, to) and,
// unless a dry run, its ticks sent to the time-events topic and counted (SPEC §9).
#pragma once

#include <string>

#include "common/status.h"
#include "common/time.h"
#include "log/kafka_config.h"
#include "store/operate.h"

namespace trigd {

struct BackfillRequest {
  std::string schedule;  // namespace/name
  TimePoint from, to;    // [from, to)
  size_t max = 10000;    // refuse a range of more fire times
  bool dry_run = false;  // plan only, send nothing
  Actor actor;           // who asks, for the audit
};

// Plans the backfill (PlanBackfill) and, unless `dry_run`, produces one tick per fire time with
// the fire time's one identity, waits for the broker to confirm them, then counts them and writes
// the audit row (RecordBackfill; a dry run, or a range without fire times, changes nothing and
// is not recorded). kInvalid
// for a plan refused or a missing topic (named), kUnavailable when ticks were not delivered
// (sending again is harmless: each fire time launches once).
Result<BackfillPlan> Backfill(const std::string& pg, const KafkaConfig& kafka, const std::string& topic_prefix,
                              const BackfillRequest& request);

}  // namespace trigd
