#include "core/constraint_checker.h"

// date's tz.h trips the same g++ 12 false positive inside <chrono> at -O2 as date::parse.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#include <date/date.h>
#include <date/tz.h>

#include <algorithm>

#include "common/check.h"

namespace trigd {

const char* ConstraintResultName(ConstraintResult r) {
  switch (r) {
    case ConstraintResult::kSatisfied: return "satisfied";
    case ConstraintResult::kWait: return "wait";
    case ConstraintResult::kSkip: return "skip";
  }
  return "unknown";
}

const char* DecisionName(Decision d) {
  switch (d) {
    case Decision::kLaunch: return "launch";
    case Decision::kWait: return "wait";
    case Decision::kDiscard: return "discard";
  }
  return "unknown";
}

namespace {

using LocalTime = date::local_time<Millis>;

constexpr Millis kMinute = std::chrono::minutes(1);
constexpr Millis kDay = std::chrono::hours(24);

// The parser accepts only zones IsKnownTimeZone knows, so locate_zone cannot throw for a
// parsed schedule; a schedule built by hand with a bad zone is a bug and throws. locate_zone
// searches the zone database by name at every call, and one check asks several times: the
// last zone found is kept, per thread.
const date::time_zone* Zone(const TimeWindow& window) {
  thread_local std::string name;
  thread_local const date::time_zone* zone = nullptr;
  if (zone == nullptr || name != window.timezone) {
    zone = date::locate_zone(window.timezone);
    name = window.timezone;
  }
  return zone;
}

// Milliseconds since local midnight.
Millis LocalTimeOfDay(LocalTime local) { return local - date::floor<date::days>(local); }

bool TimeOfDayInside(const TimeWindow& window, Millis time_of_day) {
  Millis start = window.start_minute * kMinute;
  Millis end = window.end_minute * kMinute;
  // The parser refuses start == end; a schedule built by hand that way is read as the whole
  // day, so a job is never held by a window that cannot open.
  if (start == end) return true;
  if (start < end) return time_of_day >= start && time_of_day < end;
  return time_of_day >= start || time_of_day < end;  // crosses midnight
}

std::string FormatMinuteOfDay(int minute) {
  auto two_digits = [](int n) { return std::string{char('0' + n / 10), char('0' + n % 10)}; };
  return two_digits(minute / 60 % 24) + ":" + two_digits(minute % 60);
}

std::string DescribeWindow(const TimeWindow& window) {
  return FormatMinuteOfDay(window.start_minute) + "-" + FormatMinuteOfDay(window.end_minute) + " " + window.timezone;
}

// Written digit by digit: date::format makes an ostringstream per call (microseconds), and a
// window's reason says a local time at every check of a job under it.
std::string FormatLocalClock(const date::time_zone* zone, TimePoint t) {
  const auto local = date::floor<std::chrono::minutes>(zone->to_local(t));
  const int64_t minute = (local - date::floor<date::days>(local)).count();  // 0 .. 1439
  return FormatMinuteOfDay(static_cast<int>(minute));
}

// What a timeout does at its deadline, for the reasons that name the deadline ahead of time.
std::string TimeoutConsequence(TimeoutAction action) {
  return action == TimeoutAction::kDiscard ? "then the job is discarded (action discard)"
                                           : "then it launches regardless of its constraints and trigger (action run)";
}

const char* TimeoutActionName(TimeoutAction action) { return action == TimeoutAction::kDiscard ? "discard" : "run"; }

// Instants near [from, to] where the window may begin to hold (the caller drops those before
// the time it asks about): every instant whose local time is the window's start (none on a
// spring-forward day when the start is skipped, two on a fall-back day when it repeats) and
// every change of the zone's offset (the clock can jump over the start, forward into the
// window, or back into it).
std::vector<TimePoint> WindowEntryCandidates(const TimeWindow& window, const date::time_zone* zone, TimePoint from,
                                             TimePoint to) {
  std::vector<TimePoint> candidates;
  // Start one local day early: a clock going back across midnight repeats part of the previous
  // local date after `from`.
  date::local_days day = date::floor<date::days>(zone->to_local(from)) - date::days(1);
  date::local_days last_day = date::floor<date::days>(zone->to_local(to)) + date::days(1);
  for (; day <= last_day; day += date::days(1)) {
    date::local_seconds start = day + std::chrono::minutes(window.start_minute);
    date::local_info info = zone->get_info(start);
    switch (info.result) {
      case date::local_info::unique:
        candidates.push_back(TimePoint(start.time_since_epoch() - info.first.offset));
        break;
      case date::local_info::ambiguous:
        candidates.push_back(TimePoint(start.time_since_epoch() - info.first.offset));
        candidates.push_back(TimePoint(start.time_since_epoch() - info.second.offset));
        break;
      case date::local_info::nonexistent:
        // The transition instant that skips the start is among the offset changes below.
        break;
    }
  }
  auto seconds_from = date::floor<std::chrono::seconds>(from);
  date::sys_info info = zone->get_info(seconds_from);
  while (info.end <= to) {
    candidates.push_back(TimePoint(info.end));
    info = zone->get_info(info.end);
  }
  return candidates;
}

ConstraintCheck CheckDelay(Millis delay, const JobFacts& job, TimePoint now, bool describe) {
  // The delay counts from the trigger's completion; when the caller has not recorded that
  // instant, the job's opening is the best bound it has.
  TimePoint ready = job.ready_at.value_or(job.opened_at);
  TimePoint until = ready + delay;
  ConstraintCheck check{"delay", ConstraintResult::kSatisfied, "", std::nullopt};
  if (now >= until) {
    if (describe) check.reason = FormatDuration(delay) + " passed since ready at " + FormatTime(ready);
  } else {
    check.result = ConstraintResult::kWait;
    if (describe) {
      check.reason =
          "ready at " + FormatTime(ready) + "; " + FormatDuration(delay) + " delay until " + FormatTime(until);
    }
    check.next_check_at = until;
  }
  return check;
}

ConstraintCheck CheckWindow(const TimeWindow& window, TimePoint now, bool describe) {
  const date::time_zone* zone = Zone(window);
  ConstraintCheck check{"time_window", ConstraintResult::kSatisfied, "", std::nullopt};
  if (InsideWindow(window, now)) {
    if (describe) {
      check.reason = "inside window " + DescribeWindow(window) + " (local " + FormatLocalClock(zone, now) + ")";
    }
    return check;
  }
  TimePoint opens = NextWindowOpening(window, now);
  check.result = window.on_unmet == OnUnmet::kSkip ? ConstraintResult::kSkip : ConstraintResult::kWait;
  // No current local clock here: a waiting job's reason is stored, and its history gets an
  // entry whenever the text changes; "(local 14:34)" would change every minute, and a nightly
  // window's wait push a job's first entries out of its 50 (docs/adr/0040-bounded-job-records.md).
  // `jobs why` shows the local time now beside it (LocalClock).
  if (describe) {
    check.reason = "outside window " + DescribeWindow(window) + "; opens " + FormatTime(opens) + " (local " +
                   FormatLocalClock(zone, opens) + ")";
  }
  check.next_check_at = opens;
  return check;
}

ConstraintCheck CheckMinSinceLastRun(const MinSinceLastRun& rule, const RunFacts& runs, TimePoint now, bool describe) {
  ConstraintCheck check{"min_since_last_run", ConstraintResult::kSatisfied, "", std::nullopt};
  if (!runs.last_launch) {
    if (describe) check.reason = "no previous run";
    return check;
  }
  TimePoint until = *runs.last_launch + rule.duration;
  std::string last = describe ? "last run " + FormatTime(*runs.last_launch) + "; " : "";
  if (now >= until) {
    if (describe) check.reason = last + FormatDuration(rule.duration) + " passed";
    return check;
  }
  check.result = rule.on_unmet == OnUnmet::kSkip ? ConstraintResult::kSkip : ConstraintResult::kWait;
  if (describe) check.reason = last + FormatDuration(rule.duration) + " must pass (until " + FormatTime(until) + ")";
  check.next_check_at = until;
  return check;
}

ConstraintCheck CheckMaxRunsPer(const MaxRunsPer& rule, const RunFacts& runs, TimePoint now, bool describe) {
  ConstraintCheck check{"max_runs_per", ConstraintResult::kSatisfied, "", std::nullopt};
  // A launch exactly one period ago has aged out, so the slot it held frees at launch+period,
  // the same instant reported as next_check_at.
  std::vector<TimePoint> counted;
  for (TimePoint t : runs.launches_in_period) {
    if (t > now - rule.period) counted.push_back(t);
  }
  int64_t used = static_cast<int64_t>(counted.size());
  std::string usage =
      describe ? std::to_string(used) + " of " + std::to_string(rule.count) + " runs in " + FormatDuration(rule.period)
               : std::string();
  if (used < rule.count) {
    check.reason = usage;
    return check;
  }
  check.result = rule.on_unmet == OnUnmet::kSkip ? ConstraintResult::kSkip : ConstraintResult::kWait;
  // A slot is free once used drops to count-1, i.e. when the (used-count+1)-th oldest launch
  // ages out; that is the oldest one unless the count was lowered below what already ran.
  std::sort(counted.begin(), counted.end());
  size_t index = static_cast<size_t>(used - rule.count);
  if (index < counted.size()) {
    check.next_check_at = counted[index] + rule.period;
    if (describe) check.reason = usage + "; next slot " + FormatTime(*check.next_check_at);
  } else if (describe) {
    check.reason = usage + "; no slot can free";
  }
  return check;
}

ConstraintCheck CheckActiveRuns(std::string_view constraint, int64_t active, int64_t max, OnUnmet on_unmet,
                                const std::string* group, bool describe) {
  ConstraintCheck check{constraint, ConstraintResult::kSatisfied, "", std::nullopt};
  if (describe) {
    check.reason = std::to_string(active) + " of " + std::to_string(max) + " runs active";
    if (group) check.reason += " in group " + *group;
  }
  // Only a run ending frees a slot, so there is no time to check again: the caller wakes the
  // job when a run ends.
  if (active >= max) {
    check.result = on_unmet == OnUnmet::kSkip ? ConstraintResult::kSkip : ConstraintResult::kWait;
  }
  return check;
}

std::vector<ConstraintCheck> CheckConstraints(const Constraints& constraints, const JobFacts& job, const RunFacts& runs,
                                              TimePoint now, bool describe) {
  std::vector<ConstraintCheck> checks;
  if (constraints.max_concurrent_runs) {
    const int64_t max = *constraints.max_concurrent_runs;
    if (constraints.on_overlap == OverlapPolicy::kCancelOldest) {
      // Never waits: the launch cancels the oldest runs over the limit (CheckJob).
      ConstraintCheck check{"max_concurrent_runs", ConstraintResult::kSatisfied,
                            std::to_string(runs.active_runs) + " of " + std::to_string(max) + " runs active",
                            std::nullopt};
      if (runs.active_runs >= max) {
        check.reason += "; on_unmet cancel_oldest cancels the oldest " + std::to_string(runs.active_runs - max + 1) +
                        " to make room";
      }
      checks.push_back(std::move(check));
    } else {
      checks.push_back(CheckActiveRuns("max_concurrent_runs", runs.active_runs, max,
                                       constraints.on_overlap == OverlapPolicy::kSkip ? OnUnmet::kSkip : OnUnmet::kWait,
                                       nullptr, describe));
    }
  }
  if (constraints.concurrency_group) {
    const ConcurrencyGroup& group = *constraints.concurrency_group;
    checks.push_back(
        CheckActiveRuns("concurrency_group", runs.group_active_runs, group.max, group.on_unmet, &group.name, describe));
  }
  if (constraints.delay) checks.push_back(CheckDelay(*constraints.delay, job, now, describe));
  if (constraints.time_window) checks.push_back(CheckWindow(*constraints.time_window, now, describe));
  if (constraints.min_since_last_run) {
    checks.push_back(CheckMinSinceLastRun(*constraints.min_since_last_run, runs, now, describe));
  }
  if (constraints.max_runs_per) {
    checks.push_back(CheckMaxRunsPer(*constraints.max_runs_per, runs, now, describe));
  }
  return checks;
}

std::optional<TimePoint> Earliest(std::optional<TimePoint> a, std::optional<TimePoint> b) {
  if (!a) return b;
  if (!b) return a;
  return std::min(*a, *b);
}

}  // namespace

std::string LocalClock(const std::string& timezone, TimePoint t) {
  return FormatLocalClock(date::locate_zone(timezone), t);
}

bool InsideWindow(const TimeWindow& window, TimePoint now) {
  return TimeOfDayInside(window, LocalTimeOfDay(Zone(window)->to_local(now)));
}

namespace {

// NextWindowOpening for a time outside the window, computed.
TimePoint FirstWindowOpening(const TimeWindow& window, TimePoint now) {
  const date::time_zone* zone = Zone(window);
  // The window holds for at least a minute of every local day except when a clock change
  // swallows it, so a few days always contain an opening; the cap only guards a broken zone.
  constexpr int kHorizonDays = 8;
  constexpr int kMaxHorizons = 50;
  TimePoint from = now;
  for (int horizon = 0; horizon < kMaxHorizons; ++horizon) {
    TimePoint to = from + kHorizonDays * kDay;
    std::optional<TimePoint> best;
    for (TimePoint candidate : WindowEntryCandidates(window, zone, from, to)) {
      if (candidate < now || !InsideWindow(window, candidate)) continue;
      best = Earliest(best, candidate);
    }
    if (best) return *best;
    from = to;
  }
  TRIGD_FAIL("window " + DescribeWindow(window) + " never opens after " + FormatTime(now));
}

}  // namespace

TimePoint NextWindowOpening(const TimeWindow& window, TimePoint now) {
  // The window is closed from any time it was asked at until the opening found then, so an
  // answer holds for every time in between: the last one is kept, per thread (every job
  // waiting for one window asks again at each of its checks, each a walk over a week of days).
  struct Memo {
    TimeWindow window;
    TimePoint asked;
    TimePoint opening;
  };
  thread_local std::optional<Memo> memo;
  if (memo && memo->asked <= now && now < memo->opening && memo->window.start_minute == window.start_minute &&
      memo->window.end_minute == window.end_minute && memo->window.timezone == window.timezone) {
    return memo->opening;
  }
  if (InsideWindow(window, now)) return now;
  const TimePoint opening = FirstWindowOpening(window, now);
  memo = Memo{window, now, opening};
  return opening;
}

CheckOutcome CheckJob(const Schedule& schedule, const JobFacts& job, bool trigger_complete, const RunFacts& runs,
                      TimePoint now, CheckText text) {
  const bool describe = text == CheckText::kReasons;
  CheckOutcome outcome;
  // Outside its active period a schedule behaves as suspended: its jobs are discarded.
  if (schedule.active && !schedule.active->Contains(now)) {
    outcome.decision = Decision::kDiscard;
    outcome.reason = "schedule outside its active period";
    if (schedule.active->until && now >= *schedule.active->until) {
      outcome.reason += " (it ended at " + FormatTime(*schedule.active->until) + ")";
    } else if (schedule.active->from) {
      outcome.reason += " (it begins at " + FormatTime(*schedule.active->from) + ")";
    }
    return outcome;
  }

  std::optional<TimePoint> deadline;
  bool timed_out = false;
  if (schedule.timeout) {
    const Timeout& timeout = *schedule.timeout;
    deadline = job.opened_at + timeout.after;
    // The deadline itself counts as expired: the caller wakes the job exactly at the deadline
    // (it is part of next_check_at), and that wake must act.
    timed_out = now >= *deadline;
    ConstraintCheck check{"timeout", ConstraintResult::kSatisfied, "", std::nullopt};
    if (!timed_out) {
      if (describe) check.reason = "expires at " + FormatTime(*deadline) + "; " + TimeoutConsequence(timeout.action);
    } else if (timeout.action == TimeoutAction::kDiscard) {
      check.result = ConstraintResult::kSkip;
      check.reason = "expired at " + FormatTime(*deadline) + " (" + FormatDuration(timeout.after) +
                     " after opening); action discard";
    } else {
      check.reason = "expired at " + FormatTime(*deadline) + " (" + FormatDuration(timeout.after) +
                     " after opening); action run launches regardless of trigger and constraints";
    }
    outcome.checks.push_back(std::move(check));
  }

  if (!trigger_complete) {
    // An event, not a clock, completes the trigger; the only time to look again is the
    // deadline.
    outcome.checks.push_back({"trigger", ConstraintResult::kWait,
                              !describe                  ? std::string()
                              : job.trigger_wait.empty() ? "trigger incomplete"
                                                         : "trigger incomplete: " + job.trigger_wait,
                              Earliest(deadline, job.trigger_wakes_at)});
  } else {
    // Constraints are evaluated even past the deadline so `jobs why` shows what a forced
    // launch ignored or what kept a discarded job waiting.
    for (ConstraintCheck& check : CheckConstraints(schedule.constraints, job, runs, now, describe)) {
      outcome.checks.push_back(std::move(check));
    }
  }

  if (timed_out) {
    const Timeout& timeout = *schedule.timeout;
    std::string expired =
        "timed out at " + FormatTime(*deadline) + " (" + FormatDuration(timeout.after) + " after opening)";
    if (timeout.action == TimeoutAction::kDiscard) {
      outcome.decision = Decision::kDiscard;
      outcome.reason = expired + "; action discard";
    } else {
      outcome.decision = Decision::kLaunch;
      outcome.forced = true;
      outcome.reason = expired + "; action run launches regardless of trigger and constraints";
    }
    return outcome;
  }

  if (job.force && trigger_complete) {
    outcome.decision = Decision::kLaunch;
    outcome.forced = true;
    outcome.reason = kForcedByHand;
    return outcome;
  }

  if (!trigger_complete) {
    outcome.decision = Decision::kWait;
    outcome.next_check_at = Earliest(deadline, job.trigger_wakes_at);
    if (!describe) return outcome;
    outcome.reason = "trigger incomplete";
    if (!job.trigger_wait.empty()) outcome.reason += ": " + job.trigger_wait;
    if (deadline) {
      outcome.reason +=
          "; times out at " + FormatTime(*deadline) + " (action " + TimeoutActionName(schedule.timeout->action) + ")";
    }
    return outcome;
  }

  for (const ConstraintCheck& check : outcome.checks) {
    if (check.result == ConstraintResult::kSkip) {
      outcome.decision = Decision::kDiscard;
      outcome.reason = std::string(check.constraint) + " unmet with on_unmet skip: " + check.reason;
      return outcome;
    }
  }

  std::vector<std::string> waiting;
  bool waits = false;
  std::optional<TimePoint> next = deadline;
  for (const ConstraintCheck& check : outcome.checks) {
    if (check.result != ConstraintResult::kWait) continue;
    waits = true;
    if (describe) waiting.push_back(std::string(check.constraint) + " (" + check.reason + ")");
    next = Earliest(next, check.next_check_at);
    if (!check.next_check_at) outcome.wakes_on_run_end = true;
  }
  if (!waits) {
    outcome.decision = Decision::kLaunch;
    if (schedule.constraints.max_concurrent_runs && schedule.constraints.on_overlap == OverlapPolicy::kCancelOldest) {
      outcome.cancel_oldest = std::max<int64_t>(0, runs.active_runs - *schedule.constraints.max_concurrent_runs + 1);
    }
    if (!describe) return outcome;
    size_t held = outcome.checks.size() - (schedule.timeout ? 1 : 0);
    outcome.reason = held == 0 ? "trigger complete; no constraints"
                               : "trigger complete; all " + std::to_string(held) +
                                     (held == 1 ? " constraint holds" : " constraints hold");
    return outcome;
  }
  outcome.decision = Decision::kWait;
  outcome.next_check_at = next;
  if (!describe) return outcome;
  outcome.reason = "waiting for ";
  for (size_t i = 0; i < waiting.size(); ++i) {
    if (i > 0) outcome.reason += "; ";
    outcome.reason += waiting[i];
  }
  // A wait on a run's end is also re-checked every kRunEndRecheck (the store does): said here,
  // as `jobs why` shows that time as the next check ("next check when a run ends" alone would
  // contradict a next check 30 s away). The text stays the same from check to check, so a job's
  // history gets an entry when its reason changes, not at every re-check.
  const std::string recheck = " (re-checked every " + FormatDuration(kRunEndRecheck) + ")";
  // The time may be the timeout's deadline, which ends the wait one way or the other: said, so
  // it does not read as a chance to launch.
  const std::string at = !next ? ""
                         : deadline && *next == *deadline
                             ? FormatTime(*next) + " (timeout: " + TimeoutActionName(schedule.timeout->action) + ")"
                             : FormatTime(*next);
  outcome.reason += !next                      ? "; next check when a run ends" + recheck
                    : outcome.wakes_on_run_end ? "; next check when a run ends, or at " + at + recheck
                                               : "; next check " + at;
  return outcome;
}

}  // namespace trigd
