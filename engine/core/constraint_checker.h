// The constraint checker's decision for one job (SPEC §4, §5), as pure logic: the caller
// gathers the facts (under the locks that make them stable) and passes the clock's reading.
// Thread-safe (no shared state).
//
// Order of reasoning:
// 1. Timeout: a job still open (trigger incomplete) or waiting after opened_at + timeout.after
//    is discarded (action discard) or launched regardless of unmet trigger branches and
//    constraints (action run; outcome.forced = true).
// 2. An incomplete trigger waits (next check: the timeout deadline, if any).
// 3. Every constraint is evaluated (all of them, so `jobs why` can show each); the job launches
//    only when all are satisfied at once. Any `skip` result discards the job; otherwise any
//    `wait` keeps it, with next_check_at the earliest time a waiting constraint can next hold
//    (std::nullopt when only a run ending can free it: the caller wakes the job then).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/time.h"
#include "model/schedule.h"

namespace trigd {

// What the store knows about the schedule's runs when the job is checked.
struct RunFacts {
  int64_t active_runs = 0;               // this schedule's runs not yet finished (incl. retry waits)
  int64_t group_active_runs = 0;         // unfinished runs of every schedule in the concurrency group
  std::optional<TimePoint> last_launch;  // the schedule's most recent launch
  // Launch times of the schedule's runs within max_runs_per.period before now (any order).
  std::vector<TimePoint> launches_in_period;
};

struct JobFacts {
  TimePoint opened_at;
  std::optional<TimePoint> ready_at;  // when the trigger completed; unset while open
  // Started by hand with --force (trigctl runs start, runs rerun): its constraints do not apply.
  bool force = false;
  // A trigger still incomplete that the clock completes (a quiet or silence leaf): when
  // (NextLeafDeadline) and why (DescribeLeafDeadline). The job is checked again then.
  std::optional<TimePoint> trigger_wakes_at;
  std::string trigger_wait;
};

enum class ConstraintResult { kSatisfied, kWait, kSkip };
const char* ConstraintResultName(ConstraintResult r);  // "satisfied", "wait", "skip"

struct ConstraintCheck {
  // max_concurrent_runs, concurrency_group, delay, time_window, min_since_last_run,
  // max_runs_per, timeout, trigger: always one of these literals, so a view (several are longer
  // than a short string holds, and a check is made for every job at every look).
  std::string_view constraint;
  ConstraintResult result = ConstraintResult::kSatisfied;
  std::string reason;                      // for people: "2 of 2 runs active", "window opens at 22:00 Europe/Berlin"
  std::optional<TimePoint> next_check_at;  // when it can next hold; nullopt: when a run ends
};

enum class Decision { kLaunch, kWait, kDiscard };
const char* DecisionName(Decision d);  // "launch", "wait", "discard"

struct CheckOutcome {
  Decision decision = Decision::kWait;
  bool forced = false;  // launched by timeout action "run", or by hand with --force
  // For kLaunch under max_concurrent_runs {"on_unmet": "cancel_oldest"} at its limit: how many of
  // the schedule's oldest active runs the store cancels (reason overlap) in the launch's
  // transaction, under the run counter's lock, to make room.
  int64_t cancel_oldest = 0;
  std::vector<ConstraintCheck> checks;     // one per configured constraint (and timeout/trigger)
  std::optional<TimePoint> next_check_at;  // for kWait; nullopt: wake when a run ends
  // For kWait: a constraint waits for a run to end (concurrency), which wakes the job before
  // next_check_at (a later window opening or the timeout, say).
  bool wakes_on_run_end = false;
  std::string reason;  // one line: why this decision
};

// The decision a job started by hand with --force is stored with (jobs.last_decision) until the
// checker launches it: the checker reads it back as JobFacts::force.
inline constexpr const char* kForcedByHand = "started by hand with --force: constraints not applied";

// A job waiting for a run to end is woken by that end, and checked again after this at most
// (a wake-up lost to a crash between the two).
constexpr Millis kRunEndRecheck = std::chrono::seconds(30);

// Whether CheckJob writes its reasons (CheckOutcome::reason, ConstraintCheck::reason), or only
// decides: with kDecision the reasons are left empty or incomplete and every other field is the
// same. For a caller that needs a reason only when it changed (the replay compares the checks'
// results, times and run counts, and asks again with kReasons when they moved;
// docs/adr/0154-replay-wait-reason-when-it-changes.md).
enum class CheckText { kReasons, kDecision };

// `trigger_complete` says whether the job's trigger is satisfied.
CheckOutcome CheckJob(const Schedule& schedule, const JobFacts& job, bool trigger_complete, const RunFacts& runs,
                      TimePoint now, CheckText text = CheckText::kReasons);

// The next instant at or after `now` inside the window (now itself when inside).
TimePoint NextWindowOpening(const TimeWindow& window, TimePoint now);
bool InsideWindow(const TimeWindow& window, TimePoint now);

// "HH:MM", the wall clock of `timezone` (an IANA name the parser accepted) at `t`. For `jobs
// why`, which shows the local time now beside a window's stored reason.
std::string LocalClock(const std::string& timezone, TimePoint t);

}  // namespace trigd
