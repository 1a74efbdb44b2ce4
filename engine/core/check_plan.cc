#include "core/check_plan.h"

#include <algorithm>

namespace trigd {

JobVerdict CheckPlanner::Decide(const DueJob& job) const {
  JobVerdict v;
  auto sv = schedules_.find(job.schedule_id);
  if (sv == schedules_.end() || sv->second.version != job.version) {
    // Deleted, suspended or updated since the job opened: it never launches.
    v.decision = Decision::kDiscard;
    v.state = JobState::kDiscarded;
    v.reason = sv == schedules_.end() ? "schedule deleted or suspended" : "schedule updated";
    v.history = "discarded: " + v.reason;
    return v;
  }
  const Schedule& s = *sv->second.schedule;
  RunFacts facts;
  if (auto c = counters_.schedules.find(job.schedule_id); c != counters_.schedules.end()) {
    facts.active_runs = c->second.active;
    facts.last_launch = c->second.last_launch;
  }
  if (s.constraints.concurrency_group) {
    auto g = counters_.groups.find(s.constraints.concurrency_group->name);
    if (g != counters_.groups.end()) facts.group_active_runs = g->second;
  }
  if (s.constraints.max_runs_per) {
    if (auto l = counters_.launches.find(job.schedule_id); l != counters_.launches.end()) {
      for (TimePoint t : l->second) {
        if (t > now_ - s.constraints.max_runs_per->period) facts.launches_in_period.push_back(t);
      }
    }
  }
  JobFacts job_facts{job.opened_at, job.ready_at};
  job_facts.force = job.last_decision == kForcedByHand;  // trigctl runs start --force
  CheckOutcome out = CheckJob(s, job_facts, job.trigger_complete, facts, now_);
  v.decision = out.decision;
  v.checked = true;
  v.checks = std::move(out.checks);
  v.forced = out.forced;
  v.cancel_oldest = out.cancel_oldest;
  if (out.decision == Decision::kLaunch) {
    v.state = JobState::kLaunched;
    v.history = !out.forced                          ? "constraints hold: launching"
                : job.last_decision == kForcedByHand ? "launched by hand with --force: constraints not applied"
                                                     : "launched by timeout (action run)";
    // The runs to cancel must be stored ones: those launched earlier in this check are not.
    if (v.cancel_oldest > 0 && v.cancel_oldest > facts.active_runs - LaunchedHere(job.schedule_id)) {
      return TooFewToCancel(job, std::move(v));
    }
  } else if (out.decision == Decision::kDiscard) {
    v.state = JobState::kDiscarded;
    v.reason = std::move(out.reason);
    v.history = "discarded: " + v.reason;
  } else {
    // A wait that a run's end can lift is woken by that end; the fallback re-check covers a
    // wake-up lost to a crash between the two (also when a later time is known: the timeout, a
    // window's opening).
    v.next_check_at = out.next_check_at.value_or(now_ + kRunEndRecheck);
    if (out.wakes_on_run_end) v.next_check_at = std::min(v.next_check_at, now_ + kRunEndRecheck);
    v.state = job.state == JobState::kPendingTrigger && !job.trigger_complete ? JobState::kPendingTrigger
                                                                              : JobState::kPendingConstraint;
    v.reason = std::move(out.reason);
    if (v.reason != job.last_decision) v.history = "waiting: " + v.reason;
  }
  return v;
}

JobVerdict CheckPlanner::TooFewToCancel(const DueJob& job, JobVerdict v) const {
  v.decision = Decision::kWait;
  v.state = JobState::kPendingConstraint;
  v.cancel_oldest = 0;
  v.forced = false;
  v.reason = "max_concurrent_runs: a run launched by this check holds the slot (cancel_oldest)";
  v.history = v.reason != job.last_decision ? std::optional<std::string>("waiting: " + v.reason) : std::nullopt;
  v.next_check_at = now_ + std::chrono::seconds(1);
  return v;
}

void CheckPlanner::Apply(const DueJob& job, const JobVerdict& verdict, int64_t cancelled_in_group,
                         int64_t cancelled_elsewhere) {
  if (verdict.decision != Decision::kLaunch) return;
  auto sv = schedules_.find(job.schedule_id);
  if (sv == schedules_.end()) return;
  const Schedule& s = *sv->second.schedule;
  ScheduleRunCounter& c = counters_.schedules[job.schedule_id];
  c.active -= cancelled_in_group + cancelled_elsewhere;
  ++c.active;
  c.last_launch = now_;
  if (s.constraints.concurrency_group) {
    int64_t& g = counters_.groups[s.constraints.concurrency_group->name];
    g += 1 - cancelled_in_group;
  }
  counters_.launches[job.schedule_id].push_back(now_);
  ++launched_here_[job.schedule_id];
}

int64_t CheckPlanner::LaunchedHere(int64_t schedule_id) const {
  auto it = launched_here_.find(schedule_id);
  return it == launched_here_.end() ? 0 : it->second;
}

CheckPlan PlanChecks(const std::vector<DueJob>& due, const std::map<int64_t, CheckedSchedule>& schedules,
                     CheckCounters counters, TimePoint now) {
  CheckPlan plan;
  CheckPlanner planner(schedules, counters, now);
  for (const DueJob& job : due) {
    JobVerdict v = planner.Decide(job);
    planner.Apply(job, v, v.cancel_oldest);
    plan.verdicts.push_back(std::move(v));
  }
  plan.counters = std::move(counters);
  return plan;
}

}  // namespace trigd
