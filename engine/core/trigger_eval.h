// Trigger evaluation: how events accumulate in a job's TriggerState, and when the trigger is
// complete. Pure: no I/O; thread-safe.
//
// Leaves (depth-first numbering, see TriggerLeaves):
// - partition: counts distinct partitions of its dataset and their bytes since the job opened;
//   satisfied when `count` distinct partitions (default 1) or `min_bytes` bytes have arrived.
// - program: counts events of its program with one of its statuses; satisfied at `count`.
// - time: satisfied by a tick of its own schedule.
// - event: counts distinct keys of custom events of its name that pass its `where`; satisfied
//   at `count`. A partition leaf with `match` counts only partitions its glob matches.
// - silence: armed by an arrival of its dataset or event (or by the schedule's apply, see
//   ArmSilence); satisfied when `for` has passed since it was armed without another arrival.
// A partition or event leaf with `quiet` is satisfied only once its count or bytes are reached
// and `quiet` has passed since its last matching arrival (each arrival restarts the period).
// Quiet and silence leaves complete with the clock, not with an event: SettleTimedLeaves marks
// them at their deadline, which NextLeafDeadline gives the store to wake the job at.
// Composites: `all` needs every child satisfied, `any` at least one.
// Once a leaf is satisfied it stays satisfied for the life of the job.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/event.h"
#include "model/job.h"
#include "model/schedule.h"

namespace trigd {

// A fresh state: one LeafState per leaf, nothing counted.
TriggerState NewTriggerState(const Trigger& trigger);

struct ApplyResult {
  bool changed = false;           // some leaf counted the event
  bool upstream_failure = false;  // a program leaf with on_upstream_failure=discard saw its
                                  // upstream fail (failed or killed, not a wanted status)
  std::vector<int> leaves;        // leaves that counted the event
};

// Applies `event` to every leaf of `trigger` it matches. `schedule` is the trigger's own
// schedule (ticks match only their own schedule). A state whose leaf count differs from the
// trigger's is reset first (the schedule changed).
// `at` is the arrival's instant for quiet and silence leaves (the ingest's clock; the event's
// own time in the 4-argument form); leaves whose deadline is at or before it are settled first.
ApplyResult ApplyEvent(const Trigger& trigger, const ScheduleName& schedule, const Event& event, TriggerState& state);
ApplyResult ApplyEvent(const Trigger& trigger, const ScheduleName& schedule, const Event& event, TriggerState& state,
                       TimePoint at);

// Marks satisfied the quiet and silence leaves whose deadline is at or before `now`. True when
// one was.
bool SettleTimedLeaves(const Trigger& trigger, TriggerState& state, TimePoint now);
// When the leaf completes by the clock if nothing arrives first: a quiet leaf whose count is
// reached (last arrival + quiet), an armed silence leaf (armed + for); none for other leaves,
// satisfied ones, or a quiet leaf still counting.
std::optional<TimePoint> LeafDeadline(const Trigger& leaf, const LeafState& state);
// The earliest LeafDeadline of the trigger's leaves: when the store wakes the job.
std::optional<TimePoint> NextLeafDeadline(const Trigger& trigger, const TriggerState& state);
// "trigger.partition: quiet until T, last arrival at T0" for the leaf of NextLeafDeadline, or
// "" when none: what a job collecting waits for on the clock (the checker's reason, `jobs why`).
std::string DescribeLeafDeadline(const Trigger& trigger, const TriggerState& state);
// Arms the silence leaves not armed yet at `at` (a schedule applied or resumed: the silence
// counts from then). True when the trigger has a silence leaf.
bool ArmSilence(const Trigger& trigger, TriggerState& state, TimePoint at);
bool HasSilence(const Trigger& trigger);

// The value at a dotted path ("attrs.stage") of a custom event's payload, or null when a part
// of the path is missing or not an object.
const nlohmann::json* PayloadAt(const nlohmann::json& payload, std::string_view path);
// True when `payload` passes every condition of `leaf.where`: the value at its path is a
// scalar equal (JSON equality: 1 == 1.0) to one of its values.
bool WhereMatches(const EventTrigger& leaf, const nlohmann::json& payload);

// True when the trigger tree is satisfied by `state`.
bool IsComplete(const Trigger& trigger, const TriggerState& state);

// One line per leaf, saying whether it is met and how far it got, with the leaf's path:
// "trigger.all[0].partition: 2 of 4 partitions of sales.raw (unmet)". For `jobs why`.
struct LeafProgress {
  std::string path;
  bool satisfied = false;
  std::string detail;
};
std::vector<LeafProgress> DescribeProgress(const Trigger& trigger, const TriggerState& state);
// DescribeProgress's entries for the leaves numbered `leaves` only, in leaf order (what a history
// entry says of the leaves an event counted): the other leaves are not described.
std::vector<LeafProgress> DescribeLeaves(const Trigger& trigger, const TriggerState& state,
                                         const std::vector<int>& leaves);

}  // namespace trigd
