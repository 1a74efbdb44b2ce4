// The schedule model of SPEC §4: what a parsed, valid schedule document holds.
// Plain values; copying is fine. Parsing and validation live in core/schedule_parser.h.
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/named_type.h"
#include "common/time.h"

namespace trigd {

// "namespace/name".
using ScheduleName = NamedType<std::string, struct ScheduleNameTag>;

// The one range of each integer field of a schedule document (SPEC §4): the parser refuses what
// lies outside it, naming the field and the limit, and every place the value is stored holds
// the whole range. A value that passed the parser but not its column failed every ingest
// transaction of the event that touched the schedule. Durations have theirs in common/time.h
// (kMaxDuration, stored as bigint milliseconds).
struct IntegerRange {
  int64_t min;
  int64_t max;
};
// A PostgreSQL `integer` column (int4).
inline constexpr int64_t kPgIntegerMax = std::numeric_limits<int32_t>::max();
// priority: jobs.priority (integer); the bounds keep priorities comparable across teams.
inline constexpr IntegerRange kPriorityRange{-1000, 1000};
// retry.max_attempts: runs.max_attempts and runs.attempt (integer).
inline constexpr IntegerRange kMaxAttemptsRange{1, kPgIntegerMax};
// trigger.partition.count and trigger.program.count: the document and a job's trigger state
// (jsonb), counted in int64; int4's range so that no count is ever larger than a column of
// counts (runs, active_runs) could hold.
inline constexpr IntegerRange kTriggerCountRange{1, kPgIntegerMax};
// trigger.partition.min_bytes: byte totals are int64 (saturating, core/trigger_eval.cc) and
// bigint wherever stored; a partition of many terabytes is meaningful.
inline constexpr IntegerRange kMinBytesRange{1, std::numeric_limits<int64_t>::max()};
// constraints.max_concurrent_runs and constraints.concurrency_group.max: compared with
// schedule_runtime.active_runs and group_runtime.active_runs (integer).
inline constexpr IntegerRange kConcurrencyRange{1, kPgIntegerMax};
// constraints.max_runs_per.count: compared with a count of runs launched in the period.
inline constexpr IntegerRange kMaxRunsPerCountRange{1, kPgIntegerMax};

enum class CatchupPolicy { kAll, kLatest, kNone };
enum class ProgramStatus { kStarted, kHeartbeat, kSucceeded, kFailed, kKilled };
enum class UpstreamFailurePolicy { kWait, kDiscard };
enum class OnUnmet { kWait, kSkip };
enum class TimeoutAction { kDiscard, kRun };
// What an update of a schedule does to its pending jobs (SPEC §11): discard them (§5), keep
// them as collected under the new version, or evaluate their collected events again.
enum class OnUpdate { kDiscard, kKeep, kReevaluate };
enum class TriggerKind { kTime, kPartition, kProgram, kAll, kAny, kEvent, kSilence };
// constraints.max_concurrent_runs.on_unmet (SPEC §9): wait for a slot, discard the job, or cancel
// the schedule's oldest active run (reason overlap) to make room.
enum class OverlapPolicy { kWait, kSkip, kCancelOldest };
const char* OverlapPolicyName(OverlapPolicy p);

const char* CatchupPolicyName(CatchupPolicy p);
const char* ProgramStatusName(ProgramStatus s);
std::optional<ProgramStatus> ProgramStatusFromName(std::string_view name);
const char* TriggerKindName(TriggerKind k);

struct TimeTrigger {
  // Exactly one of cron (5 fields) and every (fixed rate) is set.
  std::optional<std::string> cron;
  std::optional<Millis> every;
  std::string timezone = "UTC";
  CatchupPolicy catchup = CatchupPolicy::kLatest;
  Millis catchup_window = std::chrono::hours(24);
  bool operator==(const TimeTrigger&) const = default;
};

struct PartitionTrigger {
  std::string dataset;
  // Fires when `count` distinct partitions or `min_bytes` bytes have arrived since the job
  // opened, whichever comes first. With neither set, count is 1; with only min_bytes set,
  // only bytes count.
  std::optional<int64_t> count;
  std::optional<int64_t> min_bytes;
  // Only partitions whose name matches this glob (`*` any run of characters, `?` one
  // character) count (SPEC §11); others of the dataset are ignored.
  std::optional<std::string> match;
  // Quiet period (SPEC §11): the leaf completes only once its count or bytes are reached and no
  // matching arrival came for this long; each arrival restarts it. None: no quiet period.
  std::optional<Millis> quiet;
  bool operator==(const PartitionTrigger&) const = default;
};

struct ProgramTrigger {
  std::string program;
  std::vector<ProgramStatus> statuses = {ProgramStatus::kSucceeded};
  int64_t count = 1;
  UpstreamFailurePolicy on_upstream_failure = UpstreamFailurePolicy::kWait;
  // Count events per lineage (SPEC §10): a job of the schedule collects only events of one
  // lineage, and the schedule may hold one open job per lineage.
  bool correlate = false;
  bool operator==(const ProgramTrigger&) const = default;
};

// One condition of an event leaf's `where` (SPEC §11): the custom event's payload value at the
// dotted `path` ("attrs.stage") equals one of `values` (JSON scalars). `in`: the document gave
// {"in": [...]} (else one value).
struct WhereCondition {
  std::string path;
  std::vector<nlohmann::json> values;
  bool in = false;
  bool operator==(const WhereCondition&) const = default;
};

// A leaf on custom events (envelope type `custom`) named `name`: counts distinct payload keys
// of the events that pass every `where` condition; satisfied at `count`.
struct EventTrigger {
  std::string name;
  std::vector<WhereCondition> where;  // sorted by path, at most one per path
  int64_t count = 1;
  std::optional<Millis> quiet;  // as PartitionTrigger::quiet
  bool operator==(const EventTrigger&) const = default;
};

// A leaf on the absence of arrivals (SPEC §11): complete when no partition of `dataset` (or no
// custom event named `event`; exactly one is set) arrived for `after` since the last arrival or
// since the schedule was applied. Once per silence: the next arrival arms it again.
struct SilenceTrigger {
  std::optional<std::string> dataset;
  std::optional<std::string> event;
  Millis after{0};  // the document's "for"
  bool operator==(const SilenceTrigger&) const = default;
};

// A trigger tree. Leaves (time, partition, program, event) are numbered depth-first from 0; that
// number is the leaf's index in a job's TriggerState.
struct Trigger {
  TriggerKind kind = TriggerKind::kPartition;
  TimeTrigger time;               // kind == kTime
  PartitionTrigger partition;     // kind == kPartition
  ProgramTrigger program;         // kind == kProgram
  EventTrigger event;             // kind == kEvent
  SilenceTrigger silence;         // kind == kSilence
  std::vector<Trigger> children;  // kind == kAll or kAny
  bool operator==(const Trigger&) const = default;
};

struct ConcurrencyGroup {
  std::string name;
  int64_t max = 1;
  OnUnmet on_unmet = OnUnmet::kWait;
  bool operator==(const ConcurrencyGroup&) const = default;
};

struct TimeWindow {
  int start_minute = 0;  // minutes after local midnight
  int end_minute = 0;    // end < start means the window crosses midnight
  std::string timezone = "UTC";
  OnUnmet on_unmet = OnUnmet::kWait;
  bool operator==(const TimeWindow&) const = default;
};

struct MinSinceLastRun {
  Millis duration{0};
  OnUnmet on_unmet = OnUnmet::kWait;
  bool operator==(const MinSinceLastRun&) const = default;
};

struct MaxRunsPer {
  int64_t count = 1;
  Millis period{0};
  OnUnmet on_unmet = OnUnmet::kWait;
  bool operator==(const MaxRunsPer&) const = default;
};

struct Constraints {
  std::optional<int64_t> max_concurrent_runs;
  // What the limit above does when it is reached (the object form {"max", "on_unmet"}; the
  // number form is kWait).
  OverlapPolicy on_overlap = OverlapPolicy::kWait;
  std::optional<ConcurrencyGroup> concurrency_group;
  std::optional<Millis> delay;
  std::optional<TimeWindow> time_window;
  std::optional<MinSinceLastRun> min_since_last_run;
  std::optional<MaxRunsPer> max_runs_per;
  bool operator==(const Constraints&) const = default;
};

struct Timeout {
  Millis after{0};
  TimeoutAction action = TimeoutAction::kDiscard;
  bool operator==(const Timeout&) const = default;
};

struct RetryPolicy {
  int64_t max_attempts = 1;  // 1 = no retry
  Millis backoff = std::chrono::minutes(1);
  Millis max_backoff = std::chrono::hours(1);
  // Each backoff is spread by up to this share of itself (0..100 percent), so that runs that
  // failed together do not retry together.
  int64_t jitter_percent = 10;
  bool operator==(const RetryPolicy&) const = default;
};

struct Program {
  std::string name;
  nlohmann::json args = nlohmann::json::object();
  std::string target = "default";
  bool operator==(const Program&) const = default;
};

// The period a schedule is active in (SPEC §9), either end optional: [from, until). Outside it
// the schedule behaves as suspended: no fire times, events ignored.
struct ActivePeriod {
  std::optional<TimePoint> from;
  std::optional<TimePoint> until;
  bool Contains(TimePoint t) const { return (!from || t >= *from) && (!until || t < *until); }
  bool operator==(const ActivePeriod&) const = default;
};

struct Schedule {
  std::string namespace_name = "default";
  std::string name;
  Program program;
  Trigger trigger;
  Constraints constraints;
  std::optional<Timeout> timeout;
  int64_t priority = 0;
  RetryPolicy retry;
  Millis heartbeat_timeout = std::chrono::minutes(5);
  bool enabled = true;
  // A run still going after this is cancelled and ends failed (reason timeout), retried per
  // `retry`. None: no limit.
  std::optional<Millis> run_timeout;
  std::optional<ActivePeriod> active;
  OnUpdate on_update = OnUpdate::kDiscard;

