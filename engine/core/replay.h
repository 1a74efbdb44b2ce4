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
// complete, wait, launch, discard. DecodeTimeline writes them from the entries below.
struct ReplayStep {
  TimePoint at;
  int64_t job = 0;  // the job's number in this replay (1, 2, ... per schedule)
  std::string what;
  std::string event;   // the event's id (opened, event counted)
  std::string detail;  // leaves' progress, a wait's or discard's reason
};

// A step as the evaluation keeps it: fixed size, with no string or allocation of its own. Its
// event id and reason are kept once in ReplayResult::texts, a counted leaf's state in
// ReplayResult::leaves, a launch's duration in the launch; DecodeTimeline writes the text of
// the steps it prints (docs/adr/0158-replay-timeline-entries.md).
struct ReplayEntry {
  enum class Kind : uint8_t {
    // The accumulator's history entries (HistoryRecord::Kind): "opened" (event), "event
    // counted" (event, leaves), "trigger complete", "discard" (schedule updated), "discard"
    // (event; upstream failed).
    kOpened,
    kCounted,
    kComplete,
    kDiscardedUpdated,
    kDiscardedUpstream,
    // The replay's own steps, with a detail text: "opened" (a silence armed), "trigger
    // complete" (by the clock), "wait", "discard".
    kArmed,
    kSettled,
    kWait,
    kDiscard,
    kLaunch,  // "launch": the schedule's launch number `first`
  };
  TimePoint at;
  int64_t job = 0;
  uint32_t text = 0;   // the event id (history kinds with an event) or the detail (kArmed ... kDiscard)
  uint32_t first = 0;  // kCounted: its first leaf in ReplayResult::leaves; kLaunch: the launch
  uint32_t count = 0;  // kCounted: how many leaves
  Kind kind = Kind::kOpened;
};

// A leaf an event counted, as its history entry describes it (HistoryRecord::Leaf without the
// partition list).
struct ReplayLeaf {
  int leaf = 0;
  bool satisfied = false;
  int64_t count = 0;
  int64_t bytes = 0;
  std::optional<TimePoint> last_arrival;
};

struct ReplayLaunch {
  int64_t job = 0;
  TimePoint at;
  TimePoint ends_at;                          // at + the run's modelled duration
  bool forced = false;                        // timeout action run
  std::vector<TriggeringEvent> triggered_by;  // ids and types (no payload)
};

struct ReplaySchedule {
  std::string name;                          // namespace/name
  std::shared_ptr<const Schedule> schedule;  // the document (DecodeTimeline describes its leaves)
  bool enabled = true;
  // The timeline as evaluated (keep_timeline). A deque, as are the tables below: they grow in
  // blocks, never copied into a larger buffer as they grow (docs/adr/0169-replay-tables-in-blocks.md).
  std::deque<ReplayEntry> entries;
  std::deque<ReplayStep> timeline;  // written by DecodeTimeline; a deque: a long one grows without being moved
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
  // What the schedules' entries refer to: event ids and reasons, counted leaves.
  std::deque<std::string> texts;
  std::deque<ReplayLeaf> leaves;
};

// A message as Replay::Order leaves it: its position among the messages and what routing read
// from its scan at the event-time sort (RouteEvent's decision up to the full parse), so that
// it is scanned once. Valid for the Replay that ordered it.
struct ReplayMessage {
  enum class Route : uint8_t {
    kSkip,   // trigd's own tick, or valid with no schedule on its key: counted, nothing else
    kParse,  // parsed and routed at its turn (reached schedules, a run report, not sure, invalid)
  };
  uint32_t index = 0;  // in the messages given to Order
  Route route = Route::kParse;
  bool scanned = false;  // the scanner was sure (router_internal::Scanned)
  bool looked_up = false;
  EventType type = EventType::kPartition;
  uint32_t reached_size = 0;  // looked_up: the schedules on its key (ScheduleIndex::Lookup)
  const int64_t* reached = nullptr;
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
  // `messages` in event-time order, as SortByEventTime orders them, each scanned once: the sort
  // keeps what routing reads from the scan (docs/adr/0168-replay-scans-once.md).
  std::vector<ReplayMessage> Order(const std::vector<std::string_view>& messages) const;
  // Feed(bytes) for a message Order returned: `bytes` is messages[message.index].
  void Feed(std::string_view bytes, const ReplayMessage& message);
  // The clock's reading: the event time of the last message fed, or from.
  TimePoint now() const;
  // Runs the clock to `to` (fire times, checks and run ends left in the range) and returns the
  // outcome. Call once, last.
  ReplayResult Finish();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Writes each schedule's timeline from its entries, in order, and releases the entries (a
// second call adds nothing).
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
