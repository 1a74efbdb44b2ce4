// The pure heart of ingestion: how a batch of events opens, updates, completes and discards
// jobs (SPEC §5 "Accumulation", "Failure propagation"). The store loads the open jobs of the
// schedules the batch reaches (locked), calls Accumulate, and writes back what it returns in
// the same transaction as the consumed offsets. No I/O; thread-safe (no shared state).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/json_text.h"
#include "common/time.h"
#include "model/event.h"
#include "model/job.h"
#include "model/schedule.h"

namespace trigd {

// Bounded per-job history (oldest entries dropped first).
inline constexpr size_t kMaxJobHistory = 50;
// Bounded triggered_by list carried into launch requests.
inline constexpr size_t kMaxTriggeringEvents = 1000;

// A schedule as the batch sees it: id, version and its parsed definition.
struct ScheduleView {
  int64_t id = 0;
  int version = 0;
  std::shared_ptr<const Schedule> schedule;
};

// A job history entry Accumulate writes, as a record: what happened, the event, and the state
// of the leaves the event counted (not their text). HistoryText writes it as the JSON text
// trigd stores; the replay keeps the records as its timeline and writes text only for what it
// prints (docs/adr/0153-history-records.md).
struct HistoryRecord {
  enum class Kind : uint8_t {
    kOpened,             // {"what": "opened", "event", "lineage" (correlated)}
    kCounted,            // {"what": "event counted", "event", "leaves": [...]}
    kComplete,           // {"what": "trigger complete"}
    kDiscardedUpdated,   // {"what": "discarded: schedule updated"}
    kDiscardedUpstream,  // {"what": "discarded: upstream failed", "event", "program", "status"}
  };
  // A counted leaf: its number (depth-first) and its state right after the event (without its
  // partition list, which no description reads).
  struct Leaf {
    int leaf = 0;
    LeafState state;
  };
  Kind kind = Kind::kOpened;
  bool has_lineage = false;                       // kOpened of a correlated schedule
  ProgramStatus status = ProgramStatus::kFailed;  // kDiscardedUpstream
  std::string event;
  std::string extra;         // kOpened: the lineage; kDiscardedUpstream: the failed program
  std::vector<Leaf> leaves;  // kCounted, in leaf order
};

// The entry's "what": "opened", "event counted", "trigger complete", "discarded: ...".
std::string_view HistoryWhat(HistoryRecord::Kind kind);
// A kCounted record's leaves as its entry's "leaves" says them ("trigger.partition: 2 of 4
// partitions of sales.raw"), in leaf order. `trigger`: the job's schedule's trigger.
std::vector<std::string> HistoryLeaves(const HistoryRecord& record, const Trigger& trigger);
// The entry's JSON text, as stored in the job's history. `at`: the instant as FormatTime writes it.
std::string HistoryText(const HistoryRecord& record, const Trigger& trigger, std::string_view at);

// How Accumulate hands back the history entries it writes: as JSON text in OpenJob::history
// (what the store writes), or as records in OpenJob::history_records (the replay).
enum class HistoryForm { kText, kRecords };

// A job collecting events (PENDING_TRIGGER), as loaded from the store or opened by the batch.
struct OpenJob {
  int64_t id = 0;  // 0: opened by this batch, not stored yet
  int64_t schedule_id = 0;
  int schedule_version = 0;
  // The lineage whose events the job collects, for a correlated schedule (SPEC §10); empty
  // otherwise. A correlated schedule holds at most one open job per lineage.
  std::string lineage;
  TriggerState state;
  std::vector<TriggeringEvent> triggered_by;
  TimePoint opened_at;
  // What this batch did to it.
  bool changed = false;
  bool complete = false;   // trigger satisfied: the job moves to PENDING_CONSTRAINT
  bool discarded = false;  // upstream failure (or version change)
  std::string discard_reason;
  std::vector<std::string> history;            // entries to append, each a JSON object (HistoryEntry)
  std::vector<HistoryRecord> history_records;  // the same, with HistoryForm::kRecords
};

struct AccumulateInput {
  const Event* event = nullptr;
  std::vector<int64_t> schedule_ids;  // reached through the reverse index
  // False: the jobs' triggered_by entries carry the event's id and type, not its payload (the
  // replay, which says only the ids; docs/adr/0159-replay-triggered-by-without-payloads.md).
  bool payload = true;
};

// A lineage that failed for a correlated schedule (SPEC §10): events of it open no job of the
// schedule until `expires_at` (docs/adr/0116-failed-lineage-memory.md).
struct FailedLineage {
  int64_t schedule_id = 0;
  std::string lineage;
  TimePoint expires_at;
};
// (schedule id, lineage) of the unexpired failures of the reached schedules, as stored.
using FailedLineageSet = std::set<std::pair<int64_t, std::string>>;
// How long a lineage stays failed for a schedule without a timeout; with one, timeout.after.
inline constexpr Millis kFailedLineageMemory = std::chrono::hours(24);

struct Accumulation {
  // Every job the batch touched, existing ones first in the order given, then new ones in
  // the order they were opened. A schedule may have several (one completed, a new one open).
  std::vector<OpenJob> jobs;
  // Program events trigd publishes itself (killed with reason upstream_failed).
  std::vector<Event> published;
  // Per input event: true when it changed at least one job (else "no_match").
  std::vector<bool> applied;
  // Lineages this batch marked failed, for the store to remember.
  std::vector<FailedLineage> failed_lineages;
};

// `open_jobs`: the stored PENDING_TRIGGER job of each reached schedule, if any (at most one per
// schedule). `schedules`: every reached schedule that is active (others are ignored).
// `now` stamps history entries and new jobs' opened_at. Every schedule is counted as without
// `correlate` (SPEC §5): the store calls the overload below once it reads and writes jobs'
// lineages and the failed-lineage memory.
Accumulation Accumulate(const std::vector<AccumulateInput>& events, const std::map<int64_t, ScheduleView>& schedules,
                        std::vector<OpenJob> open_jobs, TimePoint now);
// The same, with the history entries in the given form.
Accumulation Accumulate(const std::vector<AccumulateInput>& events, const std::map<int64_t, ScheduleView>& schedules,
                        std::vector<OpenJob> open_jobs, TimePoint now, HistoryForm form);
// The same, with the schedules by position: id i + 1 is `schedules[i]` (null: not active). For a
// caller whose ids are positions (the replay): no search of a map per event and schedule.
Accumulation Accumulate(const std::vector<AccumulateInput>& events, std::span<const ScheduleView* const> schedules,
                        std::vector<OpenJob> open_jobs, TimePoint now, HistoryForm form);
// The same, for schedules that may be correlated: `open_jobs` may hold one job per (schedule,
// lineage) of a correlated schedule, and `failed` the lineages remembered failed. An event of a
// correlated schedule goes to the job of its lineage (EventLineage), never to another; an
// upstream failure of lineage L discards the job of L and marks L failed (failed_lineages);
// an event of a failed lineage opens nothing.
Accumulation Accumulate(const std::vector<AccumulateInput>& events, const std::map<int64_t, ScheduleView>& schedules,
                        std::vector<OpenJob> open_jobs, const FailedLineageSet& failed, TimePoint now);

// When the store checks a job still collecting (its next_check_at): the timeout's deadline or
// a quiet or silence leaf's (NextLeafDeadline), whichever comes first; none when only an event
// can move it.
std::optional<TimePoint> CollectingJobWake(const Schedule& schedule, const TriggerState& state, TimePoint opened_at);

// A history entry, {"at": at, "what": what}, for the caller to add members to and Take():
// HistoryEntry(at, "opened").String("event", id).Take(). `at`: the instant as FormatTime
// writes it (formatted once per batch by the caller).
JsonObjectText HistoryEntry(std::string_view at, std::string_view what);

// The killed event trigd publishes for `schedule`'s own program when its upstream failed.
// Its id is derived from the schedule and the failed event, so a replay publishes nothing new;
// its run id is that id (no run exists). It carries the failed event's lineage.
Event UpstreamFailedEvent(const Schedule& schedule, const Event& failed, TimePoint now);

}  // namespace trigd