  ScheduleName id() const { return ScheduleName(namespace_name + "/" + name); }
  bool operator==(const Schedule&) const = default;
};

// Leaves of a trigger in depth-first order (index = leaf number).
std::vector<const Trigger*> TriggerLeaves(const Trigger& trigger);
// Calls f(leaf) for each leaf of `trigger` in TriggerLeaves' order, without building the list
// (trigger evaluation walks a job's leaves at every event it applies).
template <class F>
void ForEachLeaf(const Trigger& trigger, F&& f) {
  if (trigger.kind == TriggerKind::kAll || trigger.kind == TriggerKind::kAny) {
    for (const Trigger& child : trigger.children) ForEachLeaf(child, f);
  } else {
    f(trigger);
  }
}

// Whether any program leaf of `trigger` says "correlate": true (then every leaf does: the
// parser refuses a mix, docs/adr/0115-correlated-joins.md).
bool IsCorrelated(const Trigger& trigger);

// The event key a leaf listens on: "partition:<dataset>", "program:<program>",
// "time:<namespace/name>", "custom:<name>"; a silence leaf listens on its dataset's or event's
// key (without `where`). An event leaf with `where` listens on
// "custom:<name>?<path>=<values>" (CustomEventKey), its first condition by path.
std::string LeafEventKey(const Trigger& leaf, const ScheduleName& schedule);

// The index key of an event leaf: "custom:<name>" without `where`, else
// "custom:<name>?<path>=<values>" with the first condition's path and its values as a JSON array
// of canonical scalars (CanonicalScalar). ScheduleIndex::Put expands it into one key per value.
std::string CustomEventKey(const EventTrigger& leaf);
// A JSON scalar as the index compares it: its compact text, with a number that is a whole
// value written as an integer (1.0 and 1 are the same key, as they are equal in `where`).
std::string CanonicalScalar(const nlohmann::json& value);

}  // namespace trigd
