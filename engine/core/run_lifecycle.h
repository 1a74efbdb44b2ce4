// What happens to a run on each input trigd sees for it: a worker's report, silence past its
// timeout, its schedule's delete. Pure: the store applies the answer (its SQL keeps the
// compare-and-set on the state the run was read in). The states and their diagram: model/run.h.
#pragma once

#include <cstdint>
#include <optional>

#include "model/run.h"
#include "model/schedule.h"

namespace trigd {

struct RunTransition {
  RunState next = RunState::kLaunched;
  // Another attempt follows (next is kRetryWait; the sweep relaunches it when its wait is over).
  bool retry = false;
  // trigd publishes a program event of its own for the run's end, for downstream triggers
  // (failed with reason lost, killed with reason schedule_deleted). A worker's report is its
  // own event: none for those.
  bool program_event = false;
  // Workers are told the attempt ended (the control topic, docs/adr/0060): for every attempt
  // trigd ends itself.
  bool control_message = false;
  bool operator==(const RunTransition&) const = default;
};

// A worker's report for a run in state `from`. A failed report is retried while attempts are
// left and the schedule exists (a deleted schedule's failure is final). nullopt: the report
// moves nothing (a final run, or one waiting for its retry: a late report of an ended attempt).
std::optional<RunTransition> OnReport(RunState from, ProgramStatus status, int64_t attempt, int64_t max_attempts,
                                      bool schedule_exists);

// A run in state `from` silent past its timeout (the sweep): lost, retried while attempts are
// left and the schedule exists, else failed. nullopt for a run that cannot be silent (not
// launched or running).
std::optional<RunTransition> OnSilence(RunState from, int64_t attempt, int64_t max_attempts, bool schedule_exists);

// The run's schedule deleted: a run waiting for its retry, or launched with its request still
// unpublished (withdrawn), is killed; a run a worker may have taken goes on (nullopt), and its
// failure will be final.
std::optional<RunTransition> OnScheduleDeleted(RunState from, bool request_published);

// An operator's cancel (trigctl runs cancel) or an overlap policy's (cancel_oldest): a run not
// yet final ends KILLED, announced by trigd's own program event and a control message so the
// worker running it stops it; never retried. nullopt for a final run (the cancel is refused).
std::optional<RunTransition> OnCancel(RunState from);

// A run launched or running past its schedule's run_timeout: the attempt is cancelled (control
// message) and the run retried while attempts are left and the schedule exists, else FAILED
// (reason timeout) with a program event. nullopt for a run that is not going.
std::optional<RunTransition> OnRunTimeout(RunState from, int64_t attempt, int64_t max_attempts, bool schedule_exists);

// The wait before attempt `attempt` + 1 under `retry`: exponential from `backoff`, capped at
// `max_backoff`, spread by up to retry.jitter of itself (JitteredBackoff) so runs that failed
// together do not retry together. `u` is a uniform draw in [0, 1) from the caller's random source.
Millis RetryBackoff(const RetryPolicy& retry, int64_t attempt, double u);

}  // namespace trigd
