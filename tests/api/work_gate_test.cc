// The API's admission to PostgreSQL: slots, their rest after each request, and the wait limit.
#include "api/work_gate.h"

#include <gtest/gtest.h>

#include <atomic>
#include <mutex>
#include <thread>
#include <vector>

namespace trigd {
namespace {

using std::chrono::milliseconds;
using std::chrono::nanoseconds;

TEST(GateRest, KeepsTheHoldersShare) {
  EXPECT_EQ(GateRest(milliseconds(10), 1.0), nanoseconds(0));
  EXPECT_EQ(GateRest(milliseconds(10), 0.5), milliseconds(10));
  EXPECT_EQ(GateRest(milliseconds(10), 0.25), milliseconds(30));
  EXPECT_EQ(GateRest(nanoseconds(0), 0.25), nanoseconds(0));
  EXPECT_EQ(GateRest(std::chrono::seconds(5), 0.25), kGateMaxRest);
}

TEST(WorkGate, ASecondRequestWaitsWhileTheOnlySlotIsHeld) {
  WorkGate gate({.slots = 1, .share = 1.0, .max_wait = milliseconds(5000)});
  std::atomic<bool> second_in{false};
  std::optional<WorkGate::Pass> first = gate.Enter();
  ASSERT_TRUE(first);
  std::thread t([&] {
    auto second = gate.Enter();
    EXPECT_TRUE(second);
    second_in = true;
  });
  while (gate.waiting() == 0) std::this_thread::yield();
  EXPECT_FALSE(second_in);
  first.reset();
  t.join();
  EXPECT_TRUE(second_in);
  EXPECT_EQ(gate.waiting(), 0);
}

TEST(WorkGate, ASlotRestsAfterARequestForItsShare) {
  WorkGate gate({.slots = 1, .share = 0.5, .max_wait = milliseconds(5000)});
  const auto start = WorkGate::Clock::now();
  {
    auto pass = gate.Enter();
    ASSERT_TRUE(pass);
    std::this_thread::sleep_for(milliseconds(40));
  }
  auto next = gate.Enter();
  ASSERT_TRUE(next);
  // Held at least 40 ms at share 0.5: the slot rests as long again before the next request.
  EXPECT_GE(WorkGate::Clock::now() - start, milliseconds(80));
}

TEST(WorkGate, GivesUpAfterMaxWait) {
  WorkGate gate({.slots = 1, .share = 1.0, .max_wait = milliseconds(30)});
  auto held = gate.Enter();
  ASSERT_TRUE(held);
  const auto start = WorkGate::Clock::now();
  std::optional<WorkGate::Pass> refused;
  std::thread t([&] { refused = gate.Enter(); });
  t.join();
  EXPECT_FALSE(refused);
  EXPECT_GE(WorkGate::Clock::now() - start, milliseconds(30));
  EXPECT_EQ(gate.waiting(), 0);
}

TEST(WorkGate, WaitingRequestsAreServedInArrivalOrder) {
  WorkGate gate({.slots = 1, .share = 1.0, .max_wait = milliseconds(5000)});
  std::mutex mu;
  std::vector<int> order;
  auto held = gate.Enter();
  ASSERT_TRUE(held);
  std::vector<std::thread> threads;
  for (int i = 0; i < 4; ++i) {
    threads.emplace_back([&, i] {
      auto pass = gate.Enter();
      ASSERT_TRUE(pass);
      std::lock_guard lock(mu);
      order.push_back(i);
    });
    while (gate.waiting() != i + 1) std::this_thread::yield();
  }
  held.reset();
  for (auto& t : threads) t.join();
  EXPECT_EQ(order, (std::vector<int>{0, 1, 2, 3}));
}

TEST(WorkGate, SlotsServeRequestsAtOnce) {
  WorkGate gate({.slots = 2, .share = 1.0, .max_wait = milliseconds(0)});
  auto a = gate.Enter();
  auto b = gate.Enter();
  EXPECT_TRUE(a);
  EXPECT_TRUE(b);
  EXPECT_FALSE(gate.Enter());
  a.reset();
  EXPECT_TRUE(gate.Enter());
}

}  // namespace
}  // namespace trigd
