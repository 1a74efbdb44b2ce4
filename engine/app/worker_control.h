// What the reference worker (trigd_worker_main.cc) decides before it starts a launch request:
// whether the request is past its start deadline (`start_by`), and whether trigd has ended the
// attempt it names (the control topic, <prefix>control; docs/adr/0060). Pure: the caller reads
// the topics and passes the time.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

#include "common/time.h"

namespace trigd {

// One message of the control topic, as a worker needs it. Every type names a run attempt that
// must not start, nor any earlier attempt of its run: `attempt_ended` (lost, failed as lost,
// killed by a schedule delete); types added later (`cancel`) say the same and more.
struct ControlMessage {
  std::string type;
  std::string run_id;
  int64_t attempt = 0;
  std::string status;                 // lost, failed, killed
  std::string reason;                 // lost, schedule_deleted, ...
  std::optional<TimePoint> start_by;  // the attempt's start deadline, when the message says it
  std::optional<TimePoint> time;      // when trigd ended it
};

// Whether the message ends an attempt that may be running, which its worker then stops (SIGTERM
// to the command's process group, SIGKILL after kCancelGrace): trigd cancelled it (reasons
// cancelled, overlap) or it ran past its schedule's run_timeout (timeout). Other messages
// (lost, schedule_deleted) only keep an attempt from starting.
bool StopsRunningAttempt(const ControlMessage& m);
inline constexpr Millis kCancelGrace = std::chrono::seconds(10);

// The message, or why it is not one (no run_id, no positive attempt, not JSON): skipped.
std::variant<ControlMessage, std::string> ParseControlMessage(std::string_view text);

// Why a request whose deadline is `start_by` must not start at `now` ("past its start deadline
// ..."), or nullopt when it may (no deadline: a request from a trigd that wrote none).
std::optional<std::string> PastStartDeadline(std::optional<TimePoint> start_by, TimePoint now);

// The attempts trigd ended, by run: the highest attempt ended of each. Bounded: an entry is
// forgotten once the deadline of the attempt it names is kForgetAfter past (any request for it,
// or for an earlier attempt, is refused by its own deadline then), an entry without a deadline
// kKeepWithoutDeadline after its time; past max_runs entries, those due to be forgotten first go.
class EndedAttempts {
 public:
  // Slack for a worker clock behind trigd's database clock.
  static constexpr Millis kForgetAfter = std::chrono::minutes(10);
  // The control topic's retention (topics/topics.json).
  static constexpr Millis kKeepWithoutDeadline = std::chrono::hours(24 * 7);
  static constexpr size_t kDefaultMaxRuns = 100000;  // about 20 MB

  explicit EndedAttempts(size_t max_runs = kDefaultMaxRuns) : max_runs_(max_runs) {}

  void Add(const ControlMessage& m, TimePoint now);
  // Why attempt `attempt` of `run_id` must not start ("trigd ended attempt 2: failed, reason
  // lost"), or nullopt when trigd ended no attempt of the run at or after it.
  std::optional<std::string> WhyEnded(const std::string& run_id, int64_t attempt) const;
  // Drops the entries due to be forgotten at `now`.
  void Forget(TimePoint now);
  size_t size() const { return runs_.size(); }

 private:
  struct Entry {
    int64_t attempt = 0;
    std::string what;  // "failed, reason lost"
    TimePoint forget_at;
  };
  void Drop(std::map<std::string, Entry>::iterator it);

  size_t max_runs_;
  std::map<std::string, Entry> runs_;
  std::set<std::pair<TimePoint, std::string>> by_forget_at_;
};

}  // namespace trigd
