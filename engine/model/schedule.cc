#include "model/schedule.h"

#include <cmath>

#include "common/check.h"

namespace trigd {

const char* CatchupPolicyName(CatchupPolicy p) {
  switch (p) {
    case CatchupPolicy::kAll: return "all";
    case CatchupPolicy::kLatest: return "latest";
    case CatchupPolicy::kNone: return "none";
  }
  return "?";
}

const char* ProgramStatusName(ProgramStatus s) {
  switch (s) {
    case ProgramStatus::kStarted: return "started";
    case ProgramStatus::kHeartbeat: return "heartbeat";
    case ProgramStatus::kSucceeded: return "succeeded";
    case ProgramStatus::kFailed: return "failed";
    case ProgramStatus::kKilled: return "killed";
  }
  return "?";
}

std::optional<ProgramStatus> ProgramStatusFromName(std::string_view name) {
  if (name == "started") return ProgramStatus::kStarted;
  if (name == "heartbeat") return ProgramStatus::kHeartbeat;
  if (name == "succeeded") return ProgramStatus::kSucceeded;
  if (name == "failed") return ProgramStatus::kFailed;
  if (name == "killed") return ProgramStatus::kKilled;
  return std::nullopt;
}

const char* TriggerKindName(TriggerKind k) {
  switch (k) {
    case TriggerKind::kTime: return "time";
    case TriggerKind::kPartition: return "partition";
    case TriggerKind::kProgram: return "program";
    case TriggerKind::kAll: return "all";
    case TriggerKind::kAny: return "any";
    case TriggerKind::kEvent: return "event";
    case TriggerKind::kSilence: return "silence";
  }
  return "?";
}

const char* OverlapPolicyName(OverlapPolicy p) {
  switch (p) {
    case OverlapPolicy::kWait: return "wait";
    case OverlapPolicy::kSkip: return "skip";
    case OverlapPolicy::kCancelOldest: return "cancel_oldest";
  }
  return "?";
}

std::vector<const Trigger*> TriggerLeaves(const Trigger& trigger) {
  std::vector<const Trigger*> out;
  ForEachLeaf(trigger, [&out](const Trigger& leaf) { out.push_back(&leaf); });
  return out;
}

bool IsCorrelated(const Trigger& trigger) {
  for (const Trigger* leaf : TriggerLeaves(trigger)) {
    if (leaf->kind == TriggerKind::kProgram && leaf->program.correlate) return true;
  }
  return false;
}

std::string LeafEventKey(const Trigger& leaf, const ScheduleName& schedule) {
  switch (leaf.kind) {
    case TriggerKind::kTime: return "time:" + schedule.value();
    case TriggerKind::kPartition: return "partition:" + leaf.partition.dataset;
    case TriggerKind::kProgram: return "program:" + leaf.program.program;
    case TriggerKind::kEvent: return CustomEventKey(leaf.event);
    case TriggerKind::kSilence:
      return leaf.silence.dataset ? "partition:" + *leaf.silence.dataset : "custom:" + leaf.silence.event.value_or("");
    default: break;
  }
  TRIGD_FAIL("LeafEventKey called on a composite trigger");
}

std::string CanonicalScalar(const nlohmann::json& value) {
  if (value.is_number_float()) {
    const double d = value.get<double>();
    if (std::isfinite(d) && std::trunc(d) == d && std::fabs(d) < 9e18) {
      return std::to_string(static_cast<int64_t>(d));
    }
  }
  return value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string CustomEventKey(const EventTrigger& leaf) {
  std::string key = "custom:" + leaf.name;
  if (leaf.where.empty()) return key;
  const WhereCondition& first = leaf.where.front();
  key += "?" + first.path + "=[";
  for (size_t i = 0; i < first.values.size(); ++i) {
    if (i > 0) key += ",";
    key += CanonicalScalar(first.values[i]);
  }
  return key + "]";
}

}  // namespace trigd
