#include "model/job.h"

#include "common/json_text.h"

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

std::string TriggerStateText(const TriggerState& s) {
  std::string out = "[";
  for (const LeafState& l : s.leaves) {
    if (out.size() > 1) out += ',';
    // nlohmann's objects keep their keys sorted: bytes, count, last_arrival_ms, partitions, satisfied.
    out += '{';
    if (l.bytes) out += "\"bytes\":" + std::to_string(l.bytes) + ",";
    out += "\"count\":" + std::to_string(l.count);
    if (l.last_arrival) out += ",\"last_arrival_ms\":" + std::to_string(l.last_arrival->time_since_epoch().count());
    if (!l.partitions.empty()) {
      out += ",\"partitions\":[";
      for (size_t i = 0; i < l.partitions.size(); ++i) {
        if (i > 0) out += ',';
        AppendJsonString(out, l.partitions[i]);
      }
      out += ']';
    }
    out += l.satisfied ? ",\"satisfied\":true}" : ",\"satisfied\":false}";
  }
  return out + "]";
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
