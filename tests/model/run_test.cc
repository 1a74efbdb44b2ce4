#include "model/run.h"

#include <gtest/gtest.h>

namespace trigd {
namespace {

// Every pair of states against the diagram in model/run.h, written out here once more.
TEST(RunStateTest, EveryAllowedAndForbiddenTransition) {
  using S = RunState;
  auto allowed = [](S a, S b) {
    const bool end = b == S::kSucceeded || b == S::kFailed || b == S::kKilled;
    return (a == S::kLaunched && (b == S::kRunning || b == S::kRetryWait || end)) ||
           (a == S::kRunning && (b == S::kRetryWait || end)) ||
           (a == S::kRetryWait && (b == S::kLaunched || b == S::kKilled));
  };
  int allowed_count = 0;
  for (S a : kAllRunStates) {
    for (S b : kAllRunStates) {
      EXPECT_EQ(IsAllowedTransition(a, b), allowed(a, b)) << RunStateName(a) << "->" << RunStateName(b);
      allowed_count += IsAllowedTransition(a, b);
    }
  }
  EXPECT_EQ(allowed_count, 5 + 4 + 2);
}

TEST(RunStateTest, FinalStatesHaveNoWayOut) {
  for (RunState a : kAllRunStates) {
    bool any = false;
    for (RunState b : kAllRunStates) any = any || IsAllowedTransition(a, b);
    EXPECT_EQ(IsFinal(a), !any) << RunStateName(a);
  }
}

// The names are runs.state's values (schema/), each read back to its state.
TEST(RunStateTest, NamesRoundTrip) {
  EXPECT_STREQ(RunStateName(RunState::kRetryWait), "retry_wait");
  for (RunState s : kAllRunStates) EXPECT_EQ(RunStateFromName(RunStateName(s)), s);
  EXPECT_EQ(RunStateFromName("lost"), std::nullopt);  // a reason, not a state
  EXPECT_EQ(RunStateFromName(""), std::nullopt);
}

// A report moves a launched or running run only along the diagram: started and heartbeat to
// running, an outcome to its final state.
TEST(RunStateTest, AReportMovesARunAlongTheDiagram) {
  for (ProgramStatus st : {ProgramStatus::kStarted, ProgramStatus::kHeartbeat, ProgramStatus::kSucceeded,
                           ProgramStatus::kFailed, ProgramStatus::kKilled}) {
    const RunState to = RunStateAfterReport(st);
    EXPECT_TRUE(IsAllowedTransition(RunState::kLaunched, to)) << ProgramStatusName(st);
    EXPECT_TRUE(to == RunState::kRunning || IsAllowedTransition(RunState::kRunning, to)) << ProgramStatusName(st);
    const bool outcome =
        st == ProgramStatus::kSucceeded || st == ProgramStatus::kFailed || st == ProgramStatus::kKilled;
    EXPECT_EQ(IsFinal(to), outcome) << ProgramStatusName(st);
  }
  EXPECT_EQ(RunStateAfterReport(ProgramStatus::kHeartbeat), RunState::kRunning);
  EXPECT_EQ(RunStateAfterReport(ProgramStatus::kSucceeded), RunState::kSucceeded);
}

}  // namespace
}  // namespace trigd
