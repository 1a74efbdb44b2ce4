// The relay loop (app/relay_loop.cc) against a fake store's outbox (fake_engine_store.h) and
// librdkafka's mock cluster: a row is deleted only once the broker confirmed it, in id order;
// broker and store errors keep it for the next send.
#include <gtest/gtest.h>

#include "app/engine_loops.h"
#include "fake_engine_store.h"
#include "loop_harness.h"

namespace trigd::engine_internal {
namespace {

using trigd::testing::FakeStoreState;
using trigd::testing::LoopHarness;
using trigd::testing::MockKafka;

// One partition, so the topic's order is the order the relay sent in.
const std::string kTopic = "t.launch.default";
constexpr int16_t kProduce = 0;  // Kafka protocol API key (librdkafka keeps RD_KAFKAP_* private)

class RelayHarness : public LoopHarness {
 public:
  RelayHarness(MockKafka& kafka, FakeStoreState& st)
      : LoopHarness(kafka.bootstraps(), st, [](Shared& sh) { RelayLoop(sh); }) {}
};

// Rows 1..n on kTopic, payload "m<id>".
void FillOutbox(FakeStoreState& st, int n) {
  std::lock_guard<std::mutex> l(st.mu);
  for (int i = 1; i <= n; ++i) st.outbox.push_back({i, kTopic, "prog", "m" + std::to_string(i)});
}

std::vector<std::string> Payloads(std::initializer_list<int> ids) {
  std::vector<std::string> out;
  for (int i : ids) out.push_back("m" + std::to_string(i));
  return out;
}

// Every row published in id order, a bundle's messages together, and each row deleted once
// confirmed; each deleted row counts as a launch.
TEST(RelayLoopTest, PublishesInIdOrderAndDeletesConfirmedRows) {
  MockKafka kafka;
  kafka.CreateTopic(kTopic, 1);
  FakeStoreState st;
  FillOutbox(st, 6);
  {
    std::lock_guard<std::mutex> l(st.mu);
    st.outbox.insert(st.outbox.begin() + 3, OutboxRow{3, kTopic, "prog", "m3b"});  // row 3: a bundle of two
  }
  RelayHarness relay(kafka, st);
  ASSERT_TRUE(LoopHarness::WaitFor(st, [&] { return st.outbox.empty(); }));
  EXPECT_TRUE(relay.Stop().ok());
  EXPECT_EQ(kafka.Read(kTopic, 0), (std::vector<std::string>{"m1", "m2", "m3", "m3b", "m4", "m5", "m6"}));
  std::lock_guard<std::mutex> l(st.mu);
  EXPECT_EQ(st.completed, (std::vector<int64_t>{1, 2, 3, 4, 5, 6}));
  EXPECT_TRUE(st.unpublishable.empty());
  EXPECT_EQ(relay.metrics().JobTransition("launched").Value(), 6);
}

// After a claim that was not full the relay claims again when woken (a committed launch) or
// after its 50 ms poll, not at once: a claim finding the outbox empty after every publication
// (the claim and its rollback, two round trips) held a launch committed meanwhile behind it.
TEST(RelayLoopTest, ClaimsAgainWhenWokenNotAfterEveryPublication) {
  MockKafka kafka;
  kafka.CreateTopic(kTopic, 1);
  FakeStoreState st;
  FillOutbox(st, 2);
  RelayHarness relay(kafka, st);
  ASSERT_TRUE(LoopHarness::WaitFor(st, [&] { return st.outbox.empty() && st.calls["ClaimOutbox"] >= 2; }));
  {
    std::lock_guard<std::mutex> l(st.mu);
    auto complete =
        std::find_if(st.call_log.begin(), st.call_log.end(), [](const auto& c) { return c.first == "CompleteOutbox"; });
    ASSERT_NE(complete, st.call_log.end());
    auto next_claim = std::find_if(complete, st.call_log.end(), [](const auto& c) { return c.first == "ClaimOutbox"; });
    ASSERT_NE(next_claim, st.call_log.end());
    EXPECT_GE(next_claim->second - complete->second, std::chrono::milliseconds(40))
        << "claimed again right after publishing, unwoken";
    st.outbox.push_back({3, kTopic, "prog", "m3"});
  }
  // A commit's wake: the new row goes out (well before the relay's poll would find it).
  relay.shared().relay_wake.Wake();
  ASSERT_TRUE(LoopHarness::WaitFor(st, [&] { return st.outbox.empty(); }));
  EXPECT_TRUE(relay.Stop().ok());
  EXPECT_EQ(kafka.Read(kTopic, 0), Payloads({1, 2, 3}));
}

// The broker refuses the sends (an error librdkafka does not retry): the row stays in the
// outbox and goes again with a new producer until the broker takes it; it is on the topic once.
TEST(RelayLoopTest, BrokerErrorKeepsTheRowAndSendsAgain) {
  MockKafka kafka;
  kafka.CreateTopic(kTopic, 1);
  rd_kafka_mock_push_request_errors(kafka.cluster(), kProduce, 2, RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED,
                                    RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED);
  FakeStoreState st;
  FillOutbox(st, 1);
  RelayHarness relay(kafka, st);
  ASSERT_TRUE(LoopHarness::WaitFor(st, [&] { return st.outbox.empty(); }));
  EXPECT_TRUE(relay.Stop().ok());
  EXPECT_EQ(kafka.Read(kTopic, 0), Payloads({1}));
  std::lock_guard<std::mutex> l(st.mu);
  EXPECT_EQ(st.completed, (std::vector<int64_t>{1}));
  EXPECT_GE(st.calls["ClaimOutbox"], 3) << "claimed again after each refused send";
  EXPECT_EQ(st.calls["CompleteOutbox"] - static_cast<int>(st.completed.size()), 2)
      << "two sends with nothing confirmed, then the confirmed one";
  EXPECT_TRUE(st.unpublishable.empty());
}

// A message the broker refuses for good (a policy) five times in a row: its row is withdrawn
// and its run failed as unpublishable (FailUnpublishable), never deleted as sent.
TEST(RelayLoopTest, RefusedForGoodFiveTimesFailsTheRunAsUnpublishable) {
  MockKafka kafka;
  kafka.CreateTopic(kTopic, 1);
  rd_kafka_mock_push_request_errors(kafka.cluster(), kProduce, 5, RD_KAFKA_RESP_ERR_POLICY_VIOLATION,
                                    RD_KAFKA_RESP_ERR_POLICY_VIOLATION, RD_KAFKA_RESP_ERR_POLICY_VIOLATION,
                                    RD_KAFKA_RESP_ERR_POLICY_VIOLATION, RD_KAFKA_RESP_ERR_POLICY_VIOLATION);
  FakeStoreState st;
  FillOutbox(st, 1);
  RelayHarness relay(kafka, st);
  ASSERT_TRUE(LoopHarness::WaitFor(st, [&] { return st.outbox.empty(); }));
  EXPECT_TRUE(relay.Stop().ok());
  std::lock_guard<std::mutex> l(st.mu);
  EXPECT_EQ(st.unpublishable, (std::vector<int64_t>{1}));
  EXPECT_TRUE(st.completed.empty());
  EXPECT_EQ(st.calls["ClaimOutbox"] >= 5, true);
  EXPECT_EQ(relay.metrics().RunOutcome("unpublishable").Value(), 1);
}

// Store errors: a claim that finds PostgreSQL gone reconnects and claims again; a delete that
// fails after the broker confirmed leaves the rows, which are sent again (at least once, the
// same messages in the same order) and deleted once.
TEST(RelayLoopTest, StoreErrorsReconnectAndSendTheRowsAgain) {
  MockKafka kafka;
  kafka.CreateTopic(kTopic, 1);
  FakeStoreState st;
  st.FailNext("ClaimOutbox", 2, Status(StatusCode::kUnavailable, "connection lost"));
  st.FailNext("CompleteOutbox", 1, Status(StatusCode::kInternal, "server closed the connection"));
  FillOutbox(st, 3);
  RelayHarness relay(kafka, st);
  ASSERT_TRUE(LoopHarness::WaitFor(st, [&] { return st.outbox.empty(); }));
  EXPECT_TRUE(relay.Stop().ok());
  EXPECT_EQ(kafka.Read(kTopic, 0), Payloads({1, 2, 3, 1, 2, 3}));
  std::lock_guard<std::mutex> l(st.mu);
  EXPECT_EQ(st.completed, (std::vector<int64_t>{1, 2, 3}));
  EXPECT_EQ(st.connects, 4) << "the first connection, and one after each of the three failures";
  EXPECT_EQ(relay.metrics().JobTransition("launched").Value(), 3) << "a launch counted once, when deleted";
}

}  // namespace
}  // namespace trigd::engine_internal
