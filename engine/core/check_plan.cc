#include "core/check_plan.h"

#include <algorithm>

#include "core/trigger_eval.h"

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
  bool complete = !job.trigger;
  if (job.trigger) {
    // A quiet period's or silence's end completes the trigger by the clock (SPEC §11): the job
    // was due for it (its next_check_at), or for its timeout.
    TriggerState ts = *job.trigger;
    std::string wait = DescribeLeafDeadline(s.trigger, ts);
    const bool settled = SettleTimedLeaves(s.trigger, ts, now_);
    complete = IsComplete(s.trigger, ts);
    if (complete && settled) {
      v.completed_by = std::move(wait);
      if (!job.ready_at) {
        v.ready_now = true;
        job_facts.ready_at = now_;
      }
    } else if (!complete) {
      job_facts.trigger_wakes_at = NextLeafDeadline(s.trigger, ts);
      job_facts.trigger_wait = DescribeLeafDeadline(s.trigger, ts);
    }
  }
  job_facts.force = job.last_decision == kForcedByHand;  // trigctl runs start --force
  CheckOutcome out = CheckJob(s, job_facts, complete, facts, now_);
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
    v.state =
        job.state == JobState::kPendingTrigger && !complete ? JobState::kPendingTrigger : JobState::kPendingConstraint;
    v.reason = std::move(out.reason);
    if (v.reason != job.last_decision) v.history = "waiting: " + v.reason;
  }
  return v;
}

void CheckCounters::FreeEnded(const std::map<int64_t, int>& per_schedule, const std::map<std::string, int>& per_group) {
  for (const auto& [id, n] : per_schedule) {
    if (auto it = schedules.find(id); it != schedules.end())
      it->second.active = std::max<int64_t>(it->second.active - n, 0);
  }
  for (const auto& [name, n] : per_group) {
    if (auto it = groups.find(name); it != groups.end()) it->second = std::max<int64_t>(it->second - n, 0);
  }
}

OverlapCancel CancelOldestRun(int64_t job_id) {
  return {RunState::kKilled, "overlap",
          "cancelled by max_concurrent_runs on_unmet cancel_oldest for job " + std::to_string(job_id)};
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

std::map<std::string, int> CheckPlanner::Apply(const DueJob& job, const JobVerdict& verdict,
                                               const std::vector<std::optional<std::string>>& cancelled) {
  std::map<std::string, int> not_held;
  if (verdict.decision != Decision::kLaunch) return not_held;
  auto sv = schedules_.find(job.schedule_id);
  if (sv == schedules_.end()) return not_held;
  const Schedule& s = *sv->second.schedule;
  ScheduleRunCounter& c = counters_.schedules[job.schedule_id];
  for (const std::optional<std::string>& group : cancelled) {
    --c.active;  // a stored active run: counted
    if (!group) continue;
    if (auto g = counters_.groups.find(*group); g != counters_.groups.end()) {
      --g->second;
    } else {
      ++not_held[*group];
    }
  }
  ++c.active;
  c.last_launch = now_;
  if (s.constraints.concurrency_group) ++counters_.groups[s.constraints.concurrency_group->name];
  counters_.launches[job.schedule_id].push_back(now_);
  ++launched_here_[job.schedule_id];
  return not_held;
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
    // The oldest runs cancelled for a launch are the schedule's own (of its group, if any).
    std::optional<std::string> group;
    if (auto sv = schedules.find(job.schedule_id);
        sv != schedules.end() && sv->second.schedule->constraints.concurrency_group)
      group = sv->second.schedule->constraints.concurrency_group->name;
    planner.Apply(job, v, std::vector<std::optional<std::string>>(v.cancel_oldest, group));
    plan.verdicts.push_back(std::move(v));
  }
  plan.counters = std::move(counters);
  return plan;
}

}  // namespace trigd
