// Jobs and their trigger state.
//
//   PENDING_TRIGGER --trigger complete--> PENDING_CONSTRAINT --all constraints hold--> LAUNCHED
//   PENDING_TRIGGER --trigger complete and constraints hold, or timeout(run)--> LAUNCHED
//   PENDING_TRIGGER / PENDING_CONSTRAINT --timeout(discard), skip, update, delete,
//   suspend, upstream failure--> DISCARDED
//   LAUNCHED --schedule deleted before the relay published the launch request--> DISCARDED
//
// A job is LAUNCHED in the transaction that writes its run and its launch request to the
// outbox; the relay publishes the request after that (at least once, same run id).
//
// Only a PENDING_TRIGGER job accumulates events; at most one exists per schedule.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/named_type.h"
#include "common/time.h"
#include "model/schedule.h"

namespace trigd {

using JobId = NamedType<int64_t, struct JobIdTag>;
using RunId = NamedType<std::string, struct RunIdTag>;

enum class JobState { kPendingTrigger, kPendingConstraint, kLaunched, kDiscarded };
const char* JobStateName(JobState s);  // "pending_trigger", ...
std::optional<JobState> JobStateFromName(std::string_view name);
// True for the allowed transitions of the diagram above.
bool IsAllowedTransition(JobState from, JobState to);

// What one leaf of the trigger has accumulated.
struct LeafState {
  int64_t count = 0;                    // matching events (program, tick), distinct partitions or keys
  int64_t bytes = 0;                    // partition bytes
  std::vector<std::string> partitions;  // distinct partitions (partition leaves) or custom event
                                        // keys (event leaves) seen, sorted
  bool satisfied = false;
  // Quiet and silence leaves (SPEC §11): the last matching arrival, or for a silence leaf the
  // instant it was armed (an arrival, or the schedule's apply). The leaf's deadline counts
  // from it (core/trigger_eval.h LeafDeadline).
  std::optional<TimePoint> last_arrival;
  bool operator==(const LeafState&) const = default;
};

struct TriggerState {
  std::vector<LeafState> leaves;  // one per leaf, depth-first order
  bool operator==(const TriggerState&) const = default;
};

nlohmann::json TriggerStateToJson(const TriggerState& s);
// The same document as TriggerStateToJson(s).dump() (members in its order), written directly:
// the ingest path writes one per job it opens or changes, and building the tree to dump it was
// a tenth of that path's CPU in trigd.
std::string TriggerStateText(const TriggerState& s);
TriggerState TriggerStateFromJson(const nlohmann::json& j);

// An event that contributed to a job, as carried in the launch request's triggered_by.
struct TriggeringEvent {
  std::string id;
  std::string type;
  // Shared, not copied, by every job the event counts for: an event that reaches many schedules
  // keeps one payload, where a copy per job made a JSON document per job on the ingest and
  // replay hot paths (docs/adr/0145-shared-event-payloads.md). Null reads as JSON null.
  std::shared_ptr<const nlohmann::json> payload;
  // The payload, or null when there is none.
  const nlohmann::json& Payload() const;
  bool operator==(const TriggeringEvent& o) const { return id == o.id && type == o.type && Payload() == o.Payload(); }
};

}  // namespace trigd
