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

}  // namespace
}  // namespace trigd
