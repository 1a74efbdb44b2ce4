#include "core/run_lifecycle.h"

#include <gtest/gtest.h>

namespace trigd {
namespace {

using S = RunState;

// Every answer, for every state, is a transition model/run.h allows.
TEST(RunLifecycleTest, EveryAnswerIsAnAllowedTransition) {
  for (S from : kAllRunStates) {
    for (bool exists : {false, true}) {
      for (int64_t attempt : {1, 3}) {
        for (ProgramStatus st : {ProgramStatus::kStarted, ProgramStatus::kHeartbeat, ProgramStatus::kSucceeded,
                                 ProgramStatus::kFailed, ProgramStatus::kKilled}) {
          if (auto t = OnReport(from, st, attempt, 3, exists)) {
            EXPECT_TRUE(IsAllowedTransition(from, t->next));
          }
        }
        if (auto t = OnSilence(from, attempt, 3, exists)) {
          EXPECT_TRUE(IsAllowedTransition(from, t->next));
        }
      }
      if (auto t = OnScheduleDeleted(from, exists)) {
        EXPECT_TRUE(IsAllowedTransition(from, t->next));
      }
      if (auto t = OnCancel(from)) {
        EXPECT_TRUE(IsAllowedTransition(from, t->next));
      }
      for (int64_t attempt : {1, 3}) {
        if (auto t = OnRunTimeout(from, attempt, 3, exists)) {
          EXPECT_TRUE(IsAllowedTransition(from, t->next));
        }
      }
    }
  }
}

TEST(RunLifecycleTest, SilenceRetriesWhileAttemptsAreLeftAndTheScheduleExists) {
  EXPECT_EQ(OnSilence(S::kRunning, 1, 3, true), (RunTransition{S::kRetryWait, true, false, true}));
  EXPECT_EQ(OnSilence(S::kLaunched, 2, 3, true), (RunTransition{S::kRetryWait, true, false, true}));
  // The last attempt, or a deleted schedule's run: failed as lost, announced downstream.
  EXPECT_EQ(OnSilence(S::kRunning, 3, 3, true), (RunTransition{S::kFailed, false, true, true}));
  EXPECT_EQ(OnSilence(S::kRunning, 1, 3, false), (RunTransition{S::kFailed, false, true, true}));
  for (S from : {S::kRetryWait, S::kSucceeded, S::kFailed, S::kKilled}) {
    EXPECT_EQ(OnSilence(from, 1, 3, true), std::nullopt) << RunStateName(from);
  }
}

TEST(RunLifecycleTest, AReportMovesOnlyAnActiveRun) {
  EXPECT_EQ(OnReport(S::kLaunched, ProgramStatus::kStarted, 1, 1, true), (RunTransition{S::kRunning}));
  EXPECT_EQ(OnReport(S::kRunning, ProgramStatus::kHeartbeat, 1, 1, true), std::nullopt);
  EXPECT_EQ(OnReport(S::kRunning, ProgramStatus::kSucceeded, 1, 1, true), (RunTransition{S::kSucceeded}));
  // A failure with attempts left waits for its retry; nobody downstream sees it (no event).
  EXPECT_EQ(OnReport(S::kRunning, ProgramStatus::kFailed, 1, 2, true), (RunTransition{S::kRetryWait, true}));
  EXPECT_EQ(OnReport(S::kRunning, ProgramStatus::kFailed, 2, 2, true), (RunTransition{S::kFailed}));
  EXPECT_EQ(OnReport(S::kRunning, ProgramStatus::kFailed, 1, 2, false), (RunTransition{S::kFailed}));
  // A late report of an ended or retried attempt moves nothing.
  for (S from : {S::kRetryWait, S::kSucceeded, S::kFailed, S::kKilled}) {
    EXPECT_EQ(OnReport(from, ProgramStatus::kSucceeded, 1, 2, true), std::nullopt) << RunStateName(from);
  }
}

TEST(RunLifecycleTest, ADeleteKillsOnlyWhatNoWorkerHasTaken) {
  EXPECT_EQ(OnScheduleDeleted(S::kRetryWait, true), (RunTransition{S::kKilled, false, true, true}));
  EXPECT_EQ(OnScheduleDeleted(S::kLaunched, false), (RunTransition{S::kKilled, false, true, true}));
  EXPECT_EQ(OnScheduleDeleted(S::kLaunched, true), std::nullopt);
  EXPECT_EQ(OnScheduleDeleted(S::kRunning, true), std::nullopt);
  EXPECT_EQ(OnScheduleDeleted(S::kSucceeded, false), std::nullopt);
}

// A cancel ends every run not yet final, killed, announced and told to its worker, never retried;
// a finished run cannot be cancelled.
TEST(RunLifecycleTest, CancelKillsWhatIsNotFinal) {
  for (S from : {S::kLaunched, S::kRunning, S::kRetryWait}) {
    EXPECT_EQ(OnCancel(from), (RunTransition{S::kKilled, false, true, true})) << RunStateName(from);
  }
  for (S from : {S::kSucceeded, S::kFailed, S::kKilled}) EXPECT_FALSE(OnCancel(from)) << RunStateName(from);
}

// A run past its run_timeout is retried while attempts are left, else fails with an event; the
// worker is told either way.
TEST(RunLifecycleTest, RunTimeoutRetriesThenFails) {
  EXPECT_EQ(OnRunTimeout(S::kRunning, 1, 2, true), (RunTransition{S::kRetryWait, true, false, true}));
  EXPECT_EQ(OnRunTimeout(S::kRunning, 2, 2, true), (RunTransition{S::kFailed, false, true, true}));
  EXPECT_EQ(OnRunTimeout(S::kLaunched, 1, 2, false), (RunTransition{S::kFailed, false, true, true}));
  EXPECT_FALSE(OnRunTimeout(S::kRetryWait, 1, 2, true));
  EXPECT_FALSE(OnRunTimeout(S::kSucceeded, 1, 2, true));
}

// The retry policy's wait: doubling from backoff, capped at max_backoff, spread by the jitter
// around its middle draw (u = 0.5 is the unspread wait); no overflow for the longest backoff.
TEST(RunLifecycleTest, RetryBackoffDoublesUpToTheCapWithJitter) {
  RetryPolicy r;
  r.backoff = std::chrono::minutes(1);
  r.max_backoff = std::chrono::minutes(5);
  r.jitter_percent = 10;
  EXPECT_EQ(RetryBackoff(r, 1, 0.5), std::chrono::minutes(1));
  EXPECT_EQ(RetryBackoff(r, 2, 0.5), std::chrono::minutes(2));
  EXPECT_EQ(RetryBackoff(r, 3, 0.5), std::chrono::minutes(4));
  EXPECT_EQ(RetryBackoff(r, 4, 0.5), std::chrono::minutes(5));
  EXPECT_EQ(RetryBackoff(r, 1000, 0.5), std::chrono::minutes(5));
  EXPECT_EQ(RetryBackoff(r, 1, 0.0), std::chrono::seconds(54));
  EXPECT_EQ(RetryBackoff(r, 1, 1.0), std::chrono::seconds(66));
  r.jitter_percent = 0;
  EXPECT_EQ(RetryBackoff(r, 2, 0.9), std::chrono::minutes(2));
  r.backoff = kMaxDuration;
  r.max_backoff = kMaxDuration;
  EXPECT_EQ(RetryBackoff(r, 31, 0.5), kMaxDuration);
}

}  // namespace
}  // namespace trigd
