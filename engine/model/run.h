// Runs and their states.
//
//   LAUNCHED --started or heartbeat report--> RUNNING
//   LAUNCHED / RUNNING --succeeded, failed or killed report (final)--> SUCCEEDED / FAILED / KILLED
//   LAUNCHED / RUNNING --failed report or silence, attempts left--> RETRY_WAIT
//   LAUNCHED / RUNNING --silence, no attempt left--> FAILED (reason lost)
//   RETRY_WAIT --its wait over--> LAUNCHED (the next attempt)
//   LAUNCHED / RUNNING / RETRY_WAIT --schedule deleted, cancel (trigctl runs cancel, overlap)--> KILLED
//   LAUNCHED / RUNNING --past run_timeout--> RETRY_WAIT (attempts left) or FAILED (reason timeout)
//
// A run is written LAUNCHED with its launch request, in the transaction that launches its job
// (model/job.h). SUCCEEDED, FAILED and KILLED are final. "lost" is a reason, never a state.
#pragma once

#include <optional>
#include <string_view>

#include "model/schedule.h"

namespace trigd {

enum class RunState { kLaunched, kRunning, kRetryWait, kSucceeded, kFailed, kKilled };
inline constexpr RunState kAllRunStates[] = {RunState::kLaunched,  RunState::kRunning, RunState::kRetryWait,
                                             RunState::kSucceeded, RunState::kFailed,  RunState::kKilled};

const char* RunStateName(RunState s);  // "launched", "running", "retry_wait", ... (runs.state)
std::optional<RunState> RunStateFromName(std::string_view name);
// Whether no transition leaves `s`.
bool IsFinal(RunState s);
// True for the transitions of the diagram above (a state to itself is no transition: false).
bool IsAllowedTransition(RunState from, RunState to);

// The state a worker's report moves a launched or running run to, when it moves it: started and
// heartbeat to RUNNING, an outcome to its final state. (A failed report that the run's retry
// policy retries moves it to RETRY_WAIT instead: the store decides that with the policy.)
RunState RunStateAfterReport(ProgramStatus status);

}  // namespace trigd
