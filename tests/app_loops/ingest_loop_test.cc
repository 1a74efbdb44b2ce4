// The ingest loop (app/ingest_loop.cc) against a fake store with fault injection
// (fake_engine_store.h) and librdkafka's mock cluster: no PostgreSQL, no broker.
#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>

#include <gtest/gtest.h>

#include "app/engine_loops.h"
#include "fake_engine_store.h"
#include "loop_harness.h"

namespace trigd::engine_internal {
namespace {

using trigd::testing::FakeEngineStoreFactory;
using trigd::testing::FakeStoreState;
using trigd::testing::kPartitions;
using trigd::testing::LoopHarness;
using trigd::testing::MockKafka;

// The ingest loop on its own thread over a fake store, until Stop.
class IngestHarness : public LoopHarness {
 public:
  IngestHarness(const std::string& bootstraps, FakeStoreState& st, const std::string& instance_id = "")
      : LoopHarness(
            bootstraps, st, [](Shared& sh) { IngestLoop(sh); }, instance_id) {}
};

// Every message ends up committed once in the store, and Kafka's group holds exactly the
// store's positions once the loop stopped.
TEST(IngestLoopTest, KafkaGetsThePositionsTheStoreCommitted) {
  MockKafka kafka;
  kafka.Produce(50);
  FakeStoreState st;
  IngestHarness loop(kafka.bootstraps(), st);
  ASSERT_TRUE(IngestHarness::WaitFor(st, [&] { return st.committed_messages == 50; }));
  ASSERT_TRUE(loop.Stop().ok());
  const std::vector<int64_t> committed = kafka.Committed("g");
  std::lock_guard<std::mutex> l(st.mu);
  for (int p = 0; p < kPartitions; ++p) {
    auto it = st.positions.find({"t.events.data", p});
    EXPECT_EQ(committed[p], it == st.positions.end() ? -1001 : it->second) << "partition " << p;
  }
}

// A store that fails every batch (kInternal): Kafka's group is given no position, since
// nothing was committed in the store.
TEST(IngestLoopTest, NoKafkaCommitWithoutAStoreCommit) {
  MockKafka kafka;
  kafka.Produce(20);
  FakeStoreState st;
  st.FailNext("ApplyBatch", 1000, Status(StatusCode::kInternal, "disk full"));
  IngestHarness loop(kafka.bootstraps(), st);
  ASSERT_TRUE(IngestHarness::WaitFor(st, [&] { return st.calls["ApplyBatch"] >= 3; }));
  ASSERT_TRUE(loop.Stop().ok());
  for (int64_t c : kafka.Committed("g")) EXPECT_LT(c, 0) << "a position reached Kafka with no store commit";
  std::lock_guard<std::mutex> l(st.mu);
  EXPECT_EQ(st.committed_messages, 0);
  EXPECT_GE(st.connects, 2) << "a kInternal failure drops the connection";
}

// A fenced batch (another consumer moved a position first) is dropped and the consumer
// re-reads from the store's positions: the next committed batch starts where the refused one did.
TEST(IngestLoopTest, FencedBatchRewindsToTheStoredPositions) {
  MockKafka kafka;
  kafka.Produce(30);
  FakeStoreState st;
  st.FenceNext(1);
  IngestHarness loop(kafka.bootstraps(), st);
  ASSERT_TRUE(IngestHarness::WaitFor(st, [&] { return st.committed_messages == 30; }));
  ASSERT_TRUE(loop.Stop().ok());
  std::lock_guard<std::mutex> l(st.mu);
  ASSERT_EQ(st.refused.size(), 1u);
  ASSERT_FALSE(st.applied.empty());
  for (const ConsumedPosition& p : st.refused[0]) {
    // The first committed batch that covers this partition starts where the refused one did.
    std::optional<int64_t> first;
    for (const auto& batch : st.applied) {
      for (const ConsumedPosition& a : batch) {
        if (!first && a.topic == p.topic && a.partition == p.partition) first = a.first_offset;
      }
    }
    ASSERT_TRUE(first.has_value()) << p.topic << "/" << p.partition;
    EXPECT_EQ(*first, p.first_offset) << "re-read from the stored position";
  }
}

// A batch routed with an index older than a committed schedule change is refused; the loop
// reloads the change log at once and re-reads the batch.
TEST(IngestLoopTest, StaleIndexReloadsTheIndexAndRewinds) {
  MockKafka kafka;
  kafka.Produce(30);
  FakeStoreState st;
  st.StaleNext(1);
  IngestHarness loop(kafka.bootstraps(), st);
  ASSERT_TRUE(IngestHarness::WaitFor(st, [&] { return st.committed_messages == 30; }));
  int loads_at_refusal = 0;
  ASSERT_TRUE(loop.Stop().ok());
  std::lock_guard<std::mutex> l(st.mu);
  loads_at_refusal = st.calls["LoadScheduleChanges"];
  EXPECT_EQ(st.refused.size(), 1u);
  EXPECT_GE(loads_at_refusal, 2) << "the change log is read again after a stale batch";
}

// PostgreSQL away (kUnavailable on connect and on the batch): the loop reconnects and every
// message is committed once; aborted transactions (kAborted) are rerun on the same connection.
TEST(IngestLoopTest, ReconnectsAfterUnavailableAndRerunsAborted) {
  MockKafka kafka;
  kafka.Produce(40);
  FakeStoreState st;
  st.FailNext("ApplyBatch", 2, Status(StatusCode::kAborted, "deadlock detected"));
  st.FailNext("ApplyBatch", 1, Status(StatusCode::kUnavailable, "connection lost"));
  st.FailNext("Connect", 2, Status(StatusCode::kUnavailable, "connection refused"));
  IngestHarness loop(kafka.bootstraps(), st);
  ASSERT_TRUE(IngestHarness::WaitFor(st, [&] { return st.committed_messages == 40; }));
  ASSERT_TRUE(loop.Stop().ok());
  std::lock_guard<std::mutex> l(st.mu);
  EXPECT_GE(st.connects, 3) << "index and committer connections, and the committer's again after kUnavailable";
  EXPECT_EQ(st.calls["ApplyBatch"] - static_cast<int>(st.applied.size()), 3);
}

// A fatal consumer error (this static member fenced by a newer one with the same instance id)
// halts the engine with the error naming the instance id, instead of re-joining and fencing it.
TEST(IngestLoopTest, FatalConsumerErrorHaltsWithTheError) {
  MockKafka kafka;
  kafka.Produce(5);
  constexpr int16_t kJoinGroup = 11;  // Kafka protocol API key (librdkafka keeps RD_KAFKAP_* private)
  rd_kafka_mock_push_request_errors(kafka.cluster(), kJoinGroup, 1, RD_KAFKA_RESP_ERR_FENCED_INSTANCE_ID);
  FakeStoreState st;
  IngestHarness loop(kafka.bootstraps(), st, "pod-0");
  const auto until = Clock::now() + std::chrono::seconds(30);
  while (!loop.Halted() && Clock::now() < until) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  ASSERT_TRUE(loop.Halted()) << "the loop kept going after a fatal consumer error";
  const Status why = loop.Stop();
  EXPECT_EQ(why.code(), StatusCode::kInvalid);
  EXPECT_NE(why.message().find("--instance-id pod-0"), std::string::npos) << why.ToString();
}

}  // namespace
}  // namespace trigd::engine_internal
