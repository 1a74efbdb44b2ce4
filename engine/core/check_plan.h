// The checker's launch decision for a batch of due jobs (SPEC §5), as pure logic: the store
// claims the due jobs and locks their run counters (schedules, then groups), then asks this,
// job by job in claim order, what each becomes (launch, wait and why, discard), and the counters
// after it; it writes the answers. Each launch takes its slot in the counters before the next
// job is decided, so a batch never exceeds a limit. `PlanChecks` is the whole batch at once.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/time.h"
#include "core/constraint_checker.h"
#include "model/job.h"
#include "model/run.h"
#include "model/schedule.h"

namespace trigd {

// One due job as claimed.
struct DueJob {
  int64_t id = 0;
  int64_t schedule_id = 0;
  int version = 0;  // the schedule version it opened under
  JobState state = JobState::kPendingConstraint;
  // pending_trigger: the trigger's state as stored (a quiet period or silence may complete it by
  // the clock now). Unset for pending_constraint, whose trigger is complete.
  std::optional<TriggerState> trigger;
  TimePoint opened_at;
  std::optional<TimePoint> ready_at;
  std::string last_decision;  // jobs.last_decision (kForcedByHand: started with --force)
};

// A schedule's run counter, as locked.
struct ScheduleRunCounter {
  int64_t active = 0;
  std::optional<TimePoint> last_launch;
  bool operator==(const ScheduleRunCounter&) const = default;
};

// The run counters the checker holds locked, and what it decides moves them.
struct CheckCounters {
  std::map<int64_t, ScheduleRunCounter> schedules;
  std::map<std::string, int64_t> groups;
  // Launch times of each schedule within its max_runs_per period (any order).
  std::map<int64_t, std::vector<TimePoint>> launches;

  // Runs that ended in the same transaction before the check (a report's, a cancel's): their
  // slots are free again, never below zero. Only the counters held move (the store decrements
  // the rows themselves).
  void FreeEnded(const std::map<int64_t, int>& per_schedule, const std::map<std::string, int>& per_group);
};

// The schedule version each due job is checked against (absent: deleted or suspended).
struct CheckedSchedule {
  int version = 0;
  const Schedule* schedule = nullptr;
};

// What one due job becomes.
struct JobVerdict {
  Decision decision = Decision::kWait;
  JobState state = JobState::kPendingConstraint;  // after the decision
  // kDiscard: the discard reason; kWait: the decision `jobs why` shows.
  std::string reason;
  // The job's history entry ("constraints hold: launching", "discarded: ...", "waiting: ...");
  // none for a wait whose reason has not changed since the last check.
  std::optional<std::string> history;
  // The trigger completed by the clock in this check (a quiet period's or silence's end): its
  // history entry (kTriggerCompleteByClock) goes before the decision's, saying which wait ended.
  std::optional<std::string> completed_by;
  // The job became ready now (its trigger completed by the clock with no ready_at yet): its
  // ready_at is now, and so is the launch request's.
  bool ready_now = false;
  bool checked = false;  // CheckJob ran (not for a schedule gone or changed)
  std::vector<ConstraintCheck> checks;
  TimePoint next_check_at;    // kWait
  bool forced = false;        // kLaunch: constraints not applied (timeout run, --force)
  int64_t cancel_oldest = 0;  // kLaunch: the schedule's oldest active runs cancelled first
};

// The history entry of a trigger completed by the clock (JobVerdict::completed_by).
inline constexpr const char* kTriggerCompleteByClock = "trigger complete";

// How cancel_oldest ends each run it cancels (the store kills them under the counter lock): the
// state (core/run_lifecycle.h OnCancel's), the run's reason, and its history entry's text.
struct OverlapCancel {
  RunState state = RunState::kKilled;
  std::string reason;
  std::string what;
};
OverlapCancel CancelOldestRun(int64_t job_id);

class CheckPlanner {
 public:
  CheckPlanner(const std::map<int64_t, CheckedSchedule>& schedules, CheckCounters& counters, TimePoint now)
      : schedules_(schedules), counters_(counters), now_(now) {}

  // The next due job's verdict. Not yet applied to the counters: Apply does that, once the store
  // has cancelled the runs a cancel_oldest launch needs.
  JobVerdict Decide(const DueJob& job) const;

  // The counters after `verdict`: a launch takes a slot (schedule, group, last launch, launches
  // in period). `cancelled` has the concurrency group (none: nullopt) of each run cancel_oldest
  // ended for it first: their slots are freed, the schedule's and those of the groups held here.
  // Returns the other groups' ended runs, whose counter rows the store decrements itself (a run
  // launched under a group the schedule no longer has).
  std::map<std::string, int> Apply(const DueJob& job, const JobVerdict& verdict,
                                   const std::vector<std::optional<std::string>>& cancelled = {});

  // A cancel_oldest launch for which fewer runs could be cancelled than it needs (runs launched
  // earlier in this same check are not stored yet): the job waits a second instead.
  JobVerdict TooFewToCancel(const DueJob& job, JobVerdict verdict) const;

  // Runs this planner has launched for the schedule so far (not stored yet: cancel_oldest
  // cannot cancel them).
  int64_t LaunchedHere(int64_t schedule_id) const;

 private:
  const std::map<int64_t, CheckedSchedule>& schedules_;
  CheckCounters& counters_;
  TimePoint now_;
  std::map<int64_t, int64_t> launched_here_;
};

// The write-set of a whole batch (the due jobs in claim order): each job's verdict and the
// counters after them. A cancel_oldest launch cancels the oldest stored runs when there are
// enough of them (those launched in this batch are not), else waits.
struct CheckPlan {
  std::vector<JobVerdict> verdicts;
  CheckCounters counters;
};
CheckPlan PlanChecks(const std::vector<DueJob>& due, const std::map<int64_t, CheckedSchedule>& schedules,
                     CheckCounters counters, TimePoint now);

}  // namespace trigd
