#include "model/event.h"

namespace trigd {

const char* EventOutcomeName(EventOutcome o) {
  switch (o) {
    case EventOutcome::kApplied: return "applied";
    case EventOutcome::kDuplicate: return "duplicate";
    case EventOutcome::kNoMatch: return "no_match";
    case EventOutcome::kDead: return "dead";
  }
  return "?";
}

const char* DeadLetterReasonName(DeadLetterReason r) {
  switch (r) {
    case DeadLetterReason::kOversized: return "oversized";
    case DeadLetterReason::kBadJson: return "bad_json";
    case DeadLetterReason::kNotObject: return "not_object";
    case DeadLetterReason::kMissingField: return "missing_field";
    case DeadLetterReason::kBadField: return "bad_field";
    case DeadLetterReason::kUnknownType: return "unknown_type";
    case DeadLetterReason::kScheduleFailed: return "schedule_failed";
  }
  return "?";
}

const char* EventTypeName(EventType t) {
  switch (t) {
    case EventType::kPartition: return "partition";
    case EventType::kProgram: return "program";
    case EventType::kTick: return "tick";
    case EventType::kCustom: return "custom";
  }
  return "?";
}

std::string_view EventKeyPrefix(EventType t) {
  switch (t) {
    case EventType::kPartition: return "partition:";
    case EventType::kProgram: return "program:";
    case EventType::kTick: return "time:";
    case EventType::kCustom: return "custom:";
  }
  return {};
}

std::string Event::EventKey() const {
  std::string key(EventKeyPrefix(type));
  switch (type) {
    case EventType::kPartition: key += partition.dataset; break;
    case EventType::kProgram: key += program.program; break;
    case EventType::kTick: key += tick.schedule; break;
    case EventType::kCustom: key += custom.name; break;
  }
  return key;
}

std::string OwnTickId(std::string_view schedule, std::string_view fire_time) {
  std::string id = "tick:";
  id.append(schedule).append(":").append(fire_time);
  return id;
}

bool IsOwnTick(EventType type, std::string_view id, std::string_view schedule) {
  constexpr std::string_view kPrefix = "tick:";
  return type == EventType::kTick && id.size() > kPrefix.size() + schedule.size() + 1 && id.starts_with(kPrefix) &&
         id.substr(kPrefix.size(), schedule.size()) == schedule && id[kPrefix.size() + schedule.size()] == ':';
}

const std::string& EventLineage(const ProgramPayload& p) { return p.lineage.empty() ? p.run_id : p.lineage; }

}  // namespace trigd
