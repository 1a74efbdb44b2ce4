// The event envelope of SPEC §3, parsed. Parsing lives in core/envelope.h.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/time.h"
#include "model/schedule.h"

namespace trigd {

enum class EventType { kPartition, kProgram, kTick };
const char* EventTypeName(EventType t);
// The start of an event key (Event::EventKey): "partition:", "program:" or "time:".
std::string_view EventKeyPrefix(EventType t);

struct PartitionPayload {
  std::string dataset;
  std::vector<std::string> partitions;
  std::optional<int64_t> bytes;
};

struct ProgramPayload {
  std::string program;
  std::string run_id;
  ProgramStatus status = ProgramStatus::kSucceeded;
  int64_t attempt = 1;
  std::string reason;  // set by trigd for "lost" and "upstream_failed"
};

struct TickPayload {
  std::string schedule;  // "namespace/name"
  TimePoint fire_time;
};

struct Event {
  std::string id;
  EventType type = EventType::kPartition;
  TimePoint time;
  nlohmann::json payload;  // as received, carried into launch requests
  PartitionPayload partition;  // type == kPartition
  ProgramPayload program;      // type == kProgram
  TickPayload tick;            // type == kTick

  // "partition:<dataset>", "program:<program>" or "time:<schedule>".
  std::string EventKey() const;
};

// trigd's own ticks. A checker's tick transaction decides each fire time once (under its time
// trigger's row lock), applies the tick to its schedule and publishes it on trigd.events.time
// for observers, in the same transaction, with the id "tick:<schedule>:<fire_time>". Ingestion
// skips a tick whose id has that form (IsOwnTick): it was applied by the transaction that
// published it, so it needs no de-duplication record and no lookup. A tick produced by anyone
// else (a manual run, a backfill) uses another id; ingestion de-duplicates it by the identity
// OwnTickId gives its fire time and holds it against the time trigger (PgStore::CheckProducerTicks).
std::string OwnTickId(std::string_view schedule, std::string_view fire_time);
bool IsOwnTick(EventType type, std::string_view id, std::string_view schedule);

}  // namespace trigd
