// The checker loop (app/checker_loop.cc) against a fake store (fake_engine_store.h): what it
// does with each store answer and each store error. No broker: the checker loop talks to the
// store only.
#include <gtest/gtest.h>

#include "app/engine_loops.h"
#include "fake_engine_store.h"
#include "loop_harness.h"

namespace trigd::engine_internal {
namespace {

using trigd::testing::FakeStoreState;
using trigd::testing::LoopHarness;

class CheckerHarness : public LoopHarness {
 public:
  CheckerHarness(FakeStoreState& st, int index)
      : LoopHarness("127.0.0.1:1", st, [index](Shared& sh) { CheckerLoop(sh, index); }) {}
};

// An aborted check (a deadlock, a serialization failure) is counted as a transaction retry and
// run again on the same connection; the loop goes on.
TEST(CheckerLoopTest, AbortedChecksAreCountedAndRunAgainOnTheSameConnection) {
  FakeStoreState st;
  st.FailNext("CheckDueJobs", 3, Status(StatusCode::kAborted, "deadlock detected"));
  CheckerHarness checker(st, 0);
  ASSERT_TRUE(LoopHarness::WaitFor(st, [&] { return st.calls["CheckDueJobs"] >= 5; }));
  EXPECT_TRUE(checker.Stop().ok());
  EXPECT_EQ(checker.metrics().TransactionRetries().Value(), 3);
  std::lock_guard<std::mutex> l(st.mu);
  EXPECT_EQ(st.connects, 1) << "an aborted transaction keeps its connection";
}

// PostgreSQL away: the connection is opened again once it is back, and each step that failed
// with kUnavailable (the check, the tick, the sweep) drops the connection; the loop goes on.
TEST(CheckerLoopTest, UnavailableStoreReconnects) {
  FakeStoreState st;
  st.FailNext("Connect", 1, Status(StatusCode::kUnavailable, "connection refused"));
  st.FailNext("CheckDueJobs", 1, Status(StatusCode::kUnavailable, "connection lost"));
  st.FailNext("TickTimeTriggers", 1, Status(StatusCode::kUnavailable, "connection lost"));
  st.FailNext("SweepRuns", 1, Status(StatusCode::kUnavailable, "connection lost"));
  CheckerHarness checker(st, 0);
  ASSERT_TRUE(LoopHarness::WaitFor(st, [&] { return st.calls["SweepRuns"] >= 3; }));
  EXPECT_TRUE(checker.Stop().ok());
  std::lock_guard<std::mutex> l(st.mu);
  EXPECT_EQ(st.calls["Connect"] - st.connects, 1);
  EXPECT_EQ(st.connects, 4) << "the first connection, and one after each of the three failures";
}

// The sweep's, the tick's and the check's counts reach the metrics; a failed tick skips that
// round's sweep, which runs at the next round.
TEST(CheckerLoopTest, StepResultsReachTheMetrics) {
  FakeStoreState st;
  {
    std::lock_guard<std::mutex> l(st.mu);
    st.sweeps.push_back(SweepResult{.lost = 2, .retried = 1, .failed = 1, .killed = 0, .timed_out = 1});
    TickResult tick;
    tick.produced = 1;
    tick.skipped = 3;
    st.ticks.push_back(tick);
    CheckerResult check;
    check.checked = 2;
    check.discarded = 1;
    check.checks[{"time_window", "wait"}] = 2;
    st.checks.push_back(check);
  }
  st.FailNext("TickTimeTriggers", 1, Status(StatusCode::kAborted, "could not serialize access"));
  CheckerHarness checker(st, 0);
  ASSERT_TRUE(LoopHarness::WaitFor(st, [&] { return st.sweeps.empty() && st.ticks.empty(); }));
  EXPECT_TRUE(checker.Stop().ok());
  Metrics& m = checker.metrics();
  EXPECT_EQ(m.RunOutcome("lost").Value(), 2);
  EXPECT_EQ(m.RunOutcome("retried").Value(), 1);
  EXPECT_EQ(m.RunOutcome("failed").Value(), 1);
  EXPECT_EQ(m.RunOutcome("timeout").Value(), 1);
  EXPECT_EQ(m.FireTimesSkipped().Value(), 3);
  EXPECT_EQ(m.JobTransition("discarded").Value(), 1);
  EXPECT_EQ(m.ConstraintCheck("time_window", "wait").Value(), 2);
}

// Only the first checker sweeps runs, counts the job gauges and reads trigctl's change counts;
// every checker checks due jobs and ticks.
TEST(CheckerLoopTest, OnlyTheFirstCheckerSweeps) {
  FakeStoreState first, second;
  {
    std::lock_guard<std::mutex> l(first.mu);
    first.sweeps.push_back(SweepResult{.lost = 1});
  }
  CheckerHarness a(first, 0), b(second, 1);
  ASSERT_TRUE(
      LoopHarness::WaitFor(first, [&] { return first.calls["SweepRuns"] >= 2 && first.calls["CountJobs"] >= 1; }));
  ASSERT_TRUE(LoopHarness::WaitFor(second, [&] { return second.calls["TickTimeTriggers"] >= 5; }));
  EXPECT_TRUE(a.Stop().ok());
  EXPECT_TRUE(b.Stop().ok());
  std::lock_guard<std::mutex> l(second.mu);
  EXPECT_GE(second.calls["CheckDueJobs"], 5);
  EXPECT_EQ(second.calls["SweepRuns"], 0);
  EXPECT_EQ(second.calls["MarkCaughtUp"], 0);
  EXPECT_EQ(second.calls["CountJobs"], 0);
  EXPECT_EQ(second.calls["TakeChangeCounts"], 0);
  EXPECT_EQ(b.metrics().RunOutcome("lost").Value(), 0);
  EXPECT_EQ(a.metrics().RunOutcome("lost").Value(), 1);
}

}  // namespace
}  // namespace trigd::engine_internal
