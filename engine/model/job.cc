#include "model/job.h"

namespace trigd {

const char* JobStateName(JobState s) {
  switch (s) {
    case JobState::kPendingTrigger: return "pending_trigger";
    case JobState::kPendingConstraint: return "pending_constraint";
    case JobState::kLaunched: return "launched";
    case JobState::kDiscarded: return "discarded";
  }
  return "?";
}

std::optional<JobState> JobStateFromName(std::string_view name) {
  for (JobState s :
       {JobState::kPendingTrigger, JobState::kPendingConstraint, JobState::kLaunched, JobState::kDiscarded}) {
    if (name == JobStateName(s)) return s;
  }
  return std::nullopt;
}

bool IsAllowedTransition(JobState from, JobState to) {
  switch (from) {
    case JobState::kPendingTrigger:
      // Launched straight from here: a trigger completed and launched in one check, or a
      // timeout with action "run".
      return to == JobState::kPendingConstraint || to == JobState::kDiscarded || to == JobState::kLaunched;
    case JobState::kPendingConstraint: return to == JobState::kLaunched || to == JobState::kDiscarded;
    case JobState::kLaunched:
      // Its schedule deleted before the relay published the launch request: withdrawn.
      return to == JobState::kDiscarded;
    case JobState::kDiscarded: return false;
  }
  return false;
}

nlohmann::json TriggerStateToJson(const TriggerState& s) {
  nlohmann::json leaves = nlohmann::json::array();
  for (const LeafState& l : s.leaves) {
    nlohmann::json j = {{"count", l.count}, {"satisfied", l.satisfied}};
    if (l.bytes) j["bytes"] = l.bytes;
    if (!l.partitions.empty()) j["partitions"] = l.partitions;
    if (l.last_arrival) j["last_arrival_ms"] = l.last_arrival->time_since_epoch().count();
    leaves.push_back(std::move(j));
  }
  return leaves;
}

TriggerState TriggerStateFromJson(const nlohmann::json& j) {
  TriggerState s;
  if (!j.is_array()) return s;
  for (const auto& l : j) {
    LeafState ls;
    ls.count = l.value("count", int64_t{0});
    ls.bytes = l.value("bytes", int64_t{0});
    ls.satisfied = l.value("satisfied", false);
    if (l.contains("partitions")) ls.partitions = l["partitions"].get<std::vector<std::string>>();
    if (auto it = l.find("last_arrival_ms"); it != l.end() && it->is_number_integer()) {
      ls.last_arrival = TimePoint(Millis(it->get<int64_t>()));
    }
    s.leaves.push_back(std::move(ls));
  }
  return s;
}

const nlohmann::json& TriggeringEvent::Payload() const {
  static const nlohmann::json kNull;
  return payload ? *payload : kNull;
}

}  // namespace trigd
