// Pure decisions behind the operator's verbs (SPEC §9): the fire times `schedules next` and
// `schedules backfill` list, the arguments of a run started by hand, the field-level diff of
// `schedules apply --dry-run`, and the spread of a retry's backoff. The store and trigctl
// execute and print them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/time.h"
#include "model/schedule.h"

namespace trigd {

// The schedule's time leaf (the one that drives its ticks), if it has one.
const TimeTrigger* ScheduleTimeTrigger(const Schedule& s);

// The most fire times one backfill may name (its `max`): a backfill builds its plan, the ids and
// one tick per fire time in memory, about 1 KB each, so a request holds at most about 100 MB.
inline constexpr size_t kMaxBackfillFireTimes = 100000;

// How many fire times of the schedule's time trigger fall in [from, to) inside its active
// period, counted up to `limit` + 1 and none kept: a range of millions costs time bounded by
// `limit` and no memory.
size_t CountFireTimesBetween(const Schedule& s, TimePoint anchor, TimePoint from, TimePoint to, size_t limit);

// Fire times of the schedule's time trigger in [from, to), oldest first, inside its active
// period; at most `max` of them, `more` set when the range holds others past them.
struct FireTimes {
  std::vector<TimePoint> times;
  bool more = false;
};
// `anchor`: the time trigger's anchor (fire times of `every` are anchor + k * every).
FireTimes FireTimesBetween(const Schedule& s, TimePoint anchor, TimePoint from, TimePoint to, size_t max);

// `t` as the wall clock of `timezone` (an IANA name the parser accepted), with its offset:
// "2026-11-27T06:00:00+01:00".
std::string FormatLocalTime(TimePoint t, const std::string& timezone);

// `program.args` with `override`'s keys put over it one by one (a run started by hand). Both are
// objects (trigctl refuses any other --args).
nlohmann::json MergeArgs(const nlohmann::json& args, const nlohmann::json& override);

// The args override of a job started by hand: the payload `args` of the `manual` entry of its
// triggered_by (JSON text, as stored), if any. Cheap for every other job (a substring test).
std::optional<nlohmann::json> ManualArgs(std::string_view triggered_by_json);

// One difference between two canonical documents: the dotted path of the field ("retry.backoff",
// "trigger.all[1].partition.count"), its old value (null when added) and new value (null when
// removed).
struct FieldChange {
  std::string path;
  nlohmann::json before;
  nlohmann::json after;
};
std::vector<FieldChange> DiffDocuments(const nlohmann::json& before, const nlohmann::json& after);

// The wait before a retry: `backoff` spread by up to `jitter_percent` of itself, `u` a uniform
// draw in [0, 1) (the caller's random source): backoff * (1 + jitter * (2u - 1)), never below 0
// nor above kMaxDuration.
Millis JitteredBackoff(Millis backoff, int64_t jitter_percent, double u);

}  // namespace trigd
