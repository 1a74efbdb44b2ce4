// What-if replay (SPEC §12): schedule documents evaluated over a recorded stream of event
// envelopes, in event time, by the code trigd itself runs: RouteEvent and the ScheduleIndex
// route each message, Accumulate opens, counts, completes and discards jobs, CheckJob decides
// launch, wait or discard, NextFireTime gives the time triggers' fire times. Only what the
// store does around those calls is simulated here: a virtual clock, the jobs' wake-ups
// (next_check_at, a run's end), the runs' counters and the de-duplication of event ids.
//
// What it cannot reproduce (docs/adr/0100-what-if-replay.md): a simulated run lasts a modelled
// duration and always ends (no heartbeat loss, no retry), and it publishes no program events of
// its own: schedules downstream of a replayed one see the recorded events of its program.
// Concurrency groups count the replayed schedules' runs only.
//
// Pure: no I/O; not thread-safe (one owner feeds it).
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/time.h"
#include "core/accumulator.h"
#include "model/job.h"
#include "model/schedule.h"

namespace trigd {

struct ReplayOptions {
  TimePoint from;
  TimePoint to;
  // Every simulated run lasts this long (--run-duration). Unset: the program's recorded
  // durations (below), else 0.
  std::optional<Millis> run_duration;
  // Each program's recorded run durations, oldest run first (RecordedRunDurations): its k-th
  // simulated run lasts the k-th recorded one; past the last, their median.
  std::map<std::string, std::vector<Millis>> recorded_durations;
  // Keep every step of every job (the timeline). Off: launches and counts only.
  bool keep_timeline = true;
};

// One step of a simulated job, for the timeline. `what`: opened, event counted, trigger
// complete, wait, launch, discard.
struct ReplayStep {
  TimePoint at;
  int64_t job = 0;  // the job's number in this replay (1, 2, ... per schedule)
  std::string what;
  std::string event;   // the event's id (opened, event counted)
  std::string detail;  // leaves' progress, a wait's or discard's reason
  // A step the accumulator wrote: its history entry as a record, written into the fields above
  // by DecodeTimeline (describing it as text for every event cost more than the evaluation
  // itself; docs/adr/0153-history-records.md).
  std::optional<HistoryRecord> history;
};

struct ReplayLaunch {
  int64_t job = 0;
  TimePoint at;
  TimePoint ends_at;    // at + the run's modelled duration
  bool forced = false;  // timeout action run
  std::vector<TriggeringEvent> triggered_by;
};

struct ReplaySchedule {
  std::string name;                          // namespace/name
  std::shared_ptr<const Schedule> schedule;  // the document (DecodeTimeline describes its leaves)
  bool enabled = true;
  std::deque<ReplayStep> timeline;  // a deque: a long one grows without being moved
  std::vector<ReplayLaunch> launches;
  int64_t jobs = 0;
  int64_t discarded = 0;
  int64_t open_at_end = 0;     // still collecting at `to`
  int64_t waiting_at_end = 0;  // trigger complete, constraints unmet at `to`
};

struct ReplayResult {
  std::vector<ReplaySchedule> schedules;  // in the order given
  int64_t messages = 0;                   // fed
  int64_t matched = 0;                    // reached at least one replayed schedule
  int64_t duplicates = 0;                 // an id seen before (trigd de-duplicates it)
  int64_t invalid = 0;                    // refused by the envelope parser (a dead letter)
  int64_t fire_times = 0;                 // time triggers' fire times in the range
  std::optional<TimePoint> first_event;   // event time of the first and last message fed
  std::optional<TimePoint> last_event;
};

class Replay {
 public:
  // `schedules`: valid documents (ParseSchedule), distinct names. A disabled one is listed and
  // reached by nothing (as a suspended schedule).
  Replay(std::vector<Schedule> schedules, ReplayOptions options);
  ~Replay();
  Replay(const Replay&) = delete;
  Replay& operator=(const Replay&) = delete;

  // One message of an event topic. Messages come in event-time order (SortByEventTime); one
  // older than the clock is taken at the clock's time (the clock never goes back).
  void Feed(std::string_view bytes);
  // The clock's reading: the event time of the last message fed, or from.
  TimePoint now() const;
  // Runs the clock to `to` (fire times, checks and run ends left in the range) and returns the
  // outcome. Call once, last.
  ReplayResult Finish();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Fills what, event and detail of the steps that hold a history entry.
void DecodeTimeline(ReplayResult& result);

// The event time of an envelope, as ingestion reads it; nullopt for one ParseEnvelope refuses.
std::optional<TimePoint> EnvelopeEventTime(std::string_view bytes);

// Indexes of `messages` in event-time order, stable (messages of equal time keep their order;
// a refused envelope sorts as the message before it, so it stays in place).
std::vector<size_t> SortByEventTime(const std::vector<std::string_view>& messages);

// Each program's run durations from its run reports among `messages`: a run's first `started`
// to its first outcome (succeeded, failed, killed), ordered by the start. Runs missing either
// end are left out.
std::map<std::string, std::vector<Millis>> RecordedRunDurations(const std::vector<std::string_view>& messages);

}  // namespace trigd
