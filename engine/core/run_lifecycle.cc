#include "core/run_lifecycle.h"

#include <algorithm>

#include "core/operate.h"

namespace trigd {
namespace {

bool Active(RunState s) { return s == RunState::kLaunched || s == RunState::kRunning; }

}  // namespace

std::optional<RunTransition> OnReport(RunState from, ProgramStatus status, int64_t attempt, int64_t max_attempts,
                                      bool schedule_exists) {
  if (!Active(from)) return std::nullopt;
  if (status == ProgramStatus::kFailed && attempt < max_attempts && schedule_exists) {
    return RunTransition{RunState::kRetryWait, true, false, false};
  }
  const RunState next = RunStateAfterReport(status);
  if (next == from) return std::nullopt;  // a heartbeat of a running run: no transition
  return RunTransition{next, false, false, false};
}

std::optional<RunTransition> OnSilence(RunState from, int64_t attempt, int64_t max_attempts, bool schedule_exists) {
  if (!Active(from)) return std::nullopt;
  if (attempt < max_attempts && schedule_exists) return RunTransition{RunState::kRetryWait, true, false, true};
  return RunTransition{RunState::kFailed, false, true, true};
}

std::optional<RunTransition> OnScheduleDeleted(RunState from, bool request_published) {
  if (from == RunState::kRetryWait || (from == RunState::kLaunched && !request_published)) {
    return RunTransition{RunState::kKilled, false, true, true};
  }
  return std::nullopt;
}

std::optional<RunTransition> OnCancel(RunState from) {
  if (IsFinal(from)) return std::nullopt;
  return RunTransition{RunState::kKilled, false, true, true};
}

std::optional<RunTransition> OnRunTimeout(RunState from, int64_t attempt, int64_t max_attempts, bool schedule_exists) {
  // The same answer as silence: the attempt is over in trigd's books and its worker is told.
  return OnSilence(from, attempt, max_attempts, schedule_exists);
}

Millis RetryBackoff(const RetryPolicy& retry, int64_t attempt, double u) {
  // The product is only computed when it is below the cap (backoff can be kMaxDuration, 3.2e11
  // ms, which times 2^30 would wrap int64).
  const int shift = static_cast<int>(std::clamp<int64_t>(attempt - 1, 0, 30));
  if (retry.backoff.count() < 0 || retry.backoff.count() > (retry.max_backoff.count() >> shift))
    return JitteredBackoff(retry.max_backoff, retry.jitter_percent, u);
  return JitteredBackoff(retry.backoff * (int64_t{1} << shift), retry.jitter_percent, u);
}

}  // namespace trigd
