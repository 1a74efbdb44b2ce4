#include "model/run.h"

namespace trigd {

const char* RunStateName(RunState s) {
  switch (s) {
    case RunState::kLaunched: return "launched";
    case RunState::kRunning: return "running";
    case RunState::kRetryWait: return "retry_wait";
    case RunState::kSucceeded: return "succeeded";
    case RunState::kFailed: return "failed";
    case RunState::kKilled: return "killed";
  }
  return "?";
}

std::optional<RunState> RunStateFromName(std::string_view name) {
  for (RunState s : kAllRunStates) {
    if (name == RunStateName(s)) return s;
  }
  return std::nullopt;
}

bool IsFinal(RunState s) { return s == RunState::kSucceeded || s == RunState::kFailed || s == RunState::kKilled; }

bool IsAllowedTransition(RunState from, RunState to) {
  switch (from) {
    case RunState::kLaunched: return to != RunState::kLaunched;
    case RunState::kRunning:
      // A started run does not go back to waiting for a worker.
      return to != RunState::kRunning && to != RunState::kLaunched;
    case RunState::kRetryWait:
      // The next attempt, or killed by its schedule's delete; nothing reports for a waiting run.
      return to == RunState::kLaunched || to == RunState::kKilled;
    case RunState::kSucceeded:
    case RunState::kFailed:
    case RunState::kKilled: return false;
  }
  return false;
}

RunState RunStateAfterReport(ProgramStatus status) {
  switch (status) {
    case ProgramStatus::kStarted:
    case ProgramStatus::kHeartbeat: return RunState::kRunning;
    case ProgramStatus::kSucceeded: return RunState::kSucceeded;
    case ProgramStatus::kFailed: return RunState::kFailed;
    case ProgramStatus::kKilled: return RunState::kKilled;
  }
  return RunState::kRunning;
}

}  // namespace trigd
