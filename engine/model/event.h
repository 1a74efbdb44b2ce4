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

enum class EventType { kPartition, kProgram, kTick, kCustom };
inline constexpr EventType kEventTypes[] = {EventType::kPartition, EventType::kProgram, EventType::kTick,
                                            EventType::kCustom};
const char* EventTypeName(EventType t);

// What ingestion did with one event (trigd_events_total's `outcome` label, SPEC §7): it changed
// a job or ended a run (applied), was seen before (duplicate), concerned no schedule
// (no_match), or was refused to the dead-letter topic (dead, counted by its reason instead).
enum class EventOutcome { kApplied, kDuplicate, kNoMatch, kDead };
inline constexpr EventOutcome kCountedEventOutcomes[] = {EventOutcome::kApplied, EventOutcome::kDuplicate,
                                                         EventOutcome::kNoMatch};
const char* EventOutcomeName(EventOutcome o);

// Why an event went to the dead-letter topic (trigd_dead_letters_total's `reason` label, and the
// start of the dead letter's `reason` text). ParseEnvelope (core/envelope.h) gives the first
// six; kScheduleFailed is ingest's, for an event a schedule's rows could not take
// (store/poison.cc).
enum class DeadLetterReason {
  kOversized,
  kBadJson,
  kNotObject,
  kMissingField,
  kBadField,
  kUnknownType,
  kScheduleFailed
};
inline constexpr DeadLetterReason kDeadLetterReasons[] = {
    DeadLetterReason::kOversized,     DeadLetterReason::kBadJson,  DeadLetterReason::kNotObject,
    DeadLetterReason::kMissingField,  DeadLetterReason::kBadField, DeadLetterReason::kUnknownType,
    DeadLetterReason::kScheduleFailed};
const char* DeadLetterReasonName(DeadLetterReason r);
// The start of an event key (Event::EventKey): "partition:", "program:", "time:" or "custom:".
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
  // The run's lineage (SPEC §10): carried by trigd's own events and launch requests; a worker's
  // report may omit it, then ingestion reads it from the run (empty while unknown).
  std::string lineage;
  std::string worker;  // the reporting worker's id (host:pid for the reference worker), optional
};

// The lineage an event of a program counts in: its own, or, when unknown (a report of no run
// trigd knows, without `lineage`), the run id: such a run starts its own lineage.
const std::string& EventLineage(const ProgramPayload& p);

struct TickPayload {
  std::string schedule;  // "namespace/name"
  TimePoint fire_time;
};

// A custom event (SPEC §11): `name` says what happened ("model.published"), `key` which thing
// (counted distinct by event leaves), `attrs` anything else; `where` reads the whole payload.
struct CustomPayload {
  std::string name;
  std::string key;
};

struct Event {
  std::string id;
  EventType type = EventType::kPartition;
  TimePoint time;
  nlohmann::json payload;      // as received, carried into launch requests
  PartitionPayload partition;  // type == kPartition
  ProgramPayload program;      // type == kProgram
  TickPayload tick;            // type == kTick
  CustomPayload custom;        // type == kCustom

  // "partition:<dataset>", "program:<program>", "time:<schedule>" or "custom:<name>".
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
